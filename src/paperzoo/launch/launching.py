"""``paperzoo launch``: plan the cells of a reproduction, submit what is missing, merge.

``start`` makes (or extends) the launch in ``DIR`` from a ``RunRequest`` and calls ``advance``,
which every later step calls too (``paperzoo launch --out DIR`` to relaunch, the merge job's
``paperzoo launch --out DIR --merge``):

1. the cells that are neither done (``state.cell_done``) nor queued or running are submitted:
   Slurm job arrays and a merge job after them (``paperzoo.launch.slurm``), or local processes
   (``paperzoo.launch.local``); done cells are never run again;
2. once every cell of a paper is done, its seeds (and each seed's shards) are merged into its
   directory by ``paperzoo.experiments.merging.merge_dirs``, as ``reproduce --seeds`` merges
   them;
3. a launch made without ``--seed`` / ``--seeds`` follows the seed rule: after each merge it asks
   ``next_seeds`` for the seeds the rule adds (``more_seeds``) and runs them as new cells, then
   merges again. ``--seeds`` runs exactly the seeds it names.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from paperzoo.launch import local, slurm
from paperzoo.launch.plan import Cell, LaunchError, PaperPlan, resources
from paperzoo.launch.state import STATE_FILE, LaunchState, SlurmOptions
from paperzoo.verdict import PROTOCOL_SEEDS

if TYPE_CHECKING:
    from paperzoo.experiments.request import RunRequest
    from paperzoo.verdict import Result

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """What one call of ``advance`` did.

    Args:
        submitted: the cells submitted (Slurm) or run (local), by id.
        jobs: the Slurm jobs submitted for them.
        merge_job: the merge job submitted, if any.
        waiting: cells still queued or running (Slurm).
        failed: cells that failed (local), by id, with their exit status.
        merged: the papers merged, with their aggregate's directory.
    """

    submitted: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    merge_job: str | None = None
    waiting: list[str] = field(default_factory=list)
    failed: dict[str, int] = field(default_factory=dict)
    merged: dict[str, Path] = field(default_factory=dict)


def check_request(request: RunRequest, executor: str) -> None:
    """Refuse reproduce options that a launch cannot split into cells.

    Raises:
        LaunchError: one line.
    """
    if request.shard is not None:
        raise LaunchError("launch splits a grid itself: give --shards N, not --shard K/N")
    if request.restart:
        raise LaunchError(
            "--restart would start every requeued cell over: clear --out (or choose another) "
            "to start a launch afresh"
        )
    if request.out is None:
        raise LaunchError("launch needs --out DIR (its cells, state and results go there)")
    if request.overrides and len(request.names) > 1:
        raise LaunchError("--set changes one paper's config: give one paper NAME")
    if (request.jobs or 1) > 1 and executor != "local":
        raise LaunchError("--jobs is the number of local processes: it applies to --executor local")
    check = request if executor == "local" else _with(request, jobs=1, threads=None)
    check.check()


def _with(request: RunRequest, **values: object) -> RunRequest:
    from paperzoo.experiments.request import RunRequest

    return RunRequest(request.names, command=request.command, **(dict(request.values) | values))


def plan_papers(
    request: RunRequest,
    *,
    executor: str,
    nodes: int,
    gpus_per_node: int | None,
    shards: int | None,
) -> dict[str, PaperPlan]:
    """The ``PaperPlan`` of each paper of ``request``.

    Raises:
        LaunchError: ``--shards`` for a paper without a grid; see ``plan.resources``.
    """
    from paperzoo.experiments.flags import flag_argv
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.request import cores

    plans = {}
    for name in request.names:
        if shards is not None and shards > 1 and not get_experiment(name).has_grid:
            raise LaunchError(f"{name} trains no grid of models: --shards does not apply")
        res = resources(name, request, nodes=nodes, gpus_per_node=gpus_per_node, shards=shards or 1)
        if executor == "local":  # the machine's cores shared by the cells at once
            res = replace(res, threads=request.threads or max(1, cores() // (request.jobs or 1)))
        plans[name] = PaperPlan(
            paper=name,
            out="." if len(request.names) == 1 else name,
            flags=tuple(flag_argv(request.values, lambda f: f.seeds, name)),
            shards=shards if shards and shards > 1 else None,
            resources=res,
        )
    return plans


def start(
    request: RunRequest,
    *,
    executor: str,
    slurm_options: SlurmOptions,
    nodes: int = 1,
    gpus_per_node: int | None = None,
    shards: int | None = None,
    jobs: int = 1,
    rule: bool = False,
) -> Progress:
    """Launch the cells of ``request`` in ``request.out`` (adding to a launch already there)
    and ``advance`` it. ``rule``: the seeds follow the seed rule (``PROTOCOL_SEEDS``, then what
    ``next_seeds`` adds) instead of ``request.seeds``.

    Raises:
        LaunchError: see ``check_request``, ``plan_papers``, ``advance``.
        ValueError, paperzoo.data.DataRequired: the request cannot run (``RunRequest.check``).
    """
    check_request(request, executor)
    root = Path(request.out).resolve()
    plans = plan_papers(
        request, executor=executor, nodes=nodes, gpus_per_node=gpus_per_node, shards=shards
    )
    if (root / STATE_FILE).exists():
        state = LaunchState.load(root)
        state.executor, state.slurm = executor, slurm_options
        for name, p in plans.items():
            if name in state.plans and state.plans[name] != p:
                raise LaunchError(
                    f"{root} holds a launch of {name} with other options: relaunch it with "
                    f"`paperzoo launch --out {root}`, or choose another --out"
                )
            state.plans[name] = p
    else:
        state = LaunchState(root, executor, request.command, plans, slurm=slurm_options)
        state.rule = rule
    seeds = PROTOCOL_SEEDS if state.rule else request.seeds
    for p in plans.values():
        state.add(p.cells(seeds, root))
    state.save()
    return advance(state, jobs=jobs)


def relaunch(
    root: Path,
    *,
    executor: str | None = None,
    slurm_options: SlurmOptions | None = None,
    jobs: int = 1,
    merge_job: bool = False,
) -> Progress:
    """Continue the launch in ``root`` (``paperzoo launch --out DIR``): ``advance`` it, with
    new Slurm options or another executor where given. ``merge_job``: called from the launch's
    own merge job (which is then not cancelled as superseded)."""
    state = LaunchState.load(root.resolve())
    if executor is not None:
        state.executor = executor
    if slurm_options is not None:
        state.slurm = slurm_options
    return advance(state, jobs=jobs, merging=merge_job)


def advance(state: LaunchState, *, jobs: int = 1, merging: bool = False) -> Progress:
    """Submit (or run) the cells that are missing, merge the papers whose cells are done and add
    the seeds the seed rule asks for, until the launch waits for Slurm or is complete.
    ``merging``: called from the launch's merge job (which must not cancel itself).

    Raises:
        LaunchError: Slurm refused a job (one line: sbatch's error), or a merge failed.
    """
    progress = Progress()
    while True:
        todo = [i for i in range(len(state.cells)) if not state.done(i)]
        if state.executor == "slurm":
            found = slurm.queue([state.jobs[i] for i in todo if i in state.jobs])
            active = [i for i in todo if found.get(state.jobs.get(i, ""), ("",))[0] in slurm.ACTIVE]
            missing = [i for i in todo if i not in active]
            if missing or active:
                _submit(state, missing, active, progress, merging=merging)
                progress.waiting = [state.cells[i].id for i in todo]
                return progress
        elif todo:
            statuses = local.run_cells(state, todo, jobs)
            state.save()
            progress.submitted += [state.cells[i].id for i in todo]
            progress.failed = {state.cells[i].id: rc for i, rc in statuses.items() if rc != 0}
            if progress.failed:
                return progress
        new = []
        for name, result in merge_papers(state).items():
            progress.merged[name] = state.root / state.plans[name].out
            if state.rule:
                new += state.add(
                    state.plans[name].cells(more_seeds(result, _cells_of(state, name)), state.root)
                )
        state.save()
        if not new:
            return progress


def _cells_of(state: LaunchState, name: str) -> list[Cell]:
    return [c for c in state.cells if c.paper == name]


def _submit(
    state: LaunchState,
    missing: Sequence[int],
    active: Sequence[int],
    progress: Progress,
    *,
    merging: bool,
) -> None:
    """Submit the cells ``missing`` (one array per paper) and a merge job after them and the
    ``active`` ones, replacing a merge job still queued; every script is checked with
    ``sbatch --test-only`` before anything is submitted."""
    by_paper: dict[str, list[int]] = {}
    for i in missing:
        by_paper.setdefault(state.cells[i].paper, []).append(i)
    scripts_dir = state.work / "scripts"
    for folder in ("logs", "events"):  # (Slurm writes no log into a folder that is not there)
        (state.work / folder).mkdir(parents=True, exist_ok=True)
    n = len(list(scripts_dir.glob("*.sbatch"))) if scripts_dir.is_dir() else 0
    scripts = []
    for k, (paper, indices) in enumerate(by_paper.items()):
        path = scripts_dir / f"{n + k:03d}-{paper}.sbatch"
        scripts.append((slurm.write_script(path, slurm.cell_script(state, indices)), indices))
    for path, _ in scripts:
        slurm.check(path)
    after = [state.jobs[i] for i in active]
    for path, indices in scripts:
        array = slurm.submit(path)
        for i in indices:
            state.jobs[i] = f"{array}_{i}"
        state.save()
        after.append(array)
        progress.jobs.append(array)
        progress.submitted += [state.cells[i].id for i in indices]
    queued = slurm.queue([state.merge_job]) if state.merge_job and not merging else {}
    merge_active = queued.get(state.merge_job or "", ("",))[0] in slurm.ACTIVE
    if merge_active and not missing:
        return  # the merge job already waits for every active cell
    if merge_active and state.merge_job is not None:
        slurm.cancel(state.merge_job)  # superseded: the new one waits for the new cells too
    path = scripts_dir / f"{n + len(scripts):03d}-merge.sbatch"
    state.merge_job = slurm.submit(slurm.write_script(path, slurm.merge_script(state, after)))
    progress.merge_job = state.merge_job
    state.save()


def merge_papers(state: LaunchState) -> dict[str, Result]:
    """Merge each paper whose cells are all done: each seed's shards into the seed's directory,
    then the seeds into the paper's (``merge_dirs``, as ``reproduce --seeds`` does); the merged
    results by paper.

    Raises:
        LaunchError: runs that do not merge (``merge_dirs``' one line).
    """
    from paperzoo.experiments.merging import merge_dirs

    merged = {}
    for name, plan in state.plans.items():
        cells = _cells_of(state, name)
        if not cells or not all(state.done(state.cells.index(c)) for c in cells):
            continue
        seeds = sorted({c.seed for c in cells})
        out = state.root / plan.out
        try:
            if plan.shards:
                for s in seeds:
                    shard_dirs = [state.root / c.out for c in cells if c.seed == s]
                    merge_dirs(shard_dirs, out / f"seed-{s}", command=state.command)
            merged[name] = merge_dirs(
                [out / f"seed-{s}" for s in seeds], out, command=state.command
            )
        except ValueError as err:
            raise LaunchError(f"{name}: {err}") from None
        log.info("%s: seeds %s merged into %s", name, seeds, out)
    return merged


def more_seeds(result: Result, cells: Sequence[Cell]) -> list[int]:
    """The seeds the seed rule adds after ``result`` (the merge of ``cells``:
    ``paperzoo.verdict.next_seeds``) that have no cell yet."""
    import paperzoo.verdict

    have = {c.seed for c in cells}
    return sorted({int(s) for s in paperzoo.verdict.next_seeds(result)} - have)


def default_executor() -> str:
    """``slurm`` where ``sbatch`` is on the PATH, else ``local``."""
    return "slurm" if slurm.available() else "local"


__all__ = [
    "Progress",
    "advance",
    "check_request",
    "default_executor",
    "describe",
    "merge_papers",
    "more_seeds",
    "plan_papers",
    "relaunch",
    "start",
]


def describe(progress: Progress, root: Path) -> str:
    """What ``paperzoo launch`` did, in a few lines."""
    lines = []
    if progress.jobs:
        lines.append(
            f"submitted {len(progress.submitted)} cell(s) as Slurm job array(s) "
            f"{', '.join(progress.jobs)}"
        )
    elif progress.submitted:
        lines.append(f"ran {len(progress.submitted)} cell(s) here")
    if progress.merge_job:
        lines.append(f"merge job {progress.merge_job} runs once every cell is done")
    if progress.waiting and not progress.jobs:
        lines.append(f"{len(progress.waiting)} cell(s) still queued or running")
    for cell, rc in progress.failed.items():
        lines.append(f"failed: {cell} (exit {rc})")
    for name, out in progress.merged.items():
        lines.append(f"{name}: merged into {out}")
    lines.append(f"status: paperzoo status {root}")
    return "".join(f"{line}\n" for line in lines)
