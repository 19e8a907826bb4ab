"""The CIFAR-10 wide ResNet of Madry et al.'s ``cifar10_challenge`` (``model.py``), the network
Athalye, Carlini & Wagner (ICML 2018) attack on CIFAR-10: Madry et al.'s adversarially trained
model, Buckman et al.'s thermometer-encoded model (``obfuscated-gradients/thermometer/
cifar_model.py`` with ``tiny=False``, 16 levels: 48 input channels) and the naturally trained
model SAP is inserted into (``sap/robustml_model.py``: ``SAPModel(..., tiny=False)``).

The architecture, read from ``cifar10_challenge/model.py`` (itself the "w28-10" variant of the
TensorFlow model repository's ResNet; the README calls it "w32-10"):

    # x -> per_image_standardization -> conv3x3(in, 16)
    #   -> 3 stages of 5 pre-activation residual units, widths 160 / 320 / 640, strides 1 / 2 / 2
    #   -> BN -> leaky ReLU(0.1) -> global average pool -> FC(640, 10)
    # unit:  a = lrelu(BN(x));  h = conv3x3(a, stride);  h = conv3x3(lrelu(BN(h)), 1)
    #        shortcut = a (first unit of stage 1: "activate_before_residual") or x;
    #        where widths differ: avg-pool(stride) then zero channels padded on both sides
    #        out = h + shortcut

Details kept from the TensorFlow code: ``tf.image.per_image_standardization`` (mean and
population std over the whole image, std floored at 1/sqrt(N)); leaky ReLU slope 0.1; batch
norm with decay 0.9 (PyTorch momentum 0.1) and epsilon 0.001 (``tf.contrib.layers.batch_norm``'s
default); conv kernels ~ N(0, 2 / (k * k * out)); the FC weight uniform in +-sqrt(3 / fan_in)
(``uniform_unit_scaling_initializer(1.0)``), zero bias; no conv bias; ``SAME`` padding, which for
a stride-2 3x3 convolution on an even side pads one pixel at the bottom/right only. One
addition: the shortcut's average pool keeps the last, partial window of an odd side (ceil mode),
so that the network also takes Xie et al.'s 35 x 35 canvas (TensorFlow's VALID pool would give
17 rows where the SAME convolution gives 18: the original cannot take odd sides; on even sides
the two agree). Weight decay
applies to the kernels named ``DW`` only (convolutions and the FC weight): see
``decay_parameters``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["MadryResNet", "decay_parameters", "madry_sgd", "per_image_standardization"]


def per_image_standardization(x: Tensor) -> Tensor:
    """``tf.image.per_image_standardization``: (x - mean) / max(std, 1 / sqrt(N)) per image.

    Shapes:
        x: (B, C, H, W) -> (B, C, H, W)
    """
    n = x[0].numel()
    flat = x.flatten(1)
    mean = flat.mean(1)
    std = flat.std(1, unbiased=False).clamp_min(1.0 / math.sqrt(n))
    return (x - mean.view(-1, 1, 1, 1)) / std.view(-1, 1, 1, 1)


def _conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    conv = nn.Conv2d(
        cin, cout, 3, stride=stride, padding=0, bias=False
    )  # padding done as TF's SAME (below)
    nn.init.normal_(conv.weight, 0.0, math.sqrt(2.0 / (3 * 3 * cout)))
    return conv


def _same(x: Tensor, stride: int) -> Tensor:
    """TF's SAME padding for a 3x3 kernel: 1 on each side at stride 1; at stride 2 on an even
    side, 0 before and 1 after (total (ceil(n / s) - 1) * s + 3 - n, the odd pixel at the end)."""
    if stride == 1:
        return F.pad(x, (1, 1, 1, 1))
    h, w = x.shape[-2:]
    ph = max((math.ceil(h / stride) - 1) * stride + 3 - h, 0)
    pw = max((math.ceil(w / stride) - 1) * stride + 3 - w, 0)
    return F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2))


def _bn(c: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c, momentum=0.1, eps=1e-3)  # TF decay 0.9, epsilon 0.001


class _Unit(nn.Module):
    """One residual unit of ``model.py``'s ``_residual`` (two 3x3 convolutions, pre-activation)."""

    def __init__(self, cin: int, cout: int, stride: int, activate_before: bool, leak: float):
        super().__init__()
        self.cin, self.cout, self.stride = cin, cout, stride
        self.activate_before = activate_before
        self.bn1, self.act1 = _bn(cin), nn.LeakyReLU(leak)
        self.conv1 = _conv3x3(cin, cout, stride)
        self.bn2, self.act2 = _bn(cout), nn.LeakyReLU(leak)
        self.conv2 = _conv3x3(cout, cout)

    def forward(self, x: Tensor) -> Tensor:
        a = self.act1(self.bn1(x))
        shortcut = a if self.activate_before else x
        h = self.conv1(_same(a, self.stride))
        h = self.conv2(_same(self.act2(self.bn2(h)), 1))
        if self.cin != self.cout:  # avg-pool (ksize = stride), then zero channels on both sides
            if self.stride > 1:  # ceil mode: an odd side keeps its last, partial window
                shortcut = F.avg_pool2d(shortcut, self.stride, self.stride, ceil_mode=True)
            pad = (self.cout - self.cin) // 2
            shortcut = F.pad(shortcut, (0, 0, 0, 0, pad, pad))
        return h + shortcut


