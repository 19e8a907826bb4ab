"""Madry et al.'s CIFAR-10 wide ResNet (cifar10_challenge/model.py) and the thermometer on it."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from paperzoo.adversarial.attacks import BPDA, PGD
from paperzoo.adversarial.cifar_model import (
    MadryResNet,
    decay_parameters,
    madry_sgd,
    per_image_standardization,
)
from paperzoo.adversarial.defenses import InputTransformDefense, ThermometerEncoding
from paperzoo.engine import seeded

TINY = (4, 4, 6, 8)


def test_per_image_standardization_is_tensorflows() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 3, 8, 8, generator=g) * 255
    z = per_image_standardization(x)
    flat = z.flatten(1)
    torch.testing.assert_close(flat.mean(1), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(flat.std(1, unbiased=False), torch.ones(3), atol=1e-5, rtol=0)
    # a constant image: std 0 is floored at 1 / sqrt(N), so the result is zero, not NaN
    const = per_image_standardization(torch.full((1, 3, 8, 8), 0.7))
    torch.testing.assert_close(const, torch.zeros_like(const), atol=1e-5, rtol=0)
    # the floor by hand: an image with tiny variance is divided by 1 / sqrt(N)
    tiny = torch.full((1, 3, 8, 8), 0.5)
    tiny[0, 0, 0, 0] += 1e-4
    n = tiny.numel()
    expect = (tiny - tiny.mean()) * math.sqrt(n)
    torch.testing.assert_close(per_image_standardization(tiny), expect)


def test_the_wide_network_has_model_pys_shape() -> None:
    model = MadryResNet()
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 1 + 3 * 5 * 2  # the init conv, 15 units of two convolutions
    assert [c.out_channels for c in convs[1::10]] == [160, 320, 640]
    assert model.fc.in_features == 640 and model.fc.out_features == 10
    assert all(c.bias is None for c in convs)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert all(b.momentum == 0.1 and b.eps == 1e-3 for b in bns)  # TF decay 0.9, eps 0.001
    leaky = [m for m in model.modules() if isinstance(m, nn.LeakyReLU)]
    assert leaky and all(m.negative_slope == 0.1 for m in leaky)


def test_stride_two_pads_as_tensorflows_same() -> None:
    # SAME on an even side at stride 2: no pixel before, one after (TF puts the odd one last)
    with seeded(0):
        model = MadryResNet(filters=TINY, units=1).eval()
    unit = model.stages[1][0]
    a = torch.randn(2, 4, 8, 8)
    ref = F.conv2d(F.pad(a, (0, 1, 0, 1)), unit.conv1.weight, stride=2)
    from paperzoo.adversarial.cifar_model import _same

    torch.testing.assert_close(unit.conv1(_same(a, 2)), ref)
    assert ref.shape[-2:] == (4, 4)


def test_output_is_invariant_to_the_input_scale_and_takes_odd_sides() -> None:
    # per-image standardisation: x and 255 * x (the TF model's 0-255 input) give the same logits
    with seeded(0):
        model = MadryResNet(filters=TINY, units=2).eval()
    x = torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(model(x), model(255 * x), atol=1e-4, rtol=1e-4)
    assert model(torch.rand(2, 3, 35, 35)).shape == (2, 10)  # Xie et al.'s 35 px canvas


def test_weight_decay_reaches_the_kernels_only() -> None:
    model = MadryResNet(filters=TINY, units=1)
    decay, rest = decay_parameters(model)
    kernels = [m.weight for m in model.modules() if isinstance(m, nn.Conv2d | nn.Linear)]
    assert {id(p) for p in decay} == {id(p) for p in kernels}
    assert id(model.fc.bias) in {id(p) for p in rest} and all(p.dim() == 1 for p in rest)
    opt = madry_sgd(model, lr=0.1, momentum=0.9, weight_decay=2e-4)
    assert [g["weight_decay"] for g in opt.param_groups] == [2e-4, 0.0]
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))


@pytest.mark.parametrize("filters", [(4, 4, 4, 8), (4, 4, 7, 9), (4, 2, 6, 8)])
def test_bad_widths_are_refused(filters: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError, match="filters must widen"):
        MadryResNet(filters=filters)


def _halves(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """16 x 16 images whose class is which half is brighter, by 12/255 around 0.5 (one
    thermometer level apart), with noise of +-2/255: an 8/255 attack can swap the halves."""
    y = torch.randint(0, 2, (n,), generator=g)
    sign = (2 * y - 1).float().view(-1, 1, 1, 1)
    x = torch.full((n, 3, 16, 16), 0.5)
    x[..., :8] += sign * 6 / 255
    x[..., 8:] -= sign * 6 / 255
    x += (torch.rand(x.shape, generator=g) * 2 - 1) * 2 / 255
    return x.clamp(0, 1), y


def test_bpda_breaks_a_trained_thermometer_wide_resnet_that_naive_pgd_cannot() -> None:
    """Buckman et al.'s 16-level code in front of a small MadryResNet, trained a few steps:
    PGD through the code sees a zero gradient and leaves the accuracy, PGD + BPDA (the ramp)
    swaps the halves within 8/255 (measured over training seeds 0-3: clean 1.0, naive 1.0,
    BPDA 0.000-0.016)."""
    g = torch.Generator().manual_seed(0)
    x, y = _halves(256, g)
    x_test, y_test = _halves(64, g)
    with seeded(0):
        net = MadryResNet(in_chans=48, num_classes=2, filters=TINY, units=1)
    model = InputTransformDefense(transform=ThermometerEncoding(levels=16), classifier=net)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(60):
        idx = torch.randint(0, len(x), (32,), generator=g)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()

    def pgd() -> PGD:
        return PGD(
            model, eps=8 / 255, alpha=1 / 255, steps=20, generator=torch.Generator().manual_seed(0)
        )

    def acc(inp: torch.Tensor) -> float:
        with torch.no_grad():
            return (model(inp).argmax(1) == y_test).float().mean().item()

    _, g_naive = pgd().loss_and_grad(x_test, y_test)
    naive, adaptive = acc(pgd()(x_test, y_test)), acc(BPDA(pgd())(x_test, y_test))
    assert acc(x_test) >= 0.95
    assert torch.count_nonzero(g_naive) == 0  # shattered: nothing for the naive attacker
    assert naive >= 0.8
    assert adaptive <= 0.1
