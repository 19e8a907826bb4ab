"""Deep residual networks and their plain twins.

He, Zhang, Ren, Sun, "Deep Residual Learning for Image Recognition", CVPR 2016
(arXiv:1512.03385).

* ``CifarResNet``: the 6n+2-layer CIFAR nets of §4.2 (conv3x3-16, three stages of 2n 3x3 convs
  with 16/32/64 filters on 32/16/8 maps, global average pool, FC), registered as
  ``resnet20/32/44/56/110/1202`` and the shortcut-free ``plain20/32/44/56/110``.
* ``ResNet``: the ImageNet nets of Table 1 (7x7/2 stem + 3x3/2 max-pool, four stages of
  BasicBlocks or Bottlenecks), registered as ``resnet18/34/50/101/152`` and ``plain18/34``.

Residual unit, Eq. 1 / Eq. 2 (§3.2):  y = F(x, {W_i}) + x   or   y = F(x, {W_i}) + W_s x,
followed by ReLU. Shortcut options (§3.3 / §4.1):

* ``"A"``: identity; where the shape changes, stride-2 subsampling plus zero-padded extra
  channels (parameter-free; the paper's CIFAR choice).
* ``"B"``: identity, and a 1x1 projection (+BN) only where the shape changes (the paper's
  ImageNet choice for 50/101/152).
* ``"C"``: 1x1 projections (+BN) on every shortcut.

Initialisation: He et al. 2015 ("Delving deep into rectifiers"), zero-mean Gaussian with
std = sqrt(2 / n), n = k*k*out_channels (fan-out, as in fb.resnet.torch and torchvision); BN
gamma 1 and beta 0; FC bias 0.

Deviations from the paper:

* Bottleneck blocks put the stride on the 3x3 conv by default (the "v1.5" layout of torchvision,
  whose 4.1 G multiply-adds for ResNet-50 the issue quotes); ``stride_in_1x1=True`` gives the
  paper's original layout (stride on the first 1x1 conv, 3.8-3.9 G).
* ``stem="small"`` (3x3/1 conv, no max-pool) for small images is our addition; the default
  ImageNet stem also works on any input size (e.g. 28x28x1) thanks to the adaptive pooling.
* ``zero_init_residual`` (Goyal et al. 2017) is an option, off by default as in the paper.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.models.registry import MODELS

Shortcut = Literal["A", "B", "C"]
NormLayer = Callable[[int], nn.Module]


def _conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False)


class PadShortcut(nn.Module):
    """Option A: identity with stride subsampling and zero-padded extra channels (no params).

    Shapes:
        x: (B, C_in, H, W) -> (B, C_out, ceil(H / stride), ceil(W / stride))
    """

    def __init__(self, *, in_channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        if out_channels < in_channels:
            raise ValueError(
                f"option A cannot reduce channels ({in_channels} -> {out_channels}); use B or C"
            )
        self.extra = out_channels - in_channels
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        if self.stride > 1:
            x = x[:, :, :: self.stride, :: self.stride]  # (B, C_in, H/s, W/s)
        if self.extra:
            x = F.pad(x, (0, 0, 0, 0, 0, self.extra))  # (B, C_out, H/s, W/s), new channels zero
        return x


def make_shortcut(
    *, in_channels: int, out_channels: int, stride: int, option: Shortcut, norm_layer: NormLayer
) -> nn.Module:
    """The shortcut ``W_s x`` of Eq. 2 for the given option (``nn.Identity`` when none is needed)."""
    if option not in ("A", "B", "C"):
        raise ValueError(f"shortcut option must be 'A', 'B' or 'C', got {option!r}")
    changes = stride != 1 or in_channels != out_channels
    if option == "C" or (option == "B" and changes):
        return nn.Sequential(
            _conv1x1(in_channels, out_channels, stride), norm_layer(out_channels)
        )  # Eq. 2: W_s x as a 1x1 projection
    if option == "A" and changes:
        return PadShortcut(in_channels=in_channels, out_channels=out_channels, stride=stride)
    return nn.Identity()  # Eq. 1: y = F(x) + x


class BasicBlock(nn.Module):
    """Two 3x3 convs (Fig. 2 left / Fig. 5 left); ``residual=False`` makes the plain twin.

    Args:
        in_channels: input channels.
        channels: output channels.
        stride: stride of the first conv (2 at the start of a down-sampling stage).
        shortcut: option "A", "B" or "C" (ignored by plain blocks, which have none).
        residual: add the shortcut (ResNet) or not (plain net).
        norm_layer: normalisation constructor (BatchNorm2d by default).

    Shapes:
        x: (B, in_channels, H, W) -> (B, channels, H / stride, W / stride)
    """

    expansion = 1

    def __init__(
        self,
        *,
        in_channels: int,
        channels: int,
        stride: int = 1,
        shortcut: Shortcut = "B",
        residual: bool = True,
        norm_layer: NormLayer = nn.BatchNorm2d,
    ) -> None:
        super().__init__()
        self.conv1 = _conv3x3(in_channels, channels, stride)
        self.bn1 = norm_layer(channels)
        self.conv2 = _conv3x3(channels, channels)
        self.bn2 = norm_layer(channels)
        self.relu = nn.ReLU(inplace=True)
        self.residual = residual
        self.shortcut: nn.Module | None = (
            make_shortcut(
                in_channels=in_channels,
                out_channels=channels,
                stride=stride,
                option=shortcut,
                norm_layer=norm_layer,
            )
            if residual
            else None
        )

    @property
    def last_norm(self) -> nn.Module:
        """The normalisation closing the residual branch F (zeroed by ``zero_init_residual``)."""
        return self.bn2

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))  # F(x)
        if self.shortcut is not None:
            out = out + self.shortcut(x)  # Eq. 1/2: y = F(x) + W_s x
        return self.relu(out)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3, 1x1 expand (x4) (Fig. 5 right); ``residual=False`` makes a plain twin.

    Args:
        in_channels: input channels.
        channels: bottleneck width; the block outputs ``4 * channels``.
        stride: spatial stride of the block.
        shortcut: option "A", "B" or "C".
        residual: add the shortcut or not.
        norm_layer: normalisation constructor.
        stride_in_1x1: put the stride on the first 1x1 conv (the paper) instead of the 3x3
            (torchvision's "v1.5", the default).

    Shapes:
        x: (B, in_channels, H, W) -> (B, 4 * channels, H / stride, W / stride)
    """

    expansion = 4

    def __init__(
        self,
        *,
        in_channels: int,
        channels: int,
        stride: int = 1,
        shortcut: Shortcut = "B",
        residual: bool = True,
        norm_layer: NormLayer = nn.BatchNorm2d,
        stride_in_1x1: bool = False,
    ) -> None:
        super().__init__()
        out_channels = channels * self.expansion
        s1, s3 = (stride, 1) if stride_in_1x1 else (1, stride)
        self.conv1 = _conv1x1(in_channels, channels, s1)
        self.bn1 = norm_layer(channels)
        self.conv2 = _conv3x3(channels, channels, s3)
        self.bn2 = norm_layer(channels)
        self.conv3 = _conv1x1(channels, out_channels)
        self.bn3 = norm_layer(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.residual = residual
        self.shortcut: nn.Module | None = (
            make_shortcut(
                in_channels=in_channels,
                out_channels=out_channels,
                stride=stride,
                option=shortcut,
                norm_layer=norm_layer,
            )
            if residual
            else None
        )

    @property
    def last_norm(self) -> nn.Module:
        return self.bn3

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))  # F(x)
        if self.shortcut is not None:
            out = out + self.shortcut(x)  # Eq. 1/2
        return self.relu(out)


