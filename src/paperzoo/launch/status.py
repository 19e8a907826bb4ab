"""``paperzoo status DIR``: where each cell of a launch stands, and what relaunches the rest.

A cell is ``done`` when its results.json is complete (``state.cell_done``); otherwise what
Slurm says of its job decides (``squeue``): ``pending``, ``running``, or ``requeued`` (pending
again after an attempt started: preempted, at its time limit, or retried after a failure); a job
Slurm no longer runs (ended, failed, cancelled, unknown) leaves the cell ``failed``, and a cell
never submitted is ``missing``. Under the local executor a cell whose last attempt started, did
not end and whose process still runs is ``running``. The elapsed time adds up every attempt (the events file), the
GPU-hours are that time the cell's GPUs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from paperzoo.launch import slurm
from paperzoo.launch.state import LaunchState, read_events

STATES = ("done", "running", "pending", "requeued", "failed", "missing")


@dataclass(frozen=True)
class CellStatus:
    """One cell's row of ``paperzoo status``.

    Args:
        cell: the cell's id (``paper/seed-S``).
        state: one of ``STATES``.
        job: its Slurm job (``ARRAY_TASK``; local: the process), or None.
        attempts: the attempts that started.
        elapsed_s: seconds run, every attempt.
        estimate_s: the estimate of one cell (None: unknown).
        gpu_hours: GPU-hours used.
        note: why it failed (the exit status, or Slurm's state) or why it waits.
    """

    cell: str
    state: str
    job: str | None
    attempts: int
    elapsed_s: float
    estimate_s: float | None
    gpu_hours: float
    note: str = ""


@dataclass(frozen=True)
class LaunchStatus:
    """The rows of a launch, its merge job and the command that relaunches what is left.

    Args:
        root: the launch directory.
        cells: one ``CellStatus`` per cell.
        merge: the merge job and its state (Slurm), or None.
        merged: whether every paper's aggregate is written (``DIR[/NAME]/results.json`` with
            every cell's seed).
        relaunch: the command that submits the cells not done and not queued, or None.
    """

    root: Path
    cells: list[CellStatus]
    merge: tuple[str, str] | None
    merged: bool
    relaunch: str | None


def _alive(pid: str) -> bool:
    """Whether the local process ``pid`` (a cell's attempt) still runs."""
    import os

    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process of that id
        return True
    return True


def _exit_note(rc: str) -> str:
    try:
        code = int(rc)
    except ValueError:
        return f"exit {rc}"
    if code == 2:
        return "exit 2: bad arguments or data (see its log)"
    if code > 128:
        return f"exit {code}: stopped by signal {code - 128} (cancelled or out of time?)"
    return f"exit {code}"


def status(root: Path) -> LaunchStatus:
    """The status of the launch in ``root``.

    Raises:
        paperzoo.launch.plan.LaunchError: no launch there.
    """
    import shlex

    from paperzoo.verdict import load_result

    state = LaunchState.load(root.resolve())
    jobs = [state.jobs[i] for i in range(len(state.cells)) if i in state.jobs]
    queued = slurm.queue(jobs + ([state.merge_job] if state.merge_job else []))
    now = time.time()
    rows = []
    for i, cell in enumerate(state.cells):
        events = read_events(state.events_file(i))
        starts = [e for e in events if e.kind == "start"]
        elapsed, started = 0.0, None
        for e in events:
            if e.kind == "start":
                started = e.at
            elif e.kind == "end" and started is not None:
                elapsed += e.at - started
                started = None
        job = state.jobs.get(i)
        slurm_state, reason = queued.get(job or "", ("", ""))
        last_end = next((e.value for e in reversed(events) if e.kind == "end"), None)
        note = ""
        if state.done(i):
            what = "done"
        elif slurm_state in ("RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"):
            what = "running"
        elif slurm_state in slurm.ACTIVE:
            what = "requeued" if starts else "pending"
            note = reason if reason and reason != "None" else ""
        elif state.executor == "local" and started is not None and _alive(events[-1].job):
            what = "running"
        elif job is None:
            what = "missing"
        else:
            what = "failed"
            note = (
                _exit_note(last_end)
                if last_end is not None and started is None
                else "killed (no exit status)"
                if starts
                else "no attempt started"
            )
            if slurm_state:
                note = f"{slurm_state.lower()}; {note}"
        if started is not None and what == "running":
            elapsed += now - started
        gpus = cell.resources.gpus
        rows.append(
            CellStatus(
                cell=cell.id,
                state=what,
                job=job,
                attempts=len(starts),
                elapsed_s=elapsed,
                estimate_s=cell.resources.estimate_s,
                gpu_hours=elapsed * gpus / 3600.0,
                note=note,
            )
        )
    merge = None
    if state.merge_job:
        m_state = queued.get(state.merge_job, ("ended", ""))[0]
        merge = (state.merge_job, m_state.lower())
    merged = True
    for name, plan in state.plans.items():
        seeds = sorted({c.seed for c in state.cells if c.paper == name})
        try:
            merged = merged and sorted(load_result(state.root / plan.out).seeds) == seeds
        except ValueError:
            merged = False
    left = any(r.state in ("failed", "missing") for r in rows)
    relaunch = shlex.join(["paperzoo", "launch", "--out", str(state.root)]) if left else None
    if relaunch is None and not merged and all(r.state == "done" for r in rows):
        relaunch = shlex.join(["paperzoo", "launch", "--out", str(state.root)])
        if merge is not None and merge[1] in ("pending", "running"):
            relaunch = None  # the merge job is on its way
    return LaunchStatus(state.root, rows, merge, merged, relaunch)


def _hms(seconds: float | None) -> str:
    return "-" if seconds is None else slurm.hms(seconds)


def render_status(s: LaunchStatus) -> str:
    """The text of ``paperzoo status``: one row per cell, the merge job, the relaunch command."""
    lines = [
        f"{'cell':<34} {'state':<9} {'job':<12} {'tries':>5} {'elapsed':>9} {'estimate':>9} "
        f"{'GPU-h':>7}  note"
    ]
    for r in s.cells:
        lines.append(
            f"{r.cell:<34} {r.state:<9} {r.job or '-':<12} {r.attempts:>5} "
            f"{_hms(r.elapsed_s):>9} {_hms(r.estimate_s):>9} {r.gpu_hours:>7.2f}  {r.note}".rstrip()
        )
    counts = {k: sum(r.state == k for r in s.cells) for k in STATES}
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n))
    if s.merge is not None:
        lines.append(f"merge job {s.merge[0]}: {s.merge[1]}")
    lines.append(
        f"merged: {s.root}" if s.merged else "merged: not yet (every cell done, then the merge)"
    )
    if s.relaunch is not None:
        lines.append(f"relaunch what is missing or failed:\n  {s.relaunch}")
    return "".join(f"{line}\n" for line in lines)
