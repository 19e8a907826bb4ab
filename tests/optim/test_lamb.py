"""LAMB (You et al., 2020, Alg. 2): one step by hand, and the per-layer trust ratio."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from paperzoo.optim import Lamb, trust_ratio


def test_first_step_matches_the_hand_computed_update() -> None:
    x = nn.Parameter(torch.tensor([3.0, 4.0], dtype=torch.float64))  # ||x|| = 5
    x.grad = torch.tensor([1.0, -2.0], dtype=torch.float64)
    opt = Lamb([x], lr=0.1, betas=(0.9, 0.999), eps=0.0, weight_decay=0.01)
    opt.step()
    # Step 1: m_hat = g, v_hat = g^2 (bias-corrected), so r = g / |g| = (1, -1).
    # u = r + 0.01 x = (1.03, -0.96); ||u|| = sqrt(1.03^2 + 0.96^2); trust ratio 5 / ||u||.
    norm_u = math.sqrt(1.03**2 + 0.96**2)
    ratio = 5.0 / norm_u
    expected = [3.0 - 0.1 * ratio * 1.03, 4.0 + 0.1 * ratio * 0.96]
    assert x.detach().tolist() == pytest.approx(expected, rel=1e-12)
    assert expected[0] == pytest.approx(2.634236, abs=1e-6)  # the numbers written out
    assert expected[1] == pytest.approx(4.340906, abs=1e-6)


def test_second_step_uses_the_bias_corrected_moments() -> None:
    x = nn.Parameter(torch.tensor([1.0, -2.0, 2.0], dtype=torch.float64))  # ||x|| = 3
    opt = Lamb([x], lr=0.01, betas=(0.5, 0.75), eps=1e-3)
    grads = [torch.tensor([1.0, 0.0, -1.0]), torch.tensor([3.0, 1.0, 1.0])]
    m = torch.zeros(3, dtype=torch.float64)
    v = torch.zeros(3, dtype=torch.float64)
    ref = x.detach().clone()
    for t, g in enumerate(grads, start=1):
        g = g.double()
        x.grad = g.clone()
        opt.step()
        m = 0.5 * m + 0.5 * g
        v = 0.75 * v + 0.25 * g * g
        r = (m / (1 - 0.5**t)) / ((v / (1 - 0.75**t)).sqrt() + 1e-3)
        ref = ref - 0.01 * (ref.norm() / r.norm()) * r
    assert torch.allclose(x.detach(), ref, rtol=0, atol=1e-12)


def test_each_layer_moves_by_lr_times_its_own_norm_whatever_its_gradient_scale() -> None:
    torch.manual_seed(0)
    big = nn.Parameter(torch.randn(64, 32) * 10.0)  # a layer of large weights
    small = nn.Parameter(torch.randn(32) * 0.01)  # a layer of tiny weights
    before = [big.detach().clone(), small.detach().clone()]
    big.grad = torch.randn(64, 32) * 1e3  # gradients of very different scales
    small.grad = torch.randn(32) * 1e-4
    lr = 0.02
    Lamb([big, small], lr=lr, eps=0.0).step()
    for p, p0 in zip((big, small), before, strict=True):
        step = (p.detach() - p0).norm() / p0.norm()
        assert step.item() == pytest.approx(lr, rel=1e-5)  # ||dx|| = lr * ||x|| per layer

    # Plain Adam (no trust ratio) moves every entry by about lr, so the tiny layer is swamped
    # (a relative step of ~lr / 0.01) while the large one barely moves.
    big2 = nn.Parameter(before[0].clone())
    small2 = nn.Parameter(before[1].clone())
    big2.grad, small2.grad = big.grad.clone(), small.grad.clone()
    Lamb([{"params": [big2, small2], "trust_ratio": False}], lr=lr, eps=0.0).step()
    rel_big = ((big2.detach() - before[0]).norm() / before[0].norm()).item()
    rel_small = ((small2.detach() - before[1]).norm() / before[1].norm()).item()
    assert rel_small > 50 * lr and rel_big < lr / 5


def test_trust_ratio_is_one_where_a_norm_is_zero_and_can_be_clipped() -> None:
    assert trust_ratio(torch.zeros(3), torch.ones(3)).item() == 1.0
    assert trust_ratio(torch.ones(3), torch.zeros(3)).item() == 1.0
    assert trust_ratio(torch.full((4,), 2.0), torch.ones(4)).item() == pytest.approx(2.0)
    # A zero-initialised bias takes an Adam-sized first step (ratio 1): every entry moves lr.
    b = nn.Parameter(torch.zeros(5))
    b.grad = torch.tensor([1.0, -1.0, 2.0, -3.0, 0.5])
    Lamb([b], lr=0.1, eps=0.0).step()
    assert torch.allclose(b.detach(), -0.1 * torch.sign(b.grad))
    # Clipping: a ratio of ||x|| / ||u|| = 10 is cut to 2.
    w = nn.Parameter(torch.full((4,), 5.0))  # ||w|| = 10, ||r|| = 2 (r = +-1 at step 1)
    w.grad = torch.ones(4)
    Lamb([w], lr=0.1, eps=0.0, max_trust_ratio=2.0).step()
    assert torch.allclose(w.detach(), torch.full((4,), 5.0 - 0.1 * 2.0))


@pytest.mark.parametrize(
    "kw",
    [{"lr": -1.0}, {"betas": (1.0, 0.9)}, {"eps": -1.0}, {"weight_decay": -0.1},
     {"max_trust_ratio": 0.0}],
)  # fmt: skip
def test_bad_arguments_raise(kw: dict) -> None:
    with pytest.raises(ValueError):
        Lamb([nn.Parameter(torch.ones(2))], **kw)
