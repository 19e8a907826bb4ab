"""Runs a registered experiment and writes its report.

A run records what it is (``run.json`` in its output directory: paper, scale, seed, resolved config,
data, and the code: commit and source digest) before it trains; its models checkpoint under the
same directory. A rerun of the same command with the same ``--out`` and the same code therefore
resumes: finished models are loaded, unfinished ones continue from their last checkpoint. A
different command, other code (another commit, a dirty tree made clean, any source change) or
other data files pointed at that directory is refused: models trained by other code must not
end up in a result labelled with this code. ``--restart`` starts such a directory over. Every
checkpoint the run writes records the digest of its record (``run_digest``: the whole resolved
config, the seed, the code and the data), and one that records another is refused.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from paperzoo.engine import budget, checkpoint, tensorboard
from paperzoo.engine import precision as num_precision
from paperzoo.engine.distributed import check_shared_dir
from paperzoo.experiments.base import Experiment, Outcome, RunContext
from paperzoo.experiments.judging import judge
from paperzoo.experiments.lookup import EXPERIMENTS, get_experiment
from paperzoo.experiments.overrides import apply_overrides, config_to_dict
from paperzoo.report import write_report
from paperzoo.utils.io import atomic_write_text, find_files
from paperzoo.utils.lock import LOCK_NAME
from paperzoo.verdict import ClaimResult, Result, check_measurement

log = logging.getLogger(__name__)


def build_result(
    exp: Experiment, outcome: Outcome, ctx: RunContext, wall: float, *, ran: Result | None = None
) -> Result:
    """Pair each claim declared at the run's scale (and part) with its measurement. A claim the
    run reported no value for is recorded as not measured, with the reason naming the metrics
    the run did report (a misspelt id shows there); a value reported for a claim not declared
    there is left out of the judged claims and named in the notes. A boolean measured against a
    numeric target (or the reverse) is an error naming the claim. The result names what ran: the code
    (``paperzoo.provenance``), the data, the setting and the part; for a result made from other
    runs (the shards ``paperzoo.experiments.merging.merge_dirs`` combines), ``ran`` is one of them, and the
    code, setting, config and overrides are the ones it ran."""
    from paperzoo import __version__
    from paperzoo.provenance import code_identity, host_identity

    specs = exp.claims_at(ctx)
    outcome = _declared_only(exp, outcome, ctx)
    for c in specs:
        check_measurement(c.target_at(ctx.scale), _plain(outcome.measured[c.id]), c.id)
    code = {"commit": ran.commit, "source_sha256": ran.source_sha256} if ran else code_identity(exp)
    claims = [
        ClaimResult(
            c.id,
            c.statement,
            c.paper,
            [_plain(outcome.measured[c.id])],
            c.target_at(ctx.scale),
            c.kind,
            unverified=c.unverified,
            quoted=c.quoted,
            why_not_measured=[outcome.why_not_measured[c.id]]
            if c.id in outcome.why_not_measured
            else None,
        )
        for c in specs
    ]
    return Result(
        paper=exp.name,
        title=exp.title,
        scale=ctx.scale,
        seeds=[ctx.seed],
        device=ctx.device,
        wall_seconds=wall,
        paperzoo_version=__version__,
        torch_version=torch.__version__.split("+")[0],
        data=[d.to_dict() for d in outcome.data],
        claims=claims,
        figures=outcome.figures,
        notes=outcome.notes,
        details=outcome.details,
        shard=ctx.shard,
        commit=code["commit"],
        source_sha256=code["source_sha256"],
        setting_note=ran.setting_note if ran else exp.setting_note(ctx),
        config=dict(ran.config) if ran else {},
        overrides=dict(ran.overrides) if ran else {},
        part=ctx.part,
        command=ctx.command,
        precision=ctx.precision,
        host=host_identity(ctx.device),
        threads=torch.get_num_threads(),
    )


def _declared_only(exp: Experiment, outcome: Outcome, ctx: RunContext) -> Outcome:
    """``outcome`` with a value (None) and a reason for every claim declared at the run's scale
    that it did not measure, and without the values of claims not declared there (named in a
    note and a warning instead)."""
    from dataclasses import replace

    declared = [c.id for c in exp.claims_at(ctx)]
    reported = sorted(outcome.measured)
    unknown = [k for k in reported if k not in declared]
    missing = [k for k in declared if k not in outcome.measured]
    if not unknown and not missing:
        return outcome
    where = f"{ctx.scale}, part {ctx.part}" if ctx.part else ctx.scale
    measured = {k: v for k, v in outcome.measured.items() if k not in unknown}
    why = dict(outcome.why_not_measured)
    notes = list(outcome.notes)
    for cid in missing:
        measured[cid] = None
        why[cid] = f"the run reported no metric {cid}; it reported: {', '.join(reported) or 'none'}"
        log.warning("%s: claim %s is not measured: %s", exp.name, cid, why[cid])
    if unknown:
        note = (
            f"reported but not declared at {where}, so not judged: {', '.join(unknown)} "
            "(a claim id misspelt in run or in claims?)"
        )
        notes.append(note)
        log.warning("%s: %s", exp.name, note)
    return replace(outcome, measured=measured, why_not_measured=why, notes=notes)


def _plain(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        v = v.item()
    if isinstance(v, bool) or v is None:
        return v
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
    return v if isinstance(v, bool | int) else float(v)


def resolve_config(name: str, scale: str, overrides: Mapping[str, str] | None = None) -> Any:
    """The config experiment ``name`` runs at ``scale`` with ``--set`` ``overrides`` applied."""
    return apply_overrides(get_experiment(name).config(scale), overrides or {})


RUN_RECORD = "run.json"


class RunMismatchError(ValueError):
    """The output directory holds (checkpoints of) a different run."""


def run_spec(name: str, ctx: RunContext, cfg: Any, dataset: str | None) -> dict[str, Any]:
    """What decides a run's numbers (not the device or thread count): the resumable identity."""
    from paperzoo.experiments.flags import recorded_flags
    from paperzoo.provenance import code_identity

    spec: dict[str, Any] = {"paper": name, "seed": ctx.seed, "dataset": dataset}
    # the options that make it another run (the table's ``record``): the scale, the data root,
    # the papers' options, the shard, the part, a step cap, the precision
    spec |= recorded_flags(ctx)
    spec["config"] = config_to_dict(cfg)
    # models trained by other code are never resumed: the paper's package (and, for a paper of an
    # installed package, the paperzoo that trains it)
    spec["code"] = dict(code_identity(get_experiment(name)))
    if spec["code"] != code_identity():
        spec["paperzoo_code"] = dict(code_identity())
    spec["data_files"] = data_files_digest(ctx.data_root)
    return spec


