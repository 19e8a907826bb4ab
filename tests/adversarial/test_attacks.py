"""Behaviour of the gradient attacks: budgets, equivalences, analytic worst cases, mode restore."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from paperzoo.adversarial.attacks import FGSM, PGD, Attack
from paperzoo.engine import seeded


def _cnn() -> nn.Module:
    with seeded(0):
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3)
        )


def _data(n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def _linear(w: torch.Tensor, b: float = 0.0) -> nn.Module:
    """Two-class linear model with logits (0, w.x + b)."""
    lin = nn.Linear(w.numel(), 2)
    with torch.no_grad():
        lin.weight.copy_(torch.stack([torch.zeros_like(w), w]))
        lin.bias.copy_(torch.tensor([0.0, b]))
    return nn.Sequential(nn.Flatten(), lin)


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_pgd_with_zero_eps_returns_x(norm: str) -> None:
    x, y = _data()
    x_adv = PGD(_cnn(), eps=0.0, alpha=0.1, steps=5, norm=norm)(x, y)
    assert torch.equal(x_adv, x)


@pytest.mark.parametrize("norm", ["linf", "l2"])
@pytest.mark.parametrize("restarts", [1, 3])
def test_pgd_stays_in_ball_and_box(norm: str, restarts: int) -> None:
    x, y = _data()
    eps = 0.3 if norm == "linf" else 1.5
    g = torch.Generator().manual_seed(0)
    x_adv = PGD(
        _cnn(), eps=eps, alpha=eps / 4, steps=10, norm=norm, restarts=restarts, generator=g
    )(x, y)
    d = (x_adv - x).flatten(1)
    size = d.abs().amax(1) if norm == "linf" else d.norm(dim=1)
    assert (size <= eps + 1e-5).all()
    assert x_adv.min() >= 0 and x_adv.max() <= 1
    assert not x_adv.requires_grad


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_fgsm_stays_in_ball_and_box(norm: str) -> None:
    x, y = _data()
    x_adv = FGSM(_cnn(), eps=0.2, norm=norm)(x, y)
    d = (x_adv - x).flatten(1)
    size = d.abs().amax(1) if norm == "linf" else d.norm(dim=1)
    assert (size <= 0.2 + 1e-5).all()
    assert x_adv.min() >= 0 and x_adv.max() <= 1


def test_attack_raises_loss() -> None:
    x, y = _data(32)
    model = _cnn()
    atk = PGD(model, eps=0.3, alpha=0.05, steps=10, generator=torch.Generator().manual_seed(0))
    before, _ = atk.evaluate(x, y)
    after, _ = atk.evaluate(atk(x, y), y)
    assert after.mean() > before.mean()


def test_restarts_never_worse_than_first_run() -> None:
    x, y = _data(16)
    model = _cnn()
    one = PGD(
        model, eps=0.1, alpha=0.02, steps=3, restarts=1, generator=torch.Generator().manual_seed(5)
    )
    many = PGD(
        model, eps=0.1, alpha=0.02, steps=3, restarts=4, generator=torch.Generator().manual_seed(5)
    )
    l1, _ = one.evaluate(one(x, y), y)
    l4, _ = many.evaluate(many(x, y), y)
    assert (l4 >= l1 - 1e-6).all()


@pytest.mark.parametrize("training", [True, False])
def test_mode_restored_even_when_attack_raises(training: bool) -> None:
    class Boom(Attack):
        def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            assert not self.model.training
            raise RuntimeError("boom")

    model = _cnn().train(training)
    x, y = _data()
    with pytest.raises(RuntimeError, match="boom"):
        Boom(model)(x, y)
    assert model.training is training
    PGD(model, eps=0.1, alpha=0.1, steps=1)(x, y)
    assert model.training is training


def test_attack_leaves_parameter_grads_untouched() -> None:
    model = _cnn()
    x, y = _data()
    PGD(model, eps=0.1, alpha=0.1, steps=2)(x, y)
    assert all(p.grad is None for p in model.parameters())


def test_linear_model_linf_worst_case() -> None:
    """For logits (0, w.x) and y = 1 the l_inf worst case is x - eps * sign(w) (interior x)."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, generator=g)
    model = _linear(w)
    x = torch.full((4, 10), 0.5)
    y = torch.ones(4, dtype=torch.long)
    expect = x - 0.2 * w.sign()
    for atk in (
        FGSM(model, eps=0.2),
        PGD(model, eps=0.2, alpha=0.05, steps=20, generator=g),
        PGD(model, eps=0.2, alpha=0.05, steps=20, loss="cw", generator=g),
    ):
        torch.testing.assert_close(atk(x, y), expect)


def test_linear_model_l2_worst_case() -> None:
    """The l_2 worst case moves eps along -w / ||w||."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, generator=g)
    model = _linear(w)
    x = torch.full((3, 10), 0.5)
    y = torch.ones(3, dtype=torch.long)
    expect = x - 0.3 * w / w.norm()
    torch.testing.assert_close(FGSM(model, eps=0.3, norm="l2")(x, y), expect)
    pgd = PGD(model, eps=0.3, alpha=0.1, steps=30, norm="l2", random_start=False)
    torch.testing.assert_close(pgd(x, y), expect, atol=1e-5, rtol=0)


def test_unbounded_inputs_with_clip_none() -> None:
    w = torch.tensor([1.0, -2.0])
    model = _linear(w)
    x = torch.tensor([[5.0, -5.0]])
    y = torch.ones(1, dtype=torch.long)
    x_adv = FGSM(model, eps=1.0, clip=None)(x, y)
    torch.testing.assert_close(x_adv, x - w.sign())


def test_bad_arguments_raise() -> None:
    model = _cnn()
    with pytest.raises(ValueError, match="norm"):
        PGD(model, eps=0.1, alpha=0.1, steps=1, norm="l1")
    with pytest.raises(ValueError, match="loss"):
        FGSM(model, eps=0.1, loss="hinge")
    with pytest.raises(ValueError, match="eps"):
        FGSM(model, eps=-1)
    with pytest.raises(ValueError, match="length"):
        FGSM(model, eps=0.1)(torch.rand(2, 1, 8, 8), torch.zeros(3, dtype=torch.long))
