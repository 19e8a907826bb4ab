"""Judging runs against what this paperzoo declares: the run layer's side of ``counts``.

``paperzoo.verdict.counts`` decides whether a run counts from what it is given; this module
gives it what the code declares (``declare``: each paper's claims and config at a scale, from
``EXPERIMENTS``), finds the runs a folder holds (``run_dirs``), and records the decision where
a reader meets it (``record_decision``: results.json and report.md, rewritten by ``make
summary`` for every committed run whenever the decision changes).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paperzoo.experiments.base import RAN_BEFORE, RunContext
from paperzoo.experiments.lookup import EXPERIMENTS
from paperzoo.experiments.overrides import config_to_dict
from paperzoo.verdict import (
    DECISION_KEYS,
    Count,
    Declared,
    DeclaredClaim,
    Result,
    counts,
)

__all__ = [
    "VALIDATION_FOLDER",
    "declare",
    "judge",
    "judge_runs",
    "record_decision",
    "record_decisions",
    "run_dirs",
    "with_decision",
]

# Runs over validation seeds live in this sub-folder of a folder of runs (results/validation/).
VALIDATION_FOLDER = "validation"


def declare(paper: str, scale: str, part: str | None) -> Declared:
    """What the code declares for ``paper`` at ``scale`` (and ``part``): its claims with their
    targets at that scale, and its config as results.json records one.

    Raises:
        LookupError: a paper this paperzoo does not declare.
        ValueError: a scale or part the paper does not declare (one line).
    """
    if paper not in EXPERIMENTS:
        raise LookupError(paper)
    exp = EXPERIMENTS.create(paper)
    specs = exp.claims_at(RunContext(scale=scale, part=part))
    cfg = exp.config(scale)
    claims = tuple(
        DeclaredClaim(
            s.id,
            s.statement,
            s.paper,
            s.kind,
            s.target_at(scale),
            s.unverified,
            s.quoted,
            s.diagnosis_at(scale),
        )
        for s in specs
    )
    return Declared(claims=claims, config=config_to_dict(cfg), ran_before=_ran_before(cfg))


def _ran_before(cfg: Any) -> dict[str, Any]:
    """The ``added_later`` fields of a config (nested configs as nested dicts): field -> the
    value runs made before the field existed ran with."""
    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        return {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        if RAN_BEFORE in f.metadata:
            out[f.name] = config_to_dict(f.metadata[RAN_BEFORE])
        elif nested := _ran_before(getattr(cfg, f.name)):
            out[f.name] = nested
    return out


def judge(result: Result, run_dir: str | Path | None = None) -> Count:
    """``paperzoo.verdict.counts`` against what this paperzoo declares (``declare``)."""
    return counts(result, declare=declare, run_dir=run_dir)


def judge_runs(results: Sequence[Result], dirs: Sequence[str | Path | None]) -> list[Count]:
    """The decision for each of ``results`` (in ``dirs``): each run is decided on its own."""
    return [judge(r, d) for r, d in zip(results, dirs, strict=True)]


def record_decisions(dirs: Sequence[str | Path], *, write: bool = True) -> list[Path]:
    """Record in results.json and report.md of every run in ``dirs``, and of every run inside
    one (an aggregate's seed runs, a seed's shards), the decision ``judge_runs`` takes for it;
    the files that changed (``write=False``: that would change, nothing written)."""
    from paperzoo.verdict import load_result

    results = [load_result(d) for d in dirs]
    runs: list[tuple[Path, Count]] = []
    for d, count in zip(dirs, judge_runs(results, dirs), strict=True):
        runs.append((Path(d), count))
        for inner in sorted(Path(d).rglob("results.json")):
            if inner.parent != Path(d):
                runs.append((inner.parent, judge(load_result(inner.parent), inner.parent)))
    changed: list[Path] = []
    for d, count in runs:
        changed += record_decision(d, count, write=write)
    return changed


def run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """The run directories that ``paths`` name: a directory holding results.json is a run; a
    directory without one is a folder of runs, read as the sub-directories that hold one and
    those of its ``validation/`` folder (runs over validation seeds), in name order.

    Raises:
        ValueError: a path that does not exist, is not a directory, or holds no run (one line
            naming it).
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise ValueError(f"{p}: no such directory")
        if not p.is_dir():
            raise ValueError(f"{p} is a file, not a run directory (one holding results.json)")
        if (p / "results.json").is_file():
            out.append(p)
            continue
        found = _runs_in(p) + _runs_in(p / VALIDATION_FOLDER)
        if not found:
            raise ValueError(f"{p} holds no results.json and no run directories")
        out += found
    return out


def _runs_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [d for d in sorted(folder.iterdir()) if (d / "results.json").is_file()]


def with_decision(raw: dict[str, Any], count: Count) -> dict[str, Any]:
    """``raw`` (a results.json as read) with the decision keys replaced by ``count``'s
    (``Count.record``) where ``Result.to_dict`` puts them, each claim's verdict and interval
    (``_DERIVED``) as re-judged, and its marks recorded; every measurement, target and other key
    as it was."""
    decision = count.record()
    judged = {c.id: c.to_dict() for c in count.result.claims}
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if k in DECISION_KEYS or k == "marks":
            continue
        if k == "claims":
            v = [_rejudged_claim(c, judged.get(c.get("id"))) for c in v]
        if k == "findings_holding":
            out.update(decision)
        out[k] = v
        if k == ("shards" if "shards" in raw else "shard") and count.result.marks:
            out["marks"] = list(count.result.marks)
    if "findings_holding" not in raw:
        out.update(decision)
    return out


# The keys of a claim in results.json that are computed from its per-seed values and target.
# the verdict and, after it in this order, how it was decided
_VERDICT = ("verdict", "n", "interval", "interval_of", "level", "method", "look")
_DERIVED = ("mean", "std", "holds_on", *_VERDICT, "holds")


def _rejudged_claim(raw: dict[str, Any], judged: dict[str, Any] | None) -> dict[str, Any]:
    """A stored claim with its derived keys (``_DERIVED``) as re-judged, in ``to_dict``'s order
    after ``verdict``; a claim no longer declared is kept as stored."""
    if judged is None:
        return raw
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if k in _DERIVED and k != "verdict":
            if k in judged:
                out[k] = judged[k]
            continue
        if k == "verdict":
            out |= {d: judged[d] for d in _VERDICT if d in judged}
            continue
        out[k] = v
    out |= {d: judged[d] for d in _DERIVED if d in judged and d not in out}
    return out


def record_decision(run_dir: str | Path, count: Count, *, write: bool = True) -> list[Path]:
    """Record ``count`` (the decision for the run in ``run_dir``) in its results.json and
    report.md, leaving every measurement as it is; the files that changed (``write=False``:
    that would change, nothing written)."""
    from paperzoo.report import render_markdown
    from paperzoo.utils.io import atomic_write_text

    d = Path(run_dir)
    raw = json.loads((d / "results.json").read_text(encoding="utf-8"))
    texts = {
        d / "results.json": json.dumps(with_decision(raw, count), indent=2) + "\n",
        d / "report.md": render_markdown(count),
    }
    changed = []
    for path, text in texts.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            if write:
                atomic_write_text(path, text)
            changed.append(path)
    return changed
