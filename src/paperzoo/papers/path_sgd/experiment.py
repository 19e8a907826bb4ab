"""``PathSGDExperiment``: Neyshabur, Salakhutdinov and Srebro (2015), "Path-SGD:
Path-Normalized Optimization in Deep Neural Networks" (arXiv:1506.02617), Section 6 and Figure 2.

A ReLU MLP with two hidden layers is trained with Path-SGD (``paperzoo.optim.PathSGD``), SGD and
AdaGrad from a balanced initialisation and from an unbalanced one (the same weights after
rescaling randomly drawn hidden units: incoming weights x 10c, outgoing / 10c; the network
computes the same function; ``paperzoo.optim.unbalanced_init_``). Every optimiser gets its step
size from a grid 10^-a, separately for each initialisation: the run reaching the lowest
validation error, the earlier epoch breaking ties. Measured:

* invariance: Path-SGD's runs from the two initialisations (same step size, same batches, in
  float64) end with the same function, while SGD's do not;
* from each initialisation, Path-SGD's training loss against SGD's and AdaGrad's, at the end of
  the budget and on average over the training curve (Figure 2: "faster");
* the test error of every optimiser x initialisation.

The paper's Section 6 details are recalled, not checked against its text (the unbalanced-init
rule follows a MATLAB Path-SGD implementation); the chosen run itself is reported (trained on
the training part only; the paper retrained on training + validation data). Protocol, choices,
deviations and measured numbers: docs/path-sgd.md.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from matplotlib.figure import Figure

from paperzoo.data import layouts, load_dataset
from paperzoo.data.declared import train_size
from paperzoo.engine import budget, seeded
from paperzoo.experiments.base import (
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.papers.path_sgd.config import (
    CLAIMS,
    COLORS,
    CONFIGS,
    INITS,
    LABELS,
    OPTIMIZERS,
    PAPER_DATASETS,
    Config,
)

if TYPE_CHECKING:
    from paperzoo.papers.path_sgd.training import Run


class PathSGDExperiment(Experiment):
    name = "path-sgd"
    cuda_precision = "tf32"  # the reason: docs/path-sgd.md, "Precision on CUDA"
    cpu_capped_args = ("--dataset", "mnist", "--data-root", "ROOT", "--set", "n_val=100")
    gpu_check = GpuCheck(
        9, 12, "CUDA started, four data sets read (MNIST, CIFAR-10/100, SVHN), 34 MLPs built"
    )
    title = "Path-SGD: Path-Normalized Optimization in Deep Neural Networks"
    datasets = ("mnist5k", "mnist", "fashion-mnist", "cifar10", "cifar100", "svhn")
    # Section 6 runs four data sets: MNIST is the full scale's default (``paper_data``); the other
    # three (--dataset cifar10 / cifar100 / svhn) are the paper's setting too. Smoke and quick
    # run embedded digits.
    paper_data = "mnist"
    paper_datasets: ClassVar[tuple[str, ...]] = PAPER_DATASETS
    embedded_defaults: ClassVar[Mapping[str, str]] = {"smoke": "digits", "quick": "mnist5k"}
    not_estimated = (
        "the training and validation curves, test errors and invariance logits beyond the "
        "first batches of examples",
    )
    claims = CLAIMS
    configs = CONFIGS

    plan_upper_bound = True  # a step size that diverges stops its run

    order = 5  # position in the summary's tables
    resume_state = ("runs/*/curves.json",)  # finished runs' records: a rerun loads them
    full_not_run = (
        NotRun(
            ("gpu",),
            "2 x 4,000-unit networks for 100 epochs, step sizes chosen on a grid: --max-steps 3 estimates at "
            "one thread put the MNIST full runs of WRM, DRAW, Path-SGD and GAT at 28-250 CPU-hours; "
            "CIFAR-10/100 and SVHN also need their data.",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def default_dataset(self, scale: str) -> str | None:
        """The data set without ``--dataset``: MNIST at full (``paper_data``, from --data-root),
        embedded digits at smoke and quick (``embedded_defaults``)."""
        return self.embedded_defaults.get(scale) or super().default_dataset(scale)

    def setting_note(self, ctx: RunContext) -> str | None:
        """At full, each of the paper's four data sets is its setting (Section 6), when its files
        are the canonical release (``layouts.files_note``)."""
        name = self.dataset_name(ctx)
        if ctx.scale == "full" and name in self.paper_datasets:
            return layouts.files_note(name, ctx.data_root)
        return super().setting_note(ctx)

    def require_data(self, ctx: RunContext) -> None:
        """At full, the files of whichever of the paper's data sets runs must be present."""
        name = self.dataset_name(ctx)
        if ctx.scale == "full" and name in self.paper_datasets:
            layouts.require(name, ctx.data_root, ctx.download)
            return
        super().require_data(ctx)

    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        name = self.dataset_name(ctx)
        assert name is not None
        steps = cfg.epochs * ((train_size(name, cfg.n_train) - cfg.n_val) // cfg.batch_size)
        grids = {"pathsgd": cfg.pathsgd_lrs, "sgd": cfg.sgd_lrs, "adagrad": cfg.adagrad_lrs}
        grid = [(f"{i}-{o}-lr{lr:g}", steps) for i in INITS for o in OPTIMIZERS for lr in grids[o]]
        inv = [
            (f"invariance-{i}-{o}", cfg.invariance_steps) for o in ("pathsgd", "sgd") for i in INITS
        ]
        return grid + inv

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        from paperzoo.models.small import MLP
        from paperzoo.optim import balanced_init_, path_norm, rescale_units_, unbalanced_init_
        from paperzoo.papers.path_sgd.training import (
            evaluate_test,
            invariance_diff,
            invariance_nets,
            mean_log10_ratio,
            pair_diff,
            prepare,
            prune_checkpoints,
            relative_gradients,
            train_run,
        )

        name = self.dataset_name(ctx)
        assert name is not None
        split = load_dataset(name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed)
        # Stratified random draws, not a file's first examples (a class-sorted file would lose
        # classes); the same stream and order as before Split.subset drew them.
        split = split.subset(cfg.n_train, cfg.n_test, generator=ctx.generator("subset"))
        data = prepare(split, cfg, ctx.generator("val-split"))
        # Test data (standardised with training statistics) are read in the final evaluation only;
        # --max-steps N: the first N batches of them only.
        n_te = budget.items(len(data.x_test), cfg.batch_size)
        data = dataclasses.replace(
            data,
            x_test=ctx.holdout(data.x_test[:n_te], "x_test"),
            y_test=ctx.holdout(data.y_test[:n_te], "y_test"),
        )
        in_features = math.prod(split.x_train.shape[1:])
        with seeded(ctx.seed):
            base = MLP(
                in_features=in_features,
                hidden=(cfg.hidden, cfg.hidden),
                num_classes=split.num_classes,
                dropout=cfg.dropout,
            )
        balanced_init_(base, generator=ctx.generator("init"))
        unbalanced = copy.deepcopy(base)
        scales = unbalanced_init_(
            unbalanced,
            # a quarter of each hidden layer: Section 6's 2000 of 2 x 4000 (see unbalanced_init_)
            draws_per_layer=int(cfg.unbalance_draws * cfg.hidden),
            base=cfg.unbalance_base,
            sigma=cfg.unbalance_sigma,
            generator=ctx.generator("unbalance"),
        )
        nets = {"balanced": base, "unbalanced": unbalanced}
        grids = {"pathsgd": cfg.pathsgd_lrs, "sgd": cfg.sgd_lrs, "adagrad": cfg.adagrad_lrs}

        runs: dict[tuple[str, str, float], Run] = {}
        for init in INITS:
            for opt in OPTIMIZERS:
                # (--max-steps: the first few step sizes of each grid; the estimate scales)
                for i in budget.loop(len(grids[opt]), f"{init}-{opt} step sizes", kind="repeat"):
                    lr = grids[opt][i]
                    runs[(init, opt, lr)] = train_run(
                        copy.deepcopy(nets[init]), init, opt, lr, data, cfg, ctx
                    )
        grids = {o: tuple(lr for lr in g if (INITS[0], o, lr) in runs) for o, g in grids.items()}
        # The paper's choice: per optimiser (and here per initialisation), the step size whose run
        # reaches the lowest validation error, the earliest epoch breaking ties.
        best = {
            (init, opt): min(
                (runs[(init, opt, lr)] for lr in grids[opt]), key=lambda r: r.selection_key
            )
            for init in INITS
            for opt in OPTIMIZERS
        }

        m: dict[str, float | None] = {}
        # Invariance: the same step size and batches from the balanced initialisation and from
        # its rescaled copy, in float64 so that rounding (amplified by the chaotic training
        # dynamics over many float32 steps) does not mask the algorithm's exact invariance.
        lr_p = best[("balanced", "pathsgd")].lr
        stable = [
            lr
            for lr in grids["sgd"]
            if not runs[("balanced", "sgd", lr)].diverged
            and not runs[("unbalanced", "sgd", lr)].diverged
        ]
        lr_s = best[("unbalanced", "sgd")].lr
        if lr_s not in stable and stable:
            lr_s = max(stable)
        pairs = [(i, "pathsgd", lr_p) for i in INITS] + [(i, "sgd", lr_s) for i in INITS]
        evaluated = {id(r): r for r in best.values()} | {id(runs[k]): runs[k] for k in pairs}
        prune_checkpoints(runs, evaluated, ctx)
        for r in runs.values():  # the grid's other nets (77 MB each at full) are done with
            if id(r) not in evaluated:
                r.model = None
        # The float64 pair: the rescaling is redone in float64 so both start from the same function
        # up to float64 rounding.
        base64 = copy.deepcopy(base).double()
        rescaled64 = copy.deepcopy(base64)
        for layer, scale in scales.items():
            rescale_units_(rescaled64, layer, scale)
        nets64 = {"balanced": base64, "unbalanced": rescaled64}
        inv_nets = {
            opt: invariance_nets(nets64, opt, lr, data, cfg, ctx)
            for opt, lr in (("pathsgd", lr_p), ("sgd", lr_s))
        }

        # Final evaluation: every choice is made; the test data are read from here on only.
        with ctx.final_evaluation():
            for r in evaluated.values():
                evaluate_test(r, data, ctx)
            inv = {opt: invariance_diff(pair, data, ctx) for opt, pair in inv_nets.items()}
        for r in runs.values():
            r.model = None  # free the grid's nets
        m["invariance.rescaled_net.same_trajectory"] = inv["pathsgd"]
        m["invariance.rescaled_net.sgd_rel_diff"] = inv["sgd"]
        fp32 = {
            "pathsgd": pair_diff(runs, "pathsgd", lr_p),
            "sgd": pair_diff(runs, "sgd", lr_s),
        }
        for init in INITS:
            ref = best[(init, "pathsgd")]
            for opt in ("sgd", "adagrad"):
                diff = best[(init, opt)].final_loss - ref.final_loss
                m[f"{init}.pathsgd_vs_{opt}.train_loss"] = diff if math.isfinite(diff) else None
                m[f"{init}.pathsgd_vs_{opt}.mean_log10_loss_ratio"] = mean_log10_ratio(
                    best[(init, opt)], ref
                )
            for opt in OPTIMIZERS:
                r = best[(init, opt)]
                m[f"{init}.{opt}.test_error"] = None if r.diverged else r.test_error

        # Why SGD suffers from the unbalanced init: relative gradients at initialisation.
        probe = (data.x_train[:1000], data.y_train[:1000])
        relgrad = {k: relative_gradients(v, scales, *probe) for k, v in nets.items()}
        factors = torch.cat(list(scales.values()))
        drawn = factors[factors != 1]

        # Sensitivity to the selection rule (not a claim): each optimiser's lowest final
        # training loss over its grid, as if the step size were chosen on the training loss.
        by_loss = {
            (init, opt): min(
                (runs[(init, opt, lr)] for lr in grids[opt]), key=lambda r: r.final_loss
            )
            for init in INITS
            for opt in OPTIMIZERS
        }
        by_loss_diff = {
            f"{init}.pathsgd_vs_{opt}": by_loss[(init, opt)].final_loss
            - by_loss[(init, "pathsgd")].final_loss
            for init in INITS
            for opt in ("sgd", "adagrad")
        }

        figures = [self._plot_curves(best, name, cfg, ctx), self._plot_grid(runs, grids, ctx)]
        chosen = {f"{i}.{o}": best[(i, o)].lr for i in INITS for o in OPTIMIZERS}
        notes = [
            f"Network: {in_features}-{cfg.hidden}-{cfg.hidden}-{split.num_classes} ReLU MLP "
            f"(paper: 4000 units per hidden layer), batch {cfg.batch_size}, {cfg.epochs} epochs, "
            f"dropout {cfg.dropout}; data: {len(data.x_train)} training, {len(data.x_val)} "
            f"validation (step-size choice), {len(data.x_test)} test examples"
            + (", standardised with the training pixel mean/std" if cfg.standardize else "")
            + ".",
            f"Unbalanced init: {int(cfg.unbalance_draws * cfg.hidden)} draws with "
            f"replacement from each hidden layer's {cfg.hidden} units, each rescaling its unit by "
            f"{cfg.unbalance_base:g} * c, c ~ LogNormal(0, {cfg.unbalance_sigma:g}): "
            f"{len(drawn)} units rescaled, factors median {float(drawn.median()):.3g}, "
            f"range {float(drawn.min()):.3g} .. {float(drawn.max()):.3g} (the paper's rule, "
            "recalled and not checked against its text; the per-layer split and c's parameters "
            "follow a MATLAB implementation, see paperzoo.optim.unbalanced_init_).",
            "Step-size grids (10^-a): "
            + "; ".join(f"{LABELS[o]} {list(grids[o])}" for o in OPTIMIZERS)
            + ". Chosen by the lowest validation error reached (earliest epoch on ties): "
            + ", ".join(f"{k} {v:g}" for k, v in chosen.items())
            + ".",
            "SGD at initialisation, ||grad|| / ||w|| of the rescaled units' outgoing weights "
            "into the logits: "
            + ", ".join(
                f"{k} {v.get('layer2.rescaled.outgoing', float('nan')):.3g}"
                for k, v in relgrad.items()
            )
            + " (other units: "
            + ", ".join(
                f"{k} {v.get('layer2.other.outgoing', float('nan')):.3g}"
                for k, v in relgrad.items()
            )
            + "); their incoming weights: "
            + ", ".join(
                f"{k} {v.get('layer2.rescaled.incoming', float('nan')):.3g}"
                for k, v in relgrad.items()
            )
            + ". A unit rescaled by f has f^2 times the relative gradient on its outgoing and "
            "1/f^2 on its incoming weights, so one SGD step size cannot suit both.",
            "Not the paper's rule, for sensitivity: choosing each step size by the lowest final "
            "training loss instead gives "
            + ", ".join(
                f"{k} {v:+.3g} (lr {by_loss[(k.split('.')[0], k.rsplit('_', 1)[1])].lr:g})"
                for k, v in by_loss_diff.items()
            )
            + " (other minus Path-SGD).",
            f"Invariance: {cfg.invariance_steps} float64 steps from the balanced net and from its "
            f"rescaled copy on the same batches, Path-SGD at step size {lr_p:g} (chosen, "
            f"balanced) and SGD at {lr_s:g} (chosen for the unbalanced init, finite from both). "
            "The float32 grid runs at these step sizes end "
            + " and ".join(
                f"{LABELS[o]} {v:.2g}" if v is not None else f"{LABELS[o]} diverged"
                for o, v in fp32.items()
            )
            + f" apart after {cfg.epochs} epochs: rounding differences grow during training.",
            "Path norms at initialisation: "
            + ", ".join(f"{k} {path_norm(v):.4g}" for k, v in nets.items())
            + " (equal: rescaling leaves every path's product unchanged).",
            _speed_note(runs, best, grids),
            _divergence_note(runs, best),
        ]
        details = {
            "config": asdict(cfg),
            "chosen_lr": chosen,
            "train_loss_choice": {
                "lr": {f"{i}.{o}": r.lr for (i, o), r in by_loss.items()},
                "final_train_loss_diff": by_loss_diff,
            },
            "invariance_lr": {"pathsgd": lr_p, "sgd": lr_s},
            "invariance_float32_full_budget": fp32,
            "unbalanced_factors": {str(k): v[v != 1].tolist() for k, v in scales.items()},
            "relative_gradients_at_init": relgrad,
            "runs": [r.summary() for r in runs.values()],
            "curves": {
                f"{i}.{o}": {
                    "epoch": best[(i, o)].epochs,
                    "train_loss": best[(i, o)].train_loss,
                    "train_error": best[(i, o)].train_error,
                    "val_error": best[(i, o)].val_error,
                }
                for i in INITS
                for o in OPTIMIZERS
            },
            "grid_curves": {f"{i}.{o}.lr{lr:g}": r.train_loss for (i, o, lr), r in runs.items()},
        }
        return Outcome(measured=m, data=[split.info], figures=figures, notes=notes, details=details)

    # -- figures ------------------------------------------------------------------------------
    def _plot_curves(
        self, best: dict[tuple[str, str], Run], data: str, cfg: Config, ctx: RunContext
    ) -> str:
        """The paper's Figure 2 layout: training loss, training error and, where the paper plots
        test error, validation error vs epoch (test data are read only for the final numbers);
        dashed balanced, solid unbalanced."""
        fig = Figure(figsize=(13, 3.8))
        axes = fig.subplots(1, 3)
        panels = (
            ("train_loss", "cross-entropy training loss"),
            ("train_error", "0/1 training error"),
            ("val_error", "0/1 validation error"),
        )
        for ax, (key, label) in zip(axes, panels, strict=True):
            for (init, opt), r in best.items():
                ys = getattr(r, key)
                ax.plot(
                    r.epochs[: len(ys)],
                    ys,
                    color=COLORS[opt],
                    linestyle="--" if init == "balanced" else "-",
                    label=f"{LABELS[opt]} - {init.capitalize()} (lr {r.lr:g})",
                )
            ax.set_xlabel("epoch")
            ax.set_ylabel(label)
            if key == "train_loss":
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(f"{data}: {cfg.hidden}-unit x2 ReLU MLP, batch {cfg.batch_size}", fontsize=10)
        return ctx.save_figure(fig, "curves.png")

    def _plot_grid(
        self,
        runs: dict[tuple[str, str, float], Run],
        grids: dict[str, tuple[float, ...]],
        ctx: RunContext,
    ) -> str:
        """Per optimiser and initialisation, against the step size: the lowest validation error
        reached (the selection criterion) and the final training loss."""
        fig = Figure(figsize=(9, 6.4))
        axes = fig.subplots(2, 2, sharex=True)
        rows = (
            (lambda r: r.selection_key[0], "lowest validation error"),
            (lambda r: r.final_loss, "final training loss"),
        )
        for row, (value, label) in zip(axes, rows, strict=True):
            for ax, init in zip(row, INITS, strict=True):
                for opt in OPTIMIZERS:
                    pts = [
                        (lr, value(runs[(init, opt, lr)]))
                        for lr in sorted(grids[opt])
                        if not runs[(init, opt, lr)].diverged
                    ]
                    if pts:
                        ax.plot(*zip(*pts, strict=True), marker="o", color=COLORS[opt],
                                label=LABELS[opt])  # fmt: skip
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{init} init", fontsize=9)
                ax.grid(alpha=0.3)
            row[0].set_ylabel(label)
        for ax in axes[1]:
            ax.set_xlabel("step size")
        axes[0][0].legend(fontsize=8)
        return ctx.save_figure(fig, "lr_grid.png")


def _speed_note(
    runs: dict[tuple[str, str, float], Run],
    best: dict[tuple[str, str], Run],
    grids: dict[str, tuple[float, ...]],
) -> str:
    """Where along the training each comparison is won or lost: log10(other's training loss /
    Path-SGD's) at a few epochs, and whether any Path-SGD step size of the grid beats the other's
    chosen run over the curve (if none does, the step-size rule is not what decides)."""
    from paperzoo.papers.path_sgd.training import mean_log10_ratio

    parts = []
    for init in INITS:
        ref = best[(init, "pathsgd")]
        for opt in ("sgd", "adagrad"):
            other = best[(init, opt)]
            if ref.diverged or other.diverged:
                continue
            n = min(len(ref.train_loss), len(other.train_loss)) - 1
            marks = sorted({e for e in (1, 5, 10, n) if 1 <= e <= n})
            at = ", ".join(
                f"epoch {e} {math.log10(max(other.train_loss[e], 1e-12) / max(ref.train_loss[e], 1e-12)):+.2f}"
                for e in marks
            )
            alt = [
                (lr, mean_log10_ratio(other, runs[(init, "pathsgd", lr)]))
                for lr in grids["pathsgd"]
                if not runs[(init, "pathsgd", lr)].diverged
            ]
            alt = [(lr, v) for lr, v in alt if v is not None]
            top = max(alt, key=lambda t: t[1]) if alt else None
            parts.append(
                f"{init} vs {LABELS[opt]} (lr {other.lr:g}): {at}"
                + (
                    f"; the grid's best Path-SGD curve against it: lr {top[0]:g}, {top[1]:+.2f}"
                    if top
                    else ""
                )
            )
    return (
        "Speed along the budget, log10(other's training loss / Path-SGD's) (> 0: Path-SGD lower): "
        + "; ".join(parts)
        + "."
    )


def _divergence_note(
    runs: dict[tuple[str, str, float], Run], best: dict[tuple[str, str], Run]
) -> str:
    """Which grid runs diverged (a non-finite training loss stops a run, and its step size is
    out of the choice), and which comparisons are not measured because every step size of an
    optimiser diverged."""
    gone = [f"{i} {LABELS[o]} lr {lr:g}" for (i, o, lr), r in runs.items() if r.diverged]
    if not gone:
        return "Diverged (non-finite training loss): none of the grid runs."
    note = "Diverged (non-finite training loss; the run stops, its step size is not chosen): "
    note += ", ".join(gone) + "."
    lost = [f"{i} {LABELS[o]}" for (i, o), r in best.items() if r.diverged]
    if lost:
        note += (
            " Every step size diverged for " + ", ".join(lost) + ": the comparisons and test "
            "errors that need them are not measured (they fail); lower that grid."
        )
    return note


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.models.small import MLP
    from paperzoo.utils.work import Piece, forward, step

    net = MLP(in_features=784, hidden=(cfg.hidden, cfg.hidden), num_classes=10)
    f = step(net, (cfg.batch_size, 784))
    per = forward(net, (100, 784)) / 100
    n_train = 60_000 - cfg.n_val
    steps_per_epoch = n_train // cfg.batch_size
    pieces = []
    for name, steps in plan:
        pieces.append(Piece(name, f, steps))
        epochs = max(1, steps // steps_per_epoch)
        pieces.append(Piece(f"{name} curves", per, epochs * (n_train + cfg.n_val)))
    return pieces, (
        f"MNIST MLPs 784-{cfg.hidden}-{cfg.hidden}-10 at batch {cfg.batch_size}; Path-SGD's "
        "path-norm scaling (two passes of one vector through the squared weights per step) is "
        "not counted; evaluation: the curves (training and validation error every epoch)"
    )
