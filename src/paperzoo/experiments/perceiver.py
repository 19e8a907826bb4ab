"""Reproduction of the Perceiver's ImageNet and permuted-ImageNet results (Jaegle et al., 2021,
arXiv:2103.03206, Sec. 4.1, Tab. 1-2).

**Full scale: the paper's experiment** (``--scale full --data-root DIR``, ImageNet in
``DIR/imagenet/{train,val}/<wnid>/``, ``paperzoo.data.imagenet``). Three models are trained, and
evaluated by top-1 accuracy on the 50,000 validation images:

* the paper's ImageNet Perceiver (``IMAGENET``: 224 x 224 RGB pixels + 64-band Fourier features
  with maximum resolution 224, 261 channels; a 512 x 1024 latent array; 8 cross-attends with one
  head, weights shared after the first; a 6-block latent Transformer with 8 heads shared by all
  repeats; 44.9M parameters) on raster-ordered pixels. It is evaluated twice: on raster pixels,
  and on pixels under one fixed random permutation, applied after the crop and after the
  position features are built, so the positions travel with the pixels (Sec. 4.1, "Permuted
  ImageNet"). The paper trains a second Perceiver on the permuted pixels; this run does not:
  with the positions permuted with the pixels, that Perceiver would see the same set of
  (pixel, position) tokens as the raster one, from the same initialisation and the same crops,
  and attention sums over its inputs, so it would compute the raster Perceiver's function up to
  float summation order (the paper reports 78.0 % for both). Its claim is therefore a check,
  measured on the raster-trained model, which halves the cost of the run;
* a ResNet-50 fed RGB + the same Fourier features as image channels ("ResNet-50 (FF)", Tab. 1-2)
  trained on raster and on permuted pixels (the permutation moves the position channels with
  the pixels, as in the paper).

Training, from the paper: Inception-style crops to 224 x 224 and RandAugment; LAMB (You et al.,
2020; ``paperzoo.optim.Lamb``); 120 epochs; learning rate 0.004, divided by 10 at epochs 84, 102
and 114; no dropout. The project's choices where the paper is silent (each marked in
``PerceiverImageNetConfig`` and docs/perceiver.md): batch 1024, LAMB weight decay 0.1 on weight
matrices (biases and normalisation scales: no decay, no trust ratio), LAMB betas (0.9, 0.999) and
eps 1e-6, no warm-up, RandAugment N = 2 and M = 9, the horizontal flip, pixel normalisation
with the ImageNet mean and std, evaluation on the central 224 crop of the image resized to 256,
and the ResNet-50 (FF)'s whole training recipe (SGD with momentum 0.9, lr 0.4 = 0.1 x
batch / 256 after a 5-epoch warm-up, the Perceiver's step decays, weight decay 1e-4, the same
augmentation and 120 epochs; Tab. 1 calls it "our implementation of the baselines" and gives
nothing else).

Batches: the Perceiver computes each rank's share of the batch of 1024 in micro-batches
(``micro_batch``) whose gradients are summed, the same update within one GPU's memory (it has no
batch statistics: LayerNorm normalises each example). The ResNet's batch norm normalises over
ghost batches of ``resnet_bn_batch`` = 32 images of the rank's share (None: the whole share in one
pass), following Goyal et al. (2017, Sec. 2.3), whose large-batch recipe the baseline uses and who
keep batch norm's per-worker batch at n = 32 for every total batch; the statistics then do not
depend on the number of GPUs. Under torchrun the gradients of the micro- or ghost batches are
all-reduced once per step (``DistributedDataParallel.no_sync`` on the others,
``paperzoo.engine.accumulation``). JPEGs are decoded in DataLoader worker processes
(``workers`` per rank, ``prefetch`` batches ahead, pinned memory on CUDA) and moved as uint8
pixels, normalised on the device.

**The digit variant** (any scale with ``--dataset mnist5k|mnist|fashion-mnist``; the default at
smoke and quick, 5,000 embedded digits): the same protocol on 28 x 28 digits with seven small
models, targets on orderings only, not the paper's numbers:

* a Perceiver on raster-ordered pixels, and one on permuted pixels with the positions permuted
  jointly: the architecture has no 2-D prior, so the two match;
* the same Perceiver on permuted pixels with positions left in raster order: the spatial
  information is destroyed for it too, and it drops;
* a ConvNet trained the same way on raster and on permuted pixels: it drops. Like the paper's
  ResNet-50 it is a residual network ending in global average pooling (a CIFAR ResNet-8 of
  ``paperzoo.models.resnet``), so its features are local;
* an MLP on both (permutation-invariant by construction, like the Perceiver; the paper has no
  MLP, so the comparison with it is a reported check);
* the parameter counts of the paper's ImageNet Perceiver with and without weight sharing.

Every digit model gets the same optimiser (AdamW, linear warm-up then cosine decay), batch size,
augmentation and number of steps (only the raster-positions Perceiver, a reported check, may get
fewer: ``raster_pos_steps``). Deviations of the digit variant from the paper: digits instead of
ImageNet, a small Perceiver and a small ConvNet instead of the 45M-parameter Perceiver and a
ResNet-50, AdamW instead of LAMB, one-pixel random translations instead of the paper's ImageNet
augmentation. At full scale it runs only when named with ``--dataset`` (the 60,000-digit config,
``PerceiverImageNetConfig.digits``), and is then marked "not the paper's setting".
"""

