"""EOT, BPDA and Reparameterized compose in every order, and re-aiming keeps what was asked for.

A stochastic defence that counts its forward rows tells whether EOT's k draws happen at every
step; a one-gradient attack records the gradient the algorithm sees, compared with the average
computed by hand from the defence's formula.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.adversarial.attacks import BPDA, EOT, PGD, Attack, Reparameterized
from paperzoo.adversarial.defenses import (
    BitDepthReduction,
    InputTransformDefense,
    ThermometerEncoding,
)
from paperzoo.engine import seeded


class _Noise(nn.Module):
    """Adds N(0, 0.1^2) noise drawn from its own generator; counts calls and rows seen."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.generator = torch.Generator().manual_seed(seed)
        self.calls = 0
        self.rows = 0

    def reset(self, seed: int = 0) -> None:
        self.generator.manual_seed(seed)
        self.calls = self.rows = 0

    def forward(self, x: Tensor) -> Tensor:
        self.calls += 1
        self.rows += len(x)
        return x + 0.1 * torch.randn(x.shape, generator=self.generator)


def _noisy_classifier(noise: _Noise) -> nn.Module:
    with seeded(0):
        return nn.Sequential(noise, nn.Flatten(), nn.Linear(64, 3))


def _data(n: int = 5) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def _h(z: Tensor) -> Tensor:
    return torch.sigmoid(z)


def _h_inv(x: Tensor) -> Tensor:
    return torch.logit(x.clamp(1e-3, 1 - 1e-3))


class _OneGradient(Attack):
    """Takes one gradient through its oracle, records it, and returns ``x`` unchanged."""

    def __init__(self, model: nn.Module, seen: list[tuple[Tensor, Tensor]]) -> None:
        super().__init__(model, clip=None)
        self.seen = seen

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        self.seen.append(self.loss_and_grad(x, y))
        return x


WRAPS: dict[str, Callable[[Attack, int, bool], Attack]] = {
    "eot": lambda a, k, batched: EOT(a, samples=k, batched=batched),
    "bpda": lambda a, k, batched: BPDA(a),
    "reparam": lambda a, k, batched: Reparameterized(a, h=_h, h_inv=_h_inv),
}


def _chain(base: Attack, order: tuple[str, ...], k: int, batched: bool = False) -> Attack:
    """Wrap ``base`` innermost-first in the wrappers named by ``order``."""
    for name in order:
        base = WRAPS[name](base, k, batched)
    return base


def _expected_grad(clf: nn.Module, noise: _Noise, z: Tensor, y: Tensor, k: int) -> Tensor:
    """Mean over k draws of d/dz CE(clf(q(h(z)))), q (3-bit rounding) treated as the identity."""
    noise.reset()
    grads = []
    for _ in range(k):
        s = _h(z)
        u = BitDepthReduction(bits=3)(s).requires_grad_(True)
        loss = F.cross_entropy(clf(u), y, reduction="sum")
        (gu,) = torch.autograd.grad(loss, u)
        grads.append(gu * s * (1 - s))  # chain rule through h = sigmoid, identity through q
    return torch.stack(grads).mean(0)


@pytest.mark.parametrize("order", list(itertools.permutations(WRAPS)))
def test_every_order_of_eot_bpda_reparam_sees_the_expected_average_gradient(
    order: tuple[str, ...],
) -> None:
    x, y = _data()
    noise = _Noise()
    clf = _noisy_classifier(noise)
    defended = InputTransformDefense(transform=BitDepthReduction(bits=3), classifier=clf).eval()
    k = 3
    seen: list[tuple[Tensor, Tensor]] = []
    atk = _chain(_OneGradient(defended, seen), order, k)
    noise.reset()
    atk(x, y)
    assert noise.calls == k and noise.rows == k * len(x)  # k draws, each a forward pass
    assert len(seen) == 1
    z = _h_inv(x)
    torch.testing.assert_close(seen[0][1], _expected_grad(clf, noise, z, y, k))


@pytest.mark.parametrize("order", [("reparam", "eot"), ("eot", "reparam")])
@pytest.mark.parametrize("batched", [False, True])
def test_eot_and_reparameterized_draw_k_samples_per_pgd_step(
    order: tuple[str, ...], batched: bool
) -> None:
    """EOT(Reparameterized(PGD)) with 20 steps and 7 samples: 140 draws, not 20."""
    x, y = _data()
    noise = _Noise()
    model = _noisy_classifier(noise)
    pgd = PGD(model, eps=0.3, alpha=0.05, steps=20, generator=torch.Generator().manual_seed(0))
    atk = _chain(pgd, order, 7, batched)
    noise.reset()
    x_adv = atk(x, y)
    assert noise.rows == 20 * 7 * len(x)
    assert noise.calls == (20 if batched else 140)
    assert x_adv.min() >= 0 and x_adv.max() <= 1


def test_eot_outside_and_inside_reparameterized_give_the_same_attack() -> None:
    x, y = _data()
    noise = _Noise()
    model = _noisy_classifier(noise)

    def run(order: tuple[str, ...]) -> Tensor:
        pgd = PGD(model, eps=0.5, alpha=0.1, steps=5, generator=torch.Generator().manual_seed(0))
        noise.reset()
        return _chain(pgd, order, 4, True)(x, y)

    torch.testing.assert_close(run(("eot", "reparam")), run(("reparam", "eot")))