Block = type[BasicBlock] | type[Bottleneck]


def init_weights(model: nn.Module, *, zero_init_residual: bool = False) -> None:
    """He initialisation of every conv, unit BN, zero biases (see the module docstring).

    Args:
        model: a network built from ``BasicBlock`` / ``Bottleneck``.
        zero_init_residual: start every residual branch at zero (last norm's gamma = 0), so each
            residual block begins as the identity.
    """
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            # He et al. 2015, Eq. 14 (backward case): std = sqrt(2 / (k^2 * out_channels))
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d | nn.GroupNorm):
            if m.weight is not None:
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
    if zero_init_residual:
        for m in model.modules():
            if isinstance(m, BasicBlock | Bottleneck) and m.residual:
                norm = m.last_norm
                if getattr(norm, "weight", None) is not None:
                    nn.init.zeros_(norm.weight)


class CifarResNet(nn.Module):
    """The 6n+2-layer CIFAR network of §4.2 (ResNet or, with ``residual=False``, plain).

    Args:
        depth: 6n + 2 (20, 32, 44, 56, 110, 1202, ...).
        num_classes: outputs of the final FC layer.
        in_chans: input channels (3 for CIFAR, 1 for MNIST-like data).
        shortcut: option "A" (the paper's CIFAR choice), "B" or "C".
        residual: ResNet (True) or its plain twin without shortcuts (False).
        base_width: filters of the first stage (16); the stages use 1x, 2x, 4x.
        zero_init_residual: start every residual branch at zero.
        norm_layer: normalisation constructor (default ``nn.BatchNorm2d``).

    Shapes:
        x: (B, in_chans, H, W), any H, W (32x32 in the paper) -> (B, num_classes)
    """

    def __init__(
        self,
        *,
        depth: int,
        num_classes: int = 10,
        in_chans: int = 3,
        shortcut: Shortcut = "A",
        residual: bool = True,
        base_width: int = 16,
        zero_init_residual: bool = False,
        norm_layer: NormLayer | None = None,
    ) -> None:
        super().__init__()
        if depth < 8 or (depth - 2) % 6:
            raise ValueError(f"CIFAR ResNet depth must be 6n+2 with n >= 1, got {depth}")
        norm_layer = norm_layer or nn.BatchNorm2d
        n = (depth - 2) // 6
        self.depth, self.residual = depth, residual
        widths = (base_width, 2 * base_width, 4 * base_width)
        self.stem = nn.Sequential(
            _conv3x3(in_chans, widths[0]), norm_layer(widths[0]), nn.ReLU(inplace=True)
        )
        stages: list[nn.Module] = []
        cin = widths[0]
        for i, w in enumerate(widths):
            blocks = []
            for j in range(n):
                stride = 2 if (i > 0 and j == 0) else 1  # subsampling by stride-2 convs
                blocks.append(
                    BasicBlock(
                        in_channels=cin,
                        channels=w,
                        stride=stride,
                        shortcut=shortcut,
                        residual=residual,
                        norm_layer=norm_layer,
                    )
                )
                cin = w
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(widths[-1], num_classes)
        init_weights(self, zero_init_residual=zero_init_residual)

    def forward_features(self, x: Tensor) -> Tensor:
        """Pooled features. Shapes: (B, C, H, W) -> (B, 4 * base_width)."""
        x = self.stages(self.stem(x))  # (B, 4w, H/4, W/4)
        return self.pool(x).flatten(1)  # (B, 4w)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.forward_features(x))

    def forward_from_stem_conv(self, h: Tensor) -> Tensor:
        """Logits from the output ``h`` of the stem's convolution (``stem[0]``): the rest of
        ``forward``, for callers that compute that convolution themselves."""
        return self.fc(self.pool(self.stages(self.stem[1:](h))).flatten(1))


