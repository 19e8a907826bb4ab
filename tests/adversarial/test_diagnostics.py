"""The warning-sign checklist: silent on an honest model, loud on a shattered one."""

from __future__ import annotations

import torch
from torch import nn

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
