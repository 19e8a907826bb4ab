"""The disentanglement study over the grid: which items a shard and a rank train
(``grid_items``, ``shard_items``), and what the items' records say together (``summarize``: the
sanity checks on the ground-truth and random codes, and the Spearman rank correlations between
each score and WReN's test accuracy at each step count, the paper's Fig. 4).

Protocol: docs/disentanglement.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from paperzoo.engine.distributed import DistInfo
from paperzoo.experiments.grid import rank_slice, shard_slice
from paperzoo.papers.disentanglement.config import (
    CLAIMS,
    GROUND_TRUTH_ID,
    METRICS,
    RANDOM_ID,
    SANITY_GT,
    STUDY_FINDING_METRICS,
    Config,
)

# -- grid slicing -----------------------------------------------------------------------------------


def grid_items(cfg: Config) -> list[str]:
    """Every item of the grid, in a fixed order."""
    return [GROUND_TRUTH_ID, RANDOM_ID, *(s.id for s in cfg.models)]


def shard_items(
    items: list[str], shard: tuple[int, int] | None, dist: DistInfo
) -> tuple[list[str], list[str]]:
    """(items of this shard, items of this process): item i of the grid goes to shard i mod N, and
    item j of a shard to rank j mod world_size."""
    mine = shard_slice(items, shard)
    return mine, rank_slice(mine, dist)


# -- summary ----------------------------------------------------------------------------------------


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 with ties sharing their average rank."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for v in np.unique(x):
        tie = x == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson correlation of tie-averaged ranks); None if undefined."""
    if len(x) < 3:
        return None
    rx, ry = _ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    return None if denom == 0.0 else float((rx * ry).sum() / denom)


def _acc_at(record: dict[str, Any], step: int) -> float | None:
    wren = record["wren"]
    return wren["test_acc"][wren["steps"].index(step)] if step in wren["steps"] else None


def summarize(records: list[dict[str, Any]], cfg: Config) -> tuple[dict[str, Any], dict[str, Any]]:
    """(measured claims, details) from the per-item records (any subset of the grid); items
    whose training diverged are left out (``details["diverged"]``, when there are any: item ->
    what diverged)."""
    diverged = {r["id"]: r["diverged"] for r in records if r.get("diverged")}
    records = [r for r in records if r["id"] not in diverged]
    by_id = {r["id"]: r for r in records}
    gt, rnd = by_id.get(GROUND_TRUTH_ID), by_id.get(RANDOM_ID)
    vaes = [r for r in records if r.get("kind") == "vae"]
    last = max(cfg.wren_steps)
    measured: dict[str, Any] = {c.id: None for c in CLAIMS}
    if gt is not None:
        for m, _, _ in SANITY_GT:
            measured[f"metrics.ground_truth_representation.{m}"] = gt["metrics"][m]
        measured["wren.ground_truth.test_acc"] = _acc_at(gt, last)
    if rnd is not None:
        chance = rnd["chance"]  # 1 / number of factors
        mm = rnd["metrics"]
        for m in ("beta_vae", "factor_vae"):  # two-sided: |score - chance|
            measured[f"metrics.random_representation.{m}_off_chance"] = abs(mm[m] - chance)
        for m in ("mig", "dci", "sap"):
            measured[f"metrics.random_representation.{m}"] = mm[m]
        measured["wren.random_code.test_acc"] = _acc_at(rnd, last)
    if gt is not None and rnd is not None:
        measured["metrics.ground_truth_representation.sap_minus_random"] = (
            gt["metrics"]["sap"] - rnd["metrics"]["sap"]
        )
        measured["metrics.ground_truth_representation.modularity_minus_noise"] = (
            gt["metrics"]["modularity"] - rnd["modularity_noise"]["mean"]
        )
    measured["study.num_models"] = len(vaes)
    table: dict[str, dict[str, float | None]] = {m: {} for m in METRICS}
    for step in cfg.wren_steps:
        pairs = [(r, _acc_at(r, step)) for r in vaes]
        pairs = [(r, a) for r, a in pairs if a is not None]
        for m in METRICS:
            table[m][str(step)] = spearman(
                [r["metrics"][m] for r, _ in pairs], [a for _, a in pairs]
            )
    early = str(min(cfg.wren_steps))
    for m in METRICS:
        measured[f"study.spearman.{m}.early"] = table[m][early]
    recon = table["reconstruction"][early]
    for m in STUDY_FINDING_METRICS:
        rho = table[m][early]
        measured[f"study.spearman.{m}_minus_reconstruction.early"] = (
            None if rho is None or recon is None else rho - recon
        )
    details = {
        "spearman": table,
        "wren_steps": list(cfg.wren_steps),
        "records": records,
    }
    if diverged:
        details["diverged"] = diverged
    return measured, details