class ResNet(nn.Module):
    """The ImageNet networks of Table 1 (ResNet or, with ``residual=False``, plain).

    Args:
        block: ``BasicBlock`` (18/34) or ``Bottleneck`` (50/101/152).
        layers: blocks per stage, e.g. (3, 4, 6, 3).
        num_classes: outputs of the final FC layer.
        in_chans: input channels.
        shortcut: option "A", "B" (the paper's default) or "C".
        residual: ResNet (True) or plain net (False).
        zero_init_residual: start every residual branch at zero.
        stem: "imagenet" (7x7/2 conv + 3x3/2 max-pool) or "small" (3x3/1 conv, no pool) for
            small images such as 28x28 or 32x32.
        stride_in_1x1: Bottleneck stride on the first 1x1 (paper) instead of the 3x3 (v1.5).
        norm_layer: normalisation constructor (default ``nn.BatchNorm2d``).

    Shapes:
        x: (B, in_chans, H, W), any H, W (224x224 in the paper) -> (B, num_classes)
    """

    def __init__(
        self,
        *,
        block: Block,
        layers: Sequence[int],
        num_classes: int = 1000,
        in_chans: int = 3,
        shortcut: Shortcut = "B",
        residual: bool = True,
        zero_init_residual: bool = False,
        stem: Literal["imagenet", "small"] = "imagenet",
        stride_in_1x1: bool = False,
        norm_layer: NormLayer | None = None,
    ) -> None:
        super().__init__()
        if len(layers) != 4 or min(layers) < 1:
            raise ValueError(f"layers must be four positive block counts, got {tuple(layers)}")
        if stem not in ("imagenet", "small"):
            raise ValueError(f"stem must be 'imagenet' or 'small', got {stem!r}")
        norm_layer = norm_layer or nn.BatchNorm2d
        self.residual = residual
        if stem == "imagenet":
            self.stem = nn.Sequential(
                nn.Conv2d(in_chans, 64, kernel_size=7, stride=2, padding=3, bias=False),
                norm_layer(64),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
            )  # (B, 64, H/4, W/4)
        else:
            self.stem = nn.Sequential(
                _conv3x3(in_chans, 64), norm_layer(64), nn.ReLU(inplace=True)
            )  # (B, 64, H, W)
        extra = {"stride_in_1x1": stride_in_1x1} if block is Bottleneck else {}
        stages: list[nn.Module] = []
        cin = 64
        for i, (width, count) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
            blocks = []
            for j in range(count):
                blocks.append(
                    block(
                        in_channels=cin,
                        channels=width,
                        stride=2 if (i > 0 and j == 0) else 1,
                        shortcut=shortcut,
                        residual=residual,
                        norm_layer=norm_layer,
                        **extra,
                    )
                )
                cin = width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)
        init_weights(self, zero_init_residual=zero_init_residual)

    def forward_features(self, x: Tensor) -> Tensor:
        """Pooled features. Shapes: (B, C, H, W) -> (B, 512 * expansion)."""
        return self.pool(self.stages(self.stem(x))).flatten(1)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.forward_features(x))

    def forward_from_stem_conv(self, h: Tensor) -> Tensor:
        """Logits from the output ``h`` of the stem's convolution (``stem[0]``): the rest of
        ``forward``, for callers that compute that convolution themselves."""
        return self.fc(self.pool(self.stages(self.stem[1:](h))).flatten(1))


