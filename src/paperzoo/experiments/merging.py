"""Merging run directories into one: seed runs into an aggregate, shards of a grid into one run.

``merge_dirs`` is the one way results are combined (``paperzoo merge``, and ``reproduce
--seeds`` after its seed processes): the runs must be the same run
(``paperzoo.verdict.check_mergeable``: paper, scale, version, code, data, setting, part,
precision, config, overrides, ``--max-steps``), and then either

- seed runs at distinct seeds, declaring the same claims and targets, combine claim by claim
  into per-seed values (``paperzoo.verdict.aggregate``, with the paper's ``seed_notes``); a
  directory holding an aggregate contributes its seed runs; or
- shards ``K/N`` of one grid at one seed combine through the experiment's own ``merge``; a set
  that lacks a shard is kept with the missing ones named (it does not count).

The merged run is written with its decision (``judging.judge``) like any other run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from paperzoo.experiments.base import RunContext
from paperzoo.experiments.judging import judge
from paperzoo.experiments.lookup import EXPERIMENTS, get_experiment
from paperzoo.experiments.runner import build_result
from paperzoo.report import write_report
from paperzoo.verdict import (
    Result,
    aggregate,
    check_mergeable,
    combine_partial,
    format_seeds,
    load_result,
)

__all__ = ["merge_dirs"]


def merge_dirs(
    dirs: Sequence[str | Path], out: str | Path, *, command: str | None = None
) -> Result:
    """Merge the runs in ``dirs`` into ``out`` (results.json, report.md) and return the result.

    Args:
        dirs: run directories of one paper and scale: seed runs (or aggregates of seed runs),
            or shards of one grid.
        out: where the merged result is written (shards: also the experiment's figures).
        command: the command line recorded in the result.

    Raises:
        ValueError: a directory without a readable results.json, or runs that may not be merged
            (one line naming why).
    """
    results = [load_result(d) for d in dirs]
    papers = {r.paper for r in results}
    scales = {r.scale for r in results}
    if len(papers) != 1 or len(scales) != 1:
        raise ValueError(
            "runs to merge must come from one paper and scale, got "
            f"{sorted(papers)} / {sorted(scales)}"
        )
    sharded = {r.shard is not None for r in results}
    if sharded == {False}:
        result = _merge_seeds(results, [Path(d) for d in dirs], Path(out))
    elif sharded == {True}:
        result = _merge_shards(results, [Path(d) for d in dirs], Path(out), command)
    else:
        raise ValueError("cannot merge shards of a grid with whole runs")
    result.command = command
    write_report(result, out, judge(result, out))
    return result


def _merge_seeds(results: list[Result], dirs: list[Path], out: Path) -> Result:
    """The aggregate of the seed runs in ``dirs``; an aggregate among them contributes its seed
    runs. ``seed_dirs`` name them relative to ``out``."""
    runs: list[Result] = []
    names: list[str] = []
    where = out.resolve()
    for res, d in zip(results, dirs, strict=True):
        parts = [d / s for s in res.seed_dirs] if res.seed_dirs else [d]
        for part in parts:
            runs.append(load_result(part) if res.seed_dirs else res)
            names.append(os.path.relpath(part.resolve(), where))
    exp = EXPERIMENTS.create(runs[0].paper) if runs[0].paper in EXPERIMENTS else None
    return aggregate(runs, names, seed_notes=exp.seed_notes if exp is not None else None)


def _merge_shards(
    results: list[Result], dirs: list[Path], out: Path, command: str | None
) -> Result:
    """The shards in ``dirs``, combined by their experiment's ``merge`` into one result that
    names the shards merged (``shards``)."""
    check_mergeable(results, "shards to merge")
    grid = {r.shard[1] for r in results if r.shard is not None}
    merged = sorted(r.shard[0] for r in results if r.shard is not None)
    if len(grid) != 1 or len(set(merged)) != len(merged):
        raise ValueError(
            "shards to merge must come from one grid (one N in --shard K/N) and be distinct, got "
            + ", ".join(f"{r.shard[0]}/{r.shard[1]}" for r in results if r.shard is not None)
        )
    first = results[0]
    exp = get_experiment(first.paper)
    if len({tuple(r.seeds) for r in results}) > 1:
        raise ValueError(
            "shards to merge must come from one seed, got seeds "
            + ", ".join(
                f"{format_seeds(r.seeds)} ({d})" for r, d in zip(results, dirs, strict=True)
            )
        )
    raw = [json.loads((d / "results.json").read_text()) for d in dirs]
    ctx = RunContext(
        scale=first.scale,
        seed=first.seeds[0],
        out_dir=out,
        part=first.part,
        command=command,
        precision=first.precision,  # check_mergeable: every shard ran at it
    )
    try:
        outcome = exp.merge(raw, ctx)
    except (KeyError, TypeError, ValueError) as err:  # shards whose details are not as written
        raise ValueError(
            f"cannot merge the shards in {', '.join(map(str, dirs))}: {err!r}"
        ) from None
    wall = sum(r.wall_seconds for r in results)
    return replace(
        build_result(exp, outcome, ctx, wall, ran=first),  # what ran is what the shards ran
        partial=combine_partial([r.partial for r in results]),
        shards={"n": grid.pop(), "merged": merged},
        marks=list(dict.fromkeys(m for r in results for m in r.marks)),
    )