from __future__ import annotations

import logging
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
from paperzoo.data.imagenet import IMAGENET_TRAIN_SIZE, count_images
from paperzoo.data.splits import validation_split
from paperzoo.engine import TrainConfig, Trainer, seeded, step_decay, warmup_cosine
from paperzoo.experiments.base import (
    EXPERIMENTS,
    ClaimSpec,
    Experiment,
    NotRun,
    Outcome,
    RunContext,
    check_selection_run,
)
from paperzoo.metrics.classification import predict
from paperzoo.models.perceiver import IMAGENET, MNIST_SMALL, Perceiver, PerceiverConfig
from paperzoo.models.resnet import CifarResNet
from paperzoo.models.small import MLP, SmallCNN
from paperzoo.utils import count_params

log = logging.getLogger(__name__)


DIGIT_MODELS = (
    "perceiver_raster", "perceiver_permuted", "perceiver_permuted_raster_pos",
    "convnet_raster", "convnet_permuted", "mlp_raster", "mlp_permuted",
)  # fmt: skip


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
    convnet: str = (
        "resnet"  # "resnet" (CIFAR ResNet above) | "small_cnn" (the baseline before f983d36)
    )
    cnn_channels: tuple[int, int] = (16, 32)  # small_cnn: conv widths
    cnn_hidden: int = 128  # small_cnn: hidden FC width
    # Selection runs (validation seeds): hold out n_val training digits (stratified) and evaluate
    # on them instead of the test digits, which are then never read; None: the test digits.
    n_val: int | None = None
    models: tuple[str, ...] | None = None  # train only these of the seven (None: all)

    def __post_init__(self) -> None:
        if self.convnet not in ("resnet", "small_cnn"):
            raise ValueError(f"convnet must be 'resnet' or 'small_cnn', got {self.convnet!r}")
        check_selection_run(self.models, DIGIT_MODELS, self.n_val)


# The 60,000-digit configuration: a larger digit Perceiver, a CIFAR ResNet-20 as the ConvNet.
# Not the paper's setting (the paper trains on ImageNet); it runs at full scale only when a digit
# set is named with --dataset, with the quick scale's ordering targets.
DIGITS_FULL = PerceiverExperimentConfig(
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
)


