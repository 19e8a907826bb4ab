"""How CoordConv's models are trained and measured: the data splits (``load_data``), one
training loop for every model (``fit``: Adam, a step-size schedule, optional micro-batches, the
authors' L2 penalty, the deconv's switch to running batch-norm statistics), the three tasks'
fits (``fit_classifier``, ``fit_regressor``, ``fit_renderer``) and the metrics (accuracy,
RMSE in pixels, IoU). A trained model stays on the run's device; each metric runs on the device
its model is on and reads its number once. Settings: ``config.py``; protocol and measurements:
docs/coordconv.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.data.not_so_clevr import (
    CANVAS,
    NotSoClevrSplit,
    make_split,
    onehot_images,
    scale_coords,
    square_images,
)
from paperzoo.engine import History, TrainConfig, Trainer, budget, seeded
from paperzoo.experiments.base import RunContext
from paperzoo.metrics import on_device
from paperzoo.models.coordconv import (
    ConvRegressor,
    CoordConvPainter,
    CoordConvRegressor,
    DeconvPainter,
)
from paperzoo.papers.coordconv.config import SCHEDULES, Config

# Sec. 4.2's regressors, by the name of their training run
REGRESSORS: dict[str, Callable[[], nn.Module]] = {
    "coordconv": CoordConvRegressor,
    "conv": ConvRegressor,
    "conv_twin": lambda: CoordConvRegressor(add_coords=False),
}

FIT_ACC = 0.9  # training accuracy at which a classifier counts as having fitted its points


def _pixel_index(centres: Tensor) -> Tensor:
    return centres[:, 0] * CANVAS + centres[:, 1]


def _norm_loc(centres: Tensor) -> Tensor:
    """The authors' regression targets: pixel / 64, in [0, 1). (N, 2) -> (N, 2) float."""
    return centres.float() / CANVAS


def limit(t: Tensor, n: int | None) -> Tensor:
    if budget.active() is not None:  # --max-steps: a few batches of 16
        return t[: budget.items(len(t) if n is None else n, 16)]
    return t if n is None else t[:n]


def classification_acc(model: nn.Module, centres: Tensor) -> float:
    """Share of ``centres`` whose pixel is the argmax of the painter's logits (N, H*W)."""
    logits = on_device.logits_on_device(model, scale_coords(centres), batch_size=16).flatten(1)
    correct = (logits.argmax(1) == _pixel_index(centres).to(logits.device)).sum()
    return on_device.fractions([correct], len(centres))[0]


def regression_pred(model: nn.Module, centres: Tensor) -> Tensor:
    """Predicted centres in pixels, on the model's device. (N, 2) -> (N, 2)."""
    return on_device.logits_on_device(model, onehot_images(centres), batch_size=128) * CANVAS


def rmse_px(model: nn.Module, centres: Tensor) -> float:
    pred = regression_pred(model, centres)
    err = pred - centres.float().to(pred.device)
    return err.pow(2).sum(1).mean().sqrt().item()


def constant_rmse_px(location: Tensor, centres: Tensor) -> float:
    """RMSE (px) of the constant predictor that answers ``location`` (2,) for every image."""
    return (centres.float() - location).pow(2).sum(1).mean().sqrt().item()


def escaped_constant(rmse: float, constant_rmse: float) -> bool:
    """Whether a regressor escaped the constant predictor: its RMSE ``rmse`` below half the
    constant predictor's ``constant_rmse`` (one coordinate learnt and the other constant gives
    about 1 / sqrt 2 of it)."""
    return rmse < 0.5 * constant_rmse


def max_on_hot_pixel(model: CoordConvRegressor, centres: Tensor) -> float:
    """Share of (image, output map) pairs -- ``len(centres)`` x 2 -- whose argmax over the
    64 x 64 map before the global max pool lies within the 5x5 window centred on the hot pixel
    (Chebyshev distance <= 2): the receptive field of the two 3x3 convolutions, i.e. the only
    pixels whose value depends on the hot pixel, and where the max pool's gradient can reach the
    weights that read it."""
    was_training = model.training
    model.eval()
    dev = on_device.model_device(model)
    try:
        with torch.no_grad():
            maps = torch.cat([model.maps(onehot_images(c).to(dev)) for c in centres.split(128)])
    finally:
        model.train(was_training)
    centres = centres.to(dev)
    idx = maps.flatten(2).argmax(2)  # (N, 2, H, W) -> (N, 2) flat pixel index
    rows, cols = idx // CANVAS, idx % CANVAS
    near = ((rows - centres[:, :1]).abs() <= 2) & ((cols - centres[:, 1:]).abs() <= 2)
    return near.float().mean().item()


