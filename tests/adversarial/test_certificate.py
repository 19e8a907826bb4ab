"""WRM's certificate: the bound, the worst-case curve, the smoothness warning."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from paperzoo.adversarial.certificate import (
    certificate,
    check_certificate,
    concentration_error,
    difference_error,
    nonsmooth_modules,
    robust_surrogate,
    warn_if_nonsmooth,
    worst_case_curve,
)
from paperzoo.data.spheres import make_spheres
from paperzoo.engine import seeded
from paperzoo.models.small import MLP


def _net(act: str = "elu", seed: int = 0) -> MLP:
    with seeded(seed):
        return MLP(in_features=2, hidden=(4, 2), num_classes=2, act=act)


def _data(n: int = 400, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    return make_spheres(n, generator=torch.Generator().manual_seed(seed))


def test_certificate_is_at_least_the_empirical_loss_by_construction() -> None:
    net = _net()
    x, y = _data()
    clean = F.cross_entropy(net(x), y).item()
    for gamma in (0.3, 2.0, 50.0):
        s, rep = robust_surrogate(net, x, y, gamma=gamma, batch_size=128)
        assert (rep.phi >= rep.objective[0]).all()  # phi_gamma(z) >= l(z) for every point
        for rho in (0.0, 0.1, 1.0):
            assert certificate(rho, gamma=gamma, expected_phi=s.phi) >= clean - 1e-6
        # The worst-case loss at the WRM points is phi + gamma * rho.
        assert math.isclose(s.worst_loss, s.phi + gamma * s.rho, rel_tol=1e-5, abs_tol=1e-6)
        assert math.isclose(s.clean_loss, clean, rel_tol=1e-5)


def test_certificate_formula_and_error_term() -> None:
    assert certificate(0.5, gamma=2.0, expected_phi=0.1) == pytest.approx(1.1)
    assert certificate(0.5, gamma=2.0, expected_phi=0.1, error=0.05) == pytest.approx(1.15)
    rho = torch.tensor([0.0, 1.0])
    torch.testing.assert_close(
        certificate(rho, gamma=3.0, expected_phi=1.0), torch.tensor([1.0, 4.0])
    )
    # 95% one-sided normal quantile 1.6449.
    assert concentration_error(1.0, 100) == pytest.approx(0.16449, rel=1e-4)
    with pytest.raises(ValueError):
        concentration_error(1.0, 100, confidence=1.5)
    with pytest.raises(ValueError):
        certificate(1.0, gamma=-1.0, expected_phi=0.0)


def test_worst_case_curve_is_monotone_in_gamma() -> None:
    net = _net(seed=1)
    x, y = _data(300, seed=1)
    curve = worst_case_curve(net, x, y, gammas=[0.5, 1.0, 2.0, 4.0, 8.0], steps=30)
    assert curve.gammas == [8.0, 4.0, 2.0, 1.0, 0.5]  # decreasing gamma = growing radius
    assert all(b >= a - 1e-6 for a, b in zip(curve.rho, curve.rho[1:], strict=False))
    assert all(b >= a - 1e-6 for a, b in zip(curve.worst_loss, curve.worst_loss[1:], strict=False))
    assert all(p.rel_grad_norm < 0.05 for p in curve.points)  # the ascent converged


def test_check_certificate_on_training_data_itself_holds() -> None:
    # With the same data on both sides and no error term, the certificate line from gamma touches
    # the curve at gamma and lies above it elsewhere (weak duality on the empirical distribution).
    net = _net(seed=2)
    x, y = _data(300, seed=2)
    gammas = [1.0, 2.0, 4.0, 8.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an ELU net must not warn
        check = check_certificate(net, x, y, x, y, gamma=2.0, gammas=gammas, confidence=None)
    assert check.error == 0.0 and len(check.margin) == len(gammas)
    assert check.min_margin >= -1e-5 and check.rho_hat == pytest.approx(check.curve.rho[2])
    assert check.margin[2] == pytest.approx(0.0, abs=1e-5)
    with_err = check_certificate(net, x, y, x, y, gamma=2.0, gammas=gammas)
    assert with_err.error > 0 and with_err.holds
    assert with_err.bound[0] == pytest.approx(check.bound[0] + with_err.error, rel=1e-5)


def test_relu_models_are_flagged() -> None:
    relu = _net(act="relu")
    assert nonsmooth_modules(relu) and not nonsmooth_modules(_net())
    with pytest.warns(UserWarning, match="non-smooth"):
        assert warn_if_nonsmooth(relu)
    x, y = _data(50)
    with pytest.warns(UserWarning, match="ELU"):
        check_certificate(relu, x, y, x, y, gamma=2.0, gammas=[2.0])


def test_error_term_covers_the_training_and_the_test_sample() -> None:
    # At the training gamma the certificate and the test worst case are two sample means of
    # phi_gamma: the finite-sample term is that of their difference, not of the training mean.
    net = _net(seed=3)
    x, y = _data(300, seed=3)
    xt, yt = _data(150, seed=4)
    check = check_certificate(net, x, y, xt, yt, gamma=2.0, gammas=[1.0, 2.0, 4.0], steps=30)
    tr, te = check.train, check.test_at_gamma
    assert te.gamma == 2.0 and te.n == 150 and tr.n == 300
    assert te is check.curve.points[1]  # reused from the sweep, not recomputed
    expected = 1.6449 * math.sqrt(tr.phi_std**2 / 300 + te.phi_std**2 / 150)
    assert check.error == pytest.approx(expected, rel=1e-4)
    assert check.error > concentration_error(tr.phi_std, tr.n)
    assert difference_error(1.0, 100, 0.0, 1) == pytest.approx(concentration_error(1.0, 100))
    # A training gamma outside the sweep: the test side is computed at that gamma.
    off = check_certificate(net, x, y, xt, yt, gamma=3.0, gammas=[1.0, 2.0], steps=30)
    assert off.test_at_gamma.gamma == 3.0 and off.test_at_gamma.n == 150
    with pytest.raises(ValueError):
        difference_error(1.0, 0, 1.0, 10)


def test_margin_without_the_term_and_away_from_the_tangent_point() -> None:
    net = _net(seed=2)
    x, y = _data(300, seed=2)
    gammas = [1.0, 2.0, 4.0, 8.0]
    check = check_certificate(net, x, y, x, y, gamma=2.0, gammas=gammas, steps=100, step_size=1.0)
    assert check.raw_margin == pytest.approx([m - check.error for m in check.margin])
    # Same data on both sides: the raw margin is 0 at the training gamma (the tangent point)
    # and positive (the duality gap) at the other gammas.
    assert check.raw_margin[2] == pytest.approx(0.0, abs=1e-6)
    off = check.margin_off_tangency()
    assert off == min(m for i, m in enumerate(check.raw_margin) if i != 2) and off > 0
