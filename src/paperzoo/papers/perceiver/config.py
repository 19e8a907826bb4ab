"""The Perceiver reproduction's configurations per scale and its claims: ``Config`` (the digit
variant: smoke, quick, and full with ``--dataset`` naming a digit set), ``PerceiverImageNetConfig``
(the paper's ImageNet experiment, the full scale), ``CONFIGS`` and ``CLAIMS``.

Protocol, the choices where the paper is silent, and how the values were chosen: docs/perceiver.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from paperzoo.experiments.base import ClaimSpec, check_selection_run
from paperzoo.models.perceiver import IMAGENET, MNIST_SMALL, PerceiverConfig

DIGIT_MODELS = (
    "perceiver_raster", "perceiver_permuted", "perceiver_permuted_raster_pos",
    "convnet_raster", "convnet_permuted", "mlp_raster", "mlp_permuted",
)  # fmt: skip


@dataclass(frozen=True)
class Config:
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
    convnet: str = "resnet"  # "resnet" (the CIFAR ResNet above) | "small_cnn" (the fields below)
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
DIGITS_FULL = Config(
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
    digits: Config = DIGITS_FULL  # the variant run by --dataset mnist5k/mnist/...

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
    "smoke": Config(
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
    "quick": Config(
        perceiver=MNIST_SMALL,
        # the smallest of 2,800 / 5,600 whose worst validation seed (100-103) reaches 0.955;
        # about 10 CPU-minutes a seed
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
    # A reported check: the paper compares with no MLP. Both models are blind to pixel
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
# pixels and positions (training a second one would compute the same function: see the package
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
