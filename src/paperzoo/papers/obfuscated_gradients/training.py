"""How the obfuscated-gradients models are trained and attacked.

``run_mnist``: the MNIST part (smoke and quick): six SmallCNN-based models (undefended,
thermometer, bit depth, random resize-and-pad, SAP, PGD adversarial training), each attacked
with naive PGD and with the paper's adaptive attack (BPDA or EOT) at the threat model's eps and
along an eps curve, then probed by the warning-sign checklist
(``paperzoo.adversarial.diagnostics``). ``run_cifar``: the paper's CIFAR-10 setting (full scale):
Madry et al.'s wide ResNet trained three times with ``cifar10_challenge``'s schedule (natural;
behind the thermometer code; with PGD adversarial training), SAP and resize-and-pad built around
the natural one, and Table 1's attacks. Test data are read only inside
``RunContext.final_evaluation``. Settings: ``config.py``; protocol: docs/obfuscated-gradients.md.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks import BPDA, EOT, PGD, Attack
from paperzoo.adversarial.cifar_model import MadryResNet, madry_sgd
from paperzoo.adversarial.defenses import (
    BitDepthReduction,
    FixedDraw,
    InputTransformDefense,
    RandomResizePad,
    ThermometerEncoding,
    add_activation_pruning,
    pgd_adversarial_training,
)
from paperzoo.adversarial.diagnostics import DiagnosticsConfig, diagnose
from paperzoo.adversarial.training import train_classifier
from paperzoo.data import load_dataset
from paperzoo.data.base import DataInfo
from paperzoo.data.cifar import random_crop_flip
from paperzoo.engine import budget, seeded
from paperzoo.engine.seeding import derive_seed
from paperzoo.experiments.base import RunContext
from paperzoo.metrics import accuracy
from paperzoo.models.small import SmallCNN
from paperzoo.papers.obfuscated_gradients.config import (
    CIFAR_MODELS,
    OBFUSCATING,
    SHATTERED,
    CifarConfig,
    Config,
)

log = logging.getLogger(__name__)


def _with_eps(diag: DiagnosticsConfig, eps: float) -> DiagnosticsConfig:
    return replace(diag, eps=eps)


def _device_generator(ctx: RunContext, *keys: str) -> torch.Generator:
    """``ctx.generator(*keys)``'s seed on the run's device: SAP draws one number per activation
    per forward pass, which a CPU generator would make the bottleneck of a GPU run (on the CPU
    this is exactly ``ctx.generator(*keys)``)."""
    return torch.Generator(device=ctx.device).manual_seed(derive_seed(ctx.seed, *keys))


def _perturb(atk: Attack, x: Tensor, y: Tensor, batch: int | None) -> Tensor:
    """``atk(x, y)``, ``batch`` examples per call (None: one call)."""
    if batch is None or len(x) <= batch:
        return atk(x, y)
    return torch.cat([atk(x[i : i + batch], y[i : i + batch]) for i in range(0, len(x), batch)])


def _robust_acc(
    model: nn.Module, atk: Attack, x: Tensor, y: Tensor, batch: int, device: str
) -> float:
    """Accuracy of ``model`` (a fresh draw of its randomness) on ``atk``'s adversarial examples,
    crafted ``batch`` images at a time."""
    return accuracy(model, _perturb(atk, x, y, batch), y, device=device)


def cifar_models(c: CifarConfig, ctx: RunContext, num_classes: int) -> dict[str, nn.Module]:
    """Madry et al.'s wide ResNet three times: natural, behind the thermometer code, for PGD-AT."""

    def net(in_chans: int = 3) -> MadryResNet:
        with seeded(ctx.seed):
            return MadryResNet(
                in_chans=in_chans, num_classes=num_classes, filters=c.filters, units=c.units
            )

    thermometer = InputTransformDefense(
        transform=ThermometerEncoding(levels=c.thermometer_levels),
        classifier=net(3 * c.thermometer_levels),  # thermometer/cifar_model.py: ch = levels * 3
    )
    return {"natural": net(), "thermometer": thermometer, "pgd_at": net()}


