"""Modularity (Ridgeway & Mozer 2018, "Learning Deep Disentangled Embeddings With the F-Statistic Loss").

Sec. 3: a latent is modular if it carries information about one factor only. With m_if the mutual
information between (discretised) latent i and factor f and theta_i = max_f m_if,
delta_i = sum_{f != argmax} m_if^2 / (theta_i^2 (F - 1)) and modularity = mean_i (1 - delta_i);
latents with no information (theta_i = 0) score 0, as in disentanglement_lib.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from paperzoo.metrics.disentanglement.utils import (
    check_codes_factors,
    discrete_mutual_info,
    histogram_discretize,
)


def modularity_from_mi(mutual_information: np.ndarray) -> float:
    """Modularity from a (D, F) mutual-information matrix."""
    sq = np.square(mutual_information)
    top = sq.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = (sq.sum(axis=1) - top) / (top * (sq.shape[1] - 1.0))
    score = np.where(top == 0.0, 0.0, 1.0 - delta)
    return float(np.mean(score))


def modularity(
    codes: np.ndarray | Tensor, factors: np.ndarray | Tensor, *, num_bins: int = 20
) -> float:
    """Modularity score of ``codes`` (N, D) w.r.t. ``factors`` (N, F) (20 histogram bins)."""
    c, f = check_codes_factors(codes, factors)
    if f.shape[1] < 2:
        raise ValueError("modularity needs at least two factors")
    return modularity_from_mi(discrete_mutual_info(histogram_discretize(c, num_bins), f))
