"""Reproduction of Liu et al. (2018), "An intriguing failing of convolutional neural networks and
the CoordConv solution" (arXiv:1807.03247), on the Not-so-Clevr data set.

Three tasks (Sec. 4), each with a CoordConv model and a conventional baseline:

* supervised coordinate classification: (i, j) -> a one-hot 64x64 image (softmax over pixels);
  CoordConv painter vs a deconvolutional net, on the uniform and the quadrant split;
* supervised coordinate regression: one-hot 64x64 image -> (i, j); CoordConv regressor vs a
  strided convolutional net, on the quadrant split;
* supervised rendering: (i, j) -> the 9x9 square; CoordConv painter, on the quadrant split.

Deviations (documented, none changes what is measured): the deconv baseline has a dense stem
(see ``paperzoo.models.coordconv``); the regression error is the root-mean-square Euclidean
distance in pixels; the quick scale trains for a few hundred to a few thousand steps rather than
the paper's long runs, which the CoordConv models need no more than; every model is trained
with Adam and a cosine learning-rate decay (the deconv baseline fits its training set within
the quick budget only with the decay); the CoordConv regressor reads its output by a soft
arg-max over the coordinate channels (see ``paperzoo.models.coordconv.CoordConvRegressor``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data.base import DataInfo
from paperzoo.data.not_so_clevr import (
    CANVAS,
    NotSoClevrSplit,
    make_split,
    onehot_images,
    scale_coords,
    square_images,
    unscale_coords,
)
from paperzoo.engine import History, TrainConfig, Trainer, seeded
from paperzoo.experiments.base import EXPERIMENTS, ClaimSpec, Experiment, Outcome, RunContext
from paperzoo.metrics.classification import predict
from paperzoo.models.coordconv import (
    ConvRegressor,
    CoordConvPainter,
    CoordConvRegressor,
    DeconvPainter,
)
from paperzoo.utils import count_params

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoordConvConfig:
    cls_steps: int  # CoordConv classification steps (per split)
    reg_steps: int  # CoordConv regression steps
    render_steps: int  # CoordConv rendering steps
    baseline_steps: int  # steps of each conventional baseline (deconv per split, conv regressor)
    batch_size: int  # minibatch size of the CoordConv models
    baseline_batch_size: int  # minibatch size of the baselines
    lr: float  # peak Adam learning rate of the CoordConv models (cosine decay to 0)
    deconv_lr: float  # peak Adam learning rate of the deconv baseline
    conv_lr: float  # peak Adam learning rate of the conv regressor (it stalls at 3e-3)
    eval_every: int  # steps between test evaluations (learning curves)
    eval_limit: int | None = None  # evaluate on at most this many examples (None: all)


_CLAIMS = (
    ClaimSpec("quadrant.classification.coordconv.test_acc",
              "CoordConv maps (i, j) to the right pixel in the never-seen quadrant", 1.0, ">= 0.95"),
    ClaimSpec("quadrant.classification.deconv.train_acc",
              "the deconv baseline fits its training quadrants", 1.0, ">= 0.9"),
    ClaimSpec("quadrant.classification.deconv.test_acc",
              "the deconv baseline fails in the held-out quadrant", 0.0, "<= 0.10"),
    ClaimSpec("uniform.classification.coordconv.test_acc",
              "CoordConv generalises on the uniform split", 1.0, ">= 0.95"),
    ClaimSpec("uniform.classification.deconv.test_acc",
              "deconv test accuracy on the uniform split", 0.86, "reported", kind="check"),
    ClaimSpec("uniform.classification.coordconv_minus_deconv.test_acc",
              "CoordConv's uniform-split test accuracy minus the deconv baseline's", 0.14, "> 0"),
    ClaimSpec("quadrant.regression.coordconv.test_rmse_px",
              "CoordConv regresses (i, j) of held-out-quadrant points to within a pixel", "~0",
              "<= 1.0"),
    ClaimSpec("quadrant.regression.conv.train_rmse_px",
              "the convolutional regressor's error on its training quadrants", None, "reported", kind="check"),
    ClaimSpec("quadrant.regression.conv.test_rmse_px",
              "the convolutional regressor's error in the held-out quadrant (clearly worse)",
              None, "> 2.0"),
    ClaimSpec("quadrant.rendering.coordconv.test_iou",
              "CoordConv renders the square at held-out-quadrant positions (mean IoU)", 1.0,
              ">= 0.9"),
    ClaimSpec("painter.coordconv.params",
              "parameters of the CoordConv painter (1x1 convs 32-32-64-64-1)", 7553, "== 7553",
              kind="check"),  # holds by construction of the architecture
)  # fmt: skip


def _pixel_index(centres: Tensor) -> Tensor:
    return centres[:, 0] * CANVAS + centres[:, 1]


def _limit(t: Tensor, n: int | None) -> Tensor:
    return t if n is None else t[:n]


def _classification_acc(model: nn.Module, centres: Tensor) -> float:
    logits = predict(model, scale_coords(centres), batch_size=64).flatten(1)  # (N, H*W)
    return (logits.argmax(1) == _pixel_index(centres)).float().mean().item()


def _rmse_px(model: nn.Module, centres: Tensor) -> float:
    pred = unscale_coords(predict(model, onehot_images(centres), batch_size=256))
    return (pred - centres.float()).pow(2).sum(1).mean().sqrt().item()


def _mean_iou(model: nn.Module, centres: Tensor) -> float:
    pred = predict(model, scale_coords(centres), batch_size=64) > 0  # logit > 0 <=> p > 0.5
    true = square_images(centres) > 0.5
    inter = (pred & true).sum((1, 2, 3)).float()
    union = (pred | true).sum((1, 2, 3)).float()
    return (inter / union).mean().item()


@EXPERIMENTS.register("coordconv")
class CoordConvExperiment(Experiment):
    name = "coordconv"
    title = "An intriguing failing of convolutional neural networks and the CoordConv solution"
    claims = _CLAIMS
    configs = {
        "smoke": CoordConvConfig(
            cls_steps=4, reg_steps=4, render_steps=4, baseline_steps=4, batch_size=8,
            baseline_batch_size=8, lr=1e-2, deconv_lr=1e-3, conv_lr=1e-3, eval_every=2, eval_limit=16,
        ),
        "quick": CoordConvConfig(
            cls_steps=300, reg_steps=300, render_steps=300, baseline_steps=1500, batch_size=16,
            baseline_batch_size=32, lr=1e-2, deconv_lr=3e-3, conv_lr=1e-3, eval_every=100, eval_limit=None,
        ),
        "full": CoordConvConfig(
            cls_steps=5000, reg_steps=5000, render_steps=5000, baseline_steps=50000,
            batch_size=32, baseline_batch_size=32, lr=1e-3, deconv_lr=1e-3, conv_lr=1e-3, eval_every=1000,
            eval_limit=None,
        ),
    }  # fmt: skip

    def _train(
        self,
        tag: str,
        model: nn.Module,
        data: tuple[Tensor, ...],
        loss_fn: Callable[[nn.Module, Any], Tensor],
        eval_fn: Callable[[nn.Module], dict[str, float]],
        *,
        steps: int,
        lr: float,
        batch_size: int,
        cfg: CoordConvConfig,
        ctx: RunContext,
    ) -> History:
        tc = TrainConfig(
            steps=steps,
            batch_size=batch_size,
            seed=ctx.seed,
            log_every=max(1, min(50, steps)),
            eval_every=cfg.eval_every,
            progress=ctx.progress,
            desc=tag,
        )
        trainer = Trainer(
            model,
            torch.optim.Adam(model.parameters(), lr=lr),
            loss_fn,
            config=tc,
            lr_schedule=lambda step: 0.5 * (1.0 + math.cos(math.pi * step / steps)),
            eval_fn=eval_fn,
            device=ctx.device,
            out_dir=ctx.out_dir / "runs" / tag,
        )
        hist = trainer.fit(data)
        model.cpu()
        return hist

    def run(self, cfg: CoordConvConfig, ctx: RunContext) -> Outcome:
        m: dict[str, Any] = {}
        curves: dict[str, History] = {}
        splits = {
            k: make_split(k, generator=ctx.generator("split", k)) for k in ("quadrant", "uniform")
        }
        lim = cfg.eval_limit

        def cls_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
            coords, target = batch
            return F.cross_entropy(model(coords).flatten(1), target)  # softmax over all pixels

        models: dict[str, nn.Module] = {}
        for kind, split in splits.items():
            test = _limit(split.test, lim)
            for arch in ("coordconv", "deconv"):
                with seeded(ctx.seed):
                    model = CoordConvPainter() if arch == "coordconv" else DeconvPainter()
                tag = f"{kind}-classification-{arch}"
                curves[tag] = self._train(
                    tag,
                    model,
                    (scale_coords(split.train), _pixel_index(split.train)),
                    cls_loss,
                    lambda mod, test=test: {"test_acc": _classification_acc(mod, test)},
                    steps=cfg.cls_steps if arch == "coordconv" else cfg.baseline_steps,
                    lr=cfg.lr if arch == "coordconv" else cfg.deconv_lr,
                    batch_size=cfg.batch_size if arch == "coordconv" else cfg.baseline_batch_size,
                    cfg=cfg,
                    ctx=ctx,
                )
                models[tag] = model
                m[f"{kind}.classification.{arch}.test_acc"] = _classification_acc(model, test)
                if kind == "quadrant" and arch == "deconv":
                    train_eval = _limit(split.train, lim)
                    m["quadrant.classification.deconv.train_acc"] = _classification_acc(
                        model, train_eval
                    )
        m["uniform.classification.coordconv_minus_deconv.test_acc"] = (
            m["uniform.classification.coordconv.test_acc"]
            - m["uniform.classification.deconv.test_acc"]
        )

        quad = splits["quadrant"]
        qtest = _limit(quad.test, lim)

        def reg_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
            x, target = batch
            return F.mse_loss(model(x), target)

        for arch in ("coordconv", "conv"):
            with seeded(ctx.seed):
                model = CoordConvRegressor() if arch == "coordconv" else ConvRegressor()
            tag = f"quadrant-regression-{arch}"
            curves[tag] = self._train(
                tag,
                model,
                (onehot_images(quad.train), scale_coords(quad.train)),
                reg_loss,
                lambda mod: {"test_rmse_px": _rmse_px(mod, qtest)},
                steps=cfg.reg_steps if arch == "coordconv" else cfg.baseline_steps,
                lr=cfg.lr if arch == "coordconv" else cfg.conv_lr,
                batch_size=cfg.batch_size if arch == "coordconv" else cfg.baseline_batch_size,
                cfg=cfg,
                ctx=ctx,
            )
            m[f"quadrant.regression.{arch}.test_rmse_px"] = _rmse_px(model, qtest)
            if arch == "conv":
                m["quadrant.regression.conv.train_rmse_px"] = _rmse_px(
                    model, _limit(quad.train, lim)
                )

        def render_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
            coords, image = batch
            return F.binary_cross_entropy_with_logits(model(coords), image)  # per-pixel Bernoulli

        with seeded(ctx.seed):
            painter = CoordConvPainter()
        m["painter.coordconv.params"] = count_params(painter)
        tag = "quadrant-rendering-coordconv"
        curves[tag] = self._train(
            tag,
            painter,
            (scale_coords(quad.train), square_images(quad.train)),
            render_loss,
            lambda mod: {"test_iou": _mean_iou(mod, qtest)},
            steps=cfg.render_steps,
            lr=cfg.lr,
            batch_size=cfg.batch_size,
            cfg=cfg,
            ctx=ctx,
        )
        m["quadrant.rendering.coordconv.test_iou"] = _mean_iou(painter, qtest)

        figures = [
            self._plot_curves(curves, ctx),
            self._plot_predictions(models, painter, quad, ctx),
        ]
        data = [
            DataInfo(f"not-so-clevr-{k}", "generated", len(s.train), len(s.test))
            for k, s in splits.items()
        ]
        params = {
            "coordconv_painter": count_params(painter),
            "deconv_painter": count_params(models["quadrant-classification-deconv"]),
            "coordconv_regressor": count_params(CoordConvRegressor()),
            "conv_regressor": count_params(ConvRegressor()),
        }
        notes = [
            f"Parameters: {', '.join(f'{k} {v:,}' for k, v in params.items())}.",
            f"Steps: CoordConv classification {cfg.cls_steps}, regression {cfg.reg_steps}, "
            f"rendering {cfg.render_steps} (batch {cfg.batch_size}, peak lr {cfg.lr}); each "
            f"baseline {cfg.baseline_steps} (batch {cfg.baseline_batch_size}, peak lr "
            f"{cfg.deconv_lr} deconv, {cfg.conv_lr} conv); Adam with cosine decay.",
        ]
        if lim is not None:
            notes.append(f"Evaluated on at most {lim} examples per split (scale {ctx.scale}).")
        return Outcome(
            measured=m, data=data, figures=figures, notes=notes, details={"params": params}
        )

    def _plot_curves(self, curves: dict[str, History], ctx: RunContext) -> str:
        fig = Figure(figsize=(12, 3.6))
        axes = fig.subplots(1, 3)
        groups = (
            ("classification", "test_acc", "test accuracy"),
            ("regression", "test_rmse_px", "test RMSE (px)"),
            ("rendering", "test_iou", "test IoU"),
        )
        for ax, (task, metric, label) in zip(axes, groups, strict=True):
            for tag, hist in curves.items():
                if task in tag:
                    steps, vals = hist.series(metric)
                    ax.plot(steps, vals, marker=".", label=tag.replace(f"-{task}", ""))
            ax.set_title(task)
            ax.set_xlabel("step")
            ax.set_ylabel(label)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path, rel = ctx.figure_path("curves.png")
        fig.savefig(path, dpi=100)
        return rel

    def _plot_predictions(
        self,
        models: dict[str, nn.Module],
        painter: nn.Module,
        quad: NotSoClevrSplit,
        ctx: RunContext,
    ) -> str:
        g = ctx.generator("figure")
        pick = quad.test[torch.randperm(len(quad.test), generator=g)[:4]]
        coords = scale_coords(pick)
        rows = (
            ("CoordConv class.", models["quadrant-classification-coordconv"], "softmax"),
            ("deconv class.", models["quadrant-classification-deconv"], "softmax"),
            ("CoordConv render", painter, "sigmoid"),
        )
        fig = Figure(figsize=(8, 6.3))
        axes = fig.subplots(len(rows), len(pick))
        for r, (label, model, kind) in enumerate(rows):
            out = predict(model, coords, batch_size=8)[:, 0]  # (4, H, W)
            img = out.flatten(1).softmax(1).view_as(out) if kind == "softmax" else out.sigmoid()
            for c in range(len(pick)):
                ax = axes[r, c]
                ax.imshow(img[c].numpy(), cmap="viridis")
                ax.add_patch(_square_patch(pick[c]))
                ax.set_xticks([])
                ax.set_yticks([])
                if c == 0:
                    ax.set_ylabel(label, fontsize=8)
        fig.suptitle("held-out quadrant: predictions (true square outlined in red)", fontsize=9)
        fig.tight_layout()
        path, rel = ctx.figure_path("heldout_predictions.png")
        fig.savefig(path, dpi=100)
        return rel


def _square_patch(centre: Tensor) -> Any:
    from matplotlib.patches import Rectangle

    ci, cj = (int(v) for v in centre)
    return Rectangle((cj - 4.5, ci - 4.5), 9, 9, fill=False, edgecolor="red", linewidth=1)
