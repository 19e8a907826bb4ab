"""Adversarial training on the shared engine: ERM and PGD adversarial training (Madry et al. 2018).

``adversarial_loss_fn(attack)`` turns an attack factory into a ``Trainer`` loss function: every
batch it builds the attack on the current model, replaces (or mixes) the clean batch with the
attack's output and returns the cross-entropy. Madry et al.'s saddle-point objective (Eq. 2.1)

    min_theta E_{(x, y)} [ max_{||delta|| <= eps} L(theta, x + delta, y) ]

is this loss with ``attack = lambda m: PGD(m, eps=..., alpha=..., steps=...)``; ERM is
``attack=None``; WRM and GAT plug in their own attack factories or loss functions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, unwrap_model
from paperzoo.engine import History, TrainConfig, Trainer
from paperzoo.engine.trainer import Extra

AttackFactory = Callable[[nn.Module], Attack]
LossFnOut = tuple[Tensor, dict[str, Tensor]]


def _accuracy(logits: Tensor, y: Tensor) -> Tensor:
    """The batch's top-1 accuracy as a 0-dim tensor on the batch's device (not read here)."""
    return (logits.detach().argmax(1) == y).float().mean()


def adversarial_loss_fn(
    attack: AttackFactory | None,
    *,
    clean_weight: float = 0.0,
    augment: Callable[[Tensor], Tensor] | None = None,
) -> Callable[[nn.Module, tuple[Tensor, Tensor]], LossFnOut]:
    """A ``Trainer`` loss function for ERM (``attack=None``) or adversarial training.

    Args:
        attack: ``model -> Attack``, called every batch on the model being trained (unwrapped
            from DistributedDataParallel: the attack needs no gradient synchronisation).
        clean_weight: weight of the clean loss; the adversarial loss gets ``1 - clean_weight``
            (Goodfellow et al.'s mixed objective uses 0.5; Madry et al. use 0).
        augment: ``x -> x'`` applied to every training batch first, so that the attack perturbs
            the augmented images (Madry et al.'s ``cifar10_challenge/train.py`` draws the
            augmented batch, then runs PGD on it); ``None``: no augmentation.

    Returns:
        ``(model, (x, y)) -> (loss, {"acc": ..., "adv_acc": ..., ...})``; the metrics are
        detached 0-dim tensors on the batch's device (no host read per step: the ``Trainer``
        reads them at its sync points).

    The clean and adversarial batches go through the model in one concatenated forward pass (one
    DDP forward per backward; note that batch-norm statistics then see both halves).
    """
    if not 0.0 <= clean_weight <= 1.0:
        raise ValueError(f"clean_weight must be in [0, 1], got {clean_weight}")

    def loss_fn(model: nn.Module, batch: tuple[Tensor, Tensor]) -> LossFnOut:
        x, y = batch[0], batch[1]
        if augment is not None:
            x = augment(x)
        if attack is None or clean_weight == 1.0:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            return loss, {"acc": _accuracy(logits, y)}
        x_adv = attack(unwrap_model(model))(x, y)
        if clean_weight == 0.0:
            logits_adv = model(x_adv)
            loss = F.cross_entropy(logits_adv, y)
            return loss, {"adv_acc": _accuracy(logits_adv, y)}
        logits_clean, logits_adv = model(torch.cat([x, x_adv])).split(len(x))
        loss_clean = F.cross_entropy(logits_clean, y)
        loss_adv = F.cross_entropy(logits_adv, y)
        loss = clean_weight * loss_clean + (1.0 - clean_weight) * loss_adv
        return loss, {
            "acc": _accuracy(logits_clean, y),
            "adv_acc": _accuracy(logits_adv, y),
            "clean_loss": loss_clean.detach(),
            "adv_loss": loss_adv.detach(),
        }

    return loss_fn


def make_optimizer(model: nn.Module, name: str, lr: float) -> torch.optim.Optimizer:
    """ "adam" or "sgd" (momentum 0.9) over the model's trainable parameters."""
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    raise ValueError(f"unknown optimizer {name!r}; choose from adam, sgd")


def train_classifier(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    attack: AttackFactory | None = None,
    clean_weight: float = 0.0,
    steps: int,
    batch_size: int,
    lr: float,
    optimizer: str | torch.optim.Optimizer = "adam",
    out_dir: str | Path | None = None,
    device: str | torch.device = "cpu",
    seed: int = 0,
    progress: bool = False,
    desc: str = "train",
    lr_schedule: Callable[[int], float] | None = None,
    eval_fn: Callable[[nn.Module], dict[str, float]] | None = None,
    log_every: int = 50,
    extra: dict[str, Extra] | None = None,
    resume: bool = False,
    channels_last: bool = False,
    augment: Callable[[Tensor], Tensor] | None = None,
) -> History:
    """Train ``model`` in place on ``(x, y)`` with ERM or adversarial training.

    Args:
        model: the classifier (trained in place).
        x, y: training inputs and labels.
        attack: ``model -> Attack`` for adversarial training, ``None`` for ERM.
        clean_weight: see ``adversarial_loss_fn``.
        steps, batch_size, lr: optimisation settings.
        optimizer: "adam", "sgd" or a ready optimizer over ``model``'s parameters.
        out_dir: where the engine writes metrics.jsonl and checkpoints (``None``: nothing).
        device, seed, progress, desc: forwarded to the engine.
        lr_schedule: ``step -> multiplier`` of the learning rate.
        eval_fn: ``model -> metrics`` run at the end (and by the engine's eval schedule).
        log_every: average the metrics over this many steps per log record.
        extra: further state for the engine's checkpoints (e.g. a generator the model draws
            from while training).
        resume: continue from the newest checkpoint in ``out_dir`` (a finished run is loaded).
        channels_last: the engine's ``TrainConfig.channels_last`` (the model and 4-D batches in
            channels-last memory format; faster convolutions on CPUs, see ``bench conv_layout``).
        augment: see ``adversarial_loss_fn`` (a generator it draws from belongs in ``extra``).

    Returns:
        The engine's ``History``.
    """
    opt = make_optimizer(model, optimizer, lr) if isinstance(optimizer, str) else optimizer
    config = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        seed=seed,
        progress=progress,
        desc=desc,
        log_every=min(log_every, max(steps, 1)),
        channels_last=channels_last,
    )
    trainer = Trainer(
        model,
        opt,
        adversarial_loss_fn(attack, clean_weight=clean_weight, augment=augment),
        config=config,
        out_dir=out_dir,
        lr_schedule=lr_schedule,
        eval_fn=eval_fn,
        extra=extra,
        device=device,
    )
    return trainer.fit((x, y), resume=resume)