def mean_iou(model: nn.Module, centres: Tensor) -> float:
    pred = on_device.logits_on_device(model, scale_coords(centres), batch_size=16) > 0  # p > 0.5
    true = square_images(centres).to(pred.device) > 0.5
    inter = (pred & true).sum((1, 2, 3)).float()
    union = (pred | true).sum((1, 2, 3)).float()
    return (inter / union).mean().item()


def _accumulating_step(
    loss_fn: Callable[[nn.Module, Any], Tensor], optimizer: torch.optim.Optimizer, chunk: int
) -> Callable[[nn.Module, Any], dict[str, Tensor]]:
    """A manual training step: the batch's mean loss back-propagated in chunks of ``chunk``
    (under DDP all but the last chunk in ``no_sync``: one gradient all-reduce per step)."""
    from paperzoo.engine.accumulation import sync_gradients_if

    def step(model: nn.Module, batch: tuple[Tensor, ...]) -> dict[str, Tensor]:
        n = len(batch[0])
        optimizer.zero_grad(set_to_none=True)
        total = torch.zeros((), device=batch[0].device)
        parts = list(zip(*(t.split(chunk) for t in batch), strict=True))
        for k, part in enumerate(parts):
            with sync_gradients_if(model, sync=k == len(parts) - 1):
                loss = loss_fn(model, part) * (len(part[0]) / n)  # the chunk's share of the mean
                loss.backward()
            total += loss.detach()
        optimizer.step()
        return {"loss": total}

    return step


def conv_weights(model: nn.Module) -> list[Tensor]:
    """The weights (kernels, not biases) of every (transposed) convolution of ``model``."""
    return [m.weight for m in model.modules() if isinstance(m, nn.Conv2d | nn.ConvTranspose2d)]


def _with_l2(
    loss_fn: Callable[[nn.Module, Any], Tensor], model: nn.Module, l2: float, *, chunked: bool
) -> Callable[[nn.Module, Any], Any]:
    """``loss_fn`` plus the authors' L2 penalty: ``l2`` * sum of squared conv weights.

    Whole batches (``chunked=False``) also log the loss without the penalty (``fit_loss``). With
    micro-batches the accumulating step weights each chunk's loss by the chunk's share of the
    batch and the shares sum to one, so each step's loss holds the penalty once (the gradient of
    the whole batch's penalised loss); the step takes a plain loss there, and logs no
    ``fit_loss``."""
    weights = conv_weights(model)

    def penalised(mod: nn.Module, batch: Any) -> Any:
        fit = loss_fn(mod, batch)
        loss = fit + l2 * sum(w.pow(2).sum() for w in weights)
        return loss if chunked else (loss, {"fit_loss": fit.detach()})

    return penalised


