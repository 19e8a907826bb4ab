"""Interventional Robustness Score (Suter, Miladinovic, Schoelkopf, Bauer, ICML 2019).

"Robustly Disentangled Causal Mechanisms: Validating Deep Representations for Interventional
Robustness" (arXiv 1811.00007), computed as disentanglement_lib does (the anchor:
``evaluation/metrics/irs.py``, ``compute_irs`` and ``scalable_disentanglement_score``; the formula
below follows the anchor line by line, the paper's own notation was not checked here). The factors
are discretised (20 equal-width histogram bins per factor: the study's ``discretizer`` setting in
``unsupervised_study_v1/metric_configs/irs.gin``), latents with zero variance are dropped, and for
every active latent j and factor i

    dev_ji = 1/|V_i| sum_{v in V_i} Q_q(|z_j - E[z_j | g_i = v]| over the samples with g_i = v),
    IRS_ji = 1 - dev_ji / max_n |z_j(n) - E[z_j]|,

with Q_q the q-quantile (numpy's linear interpolation; q = 0.99 is the anchor's default, and its
docstring says q = 1.0 is "the version in the paper"). A latent's score is max_i IRS_ji (its
"parent" is the argmax), and the IRS is the mean of the latents' scores weighted by their
normalisers max_n |z_j(n) - E[z_j]|. Without an active latent the score is 0, as in the anchor.

Vectorised over samples: one stable sort per factor puts the samples of each factor value in a
contiguous slice, the group means are one ``bincount`` per latent (the anchor's sequential sums, so
equal to its ``np.mean`` to the last bit), and each group's quantile is one ``np.partition`` of its
slice, instead of a boolean mask over all samples and a full ``np.percentile`` per group.

Deviations from the anchor: ``num_active_dims`` is the number of latents with non-zero variance
(the anchor returns ``np.sum(active_mus)``, the sum of the active codes' values, under that name);
``num_bins=None`` keeps the factor values as they are (the anchor's test binds an identity
discretiser for this); non-finite codes are refused.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from torch import Tensor

from paperzoo.metrics.disentanglement.utils import (
    check_codes_factors,
    check_finite,
    histogram_discretize,
)


class IRSScores(NamedTuple):
    irs: float  # the weighted mean of the per-latent scores (0.0 without active latents)
    num_active_dims: int  # latents with non-zero variance (the only ones scored)
    per_latent: np.ndarray  # (A,) max_i IRS_ji of every active latent
    parents: np.ndarray  # (A,) the factor i attaining it
    matrix: np.ndarray  # (A, F) IRS_ji = 1 - PIDA_ji
    max_deviations: np.ndarray  # (A,) the normalisers (and the weights of the mean)


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's quantile interpolation (``numpy.lib._function_base_impl._lerp``): a + t (b - a),
    computed from b when t >= 0.5 (so that t = 1 gives b exactly)."""
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1.0 - t), a + diff * t)


def group_quantile_deviation(
    latents: np.ndarray, groups: np.ndarray, quantile: float
) -> np.ndarray:
    """EMPIDA of every latent for one factor: the mean over the factor's values v of the
    ``quantile`` of |z - E[z | g = v]| over the samples with g = v.

    Args:
        latents: (N, D) float64 codes.
        groups: (N,) labels of one factor (any integers).
        quantile: q in [0, 1] (numpy's "linear" method).

    Returns:
        (D,) the mean of the per-value quantiles.
    """
    _, g = np.unique(groups, return_inverse=True)
    g = g.reshape(-1)
    cnt = np.bincount(g)
    n_groups, d = len(cnt), latents.shape[1]
    # E[z | g] in the anchor's arithmetic (a sequential sum over the group's rows, then / count).
    sums = np.stack([np.bincount(g, weights=latents[:, j], minlength=n_groups) for j in range(d)])
    means = sums / cnt  # (D, G)
    order = np.argsort(g, kind="stable")  # each group's samples in one contiguous slice
    diffs = np.ascontiguousarray(np.abs(latents[order].T - means[:, g[order]]))  # (D, N)
    starts = np.cumsum(cnt) - cnt
    h = (cnt - 1) * quantile  # numpy's virtual index (method "linear")
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, cnt - 1)
    t = h - lo
    total = np.zeros(d)
    for k in range(n_groups):  # one partial sort per factor value, on a contiguous slice
        seg = diffs[:, starts[k] : starts[k] + cnt[k]]
        part = np.partition(seg, (lo[k], hi[k]), axis=1) if cnt[k] > 1 else seg
        total += _lerp(part[:, lo[k]], part[:, hi[k]], t[k])
    return total / n_groups