@dataclass(frozen=True)
class PerceiverImageNetConfig:
    """The full scale: the paper's ImageNet experiment (Sec. 4.1, Tab. 2), plus the 60,000-digit
    variant that runs instead when ``--dataset`` names a digit set (not the paper's setting).

    "Paper" marks what Sec. 4.1 / App. C state; "choice" what the paper leaves open.
    """

    perceiver: PerceiverConfig  # paper: the ImageNet model (IMAGENET); input/classes from data
    epochs: int = 120  # paper
    batch_size: int = 1024  # choice (the paper's ablations used 64 and 256, "smaller")
    # The Perceiver's examples per forward/backward (gradients summed to the batch): memory only,
    # since it has no batch statistics (LayerNorm is per example). Also the evaluation's chunk.
    micro_batch: int = 16
    lr: float = 4e-3  # paper: LAMB's initial learning rate
    lr_decay_epochs: tuple[int, ...] = (84, 102, 114)  # paper
    lr_decay_factor: float = 0.1  # paper: "decaying it by a factor of 10"
    weight_decay: float = 0.1  # choice (LAMB's decoupled decay; the paper gives none)
    lamb_betas: tuple[float, float] = (0.9, 0.999)  # choice (You et al.'s defaults)
    lamb_eps: float = 1e-6  # choice (You et al.'s default)
    image_size: int = 224  # paper: 224 x 224 crops
    eval_resize: int = 256  # choice: evaluation resizes the shorter side to this, then crops
    crop_scale: tuple[float, float] = (0.08, 1.0)  # Inception-style crop area (Szegedy et al.)
    flip: bool = True  # choice: horizontal flips (usual with Inception crops; not listed)
    randaugment_n: int = 2  # paper uses RandAugment; N and M are a choice (Cubuk's ResNet-50)
    randaugment_m: float = 9.0
    resnet: str = "resnet50"  # paper: ResNet-50 fed RGB + Fourier features ("ResNet-50 (FF)")
    resnet_epochs: int = 120  # choice (the baseline's recipe is not given)
    resnet_lr: float = 0.4  # choice: SGD, 0.1 x batch / 256 (Goyal et al. 2017)
    resnet_warmup_epochs: int = 5  # choice: linear warm-up for the large batch (Goyal et al.)
    resnet_momentum: float = 0.9  # choice
    resnet_weight_decay: float = 1e-4  # choice (He et al. 2016)
    # The ResNet's batch-norm batch: ghost batches of this many images of each rank's share of
    # the batch (gradients summed over them, all-reduced once per step); None: the rank's whole
    # share in one pass. 32 is Goyal et al.'s (2017, Sec. 2.3: n = 32 per worker whatever the
    # total batch), the recipe the baseline's lr and warm-up come from. Memory in one pass (fp32
    # activations saved for the backward, measured: 131 MiB per 224 x 224 x 261 image): 4.1 GiB at
    # 32, 16 GiB at a share of 128 (8 GPUs), 131 GiB at 1,024 (one GPU: more than a 140 GB GPU
    # holds once weights and the backward's temporaries are added).
    resnet_bn_batch: int | None = 32
    eval_batch: int = 250  # validation images per batch (a --max-steps run evaluates N of them)
    workers: int = 16  # DataLoader worker processes decoding JPEGs, per rank (0: in-process)
    prefetch: int = 2  # batches in flight per worker
    n_train: int | None = None  # use a random subset of the training images (None: all)
    n_val: int | None = None  # use the first n validation images (None: all 50,000)
    invariance_images: int = 4  # validation images of the joint-permutation check
    invariance_atol: float = 1e-3  # its bound on the max |logit difference| (float order only)
    digits: PerceiverExperimentConfig = (
        DIGITS_FULL  # the variant run by --dataset mnist5k/mnist/...
    )

    def __post_init__(self) -> None:
        if self.micro_batch < 1 or self.batch_size < 1 or self.eval_batch < 1:
            raise ValueError("batch_size, micro_batch and eval_batch must be >= 1")
        if self.resnet_bn_batch is not None and self.resnet_bn_batch < 1:
            raise ValueError(f"resnet_bn_batch must be >= 1 or None, got {self.resnet_bn_batch}")
        if self.workers < 0 or self.prefetch < 1:
            raise ValueError("workers must be >= 0 and prefetch >= 1")
        if self.epochs < 1 or self.resnet_epochs < 1:
            raise ValueError("epochs and resnet_epochs must be >= 1")


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
        # 5,600 (was 2,800): chosen on validation seeds 100-103 (issue 31: the smallest of 2,800 /
        # 5,600 whose worst validation seed reaches 0.955; about 10 CPU-minutes a seed)
        steps=5_600,
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
    "full": PerceiverImageNetConfig(perceiver=IMAGENET),
}