# -- torchvision weights ------------------------------------------------------------------------

_TV_BLOCK = re.compile(r"layer([1-4])\.(\d+)\.(.+)")


def torchvision_key(key: str) -> str:
    """Our parameter name for a torchvision ResNet state-dict key.

    ``conv1`` / ``bn1`` -> ``stem.0`` / ``stem.1``; ``layerI.J.X`` -> ``stages.(I-1).J.X`` with a
    block's ``downsample.0`` / ``downsample.1`` -> ``shortcut.0`` / ``shortcut.1``; ``fc``
    unchanged. A ``module.`` prefix (DataParallel) is dropped.
    """
    key = key.removeprefix("module.")
    head, _, rest = key.partition(".")
    if head == "conv1":
        return f"stem.0.{rest}"
    if head == "bn1":
        return f"stem.1.{rest}"
    m = _TV_BLOCK.fullmatch(key)
    if m:
        stage, block, rest = int(m.group(1)) - 1, m.group(2), m.group(3)
        rest = re.sub(r"^downsample\.", "shortcut.", rest)
        return f"stages.{stage}.{block}.{rest}"
    return key


def load_torchvision_state_dict(
    model: ResNet, state_dict: Mapping[str, Tensor], *, strict: bool = True
) -> Any:
    """Load a torchvision ResNet's weights (``torchvision.models.resnet50().state_dict()``
    layout) into ``model``, mapping the names with ``torchvision_key``.

    ``model`` must have torchvision's architecture: ``ResNet`` with the ImageNet stem, shortcut
    option "B" (projections only where the shape changes: torchvision's ``downsample``) and the
    stride on the 3x3 convolution (``stride_in_1x1=False``, torchvision's "v1.5"), e.g.
    ``create_model("resnet50")``; the block counts and ``num_classes`` must match the weights.
    A key that maps to no parameter of ``model``, or a parameter left without a key, is refused
    (``strict=True``, as ``nn.Module.load_state_dict``) naming both spellings. Returns
    ``load_state_dict``'s result.
    """
    if not isinstance(model, ResNet):
        raise TypeError(
            f"torchvision's ResNet layout fits paperzoo's ResNet, not {type(model).__name__}"
        )
    conv = model.stem[0]
    if not isinstance(conv, nn.Conv2d) or conv.kernel_size != (7, 7):
        raise ValueError("torchvision's ResNets have the ImageNet stem: build with stem='imagenet'")
    mapped = {torchvision_key(k): v for k, v in state_dict.items()}
    ours = model.state_dict()
    if strict:
        unknown = [k for k in state_dict if torchvision_key(k) not in ours]
        missing = [k for k in ours if k not in mapped]
        if unknown or missing:
            raise ValueError(
                "torchvision state dict does not fit this ResNet: "
                + (f"keys without a parameter here {[(k, torchvision_key(k)) for k in unknown[:5]]}"
                   if unknown else "")
                + ("; " if unknown and missing else "")
                + (f"parameters without a key {missing[:5]}" if missing else "")
                + " (shortcut option 'B' and the block counts of the weights are needed)"
            )  # fmt: skip
    return model.load_state_dict(mapped, strict=strict)