def _use_running_stats(model: nn.Module) -> None:
    """Batch norms in eval mode: normalise with (and stop updating) the running statistics."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eval()


def curve_points(train: Tensor, val: Tensor) -> tuple[str, Tensor]:
    """What the learning curves are measured on: ("val", the validation centres), or ("train",
    the training centres) when there are none (no hold-out, as the authors trained). Nothing is
    selected by the curves (fixed step counts), so a training-point curve only shows the fit."""
    return ("val", val) if len(val) else ("train", train)


def _carve_validation(
    split: NotSoClevrSplit, fraction: float, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """(train, val): a seeded random ``fraction`` of the training centres held out."""
    n = len(split.train)
    perm = torch.randperm(n, generator=generator)
    n_val = max(1, round(fraction * n)) if fraction > 0 else 0
    return split.train[perm[n_val:].sort().values], split.train[perm[:n_val].sort().values]


def fit(
    tag: str,
    model: nn.Module,
    data: tuple[Tensor, ...],
    loss_fn: Callable[[nn.Module, Any], Tensor],
    eval_fn: Callable[[nn.Module], dict[str, float]],
    *,
    steps: int,
    lr: float,
    batch_size: int,
    cfg: Config,
    ctx: RunContext,
    micro_batch: int | None = None,
    running_stats_from: int | None = None,
    channels_last: bool = False,
    betas: tuple[float, float] = (0.9, 0.999),
    schedule: str = "cosine",
    l2: float = 0.0,
    drop_last: bool = True,
) -> History:
    """Adam (``betas``) with a cosine decay of the step size to zero over ``steps``, or a
    constant step size (``schedule="constant"``).

    ``l2``: add ``l2`` times the sum of the squared weights of every (transposed)
    convolution, not the biases, to the loss (the authors' ``--l2``, a Keras-style
    ``kernel_regularizer``); the logged ``loss`` includes it, ``fit_loss`` does not (with
    ``micro_batch`` the penalty is in each chunk's loss, weighted by the chunk's share, and no
    ``fit_loss`` is logged).

    ``drop_last``: the engine's ``TrainConfig.drop_last`` (``False``: each epoch ends with a
    partial batch, as the authors' loop does).

    ``running_stats_from``: from this step on, the batch norms normalise with their running
    statistics (frozen there) instead of each batch's, i.e. they train the function that is
    evaluated (``None``: batch statistics throughout).

    ``channels_last``: the engine's ``TrainConfig.channels_last`` (model and image batches in
    channels-last memory format).

    ``micro_batch``: compute each step's gradient in chunks of this many examples and sum
    them (the same gradient as the whole batch, up to float rounding; only for models
    without batch norm). The painters' activations are 4,096 pixels x 64 channels per
    example; chunks of 4 keep the temporaries small enough for the allocator to reuse, which
    measured 0.10 -> 0.063 s of CPU per step at one thread.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=betas)
    chunked = micro_batch is not None and micro_batch < batch_size
    if l2 > 0:
        loss_fn = _with_l2(loss_fn, model, l2, chunked=chunked)
    step_fn: Callable[[nn.Module, Any], Any] = loss_fn
    if chunked:
        assert micro_batch is not None
        step_fn = _accumulating_step(loss_fn, optimizer, micro_batch)
    manual = step_fn is not loss_fn
    if running_stats_from is not None:
        inner, switch = step_fn, running_stats_from

        def frozen_stats_step(model: nn.Module, batch: Any) -> Any:
            if trainer.step >= switch:  # after the trainer's model.train()
                _use_running_stats(model)
            return inner(model, batch)

        step_fn = frozen_stats_step
    tc = TrainConfig(
        steps=steps,
        batch_size=batch_size,
        seed=ctx.seed,
        log_every=max(1, min(50, steps)),
        eval_every=cfg.eval_every,
        progress=ctx.progress,
        desc=tag,
        channels_last=channels_last,
        drop_last=drop_last,
    )
    trainer = Trainer(
        model,
        optimizer,
        step_fn,
        config=tc,
        lr_schedule=SCHEDULES[schedule](steps),
        eval_fn=eval_fn,
        device=ctx.device,
        out_dir=ctx.out_dir / "runs" / tag,
        manual=manual,
    )
    return trainer.fit(data, resume=True)  # the model stays on the run's device


def load_data(
    cfg: Config, ctx: RunContext
) -> dict[str, tuple[NotSoClevrSplit, Tensor, Tensor, Tensor]]:
    """Per split: (split, training centres, validation centres, guarded test centres); no
    validation centres when ``cfg.val_fraction`` is 0."""
    out = {}
    for kind in ("quadrant", "uniform"):
        s = make_split(kind, generator=ctx.generator("split", kind), protocol=cfg.split_protocol)
        test = ctx.holdout(limit(s.test, cfg.eval_limit), f"{kind} test centres")
        s = dataclasses.replace(s, test=test)  # only the guarded test centres remain
        tr, va = _carve_validation(s, cfg.val_fraction, ctx.generator("val-split", kind))
        out[kind] = (s, tr, limit(va, cfg.eval_limit), test)
    return out


