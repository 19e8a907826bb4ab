"""``paperzoo verify DIR``: every claim of a run re-measured from the final weights stored there.

A run directory holds what its models were when they finished (verified checkpoints,
``paperzoo.engine.checkpoint``) beside the numbers in ``results.json``. Verifying re-runs the
recorded command on a copy of the directory (the weights hard-linked where the filesystem
allows, never written) inside ``checkpoint.evaluation_only``: the path a resume takes when every
model has finished, so models are loaded and evaluated, never trained (a model that must train,
one not finished or one that diverged, makes the run unverifiable: ``VerifyInputError``). The
recomputed values are compared with the stored ones, value by value, for each seed run and for
an aggregate over seeds (its per-seed values against its seed runs' recomputed ones); the
verdicts and means are functions of those values (``paperzoo summary`` re-judges them).

The outcome is recorded in ``DIR/verify.json`` with ``stored_values_sha256`` of the
``results.json`` it checked: a digest of what the weights stand behind (each claim's per-seed
values, the run's seeds, part, config and code identity), not of the verdicts, intervals and
targets judged from them, so a re-decision (``paperzoo summary`` re-judging under the code's
targets) keeps a verification and an edited value loses it. ``verification_flag`` turns the
record into the mark ``paperzoo summary`` shows for a run never verified (or whose values changed
since), or one that failed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paperzoo.utils.io import atomic_write_text

if TYPE_CHECKING:
    from paperzoo.experiments.request import RunRequest
    from paperzoo.verdict import Result

log = logging.getLogger(__name__)

VERIFY_RECORD = "verify.json"
# Values equal within this relative tolerance agree (evaluation on another thread count or BLAS
# may move the last bits of a float; a count or an accuracy is exact).
REL_TOL = 1e-6
# What a copy of a run directory leaves out: what the run wrote from its numbers, and this tool's.
_NOT_COPIED = ("results.json", "report.md", "figures", VERIFY_RECORD, "sessions.json", "log.txt")
# The fields of results.json a verification stands behind, beside each claim's per-seed values.
_VERIFIED_FIELDS = ("paper", "scale", "seeds", "seed", "part", "shard", "config", "overrides",
                    "commit", "source_sha256")  # fmt: skip


class VerifyInputError(ValueError):
    """DIR cannot be verified (not a run, made by other code, weights missing): exit 2."""


@dataclass(frozen=True)
class Difference:
    """One stored value that the weights do not give."""

    where: str  # "seed 0 (DIR/seed-0)", "aggregate (DIR)", "run (DIR)"
    claim: str
    stored: Any
    recomputed: Any

    def line(self) -> str:
        return (
            f"{self.where}: {self.claim}: results.json has {self.stored!r}, the stored weights "
            f"give {self.recomputed!r}"
        )


@dataclass
class Verification:
    """The outcome of verifying one directory."""

    directory: Path
    compared: int = 0  # values compared
    differences: list[Difference] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.differences


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def _compare(stored: Result, values: dict[str, list[Any]], where: str) -> Verification:
    """Compare the per-seed values of ``stored``'s claims with ``values`` (claim id -> values)."""
    out = Verification(Path())
    mine = {c.id: list(c.per_seed) for c in stored.claims}
    for cid in sorted(set(mine) | set(values)):
        got, want = mine.get(cid), values.get(cid)
        if got is None or want is None or len(got) != len(want):
            out.differences.append(Difference(where, cid, got, want))
            continue
        for a, b in zip(got, want, strict=True):
            out.compared += 1
            if not _same(a, b):
                out.differences.append(Difference(where, cid, a, b))
    return out


@contextmanager
def _copy_of(run_dir: Path) -> Iterator[Path]:
    """A temporary copy of ``run_dir`` without what the run wrote from its numbers; weight files
    are hard links where possible (loading never writes them; every write replaces a file)."""

    def link_or_copy(src: str, dst: str) -> object:
        if src.endswith(".safetensors"):
            try:
                os.link(src, dst)
                return dst
            except OSError:
                pass
        return shutil.copy2(src, dst)

    with tempfile.TemporaryDirectory(prefix="paperzoo-verify-") as tmp:
        copy = Path(tmp) / run_dir.name
        from paperzoo.utils.lock import LOCK_NAME

        shutil.copytree(
            run_dir,
            copy,
            ignore=lambda d, names: [
                n for n in names if (Path(d) == run_dir and n in _NOT_COPIED) or n == LOCK_NAME
            ],
            copy_function=link_or_copy,
        )
        yield copy