def irs_from_codes(
    latents: np.ndarray, factors: np.ndarray, *, diff_quantile: float = 0.99
) -> IRSScores:
    """IRS of already discretised factors (disentanglement_lib's ``scalable_disentanglement_score``).

    Args:
        latents: (N, D) float64 codes, every latent with non-zero variance.
        factors: (N, F) discrete factor labels.
        diff_quantile: the quantile of the within-group deviations (1.0: the paper's maximum).

    Returns:
        IRSScores over the D latents.
    """
    max_dev = np.max(np.abs(latents - latents.mean(axis=0)), axis=0)  # (D,)
    cum = np.stack(
        [
            group_quantile_deviation(latents, factors[:, i], diff_quantile)
            for i in range(factors.shape[1])
        ],
        axis=1,
    )  # (D, F)
    matrix = 1.0 - cum / max_dev[:, None]
    per_latent = matrix.max(axis=1)
    if np.sum(max_dev) > 0.0:
        score = float(np.average(per_latent, weights=max_dev))
    else:
        score = float(np.mean(per_latent))
    return IRSScores(score, latents.shape[1], per_latent, matrix.argmax(axis=1), matrix, max_dev)


def irs_scores(
    codes: np.ndarray | Tensor,
    factors: np.ndarray | Tensor,
    *,
    diff_quantile: float = 0.99,
    num_bins: int | None = 20,
) -> IRSScores:
    """The Interventional Robustness Score with its per-latent parts.

    Args:
        codes: (N, D) representations (disentanglement_lib: 10,000 points).
        factors: (N, F) integer ground-truth factors.
        diff_quantile: q in [0, 1]; 0.99 is disentanglement_lib's default, 1.0 the paper's max.
        num_bins: the factors are discretised into this many equal-width histogram bins
            (disentanglement_lib's study setting: 20); None keeps the factor values.

    Returns:
        IRSScores (the score, the number of active latents and the per-latent arrays over the
        active latents).
    """
    c, f = check_codes_factors(codes, factors)
    check_finite(c, "codes")
    if not 0.0 <= diff_quantile <= 1.0:
        raise ValueError(f"diff_quantile must lie in [0, 1], got {diff_quantile}")
    if len(c) < 1:
        raise ValueError("IRS needs at least one sample")
    if num_bins is not None:
        if num_bins < 1:
            raise ValueError(f"num_bins must be a positive integer or None, got {num_bins}")
        f = histogram_discretize(f, num_bins)
    active = c.var(axis=0) > 0.0  # the anchor's _drop_constant_dims
    if not active.any():
        empty = np.zeros(0)
        return IRSScores(
            0.0, 0, empty, np.zeros(0, dtype=np.int64), np.zeros((0, f.shape[1])), empty
        )
    return irs_from_codes(c[:, active], f, diff_quantile=diff_quantile)


def irs(
    codes: np.ndarray | Tensor,
    factors: np.ndarray | Tensor,
    *,
    diff_quantile: float = 0.99,
    num_bins: int | None = 20,
) -> float:
    """The Interventional Robustness Score of ``codes`` (N, D) w.r.t. ``factors`` (N, F).

    Args:
        codes: (N, D) representations.
        factors: (N, F) integer ground-truth factors.
        diff_quantile: see ``irs_scores``.
        num_bins: see ``irs_scores``.

    Returns:
        The IRS in [0, 1] (0.0 when every latent is constant).
    """
    return irs_scores(codes, factors, diff_quantile=diff_quantile, num_bins=num_bins).irs