def run_digest(spec: dict[str, Any]) -> str:
    """The SHA-256 of a run's ``run_spec``: the identity its checkpoints record
    (``paperzoo.engine.checkpoint.run_identity``)."""
    import hashlib

    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def data_files_digest(data_root: Path | str | None, max_files: int = 50_000) -> str | None:
    """A digest of the files under ``data_root`` (relative path, size, modification time),
    or None without one: what a resumed run must find unchanged. Generated and embedded data are
    identified by the code and config instead. Above ``max_files`` files (ImageNet) only their
    count and total size are digested. Contents are not read here: a full run's files are
    checked against their pinned digests (``paperzoo.data.layouts``)."""
    import hashlib

    if data_root is None:
        return None
    root = Path(data_root).resolve()
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if len(files) > max_files:
        total = sum(p.stat().st_size for p in files)
        h.update(f"{len(files)} files, {total} bytes".encode())
        return h.hexdigest()
    for p in files:
        st = p.stat()
        h.update(f"{p.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _diff(old: Any, new: Any, key: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new))
            for d in _diff(old.get(k), new.get(k), f"{key}.{k}")
        ]
    same = json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)  # NaN == NaN
    return [] if same else [f"{key.lstrip('.')} {old!r} -> {new!r}"]


def _has_state(out_dir: Path, *papers: object) -> bool:
    """Whether ``out_dir`` holds something a run would resume from: checkpoints, or the records
    of finished models that ``papers`` keep (``Experiment.resume_state``; names that are not
    registered papers add nothing)."""
    if not out_dir.is_dir():
        return False
    patterns = ["**/checkpoints/latest.json"]
    for paper in papers:
        if isinstance(paper, str) and paper in EXPERIMENTS:
            patterns += get_experiment(paper).resume_state
    return any(next(find_files(out_dir, p), None) is not None for p in patterns)


