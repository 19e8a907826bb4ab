"""``ObfuscatedGradientsExperiment``: Athalye, Carlini & Wagner (2018), "Obfuscated Gradients
Give a False Sense of Security: Circumventing Defenses to Adversarial Examples" (ICML 2018,
arXiv:1802.00420).

Four defences, one of each obfuscation kind the paper breaks, plus the two references:

* shattered gradients: thermometer encoding (Buckman et al.; a classifier trained on the code) and
  bit-depth reduction (one of Guo et al.'s input transformations / Xu et al.'s feature squeezing,
  in front of the undefended classifier) -- broken with BPDA (Sec. 4.1);
* stochastic gradients: random resize-and-pad (Xie et al.) and stochastic activation pruning
  (Dhillon et al., SAP) -- broken with EOT (Sec. 4.2);
* the undefended classifier and PGD adversarial training (Madry et al.), the defence that holds.

Each defence is attacked twice: a *naive* PGD that differentiates the defended model as
implemented (a fresh draw of its randomness at every step) and the paper's *adaptive* attack (the
same PGD behind BPDA or EOT); robust accuracy is evaluated with a fresh draw of the defence's
randomness. ``run`` dispatches on the data set: CIFAR-10, the paper's setting and the default at
full scale (``training.run_cifar``: Madry et al.'s wide ResNet at l_inf 8/255, read from
``--data-root DIR/cifar-10-batches-py``), or a digit set (``training.run_mnist``: small CNNs at
l_inf 0.3, smoke and quick; at full only when named with ``--dataset``, then marked "not the
paper's setting" with its numbers in the notes and ``details["mnist_claims"]``).

Deviations from the paper (the full list and reasons: docs/obfuscated-gradients.md): MNIST with
small CNNs and eps 0.3 for every defence at smoke and quick; the thermometer model trained
without Buckman et al.'s adversarial training; bit-depth reduction stands in for Guo et al.'s
JPEG / quilting / TV-minimisation; LID, PixelDefend and Defense-GAN are not reproduced. On
CIFAR-10, Xie et al.'s defence runs at 32 px in front of the naturally trained wide ResNet
instead of on ImageNet in front of Inception v3; the attacks are PGD, not the authors' Adam
steps on the margin loss; the attacks inside adversarial training run in eval mode; the
checklist is not run on the CIFAR models.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from paperzoo.experiments.base import Experiment, GpuCheck, NotRun, Outcome, RunContext
from paperzoo.papers.obfuscated_gradients.config import (
    CIFAR_MODELS,
    CLAIMS,
    CONFIGS,
    MODELS,
    OBFUSCATING,
    STOCHASTIC,
    CifarConfig,
    Config,
)
from paperzoo.utils.format import format_number


class ObfuscatedGradientsExperiment(Experiment):
    name = "obfuscated-gradients"
    cuda_precision = "bf16"  # the reason: docs/obfuscated-gradients.md, "Precision on CUDA"
    cpu_capped_args = (
        "--dataset",
        "mnist",
        "--data-root",
        "ROOT",
        "--set",
        "n_eval=20",
        "--set",
        "n_curve=10",
        "--set",
        "n_diag=10",
        "--set",
        "eot_samples=2",
        "--set",
        "diag.spsa_samples=4",
        "--set",
        "diag.random_samples=4",
        "--set",
        "cifar.n_eval=20",
        "--set",
        "cifar.eval_batch=10",
        "--set",
        "cifar.eot_samples=2",
    )
    gpu_check = GpuCheck(
        10,
        35,
        "CUDA started, MNIST and CIFAR-10 read, the wide ResNet built, the evaluation's attacks "
        "on 2 batches (100 PGD steps, 30 EOT samples)",
    )
    title = (
        "Obfuscated Gradients Give a False Sense of Security: "
        "Circumventing Defenses to Adversarial Examples"
    )
    # cifar10: the paper's setting, the default at full (the CIFAR-10 part, full scale only);
    # the digit sets run the MNIST part (at full only when named: not the paper's setting).
    datasets = ("mnist5k", "mnist", "fashion-mnist", "cifar10")
    paper_data = "cifar10"
    claims = CLAIMS
    not_estimated = (
        "the attacks and the checklist on the test examples beyond the first batches (n_eval, n_curve, n_diag)",
        "the CIFAR-10 attacks on the test images beyond the first batches (cifar.n_eval, "
        "cifar.n_eval_pgd_at)",
    )
    configs = CONFIGS

    order = 4  # position in the summary's tables
    full_not_run = (
        NotRun(
            ("data", "gpu"),
            "the paper attacks published CIFAR-10 and ImageNet defences; CIFAR-10 is not "
            "reachable from this project's machines, and its ResNet and 30-draw EOT are GPU jobs.",
            data="CIFAR-10",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        if self.dataset_name(ctx) == "cifar10":
            if cfg.cifar is None:
                return []
            # three networks of cfg.cifar.steps each; a PGD-AT step also runs the training
            # attack (at_attack_steps forward and backward passes more)
            return [(f"cifar10 {n}", cfg.cifar.steps) for n in CIFAR_MODELS]
        # bit_depth and sap reuse the undefended classifier: they train nothing
        trained = [(m, cfg.steps) for m in ("undefended", "thermometer", "resize_pad")]
        return [*trained, ("pgd_at", cfg.at_steps)]

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        from paperzoo.papers.obfuscated_gradients.training import run_cifar

        name = self.dataset_name(ctx)
        if name == "cifar10":  # the paper's setting: the CIFAR-10 part
            if cfg.cifar is None:
                raise ValueError(
                    "obfuscated-gradients: the CIFAR-10 part runs at --scale full only; "
                    "smoke and quick run the MNIST part (--dataset mnist5k, mnist, fashion-mnist)"
                )
            measured, details, info = run_cifar(cfg.cifar, ctx)
            return Outcome(
                measured=measured,
                data=[info],
                notes=_cifar_notes(cfg.cifar, measured, details),
                details={"cifar10": details},
            )
        outcome = self._mnist_outcome(name, cfg, ctx)
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
                + ", ".join(
                    f"{k} {format_number(v, digits=3, fixed=True)}" for k, v in extra.items()
                )
            )
        return outcome

    def _mnist_outcome(self, name: str, cfg: Config, ctx: RunContext) -> Outcome:
        """The MNIST part (``training.run_mnist``) with its figure and notes."""
        from paperzoo.papers.obfuscated_gradients.training import run_mnist

        measured, details, info = run_mnist(name, cfg, ctx)
        data = [info]
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
    def _figure(cfg: Config, details: dict[str, Any], ctx: RunContext) -> str:
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
        return ctx.save_figure(fig, "robust_acc_vs_eps.png")


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


def _cifar_notes(c: CifarConfig, m: dict[str, float], details: dict[str, Any]) -> list[str]:
    return [
        f"CIFAR-10 (full scale only): Madry et al.'s wide ResNet (widths {list(c.filters)}, "
        f"{c.units} units per stage), {c.steps} SGD steps of {c.batch_size}, trained naturally "
        f"(SAP and resize-and-pad use it), behind a {c.thermometer_levels}-level thermometer "
        f"code, and with PGD adversarial training ({c.at_attack_steps} steps of "
        f"{c.at_alpha * 255:.0f}/255 within {c.at_eps * 255:.0f}/255); l_inf eps "
        f"{c.eps * 255:.0f}/255; the obfuscating defences under PGD {c.pgd_steps} steps of "
        f"{c.pgd_alpha * 255:.0f}/255 from a random start on {details['n_eval']} test images, "
        f"EOT with {c.eot_samples} draws; PGD-AT under PGD {c.pgd_at_eval_steps} steps of "
        f"{c.pgd_at_eval_alpha * 255:.0f}/255 on {details['n_eval_pgd_at']} test images; SAP "
        f"after every convolution ({c.sap_frac:g} x activations draws); resize "
        f"{c.resize_min}..{c.resize_max} padded to {c.resize_out} with {c.pad_value} (Xie et "
        "al.'s 299 -> [299, 331) -> 331, scaled).",
        "CIFAR-10 clean accuracy: "
        + ", ".join(
            f"{n} {m[f'cifar10.{n}.clean_acc']:.3f}"
            for n in ("undefended", "sap", "resize_pad", "thermometer", "pgd_at")
        )
        + f"; resize-pad under PGD with a fresh draw per step: "
        f"{m['cifar10.resize_pad.naive_pgd.robust_acc']:.3f} (stronger than Xie et al.'s "
        "frozen-draw evaluation); the largest input gradient naive PGD sees through the "
        f"thermometer code: {details['thermometer_naive_grad_abs_max']:.3g}.",
    ]


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.adversarial.cifar_model import MadryResNet
    from paperzoo.utils.work import Piece, step

    c = cfg.cifar
    net = MadryResNet(in_chans=3, num_classes=10, filters=c.filters, units=c.units)
    thermo = MadryResNet(
        in_chans=3 * c.thermometer_levels, num_classes=10, filters=c.filters, units=c.units
    )
    shape = (c.batch_size, 3, 32, 32)
    f_nat = step(net, shape)
    f_th = step(thermo, (c.batch_size, 3 * c.thermometer_levels, 32, 32))
    per_nat, per_th = f_nat / c.batch_size, f_th / c.batch_size
    steps = dict(plan)
    n = c.n_eval
    plain, eot = 4 * c.pgd_steps, 2 * c.eot_samples * c.pgd_steps  # passes per example
    pieces = [
        Piece("natural net training", f_nat, steps["cifar10 natural"]),
        Piece("thermometer net training", f_th, steps["cifar10 thermometer"]),
        # each step: at_attack_steps forward+backward passes of the attack, then the update
        Piece("PGD adversarial training", f_nat * (1 + c.at_attack_steps), steps["cifar10 pgd_at"]),
        Piece("attacks on the natural net (PGD, SAP, resize-pad)", per_nat, n * plain),
        Piece("EOT attacks (SAP, resize-pad)", per_nat, n * eot),
        Piece("attacks on the thermometer net (PGD, BPDA)", per_th, n * 2 * c.pgd_steps),
        Piece(
            "PGD on the adversarially trained net", per_nat, c.n_eval_pgd_at * c.pgd_at_eval_steps
        ),
    ]
    return pieces, (
        f"CIFAR-10 part (Madry et al.'s wide ResNet, filters {list(c.filters)}); a training "
        f"attack iteration and an evaluation attack iteration each count as a forward and "
        f"backward pass of the whole net (an upper bound: attacks need no weight gradients); "
        f"the resize-pad defence's {c.resize_out}-pixel canvas and SAP's pruning are counted "
        "as the natural net on 32-pixel images; clean accuracies are not counted (negligible)"
    )