# The digit claims: every scale on digits (at full only with --dataset naming a digit set, the
# 60,000-digit variant, not the paper's setting). Their targets are orderings, not the paper's
# ImageNet numbers (those are in `paper` and are the targets of the imagenet.* claims below).
DIGIT_CLAIMS = (
    ClaimSpec(
        "permuted.convnet.acc_drop",
        "A ConvNet trained the same way loses accuracy on permuted pixels: "
        "test acc (raster order) - test acc (permuted)",
        paper="ResNet-50 (FF) 73.5 -> 39.4 % (34.1)",
        target=">= 0.02",
    ),
    ClaimSpec(
        "permuted.perceiver_vs_convnet.test_acc",
        "On permuted pixels the Perceiver beats the ConvNet trained the same way: test acc of the "
        "Perceiver (positions permuted with the pixels) - test acc of the ConvNet",
        paper="ImageNet 78.0 vs 39.4 % (38.6)",
        target="> 0",
    ),
    # The paper has no digit number (ImageNet raster: 78.0 %); the full target of the digit
    # variant keeps the quick bar.
    ClaimSpec(
        "mnist.perceiver.test_acc",
        "Perceiver test accuracy on digits in raster order",
        paper="ImageNet 78.0 %",
        target=">= 0.95",
    ),
    # A reported check (issue 31): the paper compares with no MLP. Both models are blind to pixel
    # order; at the quick budget the Perceiver stays below an MLP on 4,000 digits (notes).
    ClaimSpec(
        "mnist.perceiver_vs_mlp.test_acc",
        "Test acc of the Perceiver - test acc of an MLP trained the same way on the same digits "
        "(raster order); the paper has no MLP",
        paper=None,
        target="reported",
        kind="check",
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
)

# The paper's own numbers (Tab. 2, ImageNet validation top-1): declared at full scale and
# measured by the ImageNet run. One-sided targets: beating the paper is no failure. Tolerances:
# 1 point for the Perceiver (the paper reports one run and no spread, and leaves open batch size,
# weight decay, RandAugment's N and M, pixel scaling and the evaluation crop, each of which can
# move ImageNet top-1 by tenths of a point); 5 points above 39.4 % for the permuted ResNet-50
# (FF), whose whole training recipe is the project's choice (the paper gives none): the finding
# is that it falls far below the Perceiver, and 44.4 % is still 32.6 points below the Perceiver's
# bar. The permuted Perceiver is a check: the raster-trained model evaluated on jointly permuted
# pixels and positions (training a second one would compute the same function: see the module
# docstring).
IMAGENET_CLAIMS = (
    ClaimSpec(
        "imagenet.perceiver.top1",
        "The paper's ImageNet Perceiver (FF), raster-ordered pixels: top-1 accuracy on the "
        "50,000 ImageNet validation images",
        paper=0.780,
        target=">= 0.77",
        scales=("full",),
    ),
    ClaimSpec(
        "imagenet.perceiver_permuted.top1",
        "The Perceiver on pixels under one fixed random permutation (applied after the Fourier "
        "positions are built, so they move with the pixels): top-1 of the raster-trained "
        "Perceiver on the permuted validation images. A Perceiver trained on permuted pixels "
        "sees the same (pixel, position) tokens from the same initialisation and crops, so it "
        "computes the same function up to float order: one is trained, not two",
        paper=0.780,
        target=">= 0.77",
        kind="check",
        scales=("full",),
    ),
    ClaimSpec(
        "imagenet.resnet50_permuted.top1",
        "A ResNet-50 fed RGB + the same Fourier features (ResNet-50 (FF)), trained and evaluated "
        "under the same permutation, falls far below the Perceiver: its top-1",
        paper=0.394,
        target="<= 0.444",
        scales=("full",),
    ),
    ClaimSpec(
        "imagenet.resnet50.top1",
        "ResNet-50 (FF) on raster-ordered pixels: top-1 (its training recipe is the project's "
        "choice)",
        paper=0.735,
        target="reported",
        kind="check",
        scales=("full",),
    ),
    ClaimSpec(
        "imagenet.perceiver.acc_gap",
        "|top-1 of the Perceiver on permuted pixels and positions - its top-1 on raster pixels| "
        "(the same trained model)",
        paper="78.0 vs 78.0 % (0.0)",
        target="<= 0.01",
        kind="check",
        scales=("full",),
    ),
    ClaimSpec(
        "imagenet.perceiver.invariant",
        "The raster-trained ImageNet Perceiver's logits are unchanged (max abs difference <= "
        "invariance_atol) on validation images whose pixels and positions are permuted jointly",
        paper="exact (by construction)",
        target="is true",
        kind="check",
        scales=("full",),
    ),
)

# Measured by every run (counts of the ImageNet model, built on the meta device).
PARAM_CLAIMS = (
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
        paper=326.2e6,  # Table 7: "No weight sharing ... 326.2M"
        target="reported",
        kind="check",
    ),
)

