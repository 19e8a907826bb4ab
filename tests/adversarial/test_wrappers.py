"""EOT, BPDA and reparameterisation: equivalences and that they beat obfuscation."""

from __future__ import annotations

import torch
from torch import nn

from paperzoo.adversarial.attacks import BPDA, CW, EOT, FGSM, PGD, Reparameterized
from paperzoo.adversarial.defenses import (
    BitDepthReduction,
    InputTransformDefense,
    RandomResizePad,
    ThermometerEncoding,
    add_activation_pruning,
)
from paperzoo.engine import seeded


def _cnn(in_chans: int = 1, size: int = 8) -> nn.Module:
    with seeded(0):
        return nn.Sequential(
            nn.Conv2d(in_chans, 4, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(4 * size * size, 3),
        )


def _data(n: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.rand(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def _pgd(model: nn.Module, seed: int = 0, **kw: object) -> PGD:
    return PGD(
        model, eps=0.3, alpha=0.05, steps=5, generator=torch.Generator().manual_seed(seed), **kw
    )


def test_eot_with_one_sample_equals_wrapped_attack() -> None:
    x, y = _data()
    model = _cnn()
    for make in (
        _pgd,
        lambda m: FGSM(m, eps=0.1),
        lambda m: CW(m, steps=10, binary_search_steps=2),
    ):
        torch.testing.assert_close(EOT(make(model), samples=1)(x, y), make(model)(x, y))


def test_eot_with_one_sample_equals_wrapped_attack_on_random_defence() -> None:
    x, y = _data()
    clf = _cnn(size=10)

    def defended(seed: int) -> nn.Module:
        t = RandomResizePad(out_size=10, min_size=7, generator=torch.Generator().manual_seed(seed))
        return InputTransformDefense(transform=t, classifier=clf)

    a = EOT(_pgd(defended(3)), samples=1)(x, y)
    b = _pgd(defended(3))(x, y)
    torch.testing.assert_close(a, b)


def test_eot_on_deterministic_model_equals_wrapped_attack_for_any_k() -> None:
    x, y = _data()
    model = _cnn()
    for batched in (True, False):
        a = EOT(_pgd(model), samples=4, batched=batched)(x, y)
        torch.testing.assert_close(a, _pgd(model)(x, y))


def test_eot_averages_gradients_of_the_random_defence() -> None:
    """The EOT gradient is the mean of k single-sample gradients (same draws)."""
    x, y = _data(4)
    clf = _cnn(size=10)
    t = RandomResizePad(out_size=10, min_size=7, generator=torch.Generator().manual_seed(0))
    model = InputTransformDefense(transform=t, classifier=clf).eval()
    eot = EOT(_pgd(model), samples=3, batched=False)
    _, g = eot.loss_and_grad(x, y)
    t.generator.manual_seed(0)
    singles = [_pgd(model).loss_and_grad(x, y)[1] for _ in range(3)]
    torch.testing.assert_close(g, torch.stack(singles).mean(0))


def test_bpda_with_identity_preprocessor_equals_plain_pgd() -> None:
    x, y = _data()
    clf = _cnn()
    defended = InputTransformDefense(transform=nn.Identity(), classifier=clf)
    torch.testing.assert_close(BPDA(_pgd(defended))(x, y), _pgd(clf)(x, y))
    torch.testing.assert_close(BPDA(_pgd(defended, norm="l2"))(x, y), _pgd(clf, norm="l2")(x, y))


def test_bpda_restores_gradient_through_quantisation() -> None:
    x, y = _data()
    clf = _cnn()
    defended = InputTransformDefense(transform=BitDepthReduction(bits=3), classifier=clf)
    _, g_naive = _pgd(defended).loss_and_grad(x, y)
    assert torch.count_nonzero(g_naive) == 0  # shattered: round() has zero gradient
    _, g_bpda = BPDA(_pgd(defended)).loss_and_grad(x, y)
    _, g_clf = _pgd(clf).loss_and_grad(BitDepthReduction(bits=3)(x), y)
    torch.testing.assert_close(g_bpda, g_clf)  # identity backward = gradient at g(x)


def test_bpda_uses_thermometer_smooth_approximation() -> None:
    x, y = _data()
    therm = ThermometerEncoding(levels=4)
    defended = InputTransformDefense(transform=therm, classifier=_cnn(in_chans=4))
    _, g_naive = _pgd(defended).loss_and_grad(x, y)
    assert torch.count_nonzero(g_naive) == 0
    _, g = BPDA(_pgd(defended)).loss_and_grad(x, y)
    assert torch.count_nonzero(g) > 0
    x_adv = BPDA(_pgd(defended))(x, y)
    assert (x_adv - x).abs().max() <= 0.3 + 1e-6


def test_bpda_and_eot_compose_in_either_order() -> None:
    x, y = _data()
    clf = _cnn()
    defended = InputTransformDefense(transform=BitDepthReduction(bits=2), classifier=clf)
    a = EOT(BPDA(_pgd(defended)), samples=3)(x, y)
    b = BPDA(EOT(_pgd(defended), samples=3))(x, y)
    c = BPDA(_pgd(defended))(x, y)  # deterministic defence: EOT changes nothing
    torch.testing.assert_close(a, c)
    torch.testing.assert_close(b, c)
    assert not torch.equal(c, _pgd(defended)(x, y))


def test_eot_with_sap_runs_and_respects_budget() -> None:
    x, y = _data()
    model = add_activation_pruning(_cnn(), generator=torch.Generator().manual_seed(0))
    x_adv = EOT(_pgd(model), samples=5)(x, y)
    assert (x_adv - x).abs().max() <= 0.3 + 1e-6
    assert x_adv.min() >= 0 and x_adv.max() <= 1


def test_reparameterized_attack_respects_x_ball_and_raises_loss() -> None:
    x, y = _data(16)
    clf = _cnn()

    def h(z: torch.Tensor) -> torch.Tensor:  # x = (tanh(z) + 1) / 2, the CW change of variables
        return (torch.tanh(z) + 1) / 2

    def h_inv(x: torch.Tensor) -> torch.Tensor:
        return torch.atanh((2 * x - 1).clamp(-0.999, 0.999))

    inner = PGD(clf, eps=1.0, alpha=0.2, steps=10, generator=torch.Generator().manual_seed(0))
    atk = Reparameterized(inner, h=h, h_inv=h_inv, eps=0.2)
    x_adv = atk(x, y)
    assert (x_adv - x).abs().max() <= 0.2 + 1e-6
    before, _ = atk.evaluate(x, y)
    after, _ = atk.evaluate(x_adv, y)
    assert after.mean() > before.mean()
