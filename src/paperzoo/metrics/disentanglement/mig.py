"""Mutual Information Gap (Chen, Li, Grosse, Duvenaud 2018, "Isolating Sources of Disentanglement").

Eq. 6 (beta-TCVAE paper): MIG = 1/K sum_k (I(z_j(k); v_k) - max_{j != j(k)} I(z_j; v_k)) / H(v_k),
with j(k) = argmax_j I(z_j; v_k). As in disentanglement_lib (and the abstract-reasoning study), the
codes are discretised into 20 equal-width bins per latent and I is the plug-in discrete estimate.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from paperzoo.metrics.disentanglement.utils import (
    check_codes_factors,
    discrete_entropy,
    discrete_mutual_info,
    histogram_discretize,
)


def mig_per_factor(
    codes: np.ndarray | Tensor, factors: np.ndarray | Tensor, *, num_bins: int = 20
) -> np.ndarray:
    """The normalised gap between the two most informative latents, per factor.

    Shapes:
        codes (N, D), factors (N, F) -> (F,)
    """
    c, f = check_codes_factors(codes, factors)
    if c.shape[1] < 2:
        raise ValueError("MIG needs at least two latent dimensions")
    m = discrete_mutual_info(histogram_discretize(c, num_bins), f)  # (D, F)
    top = -np.sort(-m, axis=0)  # descending per factor
    return (top[0] - top[1]) / discrete_entropy(f)


def mig(codes: np.ndarray | Tensor, factors: np.ndarray | Tensor, *, num_bins: int = 20) -> float:
    """Mutual information gap averaged over factors (disentanglement_lib's ``discrete_mig``)."""
    return float(np.mean(mig_per_factor(codes, factors, num_bins=num_bins)))
