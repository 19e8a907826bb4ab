"""GAT's training and evaluation: one classifier's training (``train_model``: the undefended,
dropout, random-noise, FGSM adversarial training and GAT models), the generator's statistics
(``generator_stats``), the clean and attacked accuracies (``correct_counts``, ``evaluate``,
``attacked_correct``), the claims read from them (``measured``) and the full run's cost
(``full_cost``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.adversarial.attacks import FGSM, PGD
from paperzoo.adversarial.gat import GenerativeAdversarialTrainer, PerturbationGenerator
from paperzoo.adversarial.training import adversarial_loss_fn
from paperzoo.data.base import Split
from paperzoo.engine import History, TrainConfig, Trainer, seeded
from paperzoo.experiments.base import RunContext
from paperzoo.metrics import on_device
from paperzoo.models.small import SmallCNN
from paperzoo.papers.gat.config import Config


def generator_stats(history: History, steps: int) -> dict[str, float]:
    """Mean size of GAT's perturbations and its fooling rate (1 - accuracy of the classifier on
    the generator's perturbed training batch, before the classifier's update), over the records
    logged in the last quarter of training."""
    recs = [r for r in history.records if "gen_linf" in r and r["step"] >= 0.75 * steps]
    if not recs:
        return {}
    mean = lambda k: sum(float(r[k]) for r in recs) / len(recs)  # noqa: E731
    return {"gen_linf": mean("gen_linf"), "gen_l2": mean("gen_l2"),
            "fooling_rate": 1.0 - mean("adv_acc")}  # fmt: skip


def measured(acc: dict[str, dict[str, float]], eps: tuple[float, ...]) -> dict[str, Any]:
    """The claims read from the accuracies ``acc[model][metric]``; None where a model they
    compare was not trained (a selection run's ``models``) or an eps was not evaluated."""

    def diff(a: str, b: str, metric: str) -> float | None:
        if a not in acc or b not in acc or metric not in acc[a] or metric not in acc[b]:
            return None
        return acc[a][metric] - acc[b][metric]

    def mean_diff(a: str, b: str, attack: str) -> float | None:
        d = [diff(a, b, f"{attack}{e}") for e in eps]
        return None if None in d else sum(d) / len(d)  # type: ignore[arg-type]

    gat = acc.get("gat", {})
    m: dict[str, Any] = {
        f"fgsm.eps{e}.gat_vs_plain.acc": diff("gat", "plain", f"fgsm{e}") if e in eps else None
        for e in (0.1, 0.2, 0.3)
    }
    m["fgsm.gat_vs_fgsm_at.acc"] = mean_diff("gat", "fgsm_at", "fgsm")
    m["clean.gat.acc"] = gat.get("clean")
    m["clean.gat_vs_plain.acc"] = diff("gat", "plain", "clean")
    m["clean.gat_vs_dropout.acc"] = diff("gat", "dropout", "clean")
    m["pgd.gat.acc"] = gat.get(f"pgd{eps[0]}")
    m["pgd.gat_vs_fgsm_at.acc"] = mean_diff("gat", "fgsm_at", "pgd")
    return m


def attacked_correct(
    model: nn.Module,
    attack: Callable[[Tensor, Tensor], Tensor],
    x: Tensor,
    y: Tensor,
    batch: int | None,
) -> Tensor:
    """How many of ``attack(x, y)`` ``model`` classifies correctly, attacked ``batch`` images at a
    time (one batch's activations in memory, never the whole test set's; None: all at once): a
    0-dim tensor on the model's device (``x``, ``y`` are there too), not read.

    Shapes:
        x: (N, C, H, W); y: (N,) -> ()
    """
    step = len(x) if batch is None else max(1, batch)
    correct = torch.zeros((), dtype=torch.int64, device=on_device.model_device(model))
    for i in range(0, len(x), step):
        xb, yb = x[i : i + step], y[i : i + step]
        correct += on_device.count_correct(model, attack(xb, yb), yb)
    return correct


def correct_counts(
    models: dict[str, nn.Module], x: Tensor, y: Tensor, cfg: Config, ctx: RunContext
) -> dict[tuple[str, str], Tensor]:
    """Per (model, metric): how many test images each model classifies correctly, clean, under
    FGSM at each eps and (the undefended, FGSM-AT and GAT models) under PGD at each eps. Every
    count is a 0-dim tensor on the models' device, where the attacks and the forwards run; none
    is read here."""
    counts: dict[tuple[str, str], Tensor] = {}
    for name, model in models.items():
        dev = on_device.model_device(model)
        xd, yd = x.to(dev), y.to(dev)
        counts[name, "clean"] = on_device.count_correct(model, xd, yd)
        for e in cfg.eps:
            fgsm = FGSM(model, eps=e)
            counts[name, f"fgsm{e}"] = attacked_correct(model, fgsm, xd, yd, cfg.eval_batch)
        if name in ("plain", "fgsm_at", "gat"):
            for e in cfg.eps:  # PGD at every FGSM eps
                pgd = PGD(model, eps=e, alpha=e / 4, steps=cfg.pgd_steps,
                          generator=ctx.generator("pgd", name, str(e)))  # fmt: skip
                counts[name, f"pgd{e}"] = attacked_correct(model, pgd, xd, yd, cfg.eval_batch)
    return counts


def evaluate(
    models: dict[str, nn.Module], x: Tensor, y: Tensor, cfg: Config, ctx: RunContext
) -> dict[str, dict[str, float]]:
    """``acc[model][metric]``: the accuracies of ``correct_counts``, read in one transfer."""
    counts = correct_counts(models, x, y, cfg, ctx)
    acc: dict[str, dict[str, float]] = {name: {} for name in models}
    values = on_device.fractions(list(counts.values()), len(x))
    for (name, metric), a in zip(counts, values, strict=True):
        acc[name][metric] = a
    return acc


def _noise_loss(eps: float, clip: tuple[float, float]) -> Callable[[nn.Module, Any], Tensor]:
    """Random-noise training: half clean, half uniform noise in the l_inf ball (the paper's
    alpha-weighted objective with random instead of adversarial perturbations)."""

    def loss_fn(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
        x, y = batch
        noisy = (x + (torch.rand_like(x) * 2 - 1) * eps).clamp(*clip)
        logits_clean, logits_noisy = model(torch.cat([x, noisy])).split(len(x))
        return 0.5 * F.cross_entropy(logits_clean, y) + 0.5 * F.cross_entropy(logits_noisy, y)

    return loss_fn


def train_model(
    name: str,
    split: Split,
    cfg: Config,
    ctx: RunContext,
    chans: int,
    size: int,
) -> tuple[nn.Module, PerturbationGenerator | None, History]:
    """Train the classifier ``name`` of ``MODELS`` (GAT with its generator) on ``split``'s
    training images: the classifier in eval mode on the run's device, the generator (GAT only,
    else None) and the training history."""
    with seeded(ctx.seed):
        model = SmallCNN(
            in_chans=chans, num_classes=split.num_classes, image_size=size,
            channels=cfg.channels, hidden=cfg.hidden,
            dropout=cfg.dropout if name == "dropout" else 0.0,
        )  # fmt: skip
    tc = TrainConfig(steps=cfg.steps, batch_size=cfg.batch_size, seed=ctx.seed,
                     log_every=max(1, min(50, cfg.steps)), progress=ctx.progress, desc=name,
                     channels_last=cfg.channels_last)  # fmt: skip
    out_dir = ctx.out_dir / "runs" / name
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    generator = None
    if name == "gat":
        with seeded(ctx.seed + 1):
            generator = PerturbationGenerator(
                in_chans=chans, hidden=cfg.gen_hidden, scale=cfg.train_eps
            )
        gen_opt = torch.optim.Adam(generator.parameters(), lr=cfg.lr)
        gat = GenerativeAdversarialTrainer(
            generator=generator,
            generator_optimizer=gen_opt,
            classifier_optimizer=opt,
            config=cfg.gat,
        )
        extra = {"generator": generator, "generator_optimizer": gen_opt,
                 "classifier_optimizer": opt}  # fmt: skip
        trainer = Trainer(model, None, gat.step, config=tc, manual=True, device=ctx.device,
                          out_dir=out_dir, extra=extra)  # fmt: skip
    else:
        if name == "fgsm_at":
            loss = adversarial_loss_fn(lambda m: FGSM(m, eps=cfg.train_eps), clean_weight=0.5)
        elif name == "noise":
            loss = _noise_loss(cfg.train_eps, (0.0, 1.0))
        else:
            loss = adversarial_loss_fn(None)
        trainer = Trainer(model, opt, loss, config=tc, device=ctx.device, out_dir=out_dir)
    history = trainer.fit((split.x_train, split.y_train), resume=True)
    model.eval()  # left on the run's device: evaluated there
    if generator is not None:
        generator.eval()
    return model, generator, history


def full_cost(cfg: Config, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    """The full run's pieces (``paperzoo.cost``): each model's training steps and the attacks."""
    from paperzoo.utils.work import Piece, step

    net = SmallCNN(
        in_chans=3, num_classes=10, image_size=32, channels=cfg.channels, hidden=cfg.hidden
    )
    f = step(net, (cfg.batch_size, 3, 32, 32))
    eb = cfg.eval_batch or cfg.batch_size  # an attack iteration at the attacks' batch
    per = step(net, (eb, 3, 32, 32)) / eb
    # forward+backward passes of the classifier per step: FGSM-AT one attack pass and the
    # update on the clean and adversarial halves; GAT the generator's input gradient, its
    # update through the classifier, and the classifier's update on both halves (upper bound)
    passes = {"fgsm_at": 3, "gat": 4}
    pieces = [Piece(name, f * passes.get(name, 1), steps) for name, steps in plan]
    attacks = len(cfg.eps) * (1 + cfg.pgd_steps)  # FGSM and PGD at each eps
    pieces.append(Piece("FGSM and PGD evaluation", per, len(plan) * 10_000 * attacks))
    return pieces, (
        f"CIFAR-10 CNN (channels {list(cfg.channels)}, hidden {cfg.hidden}) at batch "
        f"{cfg.batch_size}; FGSM-AT counts 3 and GAT 4 forward and backward passes of the "
        "classifier per step (the generator, two small layers, is not counted); evaluation: "
        f"FGSM and {cfg.pgd_steps}-step PGD at {len(cfg.eps)} budgets on the 10,000 test images"
    )
