"""Runs a registered experiment and writes its report."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from paperzoo.experiments.base import EXPERIMENTS, Experiment, Outcome, RunContext
from paperzoo.experiments.overrides import apply_overrides, config_to_dict
from paperzoo.report import ClaimResult, Result, aggregate, load_result, write_report

log = logging.getLogger(__name__)


def get_experiment(name: str) -> Experiment:
    """The registered experiment ``name`` (importing every experiment module first)."""
    import paperzoo.experiments  # noqa: F401  (registers all experiments)

    return EXPERIMENTS.create(name)


def build_result(exp: Experiment, outcome: Outcome, ctx: RunContext, wall: float) -> Result:
    """Pair each declared claim with its measurement; a claim left unmeasured is an error."""
    from paperzoo import __version__

    declared = {c.id for c in exp.claims}
    unknown = sorted(set(outcome.measured) - declared)
    missing = sorted(declared - set(outcome.measured))
    if unknown or missing:
        raise RuntimeError(
            f"{exp.name}: measured claims do not match the declared ones "
            f"(undeclared: {unknown}, unmeasured: {missing})"
        )
    claims = [
        ClaimResult(
            c.id,
            c.statement,
            c.paper,
            [_plain(outcome.measured[c.id])],
            c.target_at(ctx.scale),
            c.kind,
        )
        for c in exp.claims
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
    )


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


def run_experiment(
    name: str, ctx: RunContext, overrides: Mapping[str, str] | None = None
) -> Result:
    """Run experiment ``name`` at ``ctx.scale``; rank 0 writes results.json and report.md."""
    exp = get_experiment(name)
    cfg = resolve_config(name, ctx.scale, overrides)
    exp.dataset_name(ctx)  # validate --dataset before any work
    log.info("reproducing %s at scale %s (seed %d)", name, ctx.scale, ctx.seed)
    start = time.perf_counter()
    outcome = exp.run(cfg, ctx)
    result = build_result(exp, outcome, ctx, time.perf_counter() - start)
    result.config = config_to_dict(cfg)
    result.overrides = dict(overrides or {})
    if ctx.dist.is_main:
        write_report(result, ctx.out_dir)
    return result


class SeedRunError(RuntimeError):
    """A seed's process of a multi-seed run exited with an error."""


def run_seeds(
    name: str,
    seeds: list[int],
    out_dir: Path,
    *,
    jobs: int = 1,
    threads: int = 1,
    child_args: list[str] | None = None,
) -> Result:
    """Run experiment ``name`` once per seed, ``jobs`` processes at a time, and aggregate.

    Each seed runs as ``python -m paperzoo reproduce NAME --seed S --out OUT/seed-S --threads T``
    (plus ``child_args``: scale, data and device flags) with its log in ``OUT/seed-S/log.txt``;
    the aggregate ``results.json`` / ``report.md`` (per-seed values, mean, std, verdicts) go to
    ``OUT``. The aggregate is exactly what ``paperzoo merge OUT/seed-*`` writes.

    Raises:
        SeedRunError: a seed's process failed (the message names its log).
    """
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    out_dir = Path(out_dir).resolve()
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}

    def one(seed: int) -> tuple[int, int, float]:
        seed_dir = out_dir / f"seed-{seed}"
        seed_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "paperzoo", "reproduce", name, "--seed", str(seed)]
        cmd += ["--out", str(seed_dir), "--threads", str(threads), *(child_args or [])]
        start = time.perf_counter()
        with open(seed_dir / "log.txt", "w") as logf:
            rc = subprocess.call(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env)
        wall = time.perf_counter() - start
        log.info("%s seed %d finished in %.0f s (exit %d)", name, seed, wall, rc)
        return seed, rc, wall

    log.info(
        "%s: %d seeds, %d at a time, %d thread(s) each; logs in %s/seed-S/log.txt",
        name, len(seeds), jobs, threads, out_dir,
    )  # fmt: skip
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(one, seeds))
    failed = [(s, rc) for s, rc, _ in done if rc != 0]
    if failed:
        logs = ", ".join(
            f"seed {s} (exit {rc}): {out_dir / f'seed-{s}' / 'log.txt'}" for s, rc in failed
        )
        raise SeedRunError(f"{name}: seed runs failed: {logs}")
    return aggregate_dirs([out_dir / f"seed-{s}" for s in seeds], out_dir)


def aggregate_dirs(seed_dirs: list[Path], out_dir: Path) -> Result:
    """Aggregate the single-seed runs in ``seed_dirs`` into ``out_dir`` (results.json, report.md).

    A directory that itself holds an aggregate (it lists ``seed_dirs``) contributes its seed runs.
    """
    runs: list[Result] = []
    names: list[str] = []
    out_dir = Path(out_dir).resolve()
    for d in seed_dirs:
        res = load_result(d)
        parts = [Path(d) / s for s in res.seed_dirs] if res.seed_dirs else [Path(d)]
        for part in parts:
            runs.append(load_result(part) if res.seed_dirs else res)
            names.append(os.path.relpath(Path(part).resolve(), out_dir))
    result = aggregate(runs, names)
    write_report(result, out_dir)
    return result
