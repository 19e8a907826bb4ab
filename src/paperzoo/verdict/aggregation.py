"""The rules of merging runs into one result, on results given in memory.

Runs may be merged only when they are the same run (``check_mergeable``: paper, scale, version,
code, data, setting, part, precision, config, overrides, ``--max-steps``). Seed runs at distinct
seeds, declaring the same claims and targets, combine claim by claim into per-seed values
(``aggregate``). What the runs were made from, their partial records (``combine_partial``) and
the reasons not to count they carry (``marks``) pass to the merged result.

Reading run directories and writing the merged one (``paperzoo merge``, ``reproduce --seeds``),
and shards combined through the experiment's own ``merge``, belong to the run layer:
``paperzoo.experiments.merging.merge_dirs``. See docs/verdicts.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from paperzoo.verdict.result import ClaimResult, Result, format_seeds
from paperzoo.verdict.targets import VALIDATION_SEEDS_FROM

__all__ = [
    "SeedNotes",
    "aggregate",
    "check_mergeable",
    "check_same_run",
    "combine_partial",
    "data_identity",
]

# The paper's notes on its seed runs taken together: (each run's details, the seeds) -> notes
SeedNotes = Callable[[list[dict[str, Any]], list[int]], list[str]]


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


def aggregate(
    runs: list[Result],
    seed_dirs: list[str] | None = None,
    *,
    seed_notes: SeedNotes | None = None,
) -> Result:
    """Combine single-paper runs at different seeds into one result with per-seed values.

    The runs must be of the same code and data (``check_same_run``), declare the same claims
    with the same kinds and targets (targets are fixed before the run), and have distinct seeds.
    The aggregate's ``wall_seconds`` is the sum over the runs; ``seed_notes`` (the paper's
    ``Experiment.seed_notes``) adds notes on the seed runs taken together.
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
    if seed_notes is not None:
        notes += seed_notes([r.details for r in runs], seeds)
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
