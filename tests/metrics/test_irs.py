"""IRS: a hand-computed case, disentanglement_lib's published test bounds, its formula as a plain
loop, and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from paperzoo.metrics.disentanglement import irs, irs_scores
from paperzoo.metrics.disentanglement.irs import group_quantile_deviation


def plain_irs(codes: np.ndarray, factors: np.ndarray, q: float) -> float:
    """disentanglement_lib's scalable_disentanglement_score written as its loops (no binning)."""
    z = codes[:, codes.var(axis=0) > 0.0]
    if z.shape[1] == 0:
        return 0.0
    max_dev = np.max(np.abs(z - z.mean(axis=0)), axis=0)
    cum = np.zeros((z.shape[1], factors.shape[1]))
    for i in range(factors.shape[1]):
        values = np.unique(factors[:, i])
        for v in values:
            rows = z[factors[:, i] == v]
            cum[:, i] += np.percentile(np.abs(rows - rows.mean(axis=0)), q * 100, axis=0)
        cum[:, i] /= len(values)
    scores = (1.0 - cum / max_dev[:, None]).max(axis=1)
    return float(np.average(scores, weights=max_dev))


def test_hand_computed_two_factors_two_latents() -> None:
    """Crossed binary factors (g0, g1); z0 = g0, z1 = g0 + 2 g1.

    z0: max deviation 0.5; within g0 it is constant (deviation 0 -> IRS 1); within g1 it takes 0
    and 1 around 0.5 (deviation 0.5 -> IRS 0). z1: values 0, 2, 1, 3 (mean 1.5, max deviation
    1.5); within g0 it spreads +-1 (IRS 1 - 1/1.5 = 1/3), within g1 +-0.5 (IRS 2/3), parent g1.
    IRS = (1 * 0.5 + 2/3 * 1.5) / (0.5 + 1.5) = 0.75, for any quantile (equal deviations).
    """
    g = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    z = np.stack([g[:, 0], g[:, 0] + 2 * g[:, 1]], axis=1).astype(float)
    for q in (0.5, 0.99, 1.0):
        s = irs_scores(z, g, diff_quantile=q, num_bins=None)
        assert s.irs == pytest.approx(0.75, abs=1e-12)
        np.testing.assert_allclose(s.matrix, [[1.0, 0.0], [1 / 3, 2 / 3]], atol=1e-12)
        np.testing.assert_array_equal(s.parents, [0, 1])
        np.testing.assert_allclose(s.max_deviations, [0.5, 1.5])
        assert s.num_active_dims == 2
    assert irs(torch.from_numpy(z), torch.from_numpy(g), num_bins=None) == pytest.approx(0.75)


def test_group_quantile_is_numpys_linear_quantile_per_value() -> None:
    """Unequal groups, so every interpolation weight occurs (numpy's t >= 0.5 branch too)."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(61, 3))
    g = rng.integers(0, 7, size=61) * 5 - 3  # labels need not be 0..K-1
    for q in (0.0, 0.3, 0.5, 0.77, 0.99, 1.0):
        ref = np.mean(
            [
                np.quantile(np.abs(z[g == v] - z[g == v].mean(axis=0)), q, axis=0)
                for v in np.unique(g)
            ],
            axis=0,
        )
        np.testing.assert_allclose(group_quantile_deviation(z, g, q), ref, rtol=1e-13, atol=0)


def test_equals_the_anchor_formula_as_a_loop() -> None:
    rng = np.random.default_rng(1)
    f = np.stack([rng.integers(0, k, size=800) for k in (3, 6, 12)], axis=1)
    z = f @ rng.normal(size=(3, 5)) + 0.5 * rng.normal(size=(800, 5))
    z[:, 4] = 2.0  # a constant latent: dropped
    s = irs_scores(z, f, num_bins=None)
    assert s.num_active_dims == 4 and s.matrix.shape == (4, 3)
    assert s.irs == pytest.approx(plain_irs(z, f, 0.99), rel=1e-13)
    # 20 histogram bins leave factors with at most 20 equally spaced values unchanged
    assert irs(z, f) == pytest.approx(s.irs, rel=1e-13)


def test_disentanglement_lib_published_bounds() -> None:
    """irs_test.py: IdentityObservationsData (10 factors uniform on 1..10, the observation is the
    factor vector), 3,000 points, identity discretiser, q = 0.99: the identity code scores in
    [0.9, 1.0], the all-zero code in [0.0, 0.1]."""
    rng = np.random.default_rng(0)
    f = rng.integers(1, 11, size=(3000, 10))
    assert 0.9 <= irs(f.astype(float), f, num_bins=None) <= 1.0
    assert 0.0 <= irs(np.zeros((3000, 10)), f, num_bins=None) <= 0.1
    assert irs_scores(np.zeros((3000, 10)), f).num_active_dims == 0
    # the same bounds with the study's 20-bin discretiser
    assert 0.9 <= irs(f.astype(float), f) <= 1.0
    # a code independent of the factors is not robust to them
    assert irs(rng.normal(size=(3000, 10)), f) < 0.5


def test_bad_inputs() -> None:
    f = np.zeros((5, 2), dtype=int)
    with pytest.raises(ValueError, match="same N"):
        irs(np.zeros((4, 2)), f)
    with pytest.raises(ValueError, match="NaN"):
        irs(np.array([[0.0, np.nan]] * 5), f)
    with pytest.raises(ValueError, match="NaN"):
        irs(np.array([[0.0, np.inf]] * 5), f)
    with pytest.raises(ValueError, match="diff_quantile"):
        irs(np.zeros((5, 2)), f, diff_quantile=1.5)
    with pytest.raises(ValueError, match="num_bins"):
        irs(np.zeros((5, 2)), f, num_bins=0)
    with pytest.raises(ValueError, match="integer"):
        irs(np.zeros((5, 2)), np.full((5, 2), 0.5))
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        irs(np.zeros((5, 2, 2)), f)
