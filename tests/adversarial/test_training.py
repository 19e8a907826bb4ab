"""Adversarial training loop: ERM and PGD-AT on the shared engine."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from paperzoo.adversarial.attacks import PGD
from paperzoo.adversarial.training import adversarial_loss_fn, train_classifier
from paperzoo.engine import seeded


def _blobs(n: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n,), generator=g)
    x = 0.5 + (2 * y[:, None].float() - 1) * 0.2 + 0.05 * torch.randn(n, 4, generator=g)
    return x.clamp(0, 1), y


def _model() -> nn.Module:
    with seeded(0):
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))


def test_erm_learns() -> None:
    x, y = _blobs()
    model = _model()
    hist = train_classifier(model, x, y, steps=100, batch_size=32, lr=1e-2)
    assert hist.last("acc") > 0.95


def test_pgd_training_improves_robust_accuracy() -> None:
    x, y = _blobs()
    attack = lambda m: PGD(m, eps=0.15, alpha=0.05, steps=5)  # noqa: E731
    erm, at = _model(), _model()
    train_classifier(erm, x, y, steps=150, batch_size=32, lr=1e-2)
    hist = train_classifier(at, x, y, attack=attack, steps=150, batch_size=32, lr=1e-2)
    assert "adv_acc" in hist.records[-1]

    def robust(m: nn.Module) -> float:
        xa = PGD(m, eps=0.15, alpha=0.02, steps=20, random_start=False)(x, y)
        return (m(xa).argmax(1) == y).float().mean().item()

    assert robust(at) > 0.9
    assert robust(at) >= robust(erm)


def test_loss_fn_mixes_clean_and_adversarial() -> None:
    x, y = _blobs(16)
    model = _model().train()
    attack = lambda m: PGD(m, eps=0.1, alpha=0.05, steps=2)  # noqa: E731
    loss, metrics = adversarial_loss_fn(attack, clean_weight=0.5)(model, (x, y))
    assert loss.dim() == 0 and loss.requires_grad
    assert {"acc", "adv_acc", "clean_loss", "adv_loss"} <= set(metrics)
    expect = 0.5 * float(metrics["clean_loss"]) + 0.5 * float(metrics["adv_loss"])
    assert loss.item() == pytest.approx(expect, rel=1e-5)
    assert model.training  # the attack restored train mode
    with pytest.raises(ValueError):
        adversarial_loss_fn(attack, clean_weight=1.5)


def test_channels_last_trains_the_same_function() -> None:
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(64, 2, 8, 8, generator=g), torch.randint(0, 2, (64,), generator=g)

    def cnn() -> nn.Module:
        with seeded(0):
            return nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 2))

    attack = lambda m: PGD(m, eps=0.1, alpha=0.05, steps=2, random_start=False)  # noqa: E731
    plain, fast = cnn(), cnn()
    train_classifier(plain, x, y, attack=attack, steps=5, batch_size=16, lr=1e-2)
    train_classifier(fast, x, y, attack=attack, steps=5, batch_size=16, lr=1e-2, channels_last=True)
    assert fast[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert not plain[0].weight.is_contiguous(memory_format=torch.channels_last)
    for a, b in zip(plain.parameters(), fast.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)  # same steps up to rounding


def test_augment_runs_before_the_attack_and_the_loss() -> None:
    # Madry et al.'s train.py draws the augmented batch, then attacks it: the attack and the
    # loss both see augment(x), never the raw batch.
    x, y = _blobs(8)
    model = _model()
    attacked: list[torch.Tensor] = []

    class Record(PGD):
        def perturb(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
            attacked.append(xb.clone())
            return xb  # no perturbation: the loss then equals the augmented batch's

    loss_fn = adversarial_loss_fn(
        lambda m: Record(m, eps=0.1, alpha=0.1, steps=1), augment=lambda b: 1 - b
    )
    loss, _ = loss_fn(model, (x, y))
    torch.testing.assert_close(attacked[0], 1 - x)
    torch.testing.assert_close(loss, nn.functional.cross_entropy(model(1 - x), y))
    erm_loss, _ = adversarial_loss_fn(None, augment=lambda b: 1 - b)(model, (x, y))
    torch.testing.assert_close(erm_loss, loss)


def test_pgd_adversarial_training_random_starts_come_from_its_generator(tmp_path) -> None:
    from paperzoo.adversarial.defenses import pgd_adversarial_training

    x, y = _blobs(64)

    def run(seed: int, out: str) -> list[torch.Tensor]:
        model = _model()
        pgd_adversarial_training(
            model,
            x,
            y,
            eps=0.2,
            alpha=0.05,
            attack_steps=2,
            steps=5,
            batch_size=16,
            lr=1e-2,
            generator=torch.Generator().manual_seed(seed),
            out_dir=tmp_path / out,
        )
        return [p.detach().clone() for p in model.parameters()]

    torch.manual_seed(123)  # the global RNG must not matter
    a = run(0, "a")
    torch.manual_seed(456)
    b, c = run(0, "b"), run(1, "c")
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))
    assert not all(torch.equal(p, q) for p, q in zip(a, c, strict=True))


def test_loss_fn_reads_nothing_from_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The metrics stay detached 0-dim tensors: a step of adversarial training makes the host
    wait for nothing (the Trainer reads them at its sync points)."""
    x, y = _blobs(16)
    model = _model().train()
    attack = lambda m: PGD(m, eps=0.1, alpha=0.05, steps=2)  # noqa: E731
    for weight in (0.0, 0.5, 1.0):
        loss_fn = adversarial_loss_fn(attack, clean_weight=weight)
        with monkeypatch.context() as m:
            m.setattr(torch.Tensor, "item", lambda self: pytest.fail("a metric was read"))
            _, metrics = loss_fn(model, (x, y))
        assert metrics and all(
            isinstance(v, torch.Tensor) and v.dim() == 0 and not v.requires_grad
            for v in metrics.values()
        )