def claim_out_dir(out_dir: Path, spec: dict[str, Any]) -> bool:
    """Record ``spec`` in ``out_dir/run.json``; True if the directory holds this run to resume.

    Raises:
        RunMismatchError: ``out_dir`` holds checkpoints of a different run, or checkpoints
            without a record.
    """
    record = out_dir / RUN_RECORD
    old: Any = None
    paper = spec.get("paper")
    if record.exists():
        try:
            old = json.loads(record.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            if _has_state(out_dir, paper):
                raise RunMismatchError(
                    f"{record} is corrupt ({err}): its checkpoints cannot be checked against "
                    "this command; choose another --out or delete the directory"
                ) from None
        if json.dumps(old, sort_keys=True) == json.dumps(spec, sort_keys=True):
            return True
    # the state of this paper, and of the paper whose record the directory holds
    if _has_state(out_dir, paper, old.get("paper") if isinstance(old, dict) else None):
        if old is None:
            raise RunMismatchError(
                f"--out {out_dir} holds checkpoints without a {RUN_RECORD} (a run of an older "
                "paperzoo) that cannot be checked against this command: choose another --out "
                "or delete the directory"
            )
        if isinstance(old, dict) and old.get("max_steps") != spec.get("max_steps"):
            had, has = old.get("max_steps"), spec.get("max_steps")
            raise RunMismatchError(
                f"--out {out_dir} holds checkpoints of "
                + (f"a partial run (--max-steps {had})" if had else "a run without --max-steps")
                + (f", not of one with --max-steps {has}" if has else ", not of a complete one")
                + ": choose another --out or delete the directory"
            )
        if isinstance(old, dict) and old.get("code") != spec.get("code"):
            owner = _code_owner(paper)
            raise RunMismatchError(
                f"--out {out_dir} holds checkpoints made by other code of {owner} "
                f"({_code(old.get('code'))}), not by this code of it ({_code(spec.get('code'))}): "
                "resume with the code that started it, choose another --out, or add --restart "
                "to start over"
            )
        if isinstance(old, dict) and old.get("data_files") != spec.get("data_files"):
            raise RunMismatchError(
                f"--out {out_dir} holds checkpoints trained on other data files (digest "
                f"{str(old.get('data_files'))[:12]}, now {str(spec.get('data_files'))[:12]} under "
                f"{spec.get('data_root')}): choose another --out, or add --restart to start over"
            )
        diff = _diff(old, spec)
        raise RunMismatchError(
            f"--out {out_dir} holds checkpoints of a different run ({'; '.join(diff[:4])}"
            f"{'; ...' if len(diff) > 4 else ''}): to resume it repeat its command; "
            "otherwise choose another --out or delete the directory"
        )
    # nothing to resume: ours now
    atomic_write_text(record, json.dumps(spec, indent=2) + "\n", what="the run record")
    return False


def _code(code: Any) -> str:
    """A run record's code as a message names it: ``commit 1a4d5126a0c3, source digest
    9f2c...``; ``no git commit (...)`` for code outside a clean git checkout."""
    if not isinstance(code, dict):
        return "unrecorded: a run of an older paperzoo"
    digest = f"source digest {str(code.get('source_sha256'))[:12]}"
    commit = code.get("commit")
    if commit is None:
        return f"no git commit (a changed tree or no git checkout); {digest}"
    return f"commit {commit}, {digest}"


def _code_owner(paper: object) -> str:
    """Whose code a run record's ``code`` identifies: ``paperzoo`` for the papers built in, else
    the paper's own package (``paper my-paper's package my_paper``)."""
    from paperzoo.provenance import PACKAGE_DIR, package_dir

    if not isinstance(paper, str) or paper not in EXPERIMENTS:
        return "paperzoo"
    where = package_dir(get_experiment(paper))
    if where == PACKAGE_DIR:
        return "paperzoo"
    name = where.stem if where.suffix == ".py" else where.name
    return f"paper {paper}'s package {name} ({where})"


def clear_run(out_dir: Path, paper: str | None = None) -> None:
    """``--restart``: remove what a run of ``paper`` left in ``out_dir`` (its record,
    checkpoints, finished models, results and figures); other files (a seed's ``log.txt``) stay.

    Raises:
        RunMismatchError: ``out_dir`` holds checkpoints but no run record (not a paperzoo run
            directory, or an older one): nothing is deleted.
    """
    import shutil

    if not out_dir.is_dir():
        return
    if not (out_dir / RUN_RECORD).exists() and _has_state(out_dir, paper):
        raise RunMismatchError(
            f"--restart: {out_dir} holds checkpoints without a {RUN_RECORD}; it is not cleared "
            "(delete it yourself or choose another --out)"
        )
    for p in out_dir.iterdir():
        if p.name in ("log.txt", LOCK_NAME):
            continue
        for again in (False, True):  # another rank's probe folder (check_out_dir) may go now
            try:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p)
                else:
                    p.unlink(missing_ok=True)
                break
            except FileNotFoundError:
                if again:
                    raise
    log.info("--restart: cleared %s", out_dir)