def fit_classifier(
    kind: str,
    arch: str,
    train: Tensor,
    val: Tensor,
    cfg: Config,
    ctx: RunContext,
) -> tuple[nn.Module, History]:
    """Sec. 4.1: train the CoordConv (``arch="coordconv"``) or deconv painter on (i, j) ->
    the pixel's index (softmax over all pixels); the curve is the validation accuracy (the
    training accuracy when ``val`` is empty)."""

    def cls_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
        coords, target = batch
        return F.cross_entropy(model(coords).flatten(1), target)  # softmax over all pixels

    coordconv = arch == "coordconv"
    with seeded(ctx.seed):
        model = CoordConvPainter() if coordconv else DeconvPainter()
    steps = cfg.cls_steps if kind == "quadrant" else cfg.uniform_cls_steps
    on, points = curve_points(train, val)
    hist = fit(
        f"{kind}-classification-{arch}",
        model,
        (scale_coords(train), _pixel_index(train)),
        cls_loss,
        lambda mod: {f"{on}_acc": classification_acc(mod, points)},
        steps=steps if coordconv else cfg.deconv_steps_on(kind),
        lr=cfg.lr if coordconv else cfg.deconv_lr,
        batch_size=cfg.batch_size if coordconv else cfg.deconv_batch_size,
        cfg=cfg,
        ctx=ctx,
        micro_batch=cfg.micro_batch if coordconv else None,  # the deconv has batch norm
        running_stats_from=None if coordconv else cfg.deconv_frozen_step(kind),
        betas=cfg.adam_betas,
        l2=cfg.quadrant_cls_l2 if coordconv and kind == "quadrant" else 0.0,
        schedule=cfg.schedule if coordconv else cfg.deconv_schedule,
        drop_last=not cfg.partial_batches,
    )
    return model, hist


def fit_regressor(
    arch: str, train: Tensor, val: Tensor, cfg: Config, ctx: RunContext
) -> tuple[nn.Module, History]:
    """Sec. 4.2: train a regressor on the one-hot image -> (i, j) / 64 (the authors' MSE):
    ``arch`` is ``"coordconv"`` (the CoordConv regressor), ``"conv_twin"`` (the same net
    without AddCoords; both with the ``reg_*`` settings) or ``"conv"`` (the authors'
    conventional regressor, ``conv_reg_*``). The curve is the validation RMSE in pixels (the
    training RMSE when ``val`` is empty)."""

    def reg_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
        x, target = batch
        return F.mse_loss(model(x), target)  # the authors' loss, on pixel / 64

    if arch not in REGRESSORS:
        raise ValueError(f"unknown regressor {arch!r}; expected one of {REGRESSORS}")
    with seeded(ctx.seed):
        model = REGRESSORS[arch]()
    conv = arch == "conv"
    on, points = curve_points(train, val)
    hist = fit(
        f"quadrant-regression-{arch}",
        model,
        (onehot_images(train), _norm_loc(train)),
        reg_loss,
        lambda mod: {f"{on}_rmse_px": rmse_px(mod, points)},
        steps=cfg.conv_reg_steps if conv else cfg.reg_steps,
        lr=cfg.conv_reg_lr if conv else cfg.reg_lr,
        batch_size=cfg.conv_reg_batch_size if conv else cfg.reg_batch_size,
        cfg=cfg,
        ctx=ctx,
        channels_last=cfg.channels_last and arch != "coordconv",
        betas=cfg.adam_betas if conv else cfg.reg_betas,
        schedule=cfg.schedule if conv else cfg.reg_schedule,
        l2=cfg.conv_reg_l2 if conv else cfg.reg_l2,
        # the authors' epochs end with a partial batch (the conv regressor: at full only)
        drop_last=conv and not cfg.partial_batches,
    )
    return model, hist


def fit_renderer(
    train: Tensor, val: Tensor, cfg: Config, ctx: RunContext
) -> tuple[nn.Module, History]:
    """Sec. 4.3: train the CoordConv painter on (i, j) -> the 9x9 square (a per-pixel
    Bernoulli); the curve is the validation IoU (the training IoU when ``val`` is empty)."""

    def render_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
        coords, image = batch
        return F.binary_cross_entropy_with_logits(model(coords), image)  # per-pixel Bernoulli

    tag = "quadrant-rendering-coordconv"
    on, points = curve_points(train, val)
    with seeded(ctx.seed):
        painter = CoordConvPainter()
    hist = fit(
        tag,
        painter,
        (scale_coords(train), square_images(train)),
        render_loss,
        lambda mod: {f"{on}_iou": mean_iou(mod, points)},
        steps=cfg.render_steps,
        lr=cfg.lr,
        batch_size=cfg.batch_size,
        cfg=cfg,
        ctx=ctx,
        micro_batch=cfg.micro_batch,
        betas=cfg.adam_betas,
        schedule=cfg.schedule,
    )
    return painter, hist
