"""Merging runs into one result: seed runs into an aggregate, shards of a grid into one run.

``merge_dirs`` is the one way results are combined (``paperzoo merge``, and ``reproduce
--seeds`` after its seed processes): the runs must be the same run (``check_mergeable``: paper,
scale, version, code, data, setting, part, precision, config, overrides, ``--max-steps``), and
then either

- seed runs at distinct seeds, declaring the same claims and targets, combine claim by claim
  into per-seed values (``aggregate``); a directory holding an aggregate contributes its seed
  runs; or
- shards ``K/N`` of one grid at one seed combine through the experiment's own ``merge``; a set
  that lacks a shard is kept with the missing ones named (it does not count).

What the runs were made from (code, setting, config, overrides), their partial records and the
reasons not to count they carry (``marks``) pass to the merged result. See docs/verdicts.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from paperzoo.verdict.result import ClaimResult, Result, format_seeds, load_result
from paperzoo.verdict.targets import VALIDATION_SEEDS_FROM

__all__ = [
    "aggregate",
    "check_mergeable",
    "check_same_run",
    "combine_partial",
    "data_identity",
    "merge_dirs",
]


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
    from paperzoo.report import write_report

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
    write_report(result, out)
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
    return aggregate(runs, names)


def _merge_shards(
    results: list[Result], dirs: list[Path], out: Path, command: str | None
) -> Result:
    """The shards in ``dirs``, combined by their experiment's ``merge`` into one result that
    names the shards merged (``shards``)."""
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import build_result, get_experiment

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


def data_identity(data: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What makes two runs' data the same: name, sizes, fold and SHA-256 (the directory they
    were read from only where no digest was recorded). Generated data are drawn from the run's
    seed by the package's own code (GG-NN's quick bAbI folds: each seed its own draw, task 18's
    number of test questions too), so their digest and test size differ from seed to seed by
    design and are not compared: the code is (its source digest, ``check_same_run``)."""
    out: list[tuple[Any, ...]] = []
    for d in data:
        if d.get("source") == "generated":
            out.append((d.get("name"), "generated", d.get("n_train"), d.get("fold")))
        elif d.get("sha256"):
            out.append(
                (d.get("name"), d.get("n_train"), d.get("n_test"), d.get("fold"), d["sha256"])
            )
        else:
            out.append(
                (d.get("name"), d.get("source"), d.get("n_train"), d.get("n_test"), d.get("fold"))
            )
    return out


def check_same_run(runs: list[Result], what: str = "runs") -> None:
    """Raise ``ValueError`` (one line) unless ``runs`` share paper, scale, version, code (commit
    and source digest), data, setting, part and precision: what may be merged into one verdict."""
    if not runs:
        raise ValueError("nothing to merge")
    keys = ("paper", "scale", "paperzoo_version", "commit", "source_sha256", "setting_note", "part")
    keys += ("precision",)  # fp32 / tf32 / bf16 runs measure different numerics
    for key in keys:
        values = sorted({str(getattr(r, key)) for r in runs})
        if len(values) > 1:
            shown = ", ".join(v[:16] for v in values)
            raise ValueError(f"{what} must share one {key}, got {shown}")
    first = data_identity(runs[0].data)
    for r in runs[1:]:
        if data_identity(r.data) != first:
            names = sorted({str(d.get("name")) for x in runs for d in x.data})
            raise ValueError(
                f"{what} must read the same data (name, sizes, fold, SHA-256); "
                f"seed {format_seeds(r.seeds)} differs from seed {format_seeds(runs[0].seeds)} "
                f"({', '.join(names)})"
            )


def check_mergeable(runs: list[Result], what: str) -> None:
    """Raise ``ValueError`` (one line) unless ``runs`` may be merged into one result: the same
    run (``check_same_run``) with one config, one set of overrides and one ``--max-steps``.
    ``what`` names them in the message ("seed runs", "shards to merge")."""
    check_same_run(runs, what.removesuffix(" to merge"))
    for key in ("config", "overrides"):
        if any(getattr(r, key) != getattr(runs[0], key) for r in runs[1:]):
            raise ValueError(f"{what} must share one {key} (they ran different settings)")
    caps = sorted({str(r.partial["max_steps"]) if r.partial else "none" for r in runs})
    if len(caps) > 1:
        raise ValueError(f"{what} must share one --max-steps, got {', '.join(caps)}")