def plan_line(exp: Experiment, cfg: Any, ctx: RunContext, *, shown: int = 6) -> str | None:
    """One line saying how many models and training steps the run has (``Experiment.plan``),
    e.g. ``perceiver (quick): 7 models, 17,600 training steps in all: perceiver_raster 2,800,
    ...``; the first ``shown`` models are named; "up to" when ``exp.plan_upper_bound``. None when
    the experiment declares no plan."""
    plan = exp.plan(cfg, ctx)
    if not plan:
        return None
    total = sum(steps for _, steps in plan)
    bound = "up to " if exp.plan_upper_bound else ""
    parts = [f"{what} {steps:,}" for what, steps in plan[:shown]]
    if len(plan) > shown:
        parts.append(f"... ({len(plan) - shown} more)")
    return (
        f"{exp.name} ({ctx.scale}): {len(plan):,} model{'s' if len(plan) != 1 else ''}, "
        f"{bound}{total:,} training steps in all: {', '.join(parts)}"
    )


def check_run(exp: Experiment, ctx: RunContext) -> str | None:
    """Validate ``--dataset`` and ``--part`` and make sure a full run's paper data are there,
    before anything is written to ``ctx.out_dir``; returns the data set name (None: generated).

    Raises:
        paperzoo.data.DataRequired: a full run's data are not under ``ctx.data_root``.
        ValueError: an unsupported ``--dataset`` or an unknown ``--part``.
    """
    dataset = exp.dataset_name(ctx)
    exp.part_prefix(ctx)
    exp.require_data(ctx)
    return dataset


def run_experiment(
    name: str, ctx: RunContext, overrides: Mapping[str, str] | None = None
) -> Result:
    """Run experiment ``name`` at ``ctx.scale``; rank 0 writes results.json and report.md.

    A rerun with the same ``ctx.out_dir`` resumes (see the module docstring).

    Raises:
        RunMismatchError: ``ctx.out_dir`` holds another run.
    """
    exp = get_experiment(name)
    cfg = resolve_config(name, ctx.scale, overrides)
    dataset = check_run(exp, ctx)
    spec = run_spec(name, ctx, cfg, dataset)
    if ctx.restart and ctx.dist.is_main:
        clear_run(Path(ctx.out_dir), name)
    resumed = ctx.dist.is_main and claim_out_dir(Path(ctx.out_dir), spec)
    # Under torchrun: every rank sees rank 0's --out, and reads it only once rank 0 has cleared
    # (--restart) and claimed it
    check_shared_dir(Path(ctx.out_dir))
    if resumed:
        log.info("%s: resuming the run in %s", name, ctx.out_dir)
    log.info("reproducing %s at scale %s (seed %d)", name, ctx.scale, ctx.seed)
    line = plan_line(exp, cfg, ctx)
    if line:
        log.info("%s", line)
    with (
        SessionClock(Path(ctx.out_dir), resumed, enabled=ctx.dist.is_main) as clock,
        tensorboard.requested(ctx.tensorboard),  # --tensorboard: the Trainers write event files
        checkpoint.run_identity(run_digest(spec)),  # checkpoints of another run are refused
    ):
        result = _run_and_build(exp, cfg, ctx, overrides, clock)
    if ctx.dist.is_main:
        write_report(result, ctx.out_dir, judge(result, ctx.out_dir))
    return result


