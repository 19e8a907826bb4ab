"""Training of the Perceiver reproduction's models: the seven digit models (``build_models``,
``fit``: AdamW, linear warm-up then cosine decay, random one-pixel translations) and the ImageNet
models of the paper's Tab. 2 (``build_imagenet_models``, ``fit_imagenet``: LAMB or SGD, step
decays, micro- or ghost batches with one gradient all-reduce per step) and their evaluation on the
validation images, split over the ranks (``evaluation_share``, ``count_top1``).

Protocol and choices: docs/perceiver.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor, nn

from paperzoo.data.transforms import as_set, translate
from paperzoo.engine import TrainConfig, Trainer, seeded, warmup_cosine
from paperzoo.engine import precision as num_precision
from paperzoo.engine.distributed import collective_device, current
from paperzoo.engine.transfer import to_device
from paperzoo.models.perceiver import (
    IMAGENET,
    ConvNetWithPositions,
    Perceiver,
    PerceiverConfig,
    PerceiverOnImages,
    PerceiverWithPositions,
)
from paperzoo.models.resnet import CifarResNet
from paperzoo.models.small import MLP, SmallCNN
from paperzoo.papers.perceiver.config import Config, PerceiverImageNetConfig
from paperzoo.utils import count_params


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
    cfg: Config,
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

    on_device: dict[torch.device, Tensor] = {}  # the permutation where the images are

    def permute(x: Tensor) -> Tensor:  # (N, C, H, W) -> same shape, pixels shuffled
        if x.device not in on_device:  # copied once (a host index would be copied every step)
            on_device[x.device] = to_device(perm, x.device)
        return x.flatten(2)[:, :, on_device[x.device]].reshape(x.shape)

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
            model = PerceiverWithPositions(Perceiver(config=pcfg), pos)
        prep = (lambda x: as_set(permute(x))) if permuted else as_set
        steps = cfg.steps
        if key == "perceiver_permuted_raster_pos" and cfg.raster_pos_steps is not None:
            steps = cfg.raster_pos_steps
        out[key] = Candidate(model, prep, steps)
    for order in ("raster", "permuted"):
        with seeded(seed):
            cnn: nn.Module
            if cfg.convnet == "small_cnn":
                cnn = SmallCNN(
                    in_chans=c,
                    num_classes=num_classes,
                    image_size=h,
                    channels=cfg.cnn_channels,
                    hidden=cfg.cnn_hidden,
                )
            else:
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
    if cfg.models is not None:
        out = {k: v for k, v in out.items() if k in cfg.models}
    return out


def _identity(x: Tensor) -> Tensor:
    return x


def fit(
    cand: Candidate,
    x_train: Tensor,
    y_train: Tensor,
    cfg: Config,
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
        lr_schedule=warmup_cosine(cand.steps, cfg.warmup),
        device=device,
        out_dir=out_dir,
    )
    trainer.fit((x_train, y_train), resume=True)  # a rerun into the same --out continues
    return trainer


# -- ImageNet (full scale) -------------------------------------------------------------------------


def imagenet_perceiver_config(cfg: PerceiverImageNetConfig, num_classes: int) -> PerceiverConfig:
    """The Perceiver of ``cfg`` for RGB crops of ``cfg.image_size`` and ``num_classes`` classes."""
    s = cfg.image_size
    pcfg = replace(cfg.perceiver, input_channels=3, index_dims=(s, s), num_classes=num_classes)
    if pcfg.position != "fourier":
        raise ValueError("the permutation experiment uses Fourier positions")
    return pcfg


def build_imagenet_models(
    cfg: PerceiverImageNetConfig, *, num_classes: int, perm: Tensor, seed: int
) -> dict[str, nn.Module]:
    """The three models trained for Tab. 2's comparison, each initialised under ``seed``: the
    Perceiver on raster pixels, and ResNet-50 (FF) on raster and on permuted pixels (the two
    ResNets start from the same weights). The permuted Perceiver is not trained: it is
    ``PerceiverOnImages(models["perceiver_raster"].model, perm)``, the raster-trained model on
    jointly permuted pixels and positions (a second Perceiver trained on them would compute the
    same function up to float order)."""
    from paperzoo.models.registry import MODELS

    pcfg = imagenet_perceiver_config(cfg, num_classes)
    out: dict[str, nn.Module] = {}
    with seeded(seed):
        out["perceiver_raster"] = PerceiverOnImages(Perceiver(config=pcfg))
    grid = out["perceiver_raster"].pos  # (H * W, P), raster order
    s = cfg.image_size
    pos_image = rearrange(grid, "(h w) p -> p h w", h=s, w=s)  # (P, H, W)
    for key, p in (("resnet50_raster", None), ("resnet50_permuted", perm)):
        with seeded(seed):
            convnet = MODELS.create(cfg.resnet, in_chans=3 + grid.shape[1], num_classes=num_classes)
        out[key] = ConvNetWithPositions(convnet, pos_image.clone(), p)
    return out


def lamb_optimizer(model: nn.Module, cfg: PerceiverImageNetConfig) -> torch.optim.Optimizer:
    """LAMB on the weight matrices (with weight decay); biases and normalisation scales (1-D)
    without weight decay or trust ratio (the project's choice; the paper is silent)."""
    from paperzoo.optim import Lamb

    params = [p for p in model.parameters() if p.requires_grad]
    return Lamb(
        [
            {"params": [p for p in params if p.ndim > 1]},
            {
                "params": [p for p in params if p.ndim <= 1],
                "weight_decay": 0.0,
                "trust_ratio": False,
            },
        ],
        lr=cfg.lr,
        betas=cfg.lamb_betas,
        eps=cfg.lamb_eps,
        weight_decay=cfg.weight_decay,
    )


def fit_imagenet(
    model: nn.Module,
    source: Callable[[int, torch.Generator], tuple[Tensor, Tensor]],
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    schedule: Callable[[int], float],
    micro_batch: int | None,
    seed: int,
    desc: str,
    progress: bool = False,
    device: str | torch.device = "cpu",
    out_dir: Path | None = None,
) -> Trainer:
    """Train on the streamed batches of ``source``: each step's batch (this rank's share) is cut
    into chunks of ``micro_batch`` (None: one pass) whose gradients add up to one update, all
    but the last chunk under DDP's ``no_sync`` (one all-reduce per step,
    ``paperzoo.engine.accumulation``). For a model without batch statistics (the Perceiver) this
    is the whole batch's gradient, a memory setting; for a batch-norm model the chunk is its
    ghost batch (``PerceiverImageNetConfig.resnet_bn_batch``). uint8 batches (the loader's) are
    normalised here, on the device."""
    from paperzoo.data.imagenet import normalize
    from paperzoo.engine.accumulation import backward_in_chunks

    def chunk_loss(m: nn.Module, part: tuple[Tensor, ...]) -> tuple[Tensor, Tensor]:
        xb, yb = part
        logits = m(normalize(xb) if xb.dtype == torch.uint8 else xb)
        return F.cross_entropy(logits, yb), (logits.argmax(1) == yb).sum()

    def step_fn(m: nn.Module, batch: tuple[Tensor, Tensor]) -> dict[str, Any]:
        optimizer.zero_grad(set_to_none=True)
        loss, correct = backward_in_chunks(m, batch, chunk_loss, micro_batch)
        optimizer.step()
        return {"loss": loss, "acc": sum(correct) / len(batch[1])}

    trainer = Trainer(
        model,
        optimizer,
        step_fn,
        config=TrainConfig(
            steps=steps,
            batch_size=1,  # the source makes the batches (its own sampler, this rank's share)
            seed=seed,
            log_every=max(1, min(50, steps)),
            progress=progress,
            desc=desc,
        ),
        lr_schedule=schedule,
        manual=True,
        device=device,
        out_dir=out_dir,
    )
    trainer.fit(source, resume=True)  # a rerun into the same --out continues
    return trainer


def imagenet_param_counts() -> tuple[int, int]:
    """Parameters of the paper's ImageNet Perceiver with and without weight sharing."""
    with torch.device("meta"):  # count without allocating 326M parameters
        n_shared = count_params(Perceiver(config=IMAGENET))
        n_unshared = count_params(Perceiver(config=replace(IMAGENET, share_weights=False)))
    return n_shared, n_unshared


def evaluation_share(n_images: int, n_eval: int, rank: int, world: int) -> np.ndarray:
    """The validation images rank ``rank`` of ``world`` evaluates, as indices into the
    ``n_images``: a fixed shuffled order (seed 0, so that the first ``n_eval`` images of a capped
    run span the classes) cut to its first ``n_eval`` images and dealt out round-robin. The
    shares of the ranks are disjoint, their sizes differ by at most one, and together they are
    those ``n_eval`` images, each once."""
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not one of {world} ranks")
    return np.random.default_rng(0).permutation(n_images)[:n_eval][rank::world]


@torch.no_grad()
def count_top1(
    models: Mapping[str, nn.Module],
    batches: Iterable[tuple[Tensor, Tensor]],
    *,
    device: str | torch.device,
    micro_batch: int,
    invariance: int,
    pair: tuple[str, str] = ("perceiver_raster", "perceiver_permuted"),
) -> tuple[dict[str, int], int, float]:
    """Top-1 counts of ``models`` (eval mode, on ``device``) on this rank's ``batches``, summed
    over the ranks of the process group: (correct images per model, images, max |logit
    difference| between the two models of ``pair`` on each rank's first ``invariance`` images,
    maximised over the ranks).

    Each batch (uint8 images, normalised on the device) runs in chunks of ``micro_batch`` under
    the run's precision (bf16 autocast under ``--precision bf16``, as in training; logits cast to
    float32). The invariance is an exact property: the pair's forwards on its images run again
    in float32 (``engine.precision.exact_comparison``), whatever the run's precision. The counts
    add up on the device and are read once, after the all-reduce.
    """
    from paperzoo.data.imagenet import normalize

    keys = list(models)
    correct = torch.zeros(len(keys), dtype=torch.int64, device=device)
    worst = torch.zeros((), device=device)
    n_seen = 0  # on the host too: the batch sizes are known there
    for x, y in batches:
        for start in range(0, len(y), micro_batch):
            xb = normalize(to_device(x[start : start + micro_batch], device))
            yb = to_device(y[start : start + micro_batch], device)
            with num_precision.autocast_forward():
                logits = [num_precision.to_float32(models[k](xb)) for k in keys]
            correct += torch.stack([(out.argmax(1) == yb).sum() for out in logits])
            if n_seen < invariance:
                k = min(len(yb), invariance - n_seen)
                with num_precision.exact_comparison():
                    diff = (models[pair[0]](xb[:k]) - models[pair[1]](xb[:k])).abs().max()
                worst = torch.maximum(worst, diff)
            n_seen += len(yb)
    totals = torch.cat([correct, correct.new_tensor([n_seen])])  # + this rank's images
    if current().enabled:  # one sum and one max over the ranks, on a device the group serves
        totals, worst = totals.to(collective_device()), worst.to(collective_device())
        dist.all_reduce(totals)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    *values, max_diff = torch.cat([totals.double(), worst.double().view(1)]).tolist()
    counts = [round(v) for v in values]
    return dict(zip(keys, counts[:-1], strict=True)), counts[-1], max_diff
