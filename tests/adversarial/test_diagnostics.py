"""The warning-sign checklist: silent on an honest model, loud on a shattered one."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch import nn

from paperzoo.adversarial.attacks import Attack
from paperzoo.adversarial.defenses import BitDepthReduction, InputTransformDefense
from paperzoo.adversarial.diagnostics import SIGNS, DiagnosticsConfig, diagnose


def _linear() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A fixed linear classifier on 16 features and points within 0.2 (l_inf) of its boundary."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, generator=g)
    lin = nn.Linear(16, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.stack([-w, w]) / 2)
        lin.bias.zero_()
    x = 0.5 + 0.1 * (2 * torch.rand(64, 16, generator=g) - 1)
    x = x + 0.002 * w.sign() * torch.sign(x @ w)[:, None]  # keep away from the boundary itself
    y = (x @ w > 0).long()
    return lin, x, y


CFG = DiagnosticsConfig(
    eps=0.2, pgd_steps=20, unbounded_steps=20, spsa_steps=10, spsa_samples=8, random_samples=10
)


def test_undefended_linear_model_raises_no_sign() -> None:
    model, x, y = _linear()
    report = diagnose(model, x, y, config=CFG, generator=torch.Generator().manual_seed(0))
    assert [s.name for s in report.signs] == list(SIGNS)
    assert report["unbounded_attack_fails"].evidence["unbounded_success"] == 1.0
    assert not report.any_flagged, report.to_dict()


def test_shattered_gradients_raise_signs() -> None:
    model, x, y = _linear()
    defended = InputTransformDefense(transform=BitDepthReduction(bits=1), classifier=model)
    report = diagnose(defended, x, y, config=CFG, generator=torch.Generator().manual_seed(0))
    assert report.any_flagged
    # round() kills the gradient: PGD only sees its random start, SPSA sees the real loss surface.
    assert "black_box_beats_white_box" in report.flagged
    assert "unbounded_attack_fails" in report.flagged
    d = report.to_dict()
    assert {s["name"] for s in d["signs"]} == set(SIGNS)
    assert all(isinstance(v, float) for s in d["signs"] for v in s["evidence"].values())


def test_adaptive_attack_factory_removes_the_signs() -> None:
    from paperzoo.adversarial.attacks import BPDA, PGD

    model, x, y = _linear()
    defended = InputTransformDefense(transform=BitDepthReduction(bits=4), classifier=model)
    g = torch.Generator().manual_seed(0)

    def adaptive(m: nn.Module, eps: float) -> BPDA:
        return BPDA(PGD(m, eps=eps, alpha=2.5 * eps / 20, steps=20, generator=g))

    report = diagnose(defended, x, y, config=CFG, generator=g, attack_factory=adaptive)
    assert not report.any_flagged, report.to_dict()
    assert report["black_box_beats_white_box"].evidence["pgd_success"] >= 0.9


class _Scripted(Attack):
    """A white-box "attack" that succeeds exactly on the examples tagged by feature 1."""

    def perturb(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x_adv = x.clone()
        x_adv[x[:, 1] > 0.5, 0] = 0.9  # across the boundary x0 = 0.5
        return x_adv


def _threshold_model() -> nn.Module:
    """Class 1 iff x0 > 0.5 (a linear model; feature 1 is ignored)."""
    lin = nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.0, 0.0], [50.0, 0.0]]))
        lin.bias.copy_(torch.tensor([0.0, -25.0]))
    return lin


@pytest.mark.parametrize(("margin", "fires"), [(0.05, False), (0.04, True)])
def test_random_sampling_sign_counts_a_fraction_of_all_examples(margin: float, fires: bool) -> None:
    """100 examples, all class 0: PGD fools 90; of its 10 failures random points fool 5.

    Random-only examples are 5 % of all examples (50 % of PGD's failures): at margin 0.05 the sign
    must not fire (the rule is "more than the margin"; 5 / 100 computed in float32 is 0.0500000007),
    at 0.04 it must.
    """
    far, near = [0.1, 0.0], [0.49, 0.0]  # random points within 0.1 reach x0 > 0.5 only from near
    x = torch.tensor([[0.1, 1.0]] * 90 + [near] * 5 + [far] * 5)
    y = torch.zeros(100, dtype=torch.long)
    cfg = replace(CFG, eps=0.1, random_samples=50, margin=margin)
    report = diagnose(
        _threshold_model(),
        x,
        y,
        config=cfg,
        generator=torch.Generator().manual_seed(0),
        attack_factory=lambda m, eps: _Scripted(m),
    )
    sign = report["random_sampling_finds_adversarial"]
    assert sign.evidence["pgd_success"] == pytest.approx(0.90)
    assert sign.evidence["random_success"] == pytest.approx(0.05)
    assert sign.evidence["random_only_fraction"] == pytest.approx(0.05)
    assert sign.flagged is fires