CLAIMS = DIGIT_CLAIMS + IMAGENET_CLAIMS + PARAM_CLAIMS
DIGIT_SETS = ("mnist5k", "mnist", "fashion-mnist")


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
        self.pos: Tensor | None
        self.register_buffer("pos", pos, persistent=False)  # moves with .to(device), not saved

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
        lr_schedule=warmup_cosine(cand.steps, cfg.warmup),
        device=device,
        out_dir=out_dir,
    )
    trainer.fit((x_train, y_train), resume=True)  # a rerun into the same --out continues
    return trainer


# -- ImageNet (full scale) -------------------------------------------------------------------------


class PerceiverOnImages(nn.Module):
    """A Perceiver fed image batches: pixels as a set in raster order, or under ``perm``, with
    the Fourier position features built for the raster grid and permuted with the pixels (the
    paper permutes "after position features are generated", Sec. 4.1).

    Shapes:
        x: (B, C, H, W) -> logits (B, num_classes)
    """

    def __init__(self, model: Perceiver, perm: Tensor | None = None) -> None:
        super().__init__()
        self.model = model
        with torch.no_grad():
            pos = model.position_features()  # (H * W, P), raster order
        assert pos is not None
        self.pos: Tensor
        self.perm: Tensor | None
        self.register_buffer("pos", pos if perm is None else pos[perm], persistent=False)
        self.register_buffer("perm", perm, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        xs = as_set(x)  # (B, H * W, C)
        if self.perm is not None:
            xs = xs[:, self.perm]  # input j is raster pixel perm[j], with its position row
        return self.model(xs, pos=self.pos)


class ConvNetWithPositions(nn.Module):
    """ "ResNet-50 (FF)" (Tab. 1-2): the image's channels concatenated with the same Fourier
    position features as extra image channels, then (optionally) every channel's pixels permuted
    by ``perm``, so the positions travel with the pixels as they do for the Perceiver.

    Shapes:
        x: (B, C, H, W) -> logits (B, num_classes); ``pos``: (P, H, W)
    """

    def __init__(self, convnet: nn.Module, pos: Tensor, perm: Tensor | None = None) -> None:
        super().__init__()
        self.convnet = convnet
        self.pos: Tensor
        self.perm: Tensor | None
        self.register_buffer("pos", pos, persistent=False)
        self.register_buffer("perm", perm, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        b = x.shape[0]
        x = torch.cat([x, self.pos.expand(b, -1, -1, -1).to(x.dtype)], dim=1)  # (B, C + P, H, W)
        if self.perm is not None:
            x = x.flatten(2)[:, :, self.perm].reshape(x.shape)  # pixels shuffled, channels kept
        return self.convnet(x)


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


@EXPERIMENTS.register("perceiver")
class PerceiverExperiment(Experiment):
    name = "perceiver"
    cuda_precision = "bf16"  # the reason: docs/perceiver.md, "Precision on CUDA"
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
                found = None
                if ctx.data_root is not None:  # the real count (names only), else ILSVRC2012's
                    found = count_images(Path(ctx.data_root).expanduser() / "imagenet" / "train")
                n = found or IMAGENET_TRAIN_SIZE
                n = n if cfg.n_train is None else min(n, cfg.n_train)
                b = min(cfg.batch_size, n)
                per_epoch = max(1, n // b)
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

    def _run_digits(self, cfg: PerceiverExperimentConfig, ctx: RunContext, dataset: str) -> Outcome:
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
                # + positions.
                raster_model = raster.model
                assert isinstance(raster_model, _WithPositions)
                xte = as_set(x_test)
                base = predict(raster_model, xte, device=ctx.device)
                pos = raster_model.model.position_features()
                jointly = predict(
                    _WithPositions(raster_model.model, pos[perm]), xte[:, perm], device=ctx.device
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
                f"pixels and positions: {max_diff:.2e} (float summation order only)."
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
            normalize,
            scan_image_folder,
            train_transform,
        )
        from paperzoo.engine import budget
        from paperzoo.engine.accumulation import has_batch_norm

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
        source = ImageNetTrainSource(
            train, batch_size=batch, seed=ctx.seed, transform=transform, workers=cfg.workers,
            prefetch=cfg.prefetch, pin_memory=on_cuda,
        )  # fmt: skip
        per_epoch = source.steps_per_epoch
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
        correct = dict.fromkeys(evaluated, 0)
        max_diff = 0.0
        n_seen = 0
        for m in evaluated.values():
            m.eval()
        with ctx.final_evaluation(), torch.no_grad():
            # A fixed shuffled order: the first n_eval images of a capped run span the classes.
            order = np.random.default_rng(0).permutation(len(val))
            batches = iterate_eval(
                val, batch_size=cfg.eval_batch, limit=n_eval, transform=evaluate,
                workers=cfg.workers, order=order, prefetch=cfg.prefetch, pin_memory=on_cuda,
            )  # fmt: skip
            for x, y in batches:
                for start in range(0, len(y), cfg.micro_batch):
                    xb = normalize(x[start : start + cfg.micro_batch].to(ctx.device))
                    yb = y[start : start + cfg.micro_batch].to(ctx.device)
                    logits = {key: m(xb) for key, m in evaluated.items()}
                    for key, out in logits.items():
                        correct[key] += int((out.argmax(1) == yb).sum())
                    if n_seen < cfg.invariance_images:
                        k = min(len(yb), cfg.invariance_images - n_seen)
                        diff = logits["perceiver_raster"][:k] - logits["perceiver_permuted"][:k]
                        max_diff = max(max_diff, diff.abs().max().item())
                    n_seen += len(yb)
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
            f"{max_diff:.2e} (bound {cfg.invariance_atol:g}; float summation order only).",
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


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.cost import Piece, forward, step
    from paperzoo.experiments.perceiver import (
        ConvNetWithPositions,
        PerceiverOnImages,
        imagenet_perceiver_config,
    )
    from paperzoo.models.perceiver import Perceiver
    from paperzoo.models.registry import MODELS

    s = cfg.image_size
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
        f = step(net, (cfg.micro_batch, 3, s, s)) * cfg.batch_size / cfg.micro_batch
        pieces.append(Piece(f"{name} training", f, steps))
        per = forward(net, (cfg.micro_batch, 3, s, s)) / cfg.micro_batch
        pieces.append(Piece(f"{name} evaluation", per, 50_000))
    return pieces, (
        f"ImageNet at {s} px, batch {cfg.batch_size} (counted on micro-batches of "
        f"{cfg.micro_batch}, scaled); evaluation: the 50,000 validation images once per model "
        "(the permuted check reuses the raster Perceiver); JPEG decoding and augmentation run "
        "on the CPU and are not counted"
    )
