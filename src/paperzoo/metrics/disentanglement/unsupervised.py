"""Unsupervised scores of a representation: disentanglement_lib's ``unsupervised_metrics``.

The four scores of disentanglement_lib's ``evaluation/metrics/unsupervised_metrics.py`` (the
anchor), computed from codes alone (no factors). With Sigma the sample
covariance of the codes (``np.cov``, ddof 1) and diag(Sigma) its diagonal:

* Gaussian total correlation: the KL divergence between N(0, Sigma) and the product of its
  marginals N(0, diag(Sigma)), 1/2 (sum_j log Sigma_jj - log det Sigma) (the anchor's
  ``gaussian_total_correlation``);
* Gaussian Wasserstein correlation: the squared 2-Wasserstein distance between the same two
  Gaussians, 2 tr(Sigma) - 2 tr((diag(Sigma) Sigma)^(1/2)) (the anchor's
  ``gaussian_wasserstein_correlation``; the anchor takes ``scipy.linalg.sqrtm`` of
  ``Sigma * diag(Sigma)[:, None]``, i.e. of diag(Sigma) Sigma);
* its normalised form, divided by tr(Sigma);
* the mutual-information score: the codes discretised into 20 equal-width histogram bins per
  latent, the plug-in mutual information of every pair of distinct latents (nats), summed and
  divided by D^2 - D.

How it is computed: tr((diag(Sigma) Sigma)^(1/2)) is the sum of the square roots of the
eigenvalues of the symmetric positive semi-definite S = diag(Sigma)^(1/2) Sigma diag(Sigma)^(1/2)
(diag(Sigma) Sigma = diag(Sigma)^(1/2) S diag(Sigma)^(-1/2) has the same eigenvalues, and the
principal square root's trace is the sum of their square roots), so ``eigvalsh`` replaces the
anchor's general (Schur) ``sqrtm``: a real result, with negative rounding eigenvalues clipped at 0.
The mutual information of all pairs comes from ``discrete_mutual_info`` (equal to
``sklearn.metrics.mutual_info_score`` per pair to rounding) instead of D^2 scikit-learn calls.

Deviations from the anchor, where its value is not a number: a latent with zero variance is left
out of the total correlation (a constant coordinate is independent of the others, so the KL
divergence is that of the remaining latents; the anchor computes log 0 - log 0 = NaN), and a
covariance that is not positive definite among the remaining latents (e.g. duplicated latents)
gives a total correlation of +inf (the anchor gives +inf when ``slogdet`` finds a zero
determinant, and the log of |det| when rounding makes it negative). The normalised Wasserstein
correlation of codes whose latents are all constant is NaN (0 / 0), as in the anchor.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from torch import Tensor

from paperzoo.data.ground_truth import as_numpy_codes
from paperzoo.metrics.disentanglement.utils import (
    check_codes,
    check_finite,
    discrete_mutual_info,
    histogram_discretize,
)


class UnsupervisedScores(NamedTuple):
    gaussian_total_correlation: float
    gaussian_wasserstein_correlation: float
    gaussian_wasserstein_correlation_norm: float  # ... divided by tr(Sigma)
    mutual_info_score: float  # mean mutual information (nats) over pairs of distinct latents


def _check_cov(cov: np.ndarray) -> np.ndarray:
    c = np.asarray(cov, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] < 1:
        raise ValueError(f"a covariance matrix must be square (D, D), got shape {c.shape}")
    check_finite(c, "the covariance matrix")
    if np.any(np.diag(c) < 0.0):
        raise ValueError("a covariance matrix must have a non-negative diagonal")
    return c


def gaussian_total_correlation(cov: np.ndarray) -> float:
    """Total correlation of N(0, cov): KL(N(0, cov) || N(0, diag(cov))).

    Args:
        cov: (D, D) covariance matrix.

    Returns:
        1/2 (sum_j log cov_jj - log det cov) over the latents with non-zero variance (nats);
        +inf when their covariance is not positive definite.
    """
    c = _check_cov(cov)
    keep = np.diag(c) > 0.0
    if not keep.any():
        return 0.0
    c = c[np.ix_(keep, keep)]
    sign, logdet = np.linalg.slogdet(c)
    if sign <= 0.0 or not np.isfinite(logdet):
        return float("inf")
    return float(0.5 * (np.sum(np.log(np.diag(c))) - logdet))


def gaussian_wasserstein_correlation(cov: np.ndarray) -> float:
    """Squared 2-Wasserstein distance between N(0, cov) and N(0, diag(cov)).

    Args:
        cov: (D, D) covariance matrix.

    Returns:
        2 tr(cov) - 2 tr((diag(cov) cov)^(1/2)).
    """
    c = _check_cov(cov)
    root = np.sqrt(np.diag(c))
    s = c * root[:, None] * root[None, :]  # diag^(1/2) cov diag^(1/2), symmetric PSD
    eig = np.linalg.eigvalsh((s + s.T) / 2.0)
    return float(2.0 * np.trace(c) - 2.0 * np.sum(np.sqrt(np.clip(eig, 0.0, None))))


def unsupervised(codes: np.ndarray | Tensor, *, num_bins: int = 20) -> UnsupervisedScores:
    """disentanglement_lib's four unsupervised scores of ``codes`` (N, D).

    Args:
        codes: (N, D) representations (disentanglement_lib's configs: 10,000 points), N >= 2,
            D >= 2, finite.
        num_bins: equal-width histogram bins per latent for the mutual-information score (the
            study's ``discretizer.num_bins``: 20).

    Returns:
        UnsupervisedScores(gaussian_total_correlation, gaussian_wasserstein_correlation,
        gaussian_wasserstein_correlation_norm, mutual_info_score).
    """
    c = as_numpy_codes(codes)
    check_finite(c, "codes")
    n, d = c.shape
    if n < 2:
        raise ValueError(f"the unsupervised scores need at least two codes, got {n}")
    c = check_codes(c)  # refuses (D, N) codes passed transposed
    if d < 2:
        raise ValueError(f"the unsupervised scores need at least two latent dimensions, got {d}")
    if num_bins < 1:
        raise ValueError(f"num_bins must be a positive integer, got {num_bins}")
    cov = np.cov(c.T)  # (D, D), as the anchor's np.cov of the (D, N) codes
    tc = gaussian_total_correlation(cov)
    wc = gaussian_wasserstein_correlation(cov)
    trace = float(np.sum(np.diag(cov)))
    wc_norm = wc / trace if trace > 0.0 else float("nan")
    disc = histogram_discretize(c, num_bins)
    mi = discrete_mutual_info(disc, disc)  # (D, D)
    np.fill_diagonal(mi, 0.0)
    return UnsupervisedScores(tc, wc, wc_norm, float(np.sum(mi) / (d * d - d)))
