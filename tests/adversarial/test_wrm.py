"""WRM's inner maximiser: closed forms, monotone ascent, the convergence report, training."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.adversarial.attacks.wrm import WRM, official_step_size, wrm_ascent
from paperzoo.adversarial.training import adversarial_loss_fn
from paperzoo.engine import seeded
from paperzoo.models.small import MLP


def _linear(d: int, out: int, seed: int = 0, scale: float = 1.0) -> nn.Linear:
    with seeded(seed):
        lin = nn.Linear(d, out)
    with torch.no_grad():
        lin.weight.mul_(scale)
    return lin


def _squared_loss(out: Tensor, y: Tensor) -> Tensor:
    return 0.5 * (out.squeeze(1) - y) ** 2


def test_linear_loss_is_solved_by_the_first_step() -> None:
    # l(z) = w.z + b: the maximiser of w.z - gamma ||z - x||^2 is x + w / (2 gamma).
    lin = _linear(3, 1)
    x = torch.randn(8, 3, generator=torch.Generator().manual_seed(0))
    y = torch.zeros(8)
    gamma = 0.7
    attack = WRM(lin, gamma=gamma, loss=lambda out, _y: out.squeeze(1))
    z, rep = attack.maximize(x, y)
    expected = x + lin.weight.detach() / (2 * gamma)
    torch.testing.assert_close(z, expected, rtol=0, atol=1e-6)
    assert rep.grad_norm.max() < 1e-5
    # phi = w.z* + b - gamma ||w / 2 gamma||^2 = l(x) + ||w||^2 / (4 gamma)
    w2 = lin.weight.detach().pow(2).sum()
    torch.testing.assert_close(rep.phi, lin(x).squeeze(1).detach() + w2 / (4 * gamma))


def test_strongly_concave_squared_loss_matches_the_closed_form() -> None:
    # l(z) = (w.z - y)^2 / 2 is ||w||^2-smooth; with 2 gamma > ||w||^2 the problem is strongly
    # concave and z* = x + w (w.x + b - y) / (2 gamma - ||w||^2).
    lin = _linear(4, 1, seed=1)
    w = lin.weight.detach()[0]
    gamma = 2.0 * float(w.pow(2).sum())  # 2 gamma = 4 ||w||^2
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(16, 4, generator=g), torch.randn(16, generator=g)
    resid = lin(x).squeeze(1).detach() - y
    expected = x + resid[:, None] * w / (2 * gamma - w.pow(2).sum())
    # The official schedule (16 steps of 1/sqrt(k+1)) gets close; a constant step converges.
    z16, rep16 = WRM(lin, gamma=gamma, loss=_squared_loss).maximize(x, y)
    torch.testing.assert_close(z16, expected, rtol=0, atol=5e-3)
    z, rep = WRM(lin, gamma=gamma, steps=60, step_size=1.0, loss=_squared_loss).maximize(x, y)
    torch.testing.assert_close(z, expected, rtol=0, atol=1e-5)
    assert rep.grad_norm.max() < 1e-4 < rep16.grad_norm.max() * 10 + 1e-4


def test_cross_entropy_fixed_point_and_monotone_objective() -> None:
    # A linear classifier with CE: the maximiser satisfies z* - x = grad l(z*) / (2 gamma).
    lin = _linear(5, 3, seed=2)
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(32, 5, generator=g), torch.randint(0, 3, (32,), generator=g)
    gamma = 2.0  # CE of a linear model is (||W||^2 / 2)-smooth at most; here far below 2 gamma
    z, rep = WRM(lin, gamma=gamma, steps=60, step_size=1.0).maximize(x, y)
    zz = z.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(F.cross_entropy(lin(zz), y, reduction="sum"), zz)
    torch.testing.assert_close(z - x, grad / (2 * gamma), rtol=0, atol=1e-5)
    assert rep.grad_norm.max() < 1e-4
    # The penalised objective never decreases along the ascent (strongly concave, steps <= 1),
    # with the constant step and with the official schedule alike.
    for r in (rep, WRM(lin, gamma=gamma).maximize(x, y)[1]):
        assert (r.objective.diff(dim=0) >= -1e-6).all()  # (T - 1, B)
        assert (r.objective[-1] > r.objective[0]).all()
    # Report fields are consistent with each other and with the returned point.
    torch.testing.assert_close(rep.rho, (z - x).pow(2).sum(1))
    torch.testing.assert_close(rep.phi, rep.loss - gamma * rep.rho)
    torch.testing.assert_close(rep.objective[0], F.cross_entropy(lin(x), y, reduction="none"))


def test_monotone_ascent_on_a_smooth_elu_net() -> None:
    with seeded(0):
        net = MLP(in_features=2, hidden=(4, 2), num_classes=2, act="elu")
    g = torch.Generator().manual_seed(3)
    x, y = 2 * torch.randn(64, 2, generator=g), torch.randint(0, 2, (64,), generator=g)
    _, rep = WRM(net, gamma=5.0).maximize(x, y)
    assert (rep.objective.diff(dim=0) >= -1e-6).all()
    assert (rep.phi >= rep.objective[0] - 1e-6).all()  # phi >= l(x): the start is feasible


def test_large_gamma_and_zero_steps_leave_x_unchanged() -> None:
    lin = _linear(3, 2)
    x, y = torch.randn(4, 3), torch.tensor([0, 1, 0, 1])
    torch.testing.assert_close(WRM(lin, gamma=1e9)(x, y), x, rtol=0, atol=1e-8)
    assert torch.equal(WRM(lin, gamma=1.0, steps=0)(x, y), x)


def test_official_schedule_and_agreement_with_functional_core() -> None:
    assert official_step_size(0) == 1.0 and official_step_size(3) == 0.5
    lin = _linear(3, 2, seed=4)
    x, y = torch.randn(6, 3), torch.tensor([0, 1, 1, 0, 1, 0])
    attack = WRM(lin, gamma=0.5, report=False)
    z = attack(x, y)
    z2, rep = wrm_ascent(attack.loss_and_grad, x, y, gamma=0.5, report=False)
    assert rep is None and attack.last_report is None
    torch.testing.assert_close(z, z2)


def test_mode_restored_detached_and_clip_box() -> None:
    with seeded(0):
        net = nn.Sequential(nn.Flatten(), nn.Linear(16, 10), nn.Dropout(0.1))
    net.train()
    x = torch.rand(4, 1, 4, 4)
    y = torch.tensor([1, 2, 3, 4])
    attack = WRM(net, gamma=0.05, steps=5)
    z = attack(x, y)
    assert net.training and not z.requires_grad
    assert attack.clip is None and (z < 0).any() | (z > 1).any()  # unconstrained by default
    boxed = WRM(net, gamma=0.05, steps=5, clip=(0.0, 1.0))
    zb, rep = boxed.maximize(x, y)
    assert zb.min() >= 0 and zb.max() <= 1 and net.training
    assert torch.isfinite(rep.grad_norm).all()
    net[2].eval()  # a caller's mixed modes (a frozen layer in a training net) survive the ascent
    boxed.maximize(x, y)
    assert net.training and net[1].training and not net[2].training


def test_wrm_training_step_reaches_every_parameter() -> None:
    with seeded(0):
        net = MLP(in_features=2, hidden=(4, 2), num_classes=2, act="elu")
    loss_fn = adversarial_loss_fn(lambda m: WRM(m, gamma=2.0, report=False))
    x, y = torch.randn(32, 2), torch.randint(0, 2, (32,))
    loss, metrics = loss_fn(net, (x, y))
    loss.backward()
    assert "adv_acc" in metrics
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_bad_arguments() -> None:
    lin = _linear(2, 2)
    with pytest.raises(ValueError):
        WRM(lin, gamma=0.0)
    with pytest.raises(ValueError):
        WRM(lin, gamma=1.0, steps=-1)
    with pytest.raises(ValueError):
        WRM(lin, gamma=1.0, step_size=-0.1)
    with pytest.raises(ValueError):
        WRM(lin, gamma=1.0).maximize(torch.zeros(3, 2), torch.zeros(2, dtype=torch.long))
