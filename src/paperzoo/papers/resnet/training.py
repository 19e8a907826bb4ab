"""The ResNet nets' training: the data (``load_data``), the augmented batches of each step
(``batches``), the learning-rate schedule, the training and evaluation of one net
(``train_one``), the nets each process trains alone under torchrun (``share_by_depth``) and the
records it shares with the others (``gather_nets``), the architecture sizes and the full run's
cost."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.data import load_dataset
from paperzoo.data.base import DataInfo, Split
from paperzoo.data.cifar import random_crop_flip
from paperzoo.data.splits import validation_split
from paperzoo.engine import History, NonFiniteLossError, TrainConfig, Trainer, budget, seeded
from paperzoo.engine.distributed import DistInfo, current, wait_for_all_ranks
from paperzoo.engine.sampler import BatchSampler
from paperzoo.engine.transfer import to_device
from paperzoo.experiments.base import RunContext
from paperzoo.experiments.grid import read_record, write_record
from paperzoo.metrics.classification import predict
from paperzoo.models import create_model
from paperzoo.models.resnet import CifarResNet
from paperzoo.papers.resnet.config import Config, net_depth
from paperzoo.utils import count_macs, count_params

log = logging.getLogger(__name__)

NET_RECORD = "net.json"  # runs/<net>/: a net's measurements, for the other ranks to read
DIVERGED = "diverged"  # a net record's key when its loss was not finite: {"step", "value"}


def load_data(
    name: str | None, cfg: Config, ctx: RunContext
) -> tuple[dict[str, Tensor], DataInfo, int]:
    """Data set ``name`` prepared as §4.2 does: the training images (``n_val`` of them held
    out for validation), the per-pixel mean of the training images subtracted from every set,
    the test images guarded for the final evaluation; with its ``DataInfo`` and class count."""
    split: Split = load_dataset(name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed)
    x, y = split.x_train, split.y_train
    xt, yt = split.x_test[: cfg.n_test], split.y_test[: cfg.n_test]
    if cfg.downsample > 1:  # quick: 28x28 digits -> 7x7 (k x k average pooling)
        x, xt = F.avg_pool2d(x, cfg.downsample), F.avg_pool2d(xt, cfg.downsample)
    if cfg.n_val >= len(x):
        raise ValueError(f"n_val={cfg.n_val} leaves no training images ({len(x)})")
    # §4.2's 45k/5k split: a seeded random subset, stratified by class, held out.
    tr, va = validation_split(y, cfg.n_val, generator=ctx.generator("val-split"))
    xv, yv = x[va], y[va]
    x, y = x[tr][: cfg.n_train], y[tr][: cfg.n_train]
    mean = x.mean(0, keepdim=True)  # §4.2: per-pixel mean subtracted, (1, C, H, W)
    data = {
        "x": x - mean,
        "y": y,
        "x_val": xv - mean,
        "y_val": yv,
        # read only in the final evaluation (the mean is the training set's)
        "x_test": ctx.holdout(xt - mean, "x_test"),
        "y_test": ctx.holdout(yt, "y_test"),
    }
    info = DataInfo(
        split.info.name,
        split.info.source,
        len(x),
        len(xt),
        sha256=split.info.sha256,  # the loaded data's identity (load_dataset fills it)
    )
    return data, info, split.num_classes


def batches(
    x: Tensor, y: Tensor, cfg: Config, seed: int, dist: DistInfo | None = None
) -> Callable[[int, torch.Generator], tuple[Tensor, Tensor]]:
    """Step -> this rank's share of the augmented global batch.

    The global batch of step s (a deterministic permutation of the training set, as the
    engine's sampler draws it) is augmented with the step's generator, identically on every
    rank; each rank then keeps a strided slice, as the engine does for tensor data. DDP with K
    processes therefore sees exactly the single-process global batch, augmentation included.
    ``dist``: the ranks that share the batch (None: the process group; ``DistInfo()``: this
    process alone, the whole batch).
    """
    sampler = BatchSampler(len(x), cfg.batch_size, seed=seed, drop_last=True, dist=DistInfo())
    dist = current() if dist is None else dist

    def batch(step: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
        idx = sampler.indices(step)
        idx = to_device(idx, x.device)  # (B,) pinned and asynchronous on CUDA
        xb, yb = x[idx], y[idx]
        if cfg.pad or cfg.flip:
            xb = random_crop_flip(xb, generator=g, padding=cfg.pad, flip=cfg.flip)
        return xb[dist.rank :: dist.world_size], yb[dist.rank :: dist.world_size]

    return batch


def lr_schedule(cfg: Config, depth: int) -> Callable[[int], float]:
    """Step -> learning-rate multiplier: /10 at each milestone, x0.1 during the warm-up of a net
    of depth >= 110."""

    def mult(step: int) -> float:
        m = 0.1 ** sum(step >= s for s in cfg.milestones)  # /10 at 32k and 48k
        if depth >= 110 and step < cfg.warmup_steps:
            m *= 0.1  # §4.2: ResNet-110 starts at lr 0.01
        return m

    return mult


def error_rate(model: nn.Module, x: Tensor, y: Tensor, device: str) -> float | None:
    """Fraction of ``x`` that ``model`` misclassifies (None when ``x`` is empty)."""
    if len(x) == 0:
        return None
    logits = predict(model, x, batch_size=500, device=device)
    return (logits.argmax(1) != y.cpu()).float().mean().item()


def train_one(
    name: str,
    cfg: Config,
    ctx: RunContext,
    data: dict[str, Tensor],
    num_classes: int,
    *,
    local: bool = False,
) -> dict[str, Any]:
    """Train and evaluate net ``name``: over every process of the group, or with ``local``
    in this process alone (the whole batch)."""
    depth = net_depth(name)
    dist = DistInfo() if local else ctx.dist
    with seeded(ctx.seed):
        model = CifarResNet(
            depth=depth,
            residual=name.startswith("resnet"),
            in_chans=data["x"].shape[1],
            num_classes=num_classes,
        )
    model = sync_batch_norm(model, dist, ctx.device)
    opt = torch.optim.SGD(
        model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
    )

    def loss_fn(m: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        xb, yb = batch
        logits = m(xb)
        err = (logits.detach().argmax(1) != yb).float().mean()
        return F.cross_entropy(logits, yb), {"train_err": err}

    # --max-steps N: validation and test errors on the first N training-size batches only
    # (evaluating all 15,000 images per net would take most of a dry run's time).
    n_val = budget.items(len(data["x_val"]), cfg.batch_size)
    x_val, y_val = data["x_val"][:n_val], data["y_val"][:n_val]

    def eval_fn(m: nn.Module) -> dict[str, float]:  # the monitor: validation error
        err = error_rate(m, x_val, y_val, ctx.device)
        return {"val_err": float("nan") if err is None else err}

    compile_ok = cfg.compile and _compile_available(ctx.device)
    trainer = Trainer(
        model,
        opt,
        loss_fn,
        config=TrainConfig(
            steps=cfg.steps,
            batch_size=cfg.batch_size,
            seed=ctx.seed,
            log_every=cfg.log_every,
            eval_every=cfg.eval_every,
            checkpoint_every=cfg.eval_every if ctx.scale == "full" else 0,
            channels_last=cfg.channels_last,
            compile=compile_ok,
            progress=ctx.progress,
            desc=name,
        ),
        lr_schedule=lr_schedule(cfg, depth),
        eval_fn=eval_fn if len(data["x_val"]) else None,
        device=ctx.device,
        out_dir=ctx.out_dir / "runs" / name,
        local=local,
    )
    x = data["x"].to(ctx.device)
    y = data["y"].to(ctx.device)
    hist = trainer.fit(batches(x, y, cfg, ctx.seed, dist), resume=True)
    start = cfg.steps - cfg.loss_window
    n_test = budget.items(len(data["x_test"]), cfg.batch_size)
    with ctx.final_evaluation():  # training is over: the test error is a final number
        test_err = error_rate(model, data["x_test"][:n_test], data["y_test"][:n_test], ctx.device)
    return {
        "params": count_params(model),
        # (under DDP the engine logs each record averaged over the ranks, also in a history
        # resumed from rank 0's checkpoint, so every rank holds the same mean here)
        "final_train_loss": _window_mean(hist, "loss", start),
        "final_train_err": _window_mean(hist, "train_err", start),
        "test_err": float("nan") if test_err is None else test_err,
        "val_err": error_rate(model, x_val, y_val, ctx.device),
        "curve": dict(zip(("step", "loss"), hist.series("loss"), strict=True)),
        "err_curve": dict(zip(("step", "train_err"), hist.series("train_err"), strict=True)),
        "val_curve": dict(zip(("step", "val_err"), hist.series("val_err"), strict=True)),
    }


def architecture_sizes() -> dict[str, int]:
    """Parameter counts of the CIFAR ResNets (3x32x32, 10 classes) and ResNet-50's size/MACs."""
    return dict(_architecture_sizes())


@functools.cache
def _architecture_sizes() -> dict[str, int]:
    sizes = {}
    for d in (20, 32, 44, 56, 110):
        with seeded(0):
            sizes[f"resnet{d}"] = count_params(create_model(f"resnet{d}"))
    with seeded(0):
        r50 = create_model("resnet50")
        v1 = create_model("resnet50", stride_in_1x1=True)
    sizes["resnet50_imagenet_params"] = count_params(r50)
    sizes["resnet50_imagenet_macs"] = count_macs(r50, (1, 3, 224, 224))
    sizes["resnet50_v1_macs"] = count_macs(v1, (1, 3, 224, 224))
    return sizes


def sync_batch_norm(model: nn.Module, dist: DistInfo, device: str) -> nn.Module:
    """Batch norm over the whole global batch under DDP on CUDA: ``SyncBatchNorm`` (each rank
    would otherwise normalise over batch / world-size images, 8 at 16 ranks); elsewhere the model
    unchanged (one process normalises over the whole batch already; gloo on the CPU has no
    SyncBatchNorm). The reason: docs/resnet.md, "Under torchrun"."""
    if dist.enabled and str(device).startswith("cuda"):
        return nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model


def share_by_depth(names: Sequence[str], dist: DistInfo) -> list[str]:
    """The nets this process trains when each process trains its own: the deepest first, each
    to the process with the least depth so far (a step's cost grows with depth), the same
    split on every rank; in ``names``' order.

    Args:
        names: every net of the run.
        dist: this process's place in the group.
    """
    load = [0] * dist.world_size
    owner: dict[str, int] = {}
    for name in sorted(names, key=lambda n: -net_depth(n)):  # (stable: ties in names' order)
        rank = min(range(dist.world_size), key=lambda r: (load[r], r))
        load[rank] += net_depth(name)
        owner[name] = rank
    return [n for n in names if owner[n] == dist.rank]


def gather_nets(
    names: Sequence[str], mine: dict[str, dict[str, Any]], runs_dir: Path
) -> dict[str, dict[str, Any]]:
    """Every net's record, each rank's read from the shared ``--out`` once every rank has
    trained its own (``wait_for_all_ranks``: no collective, so ranks that finish hours apart
    wait without the group's timeout).

    Raises:
        NonFiniteLossError: on every rank, when a net diverged (the earliest step over the
            nets; ``elsewhere`` when another rank trained it).
    """
    for name, record in mine.items():
        write_record(runs_dir / name / NET_RECORD, record)
    wait_for_all_ranks("the ResNet nets")
    paths = {name: runs_dir / name / NET_RECORD for name in names}
    runs = {name: read_record(path) for name, path in paths.items() if path.is_file()}
    bad = [(r[DIVERGED]["step"], name) for name, r in runs.items() if DIVERGED in r]
    if bad:
        step, name = min(bad)
        value = float(runs[name][DIVERGED]["value"])
        raise NonFiniteLossError(step, value, elsewhere=name not in mine)
    missing = [name for name in names if name not in runs]
    if missing:
        raise RuntimeError(f"no record of net(s) {', '.join(missing)} in {runs_dir}")
    return runs


def _window_mean(hist: History, name: str, after_step: int) -> float:
    steps, values = hist.series(name)
    tail = [v for s, v in zip(steps, values, strict=True) if s > after_step] or values[-1:]
    return float(sum(tail) / len(tail)) if tail else float("nan")


def _compile_available(device: str) -> bool:
    """torch.compile needs a backend compiler: Triton on CUDA, a C++ compiler on CPU."""
    if not hasattr(torch, "compile"):
        return False
    try:
        if device.startswith("cuda"):
            import triton  # noqa: F401
        else:
            from torch._inductor.cpp_builder import get_cpp_compiler

            get_cpp_compiler()
    except Exception:  # noqa: BLE001 - any failure means: do not compile
        log.warning("torch.compile requested but not available on %s; running eagerly", device)
        return False
    return True


def full_cost(cfg: Config, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    """The full run's pieces (``paperzoo.cost``): each net's training steps and evaluations."""
    from paperzoo.utils.work import Piece, forward, step

    pieces = []
    for name, steps in plan:
        depth = int("".join(c for c in name if c.isdigit()))
        net = CifarResNet(depth=depth, residual=name.startswith("resnet"), num_classes=10)
        pieces.append(Piece(f"{name} training", step(net, (cfg.batch_size, 3, 32, 32)), steps))
        per_image = forward(net, (500, 3, 32, 32)) / 500  # evaluated in batches of 500
        evals = steps // cfg.eval_every if cfg.eval_every else 0
        pieces.append(Piece(f"{name} evaluation", per_image, evals * cfg.n_val + 10_000))
    return pieces, (
        f"CIFAR-10 nets at batch {cfg.batch_size}; evaluation: {cfg.n_val:,} validation images "
        f"every {cfg.eval_every:,} steps and the 10,000 test images once per net"
    )
