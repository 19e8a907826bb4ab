"""Every public entry point of an attack runs the model in eval mode; FGSM and PGD targeted."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from paperzoo.adversarial.attacks import BPDA, EOT, FGSM, PGD
from paperzoo.adversarial.attacks.wrm import WRM
from paperzoo.engine import seeded


class _Spy(nn.Module):
    """Records the mode of every forward."""

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        return x


def _model() -> tuple[nn.Module, _Spy]:
    spy = _Spy()
    with seeded(0):
        net = nn.Sequential(
            spy, nn.Flatten(), nn.Linear(64, 16), nn.BatchNorm1d(16), nn.Dropout(0.5),
            nn.Linear(16, 3),
        )  # fmt: skip
    return net.train(), spy


def _data(n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def _attacks(model: nn.Module) -> list:
    g = torch.Generator().manual_seed(0)
    return [
        FGSM(model, eps=0.5),
        PGD(model, eps=0.5, alpha=0.2, steps=3, generator=g),
        PGD(model, eps=0.5, alpha=0.2, steps=2, restarts=2, generator=g),
        EOT(PGD(model, eps=0.5, alpha=0.2, steps=2, generator=g), samples=2),
        BPDA(
            PGD(model, eps=0.5, alpha=0.2, steps=2, generator=g),
            transform=nn.Identity(),
            classifier=model,
        ),
    ]


@pytest.mark.parametrize("index", range(5))
def test_perturb_called_directly_runs_in_eval_mode_and_clamps(index: int) -> None:
    x, y = _data()
    model, spy = _model()
    stats = model[3].running_mean.clone()
    attack = _attacks(model)[index]
    x_adv = attack.perturb(x, y)
    assert spy.modes and not any(spy.modes)  # no dropout, no batch-norm statistics updated
    assert model.training and all(m.training for m in model.modules())  # the caller's modes back
    assert torch.equal(model[3].running_mean, stats)
    assert x_adv.min() >= 0 and x_adv.max() <= 1 and not x_adv.requires_grad
    fresh = _attacks(model)[index]
    assert torch.equal(x_adv, fresh(x, y))  # the same as attack(x, y)


def test_oracles_called_directly_run_in_eval_mode() -> None:
    x, y = _data()
    model, spy = _model()
    attack = PGD(model, eps=0.5, alpha=0.2, steps=3)
    loss, grad = attack.loss_and_grad(x, y)
    loss2, wrong = attack.evaluate(x, y)
    assert not any(spy.modes) and model.training
    assert torch.allclose(loss, loss2) and grad.shape == x.shape
    model.eval()
    assert torch.equal(attack.loss_and_grad(x, y)[1], grad)  # same as in eval mode
    model.train()
    WRM(model, gamma=1.0, steps=2).maximize(x, y)
    assert not any(spy.modes) and model.training


def test_a_raising_attack_restores_modes() -> None:
    model, _ = _model()
    attack = PGD(model, eps=0.5, alpha=0.2, steps=3)
    with pytest.raises(RuntimeError):
        attack.perturb(torch.rand(6, 1, 8, 9), torch.zeros(6, dtype=torch.long))
    assert all(m.training for m in model.modules())


def _linear() -> nn.Module:
    with seeded(0):
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 4))


@pytest.mark.parametrize("make", [
    lambda m: FGSM(m, eps=0.3, targeted=True),
    lambda m: PGD(m, eps=0.3, alpha=0.05, steps=10, targeted=True),
    lambda m: PGD(m, eps=0.3, alpha=0.05, steps=5, restarts=3, targeted=True,
                  generator=torch.Generator().manual_seed(0)),
])  # fmt: skip
def test_targeted_attacks_lower_the_target_loss(make) -> None:  # noqa: ANN001
    x, _ = _data(16)
    model = _linear()
    target = torch.full((16,), 2)
    ce = nn.CrossEntropyLoss(reduction="none")
    before = ce(model(x), target)
    x_adv = make(model)(x, target)
    after = ce(model(x_adv), target)
    assert (after < before).all()
    hits_before = (model(x).argmax(1) == target).sum()
    assert (model(x_adv).argmax(1) == target).sum() > hits_before
    untargeted = make(model)
    untargeted.targeted = False
    assert (ce(model(untargeted(x, target)), target) > before).all()  # the default ascends


def test_targeted_fgsm_is_the_step_against_the_gradient() -> None:
    x, _ = _data(4)
    model = _linear()
    target = torch.tensor([0, 1, 2, 3])
    _, g = FGSM(model, eps=0.1).loss_and_grad(x, target)
    x_adv = FGSM(model, eps=0.1, targeted=True)(x, target)
    assert torch.equal(x_adv, (x - 0.1 * g.sign()).clamp(0, 1))
    assert "targeted=True" in repr(FGSM(model, eps=0.1, targeted=True))


def test_bpda_takes_plain_callables() -> None:
    x, _ = _data(8)
    clf = _linear()
    y = clf(x).argmax(1)

    def quantise(v: torch.Tensor) -> torch.Tensor:
        return (v * 4).round() / 4

    def classify(v: torch.Tensor) -> torch.Tensor:
        return clf(v)

    def defended(v: torch.Tensor) -> torch.Tensor:
        return classify(quantise(v))

    g = torch.Generator().manual_seed(0)
    pgd = PGD(defended, eps=0.3, alpha=0.1, steps=5, generator=g)
    assert torch.equal(pgd.loss_and_grad(x, y)[1], torch.zeros_like(x))  # shattered gradient
    x_adv = BPDA(pgd, transform=quantise, classifier=classify)(x, y)
    assert (defended(x_adv).argmax(1) != y).sum() > 0
    assert (x_adv - x).abs().max() <= 0.3 + 1e-6