class MadryResNet(nn.Module):
    """Madry et al.'s CIFAR-10 wide ResNet (``cifar10_challenge/model.py``).

    Args:
        in_chans: input channels (3; 3 * levels behind a thermometer code, as Buckman et al.).
        num_classes: output logits.
        filters: the widths ``[16, 160, 320, 640]`` of ``model.py`` (``[16, 16, 32, 64]`` is its
            "non-wide version"; smaller ones for tests).
        units: residual units per stage (5 in ``model.py``).
        leak: the slope of the leaky ReLU (0.1).

    Shapes:
        x: (B, in_chans, H, W) in [0, 1] (any scale: the input is standardised per image)
        -> (B, num_classes)
    """

    def __init__(
        self,
        *,
        in_chans: int = 3,
        num_classes: int = 10,
        filters: tuple[int, int, int, int] = (16, 160, 320, 640),
        units: int = 5,
        leak: float = 0.1,
    ) -> None:
        super().__init__()
        if len(filters) != 4 or any(f < 1 for f in filters):
            raise ValueError(f"filters must be four positive widths, got {filters}")
        if units < 1:
            raise ValueError(f"units must be >= 1, got {units}")
        a, b, c, d = filters
        # The shortcut changes shape only where the widths differ (model.py), so the two
        # stride-2 stages must widen; every widening is split evenly over both sides.
        if not (b >= a and c > b and d > c) or any(
            (q - p) % 2 for p, q in ((a, b), (b, c), (c, d))
        ):
            raise ValueError(
                "filters must widen by even steps, strictly at the two stride-2 stages "
                f"(zero-padded shortcuts), got {filters}"
            )
        self.init_conv = _conv3x3(in_chans, filters[0])
        stages = []
        for s, stride in enumerate((1, 2, 2)):
            cin, cout = filters[s], filters[s + 1]
            blocks = [_Unit(cin, cout, stride, activate_before=(s == 0), leak=leak)]
            blocks += [_Unit(cout, cout, 1, False, leak) for _ in range(units - 1)]
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.final_bn, self.final_act = _bn(filters[3]), nn.LeakyReLU(leak)
        self.fc = nn.Linear(filters[3], num_classes)
        bound = math.sqrt(3.0 / filters[3])  # uniform_unit_scaling_initializer(factor=1.0)
        nn.init.uniform_(self.fc.weight, -bound, bound)
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: Tensor) -> Tensor:
        h = self.init_conv(_same(per_image_standardization(x), 1))
        h = self.stages(h)
        h = self.final_act(self.final_bn(h))
        return self.fc(h.mean(dim=(2, 3)))  # global average pool: (B, C)


def decay_parameters(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(weights that get weight decay, the rest): ``model.py``'s ``_decay`` sums the l2 loss of
    the variables named ``DW`` only, i.e. convolution kernels and fully connected weights (not
    batch-norm scales and shifts, not biases)."""
    decay, rest = [], []
    for m in model.modules():
        for name, p in m.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            is_kernel = isinstance(m, nn.Conv2d | nn.Linear) and name == "weight"
            (decay if is_kernel else rest).append(p)
    return decay, rest


def madry_sgd(
    model: nn.Module, *, lr: float, momentum: float, weight_decay: float
) -> torch.optim.SGD:
    """``cifar10_challenge/train.py``'s optimiser: momentum SGD on ``mean_xent + weight_decay *
    sum(l2_loss(DW))``; the gradient of ``weight_decay * ||w||^2 / 2`` is ``weight_decay * w``, so
    this is SGD's ``weight_decay`` on the kernels and none on the rest. TensorFlow's momentum
    update (v = m v + g; w -= lr v) is PyTorch's SGD with dampening 0."""
    decay, rest = decay_parameters(model)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]
    return torch.optim.SGD(groups, lr=lr, momentum=momentum)