def test_wrappers_inside_reparameterized_search_unbounded_z() -> None:
    """The z-space attack has no box: EOT/BPDA inside Reparameterized must not clamp z to [0, 1]."""
    x, y = _data()
    with seeded(0):
        clf = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))

    def pgd() -> PGD:
        return PGD(clf, eps=2.0, alpha=0.5, steps=5, generator=torch.Generator().manual_seed(0))

    plain = Reparameterized(pgd(), h=_h, h_inv=_h_inv)(x, y)
    in_eot = Reparameterized(EOT(pgd(), samples=1), h=_h, h_inv=_h_inv)(x, y)
    torch.testing.assert_close(in_eot, plain)
    defended = InputTransformDefense(transform=nn.Identity(), classifier=clf)
    bpda_pgd = PGD(
        defended, eps=2.0, alpha=0.5, steps=5, generator=torch.Generator().manual_seed(0)
    )
    in_bpda = Reparameterized(BPDA(bpda_pgd), h=_h, h_inv=_h_inv)(x, y)
    torch.testing.assert_close(in_bpda, plain)


def test_reparameterized_with_model_reaims_the_latent_attack() -> None:
    x, y = _data()
    with seeded(0):
        a, b = nn.Linear(64, 3), nn.Linear(64, 3)
    clf_a, clf_b = nn.Sequential(nn.Flatten(), a), nn.Sequential(nn.Flatten(), b)

    def rep(model: nn.Module) -> Reparameterized:
        pgd = PGD(model, eps=1.0, alpha=0.3, steps=5, generator=torch.Generator().manual_seed(0))
        return Reparameterized(pgd, h=_h, h_inv=_h_inv, eps=0.2)

    torch.testing.assert_close(rep(clf_a).with_model(clf_b)(x, y), rep(clf_b)(x, y))
    eot = EOT(rep(clf_a), samples=2).with_model(clf_b)
    torch.testing.assert_close(eot(x, y), rep(clf_b)(x, y))


def test_bpda_with_model_keeps_explicit_transform_and_classifier() -> None:
    x, y = _data()
    with seeded(0):
        clf = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))
    q = BitDepthReduction(bits=2)

    def pgd(model: nn.Module) -> PGD:
        return PGD(model, eps=0.3, alpha=0.05, steps=5, generator=torch.Generator().manual_seed(0))

    # The plain classifier has no .transform: only the explicit overrides make BPDA possible.
    atk = BPDA(pgd(clf), transform=q, classifier=clf)
    again = atk.with_model(clf)
    torch.testing.assert_close(again(x, y), BPDA(pgd(clf), transform=q, classifier=clf)(x, y))
    assert again.surrogate.layer.transform is q


def test_bpda_with_model_takes_the_new_defences_approximation() -> None:
    """An approximation found on the old transform must not follow the attack to a new model."""
    x, y = _data()

    def thermometer_net(levels: int) -> InputTransformDefense:
        with seeded(0):
            clf = nn.Sequential(nn.Conv2d(levels, 2, 3, padding=1), nn.Flatten(), nn.Linear(128, 3))
        return InputTransformDefense(transform=ThermometerEncoding(levels=levels), classifier=clf)

    def pgd(model: nn.Module) -> PGD:
        return PGD(model, eps=0.3, alpha=0.05, steps=5, generator=torch.Generator().manual_seed(0))

    d4, d8 = thermometer_net(4), thermometer_net(8)
    moved = BPDA(pgd(d4)).with_model(d8)
    _, g_moved = moved.loss_and_grad(x, y)
    _, g_fresh = BPDA(pgd(d8)).loss_and_grad(x, y)
    torch.testing.assert_close(g_moved, g_fresh)
    # ... while an explicit approximation is kept.
    ramp8 = d8.transform.bpda_approx
    kept = BPDA(pgd(d4), approx=ramp8).with_model(d8)
    assert kept.approx is ramp8


class _ModeProbe(nn.Module):
    """Records ``self.training`` at every forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[bool] = []

    def forward(self, x: Tensor) -> Tensor:
        self.modes.append(self.training)
        return x


def test_attack_restores_each_submodules_mode_not_just_the_top() -> None:
    """A frozen BatchNorm inside a training model stays frozen after an attack."""
    x, y = _data()
    with seeded(0):
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    model.train()
    model[2].eval()  # e.g. fine-tuning with frozen batch statistics
    PGD(model, eps=0.1, alpha=0.05, steps=2)(x, y)
    assert model.training and not model[2].training


def test_wrappers_put_every_model_they_run_in_eval_mode() -> None:
    """An explicit classifier outside the attacked model runs in eval mode and is restored."""
    x, y = _data()
    probe = _ModeProbe()
    with seeded(0):
        clf = nn.Sequential(probe, nn.Flatten(), nn.Linear(64, 3))
        other = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))
    clf.train()
    pgd = PGD(other, eps=1.0, alpha=0.3, steps=2, generator=torch.Generator().manual_seed(0))
    Reparameterized(pgd, h=_h, h_inv=_h_inv, classifier=clf)(x, y)
    assert probe.modes and not any(probe.modes)
    assert clf.training
    probe.modes.clear()
    defended = InputTransformDefense(transform=nn.Identity(), classifier=other)
    pgd = PGD(defended, eps=0.3, alpha=0.1, steps=2, generator=torch.Generator().manual_seed(0))
    BPDA(pgd, transform=BitDepthReduction(bits=3), classifier=clf)(x, y)
    assert probe.modes and not any(probe.modes)
    assert clf.training