SESSIONS = "sessions.json"


class SessionClock:
    """The wall time of a run over all its sessions: a resumed run's ``wall_seconds`` counts the
    sessions before it too. ``OUT/sessions.json`` lists ``[start, end]`` (Unix seconds) per
    session; the running session's end is refreshed every ``every`` seconds, so that a session
    killed outright (SIGKILL) still counts up to its last refresh."""

    def __init__(self, out_dir: Path, resumed: bool, *, enabled: bool = True, every: float = 30.0):
        self.path, self.enabled, self.every = out_dir / SESSIONS, enabled, every
        self.before: list[list[float]] = []
        if enabled and resumed:
            try:
                self.before = [list(map(float, x)) for x in json.loads(self.path.read_text())]
            except (OSError, ValueError, TypeError):
                log.warning(
                    "%s is missing or unreadable: earlier sessions' time not counted", self.path
                )
        self.start = time.time()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _write(self) -> None:
        sessions = [*self.before, [self.start, time.time()]]
        try:
            atomic_write_text(self.path, json.dumps(sessions) + "\n")
        except OSError as err:  # the clock never stops a run
            log.warning("cannot record the session's time in %s: %s", self.path, err)

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._write()

    def __enter__(self) -> SessionClock:
        if self.enabled:
            self._write()
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled:
            self._write()

    @property
    def earlier(self) -> float:
        """Seconds of the sessions before this one."""
        return sum(max(0.0, end - start) for start, end in self.before)

    @property
    def sessions(self) -> int:
        return len(self.before) + 1


def _run_and_build(
    exp: Experiment,
    cfg: Any,
    ctx: RunContext,
    overrides: Mapping[str, str] | None,
    clock: SessionClock,
) -> Result:
    start = time.perf_counter()
    if ctx.max_steps is None:
        with num_precision.using(ctx.precision, ctx.device):
            outcome = run_or_diverge(exp, cfg, ctx)
        wall = time.perf_counter() - start
        partial = None
    else:
        capped = budget.capped(budget.StepBudget(ctx.max_steps, ctx.device))
        with capped as steps, num_precision.using(ctx.precision, ctx.device):
            outcome = run_or_diverge(exp, cfg, ctx)
        wall = time.perf_counter() - start
        partial = steps.summary(wall)
        partial["device"] = ctx.device
        partial["not_estimated"] = list(exp.not_estimated)
    if clock.before:
        outcome.notes.append(
            f"resumed: {clock.sessions} sessions, {clock.earlier:.0f} s before this one "
            "(counted in wall_seconds)"
        )
    result = build_result(exp, outcome, ctx, wall + clock.earlier)
    result.partial = partial
    result.config = config_to_dict(cfg)
    result.overrides = dict(overrides or {})
    return result


def run_or_diverge(exp: Experiment, cfg: Any, ctx: RunContext) -> Outcome:
    """``exp.run(cfg, ctx)``; a loss that became NaN or infinite and was not handled by the
    experiment (which may record one model's divergence itself, ``Outcome.why_not_measured``)
    ends the run with every claim "not measured (diverged at step N)" instead of a traceback, so
    that the seed is recorded as it ran and not swapped for another."""
    from paperzoo.engine import NonFiniteLossError

    try:
        return exp.run(cfg, ctx)
    except NonFiniteLossError as err:
        elsewhere = " (on another rank)" if err.elsewhere else ""
        why = f"diverged at step {err.step}: loss {err.value}{elsewhere}"
        log.warning(
            "%s seed %d: %s; every claim is recorded as not measured", exp.name, ctx.seed, why
        )
        claims = exp.claims_at(ctx)
        return Outcome(
            measured={c.id: None for c in claims},
            notes=[f"the run {why}; its claims are not measured (the seed is kept, not replaced)"],
            why_not_measured={c.id: why for c in claims},
        )
