"""The settings and claims of the obfuscated-gradients reproduction: the MNIST part's ``Config``
(smoke and quick; at full only with ``--dataset``), the paper's CIFAR-10 setting ``CifarConfig``
(nested as ``Config.cifar``, full scale only), ``CONFIGS`` and ``CLAIMS``.

The MNIST claims (``defense.*``, ``diagnostics.*``) are declared at smoke and quick; the CIFAR-10
claims (``cifar10.*``) at full only. On MNIST at eps 0.3 the stochastic defences are not robust
even to naive PGD, so their naive, EOT and checklist numbers there are descriptive checks; the
paper's "looks robust, then falls to EOT" is judged on CIFAR-10. Protocol and reasons:
docs/obfuscated-gradients.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from paperzoo.adversarial.diagnostics import DiagnosticsConfig
from paperzoo.experiments.base import ClaimSpec

OBFUSCATING = ("thermometer", "bit_depth", "resize_pad", "sap")
SHATTERED = ("thermometer", "bit_depth")
STOCHASTIC = ("resize_pad", "sap")
MODELS = ("undefended", *OBFUSCATING, "pgd_at")
_PAPER_ADAPTIVE = {"thermometer": 0.0, "bit_depth": 0.0, "resize_pad": 0.0, "sap": 0.0}
CIFAR_MODELS = ("natural", "thermometer", "pgd_at")  # the three networks the CIFAR part trains


@dataclass(frozen=True)
class CifarConfig:
    """The paper's own CIFAR-10 setting (full scale only): l_inf 8/255 (Table 1's 0.031) and the
    networks Athalye et al. attack there, all Madry et al.'s wide ResNet
    (``paperzoo.adversarial.cifar_model.MadryResNet``), trained with ``cifar10_challenge``'s
    ``config.json`` schedule:

    * ``natural``: trained without attack; SAP is inserted into it (``sap/robustml_model.py``
      loads a naturally trained ``tiny=False`` model) and Xie et al.'s resize-and-pad is put in
      front of it;
    * ``thermometer``: Buckman et al.'s 16-level thermometer code in front of the same network
      (48 input channels; ``thermometer/train.py``), trained without adversarial training: Table
      1's row is "the defense alone" (the README's footnote *);
    * ``pgd_at``: Madry et al.'s PGD adversarial training (``cifar10_challenge/train.py``).
    """

    # -- the network (cifar10_challenge/model.py) -------------------------------------------
    filters: tuple[int, int, int, int] = (16, 160, 320, 640)  # model.py: the wide variant
    units: int = 5  # residual units per stage (model.py: range(1, 5) after the first)
    # -- training (cifar10_challenge/config.json, for all three networks) ---------------------
    steps: int = 80_000  # max_num_training_steps
    batch_size: int = 128  # training_batch_size
    lr: float = 0.1  # step_size_schedule [[0, 0.1], [40000, 0.01], [60000, 0.001]]
    milestones: tuple[int, ...] = (40_000, 60_000)  # lr divided by 10 at each
    momentum: float = 0.9
    weight_decay: float = 2e-4  # on the conv / FC kernels only (model.py's _decay over "DW")
    thermometer_levels: int = 16  # thermometer/train.py and robustml_model.py: levels = 16
    # -- PGD adversarial training (config.json's attack; pgd_attack.py's LinfPGDAttack) -------
    at_eps: float = 8 / 255  # epsilon 8.0 on the 0-255 scale
    at_alpha: float = 2 / 255  # step_size 2.0
    at_attack_steps: int = 10  # num_steps 10 (Madry et al.'s paper text says 7: see the docs)
    # -- evaluation ----------------------------------------------------------------------------
    eps: float = 8 / 255  # Table 1: l_inf 0.031 on CIFAR-10
    n_eval: int = 1000  # test images attacked (the obfuscating defences)
    # PGD-AT: the leaderboard's "20-step PGD on the cross-entropy loss" (47.04 %), random start,
    # step 2/255 (config.json), on all 10,000 test images (num_eval_examples)
    n_eval_pgd_at: int = 10_000
    pgd_at_eval_steps: int = 20
    pgd_at_eval_alpha: float = 2 / 255
    eval_batch: int = 250  # images per attack call without EOT
    eot_batch: int = 10  # images per EOT call (x eot_samples = 300 images through the network)
    pgd_steps: int = 100  # the attacks on the obfuscating defences: PGD, 100 steps of 1/255
    pgd_alpha: float = 1 / 255
    eot_samples: int = 30  # draws per gradient (Athalye et al. use 30 against Xie et al.)
    # SAP after every convolution with N = 2 x (activations) draws: sap/sap_model.py overrides
    # _conv with p_keep = 1 - exp(-N p), N = w * h * c * 2
    sap_frac: float = 2.0
    # Xie et al.: 299 -> rnd in [299, 331) -> padded to 331. Scaled by 32/299: 32 -> [32, 35)
    # -> 35 (331 * 32 / 299 = 35.4, rounded down so that, as in Xie et al., the largest resize
    # still leaves one pixel of padding). Padded with 0.5, as Athalye et al.'s implementation.
    resize_out: int = 35
    resize_min: int = 32
    resize_max: int = 34
    pad_value: float = 0.5


@dataclass(frozen=True)
class Config:
    """The MNIST part: data sizes, the SmallCNN, training, the attacks and the checklist."""

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
    # full-scale CIFAR wide ResNets are not switched)
    channels_last: bool = True


# The MNIST part's claims: declared at smoke and quick. At full scale the paper's setting is the
# CIFAR-10 part (its claims ``cifar10.*``); the full MNIST variant (``--dataset mnist``) is not
# the paper's setting, and its numbers are reported in the notes, not judged.
MNIST_SCALES = ("smoke", "quick")


def _mnist_claims() -> tuple[ClaimSpec, ...]:
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
    # numbers are descriptive checks, and the paper's own setting for them
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
    # defences' checklist results are descriptive (like their naive numbers).
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
    return tuple(out)


def _cifar_claims() -> tuple[ClaimSpec, ...]:
    """The paper's own CIFAR-10 setting at l_inf 8/255, full scale only (``scales=("full",)``:
    absent from smoke and quick runs, which have no CIFAR model).

    Paper numbers: Table 1 of Athalye et al., as the authors' README reproduces it
    (anishathalye/obfuscated-gradients, README.md): Buckman et al. (thermometer) 0 %*, Dhillon
    et al. (SAP) 0 %, Xie et al. (randomisation, ImageNet) 0 %*, Madry et al. 47 %, all at
    0.031 l_inf; * = the defence alone, without the adversarial training it can be combined
    with. "Looks robust" (>= 0.2 for the stochastic defences, >= 0.5 for the thermometer) and
    every tolerance (5 points, one-sided) were set before any CIFAR-10 measurement existed, so
    nothing was chosen after seeing a result.
    """
    full = ("full",)
    return (
        ClaimSpec(
            "cifar10.undefended.clean_acc",
            "the naturally trained CIFAR-10 wide ResNet the stochastic defences protect is "
            "trained (sanity bound)",
            None,
            ">= 0.85",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.undefended.pgd.robust_acc",
            "PGD (l_inf 8/255) breaks the naturally trained CIFAR-10 wide ResNet",
            None,
            "<= 0.05",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.sap.clean_acc",
            "clean accuracy of SAP inserted into the wide ResNet (Dhillon et al.; after every "
            "convolution, as Athalye et al.'s implementation)",
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
            "clean accuracy of the wide ResNet behind Xie et al.'s random resize-and-pad "
            "(no retraining)",
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
        ClaimSpec(
            "cifar10.thermometer.clean_acc",
            "clean accuracy of the wide ResNet trained on Buckman et al.'s 16-level thermometer "
            "code (descriptive)",
            None,
            "reported",
            kind="check",
            scales=full,
        ),
        # Shattered gradients: PGD through the code sees a zero gradient, so it moves the image
        # by its random start only. ">= 0.5": more robust than Madry et al.'s 47 %, the one
        # defence that holds (Buckman et al.'s abstract reports 79.16 % on CIFAR-10 "under the
        # strongest known white-box attack" for their best model; no number to take here).
        ClaimSpec(
            "cifar10.thermometer.naive_pgd.robust_acc",
            "thermometer encoding looks robust on CIFAR-10 at 8/255 to PGD through the "
            "defended model (its gradient is zero: shattered)",
            None,
            ">= 0.5",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.thermometer.bpda.robust_acc",
            "PGD with BPDA (the thermometer's ramp on the backward pass) reduces thermometer "
            "encoding to (near) zero robust accuracy on CIFAR-10 at 8/255 (Table 1: 0 %, the "
            "defence alone; tolerance 5 points)",
            0.0,
            "<= 0.05",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.pgd_at.clean_acc",
            "clean accuracy of Madry et al.'s PGD-adversarially trained wide ResNet (descriptive)",
            None,
            "reported",
            kind="check",
            scales=full,
        ),
        ClaimSpec(
            "cifar10.pgd_at.pgd.robust_acc",
            "PGD adversarial training (Madry et al.) holds near its published accuracy on "
            "CIFAR-10 at 8/255 under 20-step PGD (Table 1: 47 %; one-sided, tolerance 5 points)",
            0.47,
            ">= 0.42",
            scales=full,
        ),
        # Table 1's contrast: 47 % - 0 %. The tolerance is the two claims' (0.42 - 0.05).
        ClaimSpec(
            "cifar10.pgd_at.margin_over_obfuscated",
            "PGD-AT's robust accuracy minus the best obfuscating defence's under the adaptive "
            "attacks (thermometer + BPDA, SAP + EOT, resize-and-pad + EOT) on CIFAR-10 "
            "(Table 1: 47 % - 0 %)",
            0.47,
            ">= 0.37",
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


CONFIGS = {
    "smoke": Config(
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
    "quick": Config(
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
    "full": Config(
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

CLAIMS = _mnist_claims() + _cifar_claims()