def train_cifar(
    name: str, model: nn.Module, c: CifarConfig, ctx: RunContext, x: Tensor, y: Tensor
) -> None:
    """``cifar10_challenge/train.py``: momentum SGD with weight decay on the kernels, the
    piecewise-constant schedule, pad-4 crop + flip augmentation (``AugmentedCIFAR10Data``: zero
    padding of the 0-255 image, i.e. black) drawn before the training attack; for ``pgd_at`` the
    attack of ``config.json`` on every augmented batch, the loss on the adversarial batch only."""
    aug = ctx.generator("cifar10", "augment", name)

    def augment(batch: Tensor) -> Tensor:
        return random_crop_flip(batch, generator=aug, padding=4, flip=True)

    common: dict[str, Any] = {
        "steps": c.steps,
        "batch_size": c.batch_size,
        "lr": c.lr,
        "optimizer": madry_sgd(model, lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay),
        "lr_schedule": lambda step: 0.1 ** sum(step >= m for m in c.milestones),
        "out_dir": ctx.out_dir / "runs" / f"cifar10_{name}",
        "device": ctx.device,
        "seed": ctx.seed,
        "progress": ctx.progress,
        "desc": f"cifar10 {name}",
        "resume": True,
        "augment": augment,
    }
    if name == "pgd_at":
        pgd_adversarial_training(
            model,
            x,
            y,
            eps=c.at_eps,
            alpha=c.at_alpha,
            attack_steps=c.at_attack_steps,  # random start: config.json's random_start true
            generator=_device_generator(ctx, "cifar10", "pgd_at", "attack"),
            extra={"augment_generator": aug},
            **common,
        )
    else:
        train_classifier(model, x, y, extra={"augment_generator": aug}, **common)
    model.eval()


