"""Runs a registered experiment and writes its report."""

from __future__ import annotations

import logging
import time
from typing import Any

import torch

from paperzoo.experiments.base import EXPERIMENTS, Experiment, Outcome, RunContext
from paperzoo.report import ClaimResult, Result, write_report

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
        ClaimResult(c.id, c.statement, c.paper, _plain(outcome.measured[c.id]), c.target)
        for c in exp.claims
    ]
    return Result(
        paper=exp.name,
        title=exp.title,
        scale=ctx.scale,
        seed=ctx.seed,
        device=ctx.device,
        wall_seconds=wall,
        paperzoo_version=__version__,
        torch_version=torch.__version__.split("+")[0],
        data=[d.to_dict() for d in outcome.data],
        claims=claims,
        figures=outcome.figures,
        notes=outcome.notes,
        details=outcome.details,
    )


def _plain(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        v = v.item()
    if isinstance(v, bool) or v is None:
        return v
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
    return v if isinstance(v, bool | int) else float(v)


def run_experiment(name: str, ctx: RunContext) -> Result:
    """Run experiment ``name`` at ``ctx.scale``; rank 0 writes results.json and report.md."""
    exp = get_experiment(name)
    cfg = exp.config(ctx.scale)
    exp.dataset_name(ctx)  # validate --dataset before any work
    log.info("reproducing %s at scale %s (seed %d)", name, ctx.scale, ctx.seed)
    start = time.perf_counter()
    outcome = exp.run(cfg, ctx)
    result = build_result(exp, outcome, ctx, time.perf_counter() - start)
    if ctx.dist.is_main:
        write_report(result, ctx.out_dir)
    return result