def aggregate(runs: list[Result], seed_dirs: list[str] | None = None) -> Result:
    """Combine single-paper runs at different seeds into one result with per-seed values.

    The runs must be of the same code and data (``check_same_run``), declare the same claims
    with the same kinds and targets (targets are fixed before the run), and have distinct seeds.
    The aggregate's ``wall_seconds`` is the sum over the runs.
    """
    if not runs:
        raise ValueError("nothing to aggregate")
    first = runs[0]
    check_mergeable(runs, "seed runs")
    if any(r.shard is not None for r in runs):
        raise ValueError("shards are combined with the experiment's merge, not as seed runs")
    spec = [(c.id, c.kind, c.target) for c in first.claims]
    for r in runs[1:]:
        if [(c.id, c.kind, c.target) for c in r.claims] != spec:
            raise ValueError(
                f"seed {r.seeds} declares other claims or targets than seed {first.seeds}"
            )
    shards = {json.dumps(r.shards, sort_keys=True) for r in runs}
    if len(shards) > 1:
        raise ValueError("seed runs must merge the same shards of one grid (their 'shards' differ)")
    order = sorted(range(len(runs)), key=lambda i: runs[i].seeds)
    runs = [runs[i] for i in order]
    seeds = [s for r in runs for s in r.seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seed runs repeat a seed: {seeds}")
    validation = [s for s in seeds if s >= VALIDATION_SEEDS_FROM]
    if validation and len(validation) < len(seeds):
        raise ValueError(
            f"validation seeds {format_seeds(validation)} (selection runs) cannot be merged with "
            f"test seeds {format_seeds([s for s in seeds if s < VALIDATION_SEEDS_FROM])}"
        )

    def why(r: Result, i: int) -> list[str | None]:
        w = r.claims[i].why_not_measured
        return list(w) if w else [None] * len(r.claims[i].per_seed)

    claims = [
        ClaimResult(
            c.id,
            c.statement,
            c.paper,
            [v for r in runs for v in r.claims[i].per_seed],
            c.target,
            c.kind,
            unverified=c.unverified,
            quoted=c.quoted,
            why_not_measured=[w for r in runs for w in why(r, i)],
        )
        for i, c in enumerate(first.claims)
    ]
    threads = {r.threads for r in runs}
    notes: list[str] = []
    for note in dict.fromkeys(n for r in runs for n in r.notes):
        holders = [r for r in runs if note in r.notes]
        if len(holders) == len(runs):
            notes.append(note)
        else:
            notes.append(
                f"seed {', '.join(map(str, (s for r in holders for s in r.seeds)))}: {note}"
            )
    notes += _seed_notes(runs, seeds)
    return Result(
        paper=first.paper,
        title=first.title,
        scale=first.scale,
        seeds=seeds,
        device=", ".join(sorted({r.device for r in runs})),
        wall_seconds=sum(r.wall_seconds for r in runs),
        paperzoo_version=first.paperzoo_version,
        torch_version=", ".join(sorted({r.torch_version for r in runs})),
        data=first.data,
        claims=claims,
        notes=notes,
        seed_dirs=[seed_dirs[i] for i in order] if seed_dirs else [],
        config=first.config,
        overrides=first.overrides,
        partial=combine_partial([r.partial for r in runs]),
        commit=first.commit,
        source_sha256=first.source_sha256,
        setting_note=first.setting_note,
        part=first.part,
        shards=first.shards,
        marks=list(dict.fromkeys(m for r in runs for m in r.marks)),
        threads=threads.pop() if len(threads) == 1 else None,
        precision=first.precision,
        host="; ".join(dict.fromkeys(r.host for r in runs if r.host)) or None,
    )


def _seed_notes(runs: list[Result], seeds: list[int]) -> list[str]:
    """The paper's notes on its seed runs taken together (``Experiment.seed_notes``); none for a
    paper this installation does not have."""
    from paperzoo.experiments import EXPERIMENTS

    if runs[0].paper not in EXPERIMENTS:
        return []
    return EXPERIMENTS.create(runs[0].paper).seed_notes([r.details for r in runs], seeds)


def combine_partial(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The partial record of runs made one after another (seeds, shards): None if none is
    partial; else the cap, the summed estimate (None if one is unknown) and each run's record."""
    known = [p for p in parts if p is not None]
    if not known:
        return None
    estimates = [p.get("estimate_seconds") for p in known]
    return {
        "max_steps": known[0]["max_steps"],
        "estimate_seconds": None if None in estimates else round(sum(estimates), 1),
        "device": ", ".join(sorted({str(p.get("device")) for p in known})),
        "not_estimated": known[0].get("not_estimated", []),
        "runs": known,
    }