def run_cifar(c: CifarConfig, ctx: RunContext) -> tuple[dict[str, float], dict[str, Any], Any]:
    """Train the three CIFAR-10 networks, build the defences around them, attack."""
    t0 = time.perf_counter()
    split = load_dataset("cifar10", data_root=ctx.data_root, download=ctx.download, seed=ctx.seed)
    split = ctx.holdout(split, "CIFAR-10 test split")  # final evaluation only
    models = cifar_models(c, ctx, split.num_classes)
    for name in CIFAR_MODELS:
        train_cifar(name, models[name], c, ctx, split.x_train, split.y_train)
    natural, thermometer, pgd_at = (models[n] for n in CIFAR_MODELS)
    t_train = time.perf_counter() - t0

    # Athalye et al.'s SAP (sap/sap_model.py) prunes the output of every convolution.
    g_sap = _device_generator(ctx, "cifar10", "sap")
    sap = add_activation_pruning(
        copy.deepcopy(natural), frac=c.sap_frac, generator=g_sap, after=(nn.Conv2d,)
    ).eval()
    g_rp = ctx.generator("cifar10", "resize")
    # Xie et al. put the randomisation layers in front of a trained classifier, unchanged.
    resize = RandomResizePad(
        out_size=c.resize_out,
        min_size=c.resize_min,
        max_size=c.resize_max,
        pad_value=c.pad_value,
        generator=g_rp,
    )
    resize_pad = InputTransformDefense(transform=resize, classifier=natural).eval()

    def pgd(
        model: nn.Module, key: str, steps: int = c.pgd_steps, alpha: float = c.pgd_alpha
    ) -> PGD:
        gen = ctx.generator("cifar10", "attack", key)
        return PGD(model, eps=c.eps, alpha=alpha, steps=steps, generator=gen)

    # Images per attack call: eval_batch without EOT, eot_batch with it (EOT repeats the batch
    # eot_samples times in one pass: 30 x 250 images through the wide ResNet with gradients
    # would not fit a GPU). --max-steps N: N batches of the smaller of eot_batch and
    # eval_batch / eot_samples images, for every attack.
    b, b_eot = c.eval_batch, c.eot_batch
    if budget.active() is not None:
        b = b_eot = max(1, min(c.eot_batch, c.eval_batch // c.eot_samples))
    n, n_at = budget.items(c.n_eval, b), budget.items(c.n_eval_pgd_at, b)
    x_ev, y_ev = split.x_test[:n].to(ctx.device), split.y_test[:n].to(ctx.device)
    x_at, y_at = split.x_test[:n_at].to(ctx.device), split.y_test[:n_at].to(ctx.device)
    out: dict[str, float] = {}
    dev = ctx.device
    with ctx.final_evaluation():
        for name, model in (
            ("undefended", natural),
            ("sap", sap),
            ("resize_pad", resize_pad),
            ("thermometer", thermometer),
        ):
            out[f"cifar10.{name}.clean_acc"] = accuracy(model, x_ev, y_ev, device=dev)
        out["cifar10.undefended.pgd.robust_acc"] = _robust_acc(
            natural, pgd(natural, "undefended"), x_ev, y_ev, b, dev
        )
        # Shattered gradients (Sec. 4.1): PGD through the thermometer code as implemented sees
        # an exactly zero gradient (a comparison); BPDA differentiates Athalye et al.'s ramp.
        grad_max = _input_grad_abs_max(thermometer, x_ev[:b], y_ev[:b])
        out["cifar10.thermometer.naive_pgd.robust_acc"] = _robust_acc(
            thermometer, pgd(thermometer, "thermometer/naive"), x_ev, y_ev, b, dev
        )
        out["cifar10.thermometer.bpda.robust_acc"] = _robust_acc(
            thermometer, BPDA(pgd(thermometer, "thermometer/bpda")), x_ev, y_ev, b, dev
        )
        out["cifar10.sap.naive_pgd.robust_acc"] = _robust_acc(
            sap, pgd(sap, "sap/naive"), x_ev, y_ev, b, dev
        )
        # Sec. 4.2: EOT averages the gradient over c.eot_samples draws of the pruning.
        out["cifar10.sap.eot.robust_acc"] = _robust_acc(
            sap, EOT(pgd(sap, "sap/eot"), samples=c.eot_samples), x_ev, y_ev, b_eot, dev
        )
        # Xie et al.'s single-pattern attack: one draw, from its own stream, frozen for the whole
        # attack; the robust accuracy is measured with fresh draws of the defence's stream.
        frozen = ctx.generator("cifar10", "resize", "frozen").get_state()
        out["cifar10.resize_pad.fixed_draw_pgd.robust_acc"] = _robust_acc(
            resize_pad,
            pgd(FixedDraw(resize_pad, [g_rp], states=[frozen]), "resize_pad/fixed"),
            x_ev,
            y_ev,
            b,
            dev,
        )
        out["cifar10.resize_pad.naive_pgd.robust_acc"] = _robust_acc(
            resize_pad, pgd(resize_pad, "resize_pad/naive"), x_ev, y_ev, b, dev
        )
        out["cifar10.resize_pad.eot.robust_acc"] = _robust_acc(
            resize_pad,
            EOT(pgd(resize_pad, "resize_pad/eot"), samples=c.eot_samples),
            x_ev,
            y_ev,
            b_eot,
            dev,
        )
        # Madry et al.'s evaluation: 20 steps of 2/255 from a random start on the test set.
        out["cifar10.pgd_at.clean_acc"] = accuracy(pgd_at, x_at, y_at, device=dev)
        at_attack = pgd(pgd_at, "pgd_at", steps=c.pgd_at_eval_steps, alpha=c.pgd_at_eval_alpha)
        out["cifar10.pgd_at.pgd.robust_acc"] = _robust_acc(pgd_at, at_attack, x_at, y_at, b, dev)
    broken = [
        "cifar10.thermometer.bpda.robust_acc",
        "cifar10.sap.eot.robust_acc",
        "cifar10.resize_pad.eot.robust_acc",
    ]
    out["cifar10.pgd_at.margin_over_obfuscated"] = out["cifar10.pgd_at.pgd.robust_acc"] - max(
        out[k] for k in broken
    )
    details = {
        "n_eval": n,
        "n_eval_pgd_at": n_at,
        "thermometer_naive_grad_abs_max": grad_max,
        "measured": dict(out),
        "seconds": {"train": t_train, "attacks": time.perf_counter() - t0 - t_train},
    }
    for k, v in out.items():
        log.info("%s: %.3f", k, v)
    return out, details, split.info


def _input_grad_abs_max(model: nn.Module, x: Tensor, y: Tensor) -> float:
    """max |d loss / d x| over a batch, the gradient a naive attacker sees (0.0 when the model
    cuts x out of the graph, as the thermometer code does)."""
    _, grad = PGD(model, eps=0.0, alpha=0.0, steps=0).loss_and_grad(x, y)
    return float(grad.abs().max()) if grad.numel() else 0.0


def run_mnist(
    name: str, cfg: Config, ctx: RunContext
) -> tuple[dict[str, Any], dict[str, Any], DataInfo]:
    """The MNIST part on the digit set ``name``: six models, naive and adaptive attacks, the
    checklist. Returns (measured, details, the data set's ``DataInfo``)."""
    t0 = time.perf_counter()
    split = load_dataset(name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed)
    split = ctx.holdout(split.subset(cfg.n_train, None), "test split")  # final evaluation only
    x_tr, y_tr = split.x_train, split.y_train
    side = x_tr.shape[-1]
    if side % 4 or cfg.resize_out % 4:
        raise ValueError("image and canvas sides must be divisible by 4 for SmallCNN")

    def cnn(**kw: Any) -> SmallCNN:
        with seeded(ctx.seed):
            return SmallCNN(
                in_chans=kw.pop("in_chans", x_tr.shape[1]),
                num_classes=split.num_classes,
                channels=cfg.channels,
                hidden=cfg.hidden,
                image_size=kw.pop("image_size", side),
            )

    def fit(model: nn.Module, tag: str, **kw: Any) -> nn.Module:
        train_classifier(
            model,
            x_tr,
            y_tr,
            steps=cfg.steps,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            out_dir=ctx.out_dir / "runs" / tag,
            device=ctx.device,
            seed=ctx.seed,
            progress=ctx.progress,
            desc=tag,
            resume=True,
            channels_last=cfg.channels_last,
            **kw,
        )
        return model.eval()

    def gen(*keys: str) -> torch.Generator:
        return ctx.generator(*keys)

    # -- the models -----------------------------------------------------------------------
    undefended = fit(cnn(), "undefended")
    thermometer = fit(
        InputTransformDefense(
            transform=ThermometerEncoding(levels=cfg.thermometer_levels),
            classifier=cnn(in_chans=x_tr.shape[1] * cfg.thermometer_levels),
        ),
        "thermometer",
    )
    bit_depth = InputTransformDefense(
        transform=BitDepthReduction(bits=cfg.bits), classifier=undefended
    ).eval()
    resize = RandomResizePad(
        out_size=cfg.resize_out, min_size=cfg.resize_min * side // 28, generator=gen("resize")
    )
    resize_pad = fit(
        InputTransformDefense(transform=resize, classifier=cnn(image_size=cfg.resize_out)),
        "resize_pad",
        extra={"resize_generator": resize.generator},  # drawn from while training
    )
    sap = add_activation_pruning(
        copy.deepcopy(undefended), frac=cfg.sap_frac, generator=_device_generator(ctx, "sap")
    ).eval()
    pgd_at = cnn()
    pgd_adversarial_training(
        pgd_at,
        x_tr,
        y_tr,
        eps=cfg.eps,
        alpha=cfg.at_alpha,
        attack_steps=cfg.at_attack_steps,
        steps=cfg.at_steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        eps_warmup=cfg.at_warmup,
        out_dir=ctx.out_dir / "runs" / "pgd_at",
        device=ctx.device,
        seed=ctx.seed,
        progress=ctx.progress,
        desc="pgd_at",
        resume=True,
    )
    pgd_at.eval()
    models: dict[str, nn.Module] = {
        "undefended": undefended,
        "thermometer": thermometer,
        "bit_depth": bit_depth,
        "resize_pad": resize_pad,
        "sap": sap,
        "pgd_at": pgd_at,
    }
    t_train = time.perf_counter() - t0

    # -- attacks ----------------------------------------------------------------------------
    def naive(model: nn.Module, eps: float, steps: int, alpha: float, key: str) -> Attack:
        return PGD(model, eps=eps, alpha=alpha, steps=steps, generator=gen("attack", key))

    def adaptive(name: str) -> Callable[[nn.Module, float, int, float, str], Attack]:
        """The paper's fix for an obfuscating defence, around the naive PGD."""

        def make(model: nn.Module, eps: float, steps: int, alpha: float, key: str) -> Attack:
            base = naive(model, eps, steps, alpha, key)
            if name in SHATTERED:
                return BPDA(base)  # identity / thermometer ramp on the backward pass
            return EOT(base, samples=cfg.eot_samples)

        return make

    # --max-steps N: N batches of attack_batch / eot_samples images, so that one EOT call
    # holds attack_batch images' activations (a full-scale dry run of this part
    # held 11 GB with 150 images x 30 draws in one call); without a budget, as configured.
    atk_batch, n_eval = cfg.attack_batch, cfg.n_eval
    if budget.active() is not None:
        atk_batch = max(1, (cfg.attack_batch or cfg.batch_size) // cfg.eot_samples)
        n_eval = budget.items(cfg.n_eval, atk_batch)
    x_ev, y_ev = (
        split.x_test[:n_eval].to(ctx.device),
        split.y_test[:n_eval].to(ctx.device),
    )
    x_cu, y_cu = x_ev[: cfg.n_curve], y_ev[: cfg.n_curve]
    measured: dict[str, Any] = {}
    details: dict[str, Any] = {"clean_acc": {}, "naive": {}, "adaptive": {}, "curves": {}}
    with ctx.final_evaluation():  # every model is built: attack the test examples
        for name, model in models.items():
            details["clean_acc"][name] = accuracy(model, x_ev, y_ev, device=ctx.device)
            kinds = [("naive", naive)]
            if name in OBFUSCATING:
                kinds.append(("adaptive", adaptive(name)))
            for kind, make in kinds:
                atk = make(model, cfg.eps, cfg.pgd_steps, cfg.pgd_alpha, f"{name}/{kind}")
                adv = _perturb(atk, x_ev, y_ev, atk_batch)
                details[kind][name] = accuracy(model, adv, y_ev, device=ctx.device)
                curve = []
                for e in cfg.eps_curve:
                    alpha = 2.5 * e / cfg.curve_steps
                    a = make(model, e, cfg.curve_steps, alpha, f"{name}/{e}")
                    adv_cu = _perturb(a, x_cu, y_cu, atk_batch)
                    curve.append(accuracy(model, adv_cu, y_cu, device=ctx.device))
                details["curves"].setdefault(name, {})[kind] = curve
            if name not in OBFUSCATING:  # nothing masked: the adaptive attack is the naive one
                details["adaptive"][name] = details["naive"][name]
                details["curves"][name]["adaptive"] = details["curves"][name]["naive"]
            log.info(
                "%s: clean %.3f naive %.3f adaptive %.3f",
                name,
                details["clean_acc"][name],
                details["naive"][name],
                details["adaptive"][name],
            )
    t_attack = time.perf_counter() - t0 - t_train

    measured["defense.undefended.pgd.robust_acc"] = details["adaptive"]["undefended"]
    for name in OBFUSCATING:
        measured[f"defense.{name}.naive_pgd.robust_acc"] = details["naive"][name]
        measured[f"defense.{name}.adaptive.robust_acc"] = details["adaptive"][name]
    best_obf = max(details["adaptive"][n] for n in OBFUSCATING)
    measured["defense.pgd_at.adaptive.robust_acc"] = details["adaptive"]["pgd_at"]
    measured["defense.pgd_at.adaptive.margin_over_obfuscated"] = (
        details["adaptive"]["pgd_at"] - best_obf
    )

    # -- the warning-sign checklist ---------------------------------------------------------
    diag_cfg = cfg.diag if cfg.diag.eps == cfg.eps else _with_eps(cfg.diag, cfg.eps)
    x_dg, y_dg = x_ev[: cfg.n_diag], y_ev[: cfg.n_diag]
    details["diagnostics"] = {}
    with ctx.final_evaluation():  # the checklist probes the models on test examples
        for name, model in models.items():
            report = diagnose(model, x_dg, y_dg, config=diag_cfg, generator=gen("diag", name))
            measured[f"diagnostics.{name}.flagged"] = report.any_flagged
            details["diagnostics"][name] = report.to_dict()
            log.info("diagnostics %s: %s", name, report.flagged or "none")
    t_diag = time.perf_counter() - t0 - t_train - t_attack
    details["seconds"] = {"train": t_train, "attacks": t_attack, "diagnostics": t_diag}
    return measured, details, split.info