# -- registered variants -----------------------------------------------------------------------

CIFAR_DEPTHS = (20, 32, 44, 56, 110, 1202)
CIFAR_PLAIN_DEPTHS = (20, 32, 44, 56, 110)
IMAGENET_LAYERS: dict[int, tuple[Block, tuple[int, int, int, int]]] = {
    18: (BasicBlock, (2, 2, 2, 2)),
    34: (BasicBlock, (3, 4, 6, 3)),
    50: (Bottleneck, (3, 4, 6, 3)),
    101: (Bottleneck, (3, 4, 23, 3)),
    152: (Bottleneck, (3, 8, 36, 3)),
}


def _cifar(depth: int, residual: bool, kw: dict[str, object]) -> CifarResNet:
    return CifarResNet(depth=depth, residual=residual, **kw)  # type: ignore[arg-type]


def _imagenet(depth: int, residual: bool, kw: dict[str, object]) -> ResNet:
    block, layers = IMAGENET_LAYERS[depth]
    return ResNet(block=block, layers=layers, residual=residual, **kw)  # type: ignore[arg-type]


# CIFAR-10 nets of §4.2 / Table 6 (keyword arguments: see ``CifarResNet``).
@MODELS.register("resnet20")
def resnet20(**kw: object) -> CifarResNet:
    return _cifar(20, True, kw)


@MODELS.register("resnet32")
def resnet32(**kw: object) -> CifarResNet:
    return _cifar(32, True, kw)


@MODELS.register("resnet44")
def resnet44(**kw: object) -> CifarResNet:
    return _cifar(44, True, kw)


@MODELS.register("resnet56")
def resnet56(**kw: object) -> CifarResNet:
    return _cifar(56, True, kw)


@MODELS.register("resnet110")
def resnet110(**kw: object) -> CifarResNet:
    return _cifar(110, True, kw)


@MODELS.register("resnet1202")
def resnet1202(**kw: object) -> CifarResNet:
    return _cifar(1202, True, kw)


@MODELS.register("plain20")
def plain20(**kw: object) -> CifarResNet:
    return _cifar(20, False, kw)


@MODELS.register("plain32")
def plain32(**kw: object) -> CifarResNet:
    return _cifar(32, False, kw)


@MODELS.register("plain44")
def plain44(**kw: object) -> CifarResNet:
    return _cifar(44, False, kw)


@MODELS.register("plain56")
def plain56(**kw: object) -> CifarResNet:
    return _cifar(56, False, kw)


@MODELS.register("plain110")
def plain110(**kw: object) -> CifarResNet:
    return _cifar(110, False, kw)


# ImageNet nets of Table 1 (keyword arguments: see ``ResNet``).
@MODELS.register("resnet18")
def resnet18(**kw: object) -> ResNet:
    return _imagenet(18, True, kw)


@MODELS.register("resnet34")
def resnet34(**kw: object) -> ResNet:
    return _imagenet(34, True, kw)


@MODELS.register("resnet50")
def resnet50(**kw: object) -> ResNet:
    return _imagenet(50, True, kw)


@MODELS.register("resnet101")
def resnet101(**kw: object) -> ResNet:
    return _imagenet(101, True, kw)


@MODELS.register("resnet152")
def resnet152(**kw: object) -> ResNet:
    return _imagenet(152, True, kw)


@MODELS.register("plain18")
def plain18(**kw: object) -> ResNet:
    return _imagenet(18, False, kw)


@MODELS.register("plain34")
def plain34(**kw: object) -> ResNet:
    return _imagenet(34, False, kw)
