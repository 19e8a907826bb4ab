"""Carlini-Wagner l_2 finds (close to) the minimal l_2 adversarial example of a linear model."""

from __future__ import annotations

import torch
from torch import nn

from paperzoo.adversarial.attacks import CW


def _linear(w: torch.Tensor, b: float) -> nn.Module:
    lin = nn.Linear(w.numel(), 2)
    with torch.no_grad():
        lin.weight.copy_(torch.stack([torch.zeros_like(w), w]))
        lin.bias.copy_(torch.tensor([0.0, b]))
    return lin


def test_cw_matches_analytic_minimal_distance_on_linear_model() -> None:
    g = torch.Generator().manual_seed(0)
    w = torch.randn(10, generator=g)
    b = 0.5
    model = _linear(w, b)
    x = 0.5 + 0.1 * torch.rand(5, 10, generator=g)
    margin = x @ w + b
    y = (margin > 0).long()  # correctly classified by construction
    # The closest point on the decision boundary w.x + b = 0 is |w.x + b| / ||w|| away.
    d_min = margin.abs() / w.norm()
    x_adv = CW(model, c=0.1, steps=300, lr=0.01, binary_search_steps=8, clip=None)(x, y)
    assert (model(x_adv).argmax(1) != y).all()
    d = (x_adv - x).norm(dim=1)
    assert (d >= d_min - 1e-4).all()
    assert (d <= d_min * 1.1 + 1e-3).all()


def test_cw_stays_in_box_and_returns_x_when_it_fails() -> None:
    g = torch.Generator().manual_seed(1)
    model = _linear(torch.randn(6, generator=g), 0.0)
    x = torch.rand(4, 6, generator=g)
    y = (model(x).argmax(1)).long()
    x_adv = CW(model, steps=50, binary_search_steps=3)(x, y)
    assert x_adv.min() >= 0 and x_adv.max() <= 1
    # A constant model cannot be fooled: CW returns the input unchanged.
    const = nn.Sequential(nn.Linear(6, 2))
    with torch.no_grad():
        const[0].weight.zero_()
        const[0].bias.copy_(torch.tensor([1.0, 0.0]))
    zeros = torch.zeros(4, dtype=torch.long)
    torch.testing.assert_close(CW(const, steps=20, binary_search_steps=2)(x, zeros), x)
