"""disentanglement_lib's unsupervised scores: hand-computed covariances, the anchor's published
tests, the anchor's formulas (scipy's sqrtm, scikit-learn's mutual information) and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch
from sklearn.metrics import mutual_info_score

from paperzoo.metrics.disentanglement import (
    gaussian_total_correlation,
    gaussian_wasserstein_correlation,
    histogram_discretize,
    unsupervised,
)


def test_hand_computed_two_by_two() -> None:
    """cov = [[a, c], [c, b]]: TC = 1/2 log(ab / (ab - c^2)); the eigenvalues l1, l2 of
    diag^(1/2) cov diag^(1/2) = [[a^2, c sqrt(ab)], [c sqrt(ab), b^2]] give
    (sqrt l1 + sqrt l2)^2 = a^2 + b^2 + 2 sqrt(ab (ab - c^2)), so
    W = 2 (a + b) - 2 sqrt(a^2 + b^2 + 2 sqrt(ab (ab - c^2)))."""
    a, b, c = 4.0, 1.0, 1.0
    cov = np.array([[a, c], [c, b]])
    assert gaussian_total_correlation(cov) == pytest.approx(0.5 * np.log(4 / 3), rel=1e-12)
    w = 2 * (a + b) - 2 * np.sqrt(a**2 + b**2 + 2 * np.sqrt(a * b * (a * b - c**2)))
    assert gaussian_wasserstein_correlation(cov) == pytest.approx(w, rel=1e-12)
    rho = np.array([[1.0, 0.9], [0.9, 1.0]])  # unit variances: W = 4 - 2 (sqrt 1.9 + sqrt 0.1)
    assert gaussian_total_correlation(rho) == pytest.approx(-0.5 * np.log(1 - 0.81), rel=1e-12)
    w = 4 - 2 * (np.sqrt(1.9) + np.sqrt(0.1))
    assert gaussian_wasserstein_correlation(rho) == pytest.approx(w, rel=1e-12)


def kl_gaussians(mean_0, cov_0, mean_1, cov_1) -> float:
    """KL(N0 || N1) by its textbook formula (the anchor's kl_gaussians_numerically_unstable)."""
    inv_1 = np.linalg.inv(cov_1)
    dm = mean_1 - mean_0
    k = len(mean_0)
    return 0.5 * (
        np.trace(inv_1 @ cov_0)
        + dm @ inv_1 @ dm
        - k
        + np.log(np.linalg.det(cov_1) / np.linalg.det(cov_0))
    )


def test_disentanglement_lib_published_tests() -> None:
    """unsupervised_metrics_test.py: both scores within 0.01 of 0 for the identity covariance and
    of the reference formulas for [[1, 0.9], [0.9, 1]] (float32 there)."""
    eye = np.diag(np.ones(5))
    assert -0.01 <= gaussian_total_correlation(eye) <= 0.01
    assert -0.01 <= gaussian_wasserstein_correlation(eye) <= 0.01
    cov = np.array([[1, 0.9], [0.9, 1.0]], dtype=np.float32)
    central = np.diag(np.diag(cov))
    should = kl_gaussians(np.zeros(2), cov.astype(float), np.zeros(2), central.astype(float))
    assert should - 0.01 <= gaussian_total_correlation(cov) <= should + 0.01
    should = np.trace(cov + central - 2 * scipy.linalg.sqrtm(cov @ central)).real
    assert should - 0.01 <= gaussian_wasserstein_correlation(cov) <= should + 0.01


def test_equals_the_anchor_formulas_on_random_covariances() -> None:
    rng = np.random.default_rng(0)
    for d in (2, 5, 10):
        a = rng.normal(size=(d, d)) * rng.uniform(0.1, 3.0, size=d)
        cov = a @ a.T + 0.1 * np.eye(d)
        tc = 0.5 * (np.sum(np.log(np.diag(cov))) - np.linalg.slogdet(cov)[1])
        root = scipy.linalg.sqrtm(cov * np.expand_dims(np.diag(cov), axis=1))
        wc = 2 * np.trace(cov) - 2 * np.trace(root).real
        assert gaussian_total_correlation(cov) == pytest.approx(tc, rel=1e-10)
        assert gaussian_wasserstein_correlation(cov) == pytest.approx(wc, rel=1e-8, abs=1e-10)
        mean = np.zeros(d)
        kl = kl_gaussians(mean, cov, mean, np.diag(np.diag(cov)))
        assert gaussian_total_correlation(cov) == pytest.approx(kl, rel=1e-8)


def test_scores_of_codes_equal_the_anchor_pipeline() -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(1500, 4))
    z[:, 1] += 0.8 * z[:, 0]
    z[:, 3] = np.round(z[:, 2])  # a discretised copy: high mutual information
    s = unsupervised(z)
    cov = np.cov(z.T)
    assert s.gaussian_total_correlation == pytest.approx(gaussian_total_correlation(cov))
    assert s.gaussian_wasserstein_correlation == pytest.approx(
        gaussian_wasserstein_correlation(cov)
    )
    assert s.gaussian_wasserstein_correlation_norm == pytest.approx(
        s.gaussian_wasserstein_correlation / np.trace(cov)
    )
    disc = histogram_discretize(z, 20)
    m = np.array([[mutual_info_score(disc[:, j], disc[:, i]) for j in range(4)] for i in range(4)])
    np.fill_diagonal(m, 0.0)
    assert s.mutual_info_score == pytest.approx(m.sum() / 12, rel=1e-12)
    assert unsupervised(torch.from_numpy(z)) == s


def test_independent_duplicated_and_constant_latents() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20000, 3))
    ind = unsupervised(x)
    assert abs(ind.gaussian_total_correlation) < 1e-3  # sampling error of order D^2 / N
    assert abs(ind.gaussian_wasserstein_correlation_norm) < 1e-3
    assert ind.mutual_info_score < 0.02  # the plug-in estimate's upward bias only
    dup = unsupervised(np.concatenate([x, x], axis=1))
    assert dup.gaussian_total_correlation == float("inf")
    assert dup.mutual_info_score > 5 * ind.mutual_info_score
    # a constant latent: left out of the total correlation, zero information with the others
    const = unsupervised(np.concatenate([x, np.full((len(x), 1), 3.0)], axis=1))
    assert const.gaussian_total_correlation == pytest.approx(ind.gaussian_total_correlation)
    assert const.gaussian_wasserstein_correlation == pytest.approx(
        ind.gaussian_wasserstein_correlation, abs=1e-9
    )
    assert const.mutual_info_score == pytest.approx(ind.mutual_info_score * 6 / 12)
    flat = unsupervised(np.ones((10, 2)))
    assert flat.gaussian_total_correlation == 0.0 and np.isnan(
        flat.gaussian_wasserstein_correlation_norm
    )


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="two codes"):
        unsupervised(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="two latent"):
        unsupervised(np.zeros((10, 1)))
    with pytest.raises(ValueError, match="NaN"):
        unsupervised(np.array([[0.0, np.nan], [1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        unsupervised(np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="num_bins"):
        unsupervised(np.zeros((3, 2)), num_bins=0)
    with pytest.raises(ValueError, match="square"):
        gaussian_total_correlation(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        gaussian_wasserstein_correlation(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="non-negative"):
        gaussian_total_correlation(np.array([[-1.0, 0.0], [0.0, 1.0]]))
