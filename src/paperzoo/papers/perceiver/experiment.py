"""``PerceiverExperiment``: the Perceiver reproduction's run (the digit variant and the paper's
ImageNet experiment), its evaluation, figures and full-run cost.

Protocol: docs/perceiver.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data import load_dataset
from paperzoo.data.declared import declared_size
from paperzoo.data.imagenet import IMAGENET_TRAIN_SIZE, count_images
from paperzoo.data.splits import validation_split
from paperzoo.data.transforms import as_set
from paperzoo.engine import precision as num_precision
from paperzoo.engine import step_decay
from paperzoo.experiments.base import (
    ClaimSpec,
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.papers.perceiver.config import (
    CLAIMS,
    CONFIGS,
    DIGIT_MODELS,
    DIGIT_SETS,
    Config,
    PerceiverImageNetConfig,
)
from paperzoo.utils import count_params

if TYPE_CHECKING:
    from paperzoo.papers.perceiver.training import Candidate


log = logging.getLogger(__name__)


class PerceiverExperiment(Experiment):
    name = "perceiver"
    cuda_precision = "bf16"  # the reason: docs/perceiver.md, "Precision on CUDA"
    cpu_capped_args = ("--dataset", "mnist", "--data-root", "ROOT", "--set", "digits.batch_size=8")
    gpu_check = GpuCheck(
        8,
        20,
        "CUDA started, the ImageNet folders scanned, the Perceiver and two ResNet-50s built, "
        "cuDNN's search, 2 evaluation batches of 250 decoded and run",
        torchrun=True,
    )
    title = "Perceiver: General Perception with Iterative Attention"
    datasets = (*DIGIT_SETS, "imagenet")
    paper_data = "imagenet"
    claims = CLAIMS
    configs = CONFIGS
    not_estimated = (
        "ImageNet: evaluating all validation images (a --max-steps N run reads N batches of "
        "eval_batch); the estimate counts what it read",
    )

    order = 7  # position in the summary's tables
    full_not_run = (
        NotRun(
            ("data", "gpu"),
            "ImageNet (ILSVRC2012) is not reachable from this project's machines; the paper's "
            "44.9M-parameter model trains for 120 epochs: a multi-GPU job.",
            data="ImageNet",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def loader_workers(self, cfg: Any) -> int:
        """As ``Experiment.loader_workers``: the ImageNet run's ``workers``; the digit sets load
        without workers."""
        return cfg.workers if isinstance(cfg, PerceiverImageNetConfig) else 0

    def loader_shared_memory(self, cfg: Any, ranks: int = 1) -> int:
        """As ``Experiment.loader_shared_memory``: the ImageNet run's ``workers x prefetch``
        batches in flight per rank, each of uint8 crops (the loader hands over uint8 images,
        normalised on the device) and int64 labels, at the larger of the training batch's share
        and the evaluation batch (the training loader is closed before the evaluation's
        starts). The digit sets load without workers: 0."""
        if not isinstance(cfg, PerceiverImageNetConfig):
            return 0
        image = 3 * cfg.image_size * cfg.image_size + 8  # uint8 pixels, int64 label
        batch = max(-(-cfg.batch_size // ranks), cfg.eval_batch)
        return ranks * self.loader_workers(cfg) * cfg.prefetch * batch * image

    def dataset_name(self, ctx: RunContext) -> str | None:
        """As ``Experiment.dataset_name``; ImageNet runs only at full scale (the paper's model)."""
        name = super().dataset_name(ctx)
        if name == "imagenet" and ctx.scale != "full":
            raise ValueError(
                "perceiver reads ImageNet at --scale full only (the paper's model); "
                f"--scale {ctx.scale} runs on {', '.join(DIGIT_SETS)}"
            )
        return name

    def claims_at(self, ctx: RunContext) -> list[ClaimSpec]:
        """At full scale the ImageNet run measures the paper's claims (``imagenet.*``), a digit
        run (``--dataset`` naming a digit set) the digit claims; both count the parameters."""
        claims = super().claims_at(ctx)
        if ctx.scale != "full":
            return claims
        imagenet = self.dataset_name(ctx) == "imagenet"
        return [
            c
            for c in claims
            if c.id.startswith("params.") or c.id.startswith("imagenet.") == imagenet
        ]

    def plan(self, cfg: Any, ctx: RunContext) -> list[tuple[str, int]]:
        if isinstance(cfg, PerceiverImageNetConfig):
            if self.dataset_name(ctx) == "imagenet":
                per_epoch = _imagenet_steps_per_epoch(cfg, ctx.data_root)
                p, r = cfg.epochs * per_epoch, cfg.resnet_epochs * per_epoch
                # One Perceiver: the permuted one is the raster one on permuted inputs (a check).
                return [("perceiver_raster", p), ("resnet50_raster", r), ("resnet50_permuted", r)]
            cfg = cfg.digits
        pos = cfg.steps if cfg.raster_pos_steps is None else cfg.raster_pos_steps
        return [
            (k, pos if k == "perceiver_permuted_raster_pos" else cfg.steps)
            for k in DIGIT_MODELS
            if cfg.models is None or k in cfg.models
        ]

    def run(self, cfg: Any, ctx: RunContext) -> Outcome:
        dataset = self.dataset_name(ctx) or DIGIT_SETS[0]
        if isinstance(cfg, PerceiverImageNetConfig):
            if dataset == "imagenet":
                return self._run_imagenet(cfg, ctx)
            cfg = cfg.digits  # the 60,000-digit variant (not the paper's setting)
        return self._run_digits(cfg, ctx, dataset)

    def _run_digits(self, cfg: Config, ctx: RunContext, dataset: str) -> Outcome:
        from paperzoo.metrics.classification import predict
        from paperzoo.models.perceiver import PerceiverWithPositions
        from paperzoo.papers.perceiver.training import build_models, fit, imagenet_param_counts

        split = load_dataset(
            dataset,
            data_root=ctx.data_root,
            download=ctx.download,
            seed=ctx.seed,
        )
        if cfg.n_train is not None or cfg.n_test is not None:
            split = split.subset(cfg.n_train, cfg.n_test)
        _, c, h, w = split.x_train.shape
        x_train, y_train, x_test, y_eval = split.x_train, split.y_train, split.x_test, split.y_test
        if cfg.n_val is not None:  # a selection run: validation digits, the test digits unread
            tr, va = validation_split(y_train, cfg.n_val, generator=ctx.generator("val-split"))
            x_train, y_train, x_test, y_eval = x_train[tr], y_train[tr], x_train[va], y_train[va]
        fill = float(x_train.min())  # the background, for translations
        if cfg.standardize:  # one mean and std over all training pixels (as for ImageNet inputs)
            mean, std = x_train.mean(), x_train.std()
            x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
            fill = float((fill - mean) / std)
        # Test data (standardised with training statistics): only the final evaluation reads them.
        x_test, y_test = ctx.holdout(x_test, "x_test"), ctx.holdout(y_eval, "y_test")
        g = ctx.generator("pixel-permutation")
        perm = torch.randperm(h * w, generator=g)  # one fixed permutation for every image
        cands = build_models(
            cfg, image_shape=(c, h, w), num_classes=split.num_classes, perm=perm, seed=ctx.seed
        )
        params = {k: count_params(v.model) for k, v in cands.items()}
        train_acc: dict[str, float] = {}
        for key, cand in cands.items():
            trainer = fit(
                cand,
                x_train,
                y_train,
                cfg,
                seed=ctx.seed,
                fill=fill,
                desc=key,
                progress=ctx.progress,
                device=ctx.device,
                out_dir=ctx.out_dir / "runs" / key,
            )
            train_acc[key] = trainer.history.last("acc")

        acc: dict[str, float] = {}
        raster = cands.get("perceiver_raster")
        max_diff: float | None = None
        figures: list[str] = []
        with ctx.final_evaluation():  # every model is trained: the test numbers
            for key, cand in cands.items():
                logits = predict(cand.model, cand.prepare(x_test), device=ctx.device)
                acc[key] = (logits.argmax(1) == y_test).float().mean().item()
                log.info("%s: test accuracy %.4f (%d parameters)", key, acc[key], params[key])
            if raster is not None:
                # Exact invariance: the raster-trained Perceiver on jointly permuted test pixels
                # + positions, both forwards in float32 whatever the run's precision.
                raster_model = raster.model
                assert isinstance(raster_model, PerceiverWithPositions)
                xte = as_set(x_test)
                pos = raster_model.model.position_features()
                with num_precision.exact_comparison():
                    base = predict(raster_model, xte, device=ctx.device)
                    jointly = predict(
                        PerceiverWithPositions(raster_model.model, pos[perm]),
                        xte[:, perm],
                        device=ctx.device,
                    )
                max_diff = (base - jointly).abs().max().item()
            if {"perceiver_raster", "perceiver_permuted"} <= set(cands):
                figures.append(self._attention_figure(cands, x_test, perm, cfg, ctx))

        n_shared, n_unshared = imagenet_param_counts()

        figures.insert(0, self._bar_chart(acc, ctx))

        def minus(a: str, b: str) -> float | None:  # None: a model was not trained (--set models)
            return acc[a] - acc[b] if a in acc and b in acc else None

        gap = minus("perceiver_permuted", "perceiver_raster")
        measured = {
            "permuted.convnet.acc_drop": minus("convnet_raster", "convnet_permuted"),
            "permuted.perceiver_vs_convnet.test_acc": minus(
                "perceiver_permuted", "convnet_permuted"
            ),
            "mnist.perceiver.test_acc": acc.get("perceiver_raster"),
            "mnist.perceiver_vs_mlp.test_acc": minus("perceiver_raster", "mlp_raster"),
            "permuted.perceiver.acc_gap": None if gap is None else abs(gap),
            "permuted.perceiver.invariant": None if max_diff is None else bool(max_diff <= 1e-4),
            "permuted.perceiver_raster_positions.acc": acc.get("perceiver_permuted_raster_pos"),
            "mnist.convnet.test_acc": acc.get("convnet_raster"),
            "mnist.mlp.test_acc": acc.get("mlp_raster"),
            "params.imagenet_config": n_shared,
            "params.imagenet_config_unshared": n_unshared,
        }
        evaluated_on = (
            f"VALIDATION accuracy ({cfg.n_val} digits held out of the training set; the test "
            "digits were not read)"
            if cfg.n_val is not None
            else "Test accuracy"
        )
        convnet = (
            f"SmallCNN {cfg.cnn_channels}/{cfg.cnn_hidden}"
            if cfg.convnet == "small_cnn"
            else f"CIFAR ResNet-{cfg.resnet_depth} (width {cfg.resnet_width})"
        )
        notes = [
            f"{evaluated_on}: "
            + ", ".join(f"{k} {v:.4f}" for k, v in acc.items())
            + ". Training accuracy, mean of the last logged steps: "
            + ", ".join(f"{k} {v:.3f}" for k, v in train_acc.items())
            + f". All models: AdamW, warm-up + cosine, batch {cfg.batch_size}, translations by up "
            f"to {cfg.translate} pixel(s), "
            + ", ".join(f"{k} {v.steps}" for k, v in cands.items())
            + f" steps. ConvNet: {convnet}.",
            "Parameters: " + ", ".join(f"{k} {v:,}" for k, v in params.items()) + ".",
            "The paper's numbers are ImageNet (Tab. 2: Perceiver 78.0 -> 78.0 %, ResNet-50 (FF) "
            "73.5 -> 39.4 %); ours are digits.",
        ]
        if max_diff is not None:
            notes.append(
                "Max |logit difference| of the raster Perceiver under a joint permutation of "
                f"pixels and positions: {max_diff:.2e} (float32 forwards whatever the run's "
                "precision: float summation order only)."
            )
        vs_mlp = measured["mnist.perceiver_vs_mlp.test_acc"]
        if vs_mlp is not None:
            notes.append(
                f"Perceiver - MLP (raster): {vs_mlp:+.4f}, a reported check, not a finding: the "
                "paper compares with no MLP. Both models are blind to pixel order; at the quick "
                "budget the Perceiver does not beat an order-blind MLP on 4,000 digits (it is "
                "still fitting when its steps run out; docs/perceiver.md, 'What fails, and why')."
            )
        return Outcome(
            measured=measured,
            data=[split.info],
            figures=figures,
            notes=notes,
            details={
                "evaluated_on": "validation" if cfg.n_val is not None else "test",
                "n_eval": len(y_test),
                "test_acc": acc,
                "train_acc": train_acc,
                "params": params,
                "invariance_max_abs_logit_diff": max_diff,
                "imagenet_params": {"shared": n_shared, "unshared": n_unshared},
            },
        )

    def _run_imagenet(self, cfg: PerceiverImageNetConfig, ctx: RunContext) -> Outcome:
        """Tab. 2: the Perceiver and ResNet-50 (FF), raster and permuted, on ImageNet."""
        from functools import partial

        from paperzoo.data.imagenet import (
            ImageNetTrainSource,
            RandAugment,
            eval_transform,
            imagenet_info,
            iterate_eval,
            scan_image_folder,
            train_transform,
        )
        from paperzoo.engine import budget
        from paperzoo.engine.accumulation import has_batch_norm
        from paperzoo.models.perceiver import PerceiverOnImages
        from paperzoo.papers.perceiver.training import (
            build_imagenet_models,
            count_top1,
            evaluation_share,
            fit_imagenet,
            imagenet_param_counts,
            lamb_optimizer,
        )

        if ctx.data_root is None:
            from paperzoo.data.layouts import require

            require("imagenet", None)  # the one-line refusal naming the layout
        root = Path(ctx.data_root).expanduser()  # type: ignore[arg-type]
        train = scan_image_folder(root / "imagenet" / "train")
        val = scan_image_folder(root / "imagenet" / "val", train.classes)
        train = train.subset(cfg.n_train, seed=0)
        val = val.subset(cfg.n_val, seed=0)
        info = imagenet_info(root, train, val)
        num_classes = len(train.classes)
        log.info(
            "ImageNet: %d training and %d validation images of %d classes under %s",
            len(train), len(val), num_classes, root,
        )  # fmt: skip
        s = cfg.image_size
        perm = torch.randperm(s * s, generator=ctx.generator("pixel-permutation"))
        models = build_imagenet_models(cfg, num_classes=num_classes, perm=perm, seed=ctx.seed)
        params = {k: count_params(m) for k, m in models.items()}

        batch = min(cfg.batch_size, len(train))  # a tiny data root: one whole-data batch
        transform = partial(
            train_transform,
            size=s,
            scale=cfg.crop_scale,
            flip=cfg.flip,
            randaugment=RandAugment(n=cfg.randaugment_n, m=cfg.randaugment_m),
            normalized=False,  # uint8 through the loader; normalised on the device
        )
        on_cuda = torch.device(ctx.device).type == "cuda"
        # --max-steps N: the models train on the same first N batches, made once
        capped = budget.active()
        source = ImageNetTrainSource(
            train, batch_size=batch, seed=ctx.seed, transform=transform, workers=cfg.workers,
            prefetch=cfg.prefetch, pin_memory=on_cuda,
            keep=capped.max_steps if capped is not None else 0,
        )  # fmt: skip
        # Epochs over the declared size of stand-in files (paperzoo.data.declared), else over
        # the files: the batches cycle over the files either way.
        declared = declared_size(root / "imagenet", "train") is not None
        per_epoch = _imagenet_steps_per_epoch(cfg, root) if declared else source.steps_per_epoch
        train_acc: dict[str, float] = {}
        try:
            for key, model in models.items():
                chunk: int | None
                if key.startswith("perceiver"):
                    opt = lamb_optimizer(model, cfg)
                    steps = cfg.epochs * per_epoch
                    schedule = step_decay(per_epoch, cfg.lr_decay_epochs, cfg.lr_decay_factor)
                    if has_batch_norm(model):  # then micro_batch would change the model
                        raise ValueError("the Perceiver's micro_batch assumes no batch norm")
                    chunk = cfg.micro_batch  # memory only: no batch statistics
                else:
                    opt = torch.optim.SGD(
                        model.parameters(),
                        lr=cfg.resnet_lr,
                        momentum=cfg.resnet_momentum,
                        weight_decay=cfg.resnet_weight_decay,
                    )
                    steps = cfg.resnet_epochs * per_epoch
                    schedule = step_decay(
                        per_epoch,
                        cfg.lr_decay_epochs,
                        cfg.lr_decay_factor,
                        warmup_epochs=cfg.resnet_warmup_epochs,
                    )
                    chunk = cfg.resnet_bn_batch  # batch norm's (ghost) batch
                trainer = fit_imagenet(
                    model,
                    source,
                    opt,
                    steps=steps,
                    schedule=schedule,
                    micro_batch=chunk,
                    seed=ctx.seed,
                    desc=key,
                    progress=ctx.progress,
                    device=ctx.device,
                    out_dir=ctx.out_dir / "runs" / key,
                )
                train_acc[key] = trainer.history.last("acc")
        finally:
            source.close()

        # Top-1 on the validation images (a --max-steps run: the first N batches of them). The
        # permuted Perceiver is the raster-trained one on jointly permuted pixels and positions.
        n_eval = budget.items(len(val), cfg.eval_batch)
        evaluate = partial(eval_transform, size=s, resize=cfg.eval_resize, normalized=False)
        raster = models["perceiver_raster"]
        assert isinstance(raster, PerceiverOnImages)
        jointly = PerceiverOnImages(raster.model, perm).to(ctx.device)
        evaluated: dict[str, nn.Module] = {
            "perceiver_raster": raster,
            "perceiver_permuted": jointly,
            "resnet50_raster": models["resnet50_raster"],
            "resnet50_permuted": models["resnet50_permuted"],
        }
        for m in evaluated.values():
            m.eval()
        # Under torchrun each rank evaluates its share of the images (counts summed over the
        # ranks, the invariance check on each rank's first share of its images). Top-1 at the
        # run's precision (bf16 autocast under --precision bf16, as in training); the invariance
        # check in float32 whatever the precision.
        rank, world = ctx.dist.rank, ctx.dist.world_size
        with ctx.final_evaluation():
            batches = iterate_eval(
                val, batch_size=cfg.eval_batch, transform=evaluate, workers=cfg.workers,
                order=evaluation_share(len(val), n_eval, rank, world), prefetch=cfg.prefetch,
                pin_memory=on_cuda,
            )  # fmt: skip
            correct, n_seen, max_diff = count_top1(
                evaluated, batches, device=ctx.device, micro_batch=cfg.micro_batch,
                invariance=-(-cfg.invariance_images // world),
            )  # fmt: skip
        top1 = {k: v / max(1, n_seen) for k, v in correct.items()}
        for key in evaluated:
            log.info("%s: top-1 %.4f on %d validation images", key, top1[key], n_seen)

        n_shared, n_unshared = imagenet_param_counts()
        measured = {
            "imagenet.perceiver.top1": top1["perceiver_raster"],
            "imagenet.perceiver_permuted.top1": top1["perceiver_permuted"],
            "imagenet.resnet50_permuted.top1": top1["resnet50_permuted"],
            "imagenet.resnet50.top1": top1["resnet50_raster"],
            "imagenet.perceiver.acc_gap": abs(
                top1["perceiver_permuted"] - top1["perceiver_raster"]
            ),
            "imagenet.perceiver.invariant": bool(max_diff <= cfg.invariance_atol),
            "params.imagenet_config": n_shared,
            "params.imagenet_config_unshared": n_unshared,
        }
        notes = [
            f"Top-1 on {n_seen:,} of {len(val):,} validation images: "
            + ", ".join(f"{k} {v:.4f}" for k, v in top1.items())
            + ". Training accuracy, mean of the last logged steps (augmented crops): "
            + ", ".join(f"{k} {v:.3f}" for k, v in train_acc.items())
            + ".",
            f"Training: {len(train):,} images, batch {batch} ({per_epoch:,} steps an epoch); "
            f"the Perceiver (one, trained on raster pixels; its permuted top-1 is the same model "
            f"on jointly permuted pixels and positions): LAMB lr {cfg.lr:g}, / "
            f"{1 / cfg.lr_decay_factor:g} at epochs {list(cfg.lr_decay_epochs)}, {cfg.epochs} "
            f"epochs, weight decay {cfg.weight_decay:g}, micro-batches of {cfg.micro_batch}; "
            f"ResNets ({cfg.resnet}, RGB + Fourier channels): SGD lr {cfg.resnet_lr:g}, momentum "
            f"{cfg.resnet_momentum:g}, {cfg.resnet_epochs} epochs, batch norm over "
            + (
                f"ghost batches of {cfg.resnet_bn_batch}"
                if cfg.resnet_bn_batch is not None
                else "each rank's whole share of the batch"
            )
            + f". Crops {s} x {s}, RandAugment N={cfg.randaugment_n} M={cfg.randaugment_m:g}.",
            "Parameters: " + ", ".join(f"{k} {v:,}" for k, v in params.items()) + ".",
            f"Max |logit difference| of the raster Perceiver under a joint permutation of pixels "
            f"and positions on {min(n_seen, cfg.invariance_images)} validation images: "
            f"{max_diff:.2e} (bound {cfg.invariance_atol:g}; float32 forwards whatever the run's "
            "precision: float summation order only).",
            "The paper (Tab. 2): Perceiver (FF) 78.0 / 78.0 %, ResNet-50 (FF) 73.5 / 39.4 % "
            "(raster / permuted).",
        ]
        return Outcome(
            measured=measured,
            data=[info],
            notes=notes,
            details={
                "top1": top1,
                "train_acc": train_acc,
                "params": params,
                "validation_images": n_seen,
                "invariance_max_abs_logit_diff": max_diff,
                "imagenet_params": {"shared": n_shared, "unshared": n_unshared},
            },
        )

    @staticmethod
    def _bar_chart(acc: dict[str, float], ctx: RunContext) -> str:
        labels = {
            "perceiver_raster": "Perceiver\nraster",
            "perceiver_permuted": "Perceiver\npermuted",
            "perceiver_permuted_raster_pos": "Perceiver\npermuted,\nraster pos.",
            "convnet_raster": "ConvNet\nraster",
            "convnet_permuted": "ConvNet\npermuted",
            "mlp_raster": "MLP\nraster",
            "mlp_permuted": "MLP\npermuted",
        }
        colors = {"perceiver": "tab:blue", "convnet": "tab:orange", "mlp": "tab:green"}
        keys = [k for k in labels if k in acc]
        fig = Figure(figsize=(8, 3.8))
        ax = fig.subplots()
        bars = ax.bar(
            range(len(keys)),
            [acc[k] for k in keys],
            color=[colors[k.split("_")[0]] for k in keys],
        )
        for k, b in zip(keys, bars, strict=True):
            hatch = "//" if "permuted" in k else ""
            b.set_hatch(hatch)
            ax.text(
                b.get_x() + b.get_width() / 2,
                b.get_height(),
                f"{acc[k]:.3f}",
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax.set_xticks(range(len(keys)), [labels[k] for k in keys], fontsize=8)
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0, 1.05)
        ax.set_title("Fixed pixel permutation: Perceiver vs ConvNet vs MLP")
        return ctx.save_figure(fig, "accuracy.png")

    @staticmethod
    def _attention_figure(
        cands: dict[str, Candidate],
        x_test: Tensor,
        perm: Tensor,
        cfg: Config,
        ctx: RunContext,
    ) -> str:
        """First cross-attend maps: raster model, and the permuted model's maps un-permuted."""
        from einops import rearrange

        from paperzoo.models.perceiver import PerceiverWithPositions

        n_img, n_lat = cfg.attention_images, cfg.attention_latents
        _, c, h, w = x_test.shape
        imgs = x_test[:n_img]
        inv = torch.argsort(perm)
        rows: list[tuple[str, Tensor, np.ndarray]] = []
        for key, permuted in (("perceiver_raster", False), ("perceiver_permuted", True)):
            wrapper = cands[key].model
            assert isinstance(wrapper, PerceiverWithPositions)
            x = imgs.flatten(2)[:, :, perm].reshape(imgs.shape) if permuted else imgs
            xs = rearrange(x, "n c h w -> n (h w) c").to(ctx.device)
            wrapper.eval()
            att = (
                wrapper.model.first_cross_attention(xs, pos=wrapper.pos).mean(1).cpu()
            )  # (n, N, M)
            if permuted:
                att = att[:, :, inv]  # back to raster order: input position perm[j] held raster j
            # The latents with the most concentrated attention (largest max weight) on average.
            order = att.amax(-1).mean(0).argsort(descending=True)[:n_lat]
            for i in range(n_img):
                label = "perm. (un-perm.)" if permuted else "raster"
                rows.append((label, imgs[i, 0], att[i, order].reshape(-1, h, w).numpy()))
        n_lat = min(n_lat, rows[0][2].shape[0])
        fig = Figure(figsize=(1.4 * (n_lat + 1), 1.4 * len(rows)))
        axes = np.atleast_2d(fig.subplots(len(rows), n_lat + 1, squeeze=False))
        for r, (label, img, maps) in enumerate(rows):
            axes[r, 0].imshow(img.numpy(), cmap="gray")
            axes[r, 0].set_ylabel(label, fontsize=6)
            for j in range(n_lat):
                axes[r, j + 1].imshow(maps[j], cmap="viridis")
                if r == 0:
                    axes[r, j + 1].set_title(f"latent {j + 1}", fontsize=7)
        for ax in axes.flat:
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle("First cross-attend: attention of latents over pixels", fontsize=9)
        return ctx.save_figure(fig, "attention.png")


def _imagenet_steps_per_epoch(cfg: PerceiverImageNetConfig, data_root: str | Path | None) -> int:
    """Steps of one ImageNet epoch: over the size the files under ``data_root`` declare (stand-in
    files, ``paperzoo.data.declared``), else their count (names only), else ILSVRC2012's."""
    n = None
    if data_root is not None:
        folder = Path(data_root).expanduser() / "imagenet"
        n = declared_size(folder, "train") or count_images(folder / "train")
    n = n or IMAGENET_TRAIN_SIZE
    n = n if cfg.n_train is None else min(n, cfg.n_train)
    return max(1, n // min(cfg.batch_size, n))


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.models.perceiver import ConvNetWithPositions, Perceiver, PerceiverOnImages
    from paperzoo.models.registry import MODELS
    from paperzoo.papers.perceiver.training import imagenet_perceiver_config
    from paperzoo.utils.work import Piece, forward, step

    s = cfg.image_size
    train_s, eval_s = _decode_seconds(cfg)
    workers = max(cfg.workers, 1)  # 0: decoded in the training process, one at a time
    pieces = []
    nets: dict[str, nn.Module] = {}
    for name, steps in plan:
        if name.startswith("perceiver"):
            net: nn.Module = PerceiverOnImages(
                Perceiver(config=imagenet_perceiver_config(cfg, 1000))
            )
        else:
            pos = nets.get("pos")
            if pos is None:
                pos = PerceiverOnImages(Perceiver(config=imagenet_perceiver_config(cfg, 1000))).pos
                nets["pos"] = pos  # type: ignore[assignment]
            p = int(pos.shape[1])  # type: ignore[union-attr]
            convnet = MODELS.create(cfg.resnet, in_chans=3 + p, num_classes=1000)
            net = ConvNetWithPositions(convnet, torch.zeros(p, s, s), None)
        # trained in chunks (their kernels add up): the Perceiver's micro-batches, the ResNet's
        # batch-norm batches
        chunk = cfg.micro_batch if name.startswith("perceiver") else cfg.resnet_bn_batch
        chunk = chunk or cfg.batch_size
        f = step(net, (chunk, 3, s, s)) * (cfg.batch_size / chunk)  # one update per step
        f = f.with_host(loader=cfg.batch_size * train_s / workers)
        pieces.append(Piece(f"{name} training", f, steps))
        per = forward(net, (cfg.micro_batch, 3, s, s)) / cfg.micro_batch
        pieces.append(Piece(f"{name} evaluation", per.with_host(loader=eval_s / workers), 50_000))
    return pieces, (
        f"ImageNet at {s} px, batch {cfg.batch_size} (counted on the chunks each model trains "
        f"in, scaled: the Perceiver's micro-batches of {cfg.micro_batch}, the ResNets' "
        f"batch-norm batches of {cfg.resnet_bn_batch or cfg.batch_size}); evaluation: the "
        "50,000 validation images once per model "
        "(the permuted check reuses the raster Perceiver); the loader: each of its "
        f"{cfg.workers} workers decodes and augments {1 / train_s:,.0f} training images a second "
        f"and prepares {1 / eval_s:,.0f} validation images a second, timed on one CPU core on a "
        f"{_JPEG_SIZE[0]} x {_JPEG_SIZE[1]} JPEG (ImageNet's mean image size)"
    )


_JPEG_SIZE = (469, 387)  # ImageNet's mean training image (width, height)


def _decode_seconds(cfg: Any) -> tuple[float, float]:
    """Seconds one loader worker takes per image, timed on this CPU at one thread: a training
    image (JPEG decoding, the Inception crop, flip and RandAugment of ``cfg``) and a validation
    image (decoding, resize and centre crop), on a JPEG of ImageNet's mean size whose smooth
    gradients and mild noise stand in for a photograph."""
    import io
    from functools import partial

    from PIL import Image

    from paperzoo.data.imagenet import RandAugment, eval_transform, train_transform
    from paperzoo.utils.work import host_seconds

    w, h = _JPEG_SIZE
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 / w, yy * 255 / h, (xx + yy) * 127 / (w + h)], axis=-1)
    pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
    jpeg = buf.getvalue()
    augment = partial(
        train_transform, size=cfg.image_size, scale=cfg.crop_scale, flip=cfg.flip,
        randaugment=RandAugment(n=cfg.randaugment_n, m=cfg.randaugment_m), normalized=False,
    )  # fmt: skip

    def decode() -> Any:
        return Image.open(io.BytesIO(jpeg)).convert("RGB")

    train = host_seconds(lambda: augment(decode(), rng), repeats=15)
    evaluate = host_seconds(
        lambda: eval_transform(decode(), size=cfg.image_size, resize=cfg.eval_resize,
                               normalized=False),
        repeats=15,
    )  # fmt: skip
    return train, evaluate
