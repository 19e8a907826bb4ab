"""EOT, BPDA and reparameterisation: equivalences and that they beat obfuscation."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from paperzoo.adversarial.attacks import BPDA, CW, EOT, FGSM, PGD, Reparameterized
from paperzoo.adversarial.defenses import (
    BitDepthReduction,
    FixedDraw,
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


def test_resize_pad_in_xie_geometry_draws_sizes_below_the_canvas_and_pads_with_the_value() -> None:
    # Xie et al.: rnd uniform in [299, 331), padded to 331; here the CIFAR-sized 32 -> [32, 35) -> 35
    g = torch.Generator().manual_seed(0)
    t = RandomResizePad(out_size=35, min_size=32, max_size=34, pad_value=0.5, generator=g).eval()
    size, ox, oy = t._draw(2000, torch.device("cpu"))
    assert set(size.long().tolist()) == {32, 33, 34}
    assert (ox + size <= 35).all() and (oy + size <= 35).all() and (ox >= 0).all()
    x = torch.ones(8, 3, 32, 32)
    assert t(x).shape == (8, 3, 35, 35) and (t(x).min() - 0.5).abs() < 1e-6
    # every image leaves at least one padded row and column, filled with 0.5 (the image is 1.0;
    # nearest neighbour: bilinear blends the image's edge into the first padded pixel)
    t.mode = "nearest"
    out = t(x)
    assert ((out - 0.5).abs() < 1e-6).flatten(1).any(1).all()
    assert (out.min() - 0.5).abs() < 1e-6 and (out.max() - 1.0).abs() < 1e-6
    with pytest.raises(ValueError, match="max_size"):
        RandomResizePad(out_size=35, min_size=32, max_size=36)


def test_fixed_draw_replays_one_draw_and_leaves_the_model_random() -> None:
    g = torch.Generator().manual_seed(0)
    t = RandomResizePad(out_size=12, min_size=7, generator=g)
    model = InputTransformDefense(transform=t, classifier=_cnn(size=12)).eval()
    x, _ = _data(6)
    frozen = FixedDraw(model, [g])
    a, b = frozen(x), frozen(x)
    torch.testing.assert_close(a, b)  # the same draw at every call
    torch.testing.assert_close(a, model(x))  # the frozen draw is the state at construction
    # Fresh draws continue from where the model's own stream is: untouched by frozen calls.
    after = model(x)
    frozen(x)
    g2 = torch.Generator().manual_seed(0)
    t.generator = g2
    model(x)  # consume the first draw, as above
    torch.testing.assert_close(model(x), after)
    t.generator = g
    with pytest.raises(ValueError, match="generators"):
        FixedDraw(model, [])
    # Frozen states from another stream: the frozen draw is that stream's first draw.
    other = torch.Generator().manual_seed(7)
    a7 = FixedDraw(model, [g], states=[other.get_state()])(x)
    t.generator = torch.Generator().manual_seed(7)
    torch.testing.assert_close(a7, model(x))