def recompute(run_dir: Path, request_of: Callable[[str], RunRequest]) -> Result:
    """The result of the run in ``run_dir`` recomputed from its stored weights.

    Args:
        run_dir: a single run's directory (results.json, run.json, its models).
        request_of: the ``RunRequest`` of a recorded command line.

    Raises:
        VerifyInputError: not a run directory, a command or run record that this code would not
            resume, or a model that has no finished checkpoint.
    """
    import torch

    from paperzoo.engine import checkpoint, seed_everything
    from paperzoo.engine.distributed import DistInfo
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.overrides import parse_set
    from paperzoo.experiments.request import resolve_device
    from paperzoo.experiments.runner import (
        RUN_RECORD,
        check_run,
        resolve_config,
        run_experiment,
        run_spec,
    )
    from paperzoo.verdict import load_result

    stored = load_result(run_dir)
    try:
        recorded = json.loads((run_dir / RUN_RECORD).read_text())
    except (OSError, ValueError) as err:
        raise VerifyInputError(f"{run_dir / RUN_RECORD} cannot be read ({err})") from None
    if not stored.command or len(stored.seeds) != 1:
        raise VerifyInputError(f"{run_dir}/results.json records no command of a single seed run")
    try:
        request = request_of(stored.command)
    except (ValueError, SystemExit) as err:
        raise VerifyInputError(
            f"{run_dir}: its recorded command cannot be repeated ({err}): {stored.command}"
        ) from None
    name, seed = stored.paper, stored.seeds[0]
    overrides = parse_set(list(request.overrides))
    device = resolve_device(request.device)
    with _copy_of(run_dir) as copy:
        # (never --restart: that would clear the weights it is to evaluate)
        ctx = replace(request.context(name, seed, copy, DistInfo(), device), restart=False)
        dataset = check_run(get_experiment(name), ctx)
        spec = run_spec(name, ctx, resolve_config(name, ctx.scale, overrides), dataset)
        if json.dumps(spec, sort_keys=True) != json.dumps(recorded, sort_keys=True):
            from paperzoo.experiments.runner import _diff

            diff = "; ".join(_diff(recorded, spec)[:3])
            raise VerifyInputError(
                f"{run_dir} was made by other code or settings than this paperzoo repeats "
                f"({diff}): verify it with the code that made it"
            )
        if request.threads:
            torch.set_num_threads(request.threads)
        seed_everything(seed)
        try:
            with checkpoint.evaluation_only():
                return run_experiment(name, ctx, overrides)
        except checkpoint.CheckpointError as err:
            raise VerifyInputError(str(err).replace(str(copy), str(run_dir))) from None


def _seed_runs(directory: Path, stored: Result) -> list[tuple[int, Path]]:
    """(seed, directory) of an aggregate's seed runs; empty for a single run."""
    if not stored.seed_dirs:
        return []
    runs = [
        (s, (directory / d).resolve()) for s, d in zip(stored.seeds, stored.seed_dirs, strict=False)
    ]
    missing = [str(d) for _, d in runs if not (d / "results.json").is_file()]
    if len(runs) != len(stored.seeds) or missing:
        raise VerifyInputError(
            f"{directory} is an aggregate whose seed runs are not all there "
            f"(missing: {', '.join(missing) or 'their names'})"
        )
    return runs


def verify_dir(directory: Path, request_of: Callable[[str], RunRequest]) -> Verification:
    """Recompute every claim of the run (or aggregate over seeds) in ``directory`` from its stored
    weights, compare with its results.json, and record the outcome in ``verify.json``.

    Args:
        directory: a run directory, or an aggregate's (its seed runs in the folders it names).
        request_of: the ``RunRequest`` of a recorded command line.

    Returns:
        Every value compared and every one that differs.

    Raises:
        VerifyInputError, ValueError: ``directory`` cannot be verified (one line).
    """
    from paperzoo.verdict import load_result

    if not (directory / "results.json").is_file():
        raise VerifyInputError(f"{directory} holds no results.json: not a paperzoo run directory")
    stored = load_result(directory)
    outcome = Verification(directory)
    seeds = _seed_runs(directory, stored)
    if seeds:
        by_claim: dict[str, list[Any]] = {}
        for seed, run_dir in seeds:
            values = {c.id: list(c.per_seed) for c in recompute(run_dir, request_of).claims}
            part = _compare(load_result(run_dir), values, f"seed {seed} ({run_dir})")
            outcome.compared += part.compared
            outcome.differences += part.differences
            _record(run_dir, part)
            for cid, v in values.items():
                by_claim.setdefault(cid, []).extend(v)
        part = _compare(stored, by_claim, f"aggregate ({directory})")
    else:
        values = {c.id: list(c.per_seed) for c in recompute(directory, request_of).claims}
        part = _compare(stored, values, f"run ({directory})")
    outcome.compared += part.compared
    outcome.differences += part.differences
    _record(directory, outcome)
    return outcome


def stored_values_sha256(results_json: Path) -> str:
    """SHA-256 of what a verification of ``results_json`` checks: every claim's id and per-seed
    values and the run's identity (``_VERIFIED_FIELDS``), as canonical JSON. The verdicts,
    intervals, targets and headlines judged from them are left out.

    Raises:
        OSError, ValueError: the file cannot be read or is not a results.json object.
    """
    data = json.loads(results_json.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ValueError(f"{results_json} is not a paperzoo results.json")
    stored = {k: data.get(k) for k in _VERIFIED_FIELDS}
    claims = [[str(c.get("id")), c.get("per_seed")] for c in data["claims"] if isinstance(c, dict)]
    stored["claims"] = sorted(claims, key=lambda c: c[0])
    canonical = json.dumps(stored, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _record(directory: Path, outcome: Verification) -> None:
    from paperzoo.provenance import code_identity

    record = {
        "passed": outcome.passed,
        "stored_values_sha256": stored_values_sha256(directory / "results.json"),
        "compared": outcome.compared,
        "differences": [d.line() for d in outcome.differences],
        "commit": code_identity().get("commit"),
        "verified_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    atomic_write_text(
        directory / VERIFY_RECORD, json.dumps(record, indent=2) + "\n", what="the verification"
    )


def verification_flag(directory: Path | None) -> str | None:
    """The mark ``paperzoo summary`` shows for the run in ``directory``: None when its stored
    values passed ``paperzoo verify`` and are unchanged since (a re-decision changes none of
    them); else why not."""
    if directory is None:
        return None
    try:
        record = json.loads((directory / VERIFY_RECORD).read_text())
        current = stored_values_sha256(directory / "results.json")
    except (OSError, ValueError):
        record, current = None, None
    if not isinstance(record, dict) or record.get("stored_values_sha256") != current:
        return "stored values never verified against the weights (paperzoo verify)"
    if not record.get("passed"):
        n = len(record.get("differences") or [])
        return f"failed verification: {n} stored value(s) differ from the weights (verify.json)"
    return None
