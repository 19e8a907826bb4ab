"""The Not-so-Clevr networks of Liu et al. (2018), "An intriguing failing of convolutional neural
networks and the CoordConv solution" (arXiv:1807.03247), as built by the authors' model builders
(github.com/uber-research/CoordConv, ``model_builders.py``).

* ``CoordConvPainter`` (Sec. 4.1, 4.3): coordinates (i, j) tiled to a 64x64x2 map, AddCoords,
  then 1x1 convolutions 32-32-64-64-1 with ReLU (7,553 parameters): one logit per pixel. Used
  for supervised coordinate classification (softmax over all pixels) and for rendering (a
  sigmoid per pixel).
* ``DeconvPainter`` (Sec. 4.1, the conventional baseline): (i, j) as a 1x1x2 input, then six
  stride-2 3x3 transposed convolutions 64-64-64-32-32-1 (1x1 -> 64x64), batch norm + ReLU after
  all but the last, He-normal weights.
* ``CoordConvRegressor`` (Sec. 4.2): one-hot image -> AddCoords -> three 1x1 convolutions of 8
  channels -> a 3x3 convolution of 8 -> a 3x3 convolution of 2 -> global max pool over the
  64x64 map -> (i, j). As in the authors' builder there is no nonlinearity between the
  convolutions: the max pool is the only one. ``CoordConvRegressor(add_coords=False)`` is its
  convolutional twin (the same network without the coordinate channels).
* ``ConvRegressor`` (Sec. 4.2, the authors' conventional baseline for the quadrant split): strided
  convolutions with ReLU and two batch norms down to a 2x2x2 map, ReLU, global average pool.

Deviations from the authors' code, none of which changes an architecture: input coordinates are
scaled to [-1, 1] (the authors fed pixel indices to the painters); the CoordConv painter keeps
PyTorch's default initialisation (its seed-to-seed behaviour in docs/coordconv.md was measured
with it), the other three use He-normal weights and zero biases as the authors did; stride-2
(transposed) convolutions pad symmetrically (``padding=k // 2``, plus ``output_padding=1`` for
the transposed ones) where TensorFlow's ``'same'`` pads one pixel more on one side (same output
sizes, kernel taps aligned differently by one pixel).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.models.registry import MODELS
from paperzoo.nn.coord import AddCoords


def _check_coords(c: Tensor) -> None:
    if c.dim() != 2 or c.shape[1] != 2:
        raise ValueError(f"expected coordinates of shape (B, 2), got {tuple(c.shape)}")


def he_normal_(module: nn.Module) -> None:
    """He-normal weights (std sqrt(2 / fan_in); the authors' Keras ``he_normal`` truncates the
    normal, PyTorch's does not) for every (transposed) convolution, zero biases, as in the
    authors' builders. For a transposed convolution PyTorch's and TensorFlow's
    fan-in both count ``out_channels * k * k``."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d | nn.ConvTranspose2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class CoordConvPainter(nn.Module):
    """(i, j) -> one logit per pixel, through AddCoords and 1x1 convolutions.

    The 1x1 convolutions run on a channels-last map with in-place ReLUs (the same arithmetic;
    measured on one CPU thread, about half the time per training step of channels-first).

    Args:
        size: output height and width.
        hidden: channels of the 1x1 convolutions (paper: 32, 32, 64, 64).
        with_r: add the radius channel.

    Shapes:
        coords: (B, 2) in [-1, 1] -> (B, 1, size, size) logits
    """

    def __init__(
        self, *, size: int = 64, hidden: Sequence[int] = (32, 32, 64, 64), with_r: bool = False
    ) -> None:
        super().__init__()
        self.size = size
        self.add_coords = AddCoords(with_r=with_r)
        layers: list[nn.Module] = []
        width = 2 + self.add_coords.extra_channels
        for h in hidden:
            layers += [nn.Conv2d(width, h, 1), nn.ReLU(inplace=True)]
            width = h
        layers.append(nn.Conv2d(width, 1, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, coords: Tensor) -> Tensor:
        _check_coords(coords)
        tiled = coords[:, :, None, None].expand(-1, -1, self.size, self.size)  # (B, 2, S, S)
        h = self.add_coords(tiled).contiguous(memory_format=torch.channels_last)  # (B, 4, S, S)
        return self.net(h).contiguous()  # (B, 1, S, S)


class DeconvPainter(nn.Module):
    """(i, j) as a 1x1x2 map -> stride-2 3x3 transposed convolutions -> (1, size, size) logits.

    The authors' ``DeconvPainter``: each transposed convolution doubles the side (1 -> 2 -> ... ->
    64 for six layers); batch norm (momentum 0.1 in PyTorch's convention, TensorFlow's 0.9) and
    ReLU follow all but the last.

    Args:
        size: output height and width, ``2 ** (len(channels) + 1)``.
        channels: output channels of all but the last transposed convolution (paper: 64, 64, 64,
            32, 32; the last has 1).
        kernel_size: side of the transposed-convolution kernels (paper: 3).

    Shapes:
        coords: (B, 2) -> (B, 1, size, size)
    """

    def __init__(
        self,
        *,
        size: int = 64,
        channels: Sequence[int] = (64, 64, 64, 32, 32),
        kernel_size: int = 3,
    ) -> None:
        super().__init__()
        if size != 2 ** (len(channels) + 1):
            raise ValueError(
                f"size {size} must be 2 ** (len(channels) + 1) = {2 ** (len(channels) + 1)}"
            )
        if kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd, got {kernel_size}")

        def up(cin: int, cout: int) -> nn.ConvTranspose2d:  # doubles height and width
            pad = kernel_size // 2
            return nn.ConvTranspose2d(
                cin, cout, kernel_size, stride=2, padding=pad, output_padding=1
            )

        layers: list[nn.Module] = []
        width = 2
        for c in channels:
            layers += [up(width, c), nn.BatchNorm2d(c, momentum=0.1, eps=1e-5), nn.ReLU()]
            width = c
        layers.append(up(width, 1))
        self.net = nn.Sequential(*layers)
        he_normal_(self)

    def forward(self, coords: Tensor) -> Tensor:
        _check_coords(coords)
        return self.net(coords[:, :, None, None])  # (B, 2, 1, 1) -> (B, 1, size, size)


class CoordConvRegressor(nn.Module):
    """One-hot image -> AddCoords -> 1x1 and 3x3 convolutions -> global max pool -> (i, j).

    The authors' ``coordconv_model``: 1x1 convolutions 8-8-8, a 3x3 convolution of 8 and one of
    2 (``'same'`` padding), no nonlinearity between them, then the maximum over all pixels of
    each of the two output maps. A solution: a map that is large on the hot pixel and adds the
    pixel's own coordinate, so that the maximum sits on the hot pixel and reads its (i, j).

    Args:
        hidden: channels of the 1x1 convolutions (paper: 8, 8, 8).
        conv3: channels of the first 3x3 convolution (paper: 8).
        add_coords: append the coordinate channels; ``False`` gives the convolutional twin, whose
            output cannot depend on where the hot pixel is (a translation-equivariant map
            followed by a global max).
        with_r: add the radius channel.

    Shapes:
        x: (B, 1, H, W) -> (B, 2)
    """

    def __init__(
        self,
        *,
        hidden: Sequence[int] = (8, 8, 8),
        conv3: int = 8,
        add_coords: bool = True,
        with_r: bool = False,
    ) -> None:
        super().__init__()
        self.add_coords = AddCoords(with_r=with_r) if add_coords else None
        width = 1 + (self.add_coords.extra_channels if self.add_coords is not None else 0)
        layers: list[nn.Module] = []
        for h in hidden:
            layers.append(nn.Conv2d(width, h, 1))
            width = h
        layers += [nn.Conv2d(width, conv3, 3, padding=1), nn.Conv2d(conv3, 2, 3, padding=1)]
        self.net = nn.Sequential(*layers)
        he_normal_(self)

    def maps_layer_by_layer(self, x: Tensor) -> Tensor:
        """``maps`` computed layer by layer, as the authors' graph does (the reference for
        ``maps``). (B, 1, H, W) -> (B, 2, H, W)"""
        if self.add_coords is not None:
            x = self.add_coords(x)  # (B, 1 + 2 (+1), H, W)
        x = x.contiguous(memory_format=torch.channels_last)  # faster convolutions on a CPU
        return self.net(x)

    def maps(self, x: Tensor) -> Tensor:
        """The two output maps before the global max pool. (B, 1, H, W) -> (B, 2, H, W)

        The same function as ``maps_layer_by_layer`` (equal up to float rounding, and so are the
        gradients), computed with fewer, larger operations where it is exact. Every layer is
        affine (no activation) and a zero-padded convolution is linear in its input map, so

            maps(x) = L(x) + maps(0),

        where ``maps(0)`` (the coordinate channels and the biases, the same for every image) is
        computed once per call, and L is the bias-free part that reads the image channel: the
        three 1x1 convolutions collapse into a vector ``a`` (their product restricted to the
        image channel) and the two 3x3 convolutions into one 5x5 kernel,
        K5[d] = sum_{q + r = d} W_out[:, :, q] (W_3 a)[:, r]. The composite kernel equals the two
        zero-padded 3x3 convolutions wherever the image's outer one-pixel frame is zero (no
        image pixel then reaches an intermediate position outside the map), which holds for
        every Not-so-Clevr image (hot pixels at least 4 pixels from the edge); any other input
        takes ``maps_layer_by_layer``. Measured at one CPU thread, batch 256: about 0.11 s per
        training step instead of 0.47 s. Off the CPU every input takes ``maps_layer_by_layer``:
        choosing would read the frame back from the device in every forward.
        """
        if x.device.type != "cpu":
            return self.maps_layer_by_layer(x)
        frame = torch.cat([x[..., 0, :], x[..., -1, :], x[..., :, 0], x[..., :, -1]], -1)
        if bool(frame.any()):
            return self.maps_layer_by_layer(x)
        *ones, conv3, conv_out = self.net  # the 1x1 convolutions, then the two 3x3
        assert isinstance(conv3, nn.Conv2d) and isinstance(conv_out, nn.Conv2d)
        a = ones[0].weight[:, 0, 0, 0]  # (C1,): the first 1x1 convolution's image column
        for layer in ones[1:]:
            assert isinstance(layer, nn.Conv2d)
            a = layer.weight[:, :, 0, 0] @ a  # (C_next,)
        k3 = torch.einsum("oikl,i->okl", conv3.weight, a)  # (C3, 3, 3): conv3 of (a x)
        k5 = x.new_zeros(conv_out.out_channels, 5, 5)
        for di in range(3):
            for dj in range(3):  # the output conv's tap (di, dj) shifts conv3's kernel
                tap = torch.einsum("ok,kab->oab", conv_out.weight[:, :, di, dj], k3)
                k5 = k5 + F.pad(tap, (dj, 2 - dj, di, 2 - di))  # (2, 5, 5)
        lin = F.conv2d(x, k5[:, None], padding=2)  # (B, 2, H, W): L(x)
        return lin + self.maps_layer_by_layer(torch.zeros_like(x[:1]))  # + maps(0), (1, 2, H, W)

    def forward(self, x: Tensor) -> Tensor:
        return self.maps(x).amax(dim=(2, 3))  # (B, 2, H, W) -> (B, 2): global max pool


class ConvRegressor(nn.Module):
    """One-hot image -> strided convolutions -> (2, 2, 2) map -> ReLU -> global average -> (i, j).

    The authors' conventional regressor for the quadrant split (``big_conv2`` with ``mul=1``):
    5x5/2 conv, 1x1 conv, batch norm, 3x3 conv, 3x3/2 conv, 3x3/2 conv + batch norm, 3x3/2 conv,
    1x1 conv, 3x3/2 conv (16 channels each, ReLU after each), a 3x3 conv to 2 channels, ReLU and
    the mean over the 2x2 map. Its outputs are non-negative: targets in [0, 1] (the authors'
    normalised locations, pixel / 64).

    Shapes:
        x: (B, 1, 64, 64) -> (B, 2)
    """

    def __init__(self, *, width: int = 16) -> None:
        super().__init__()
        w = width

        def conv(cin: int, cout: int, k: int, stride: int = 1) -> nn.Conv2d:
            return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2)

        def bn() -> nn.BatchNorm2d:
            return nn.BatchNorm2d(w, momentum=0.1, eps=1e-5)

        relu = nn.ReLU
        self.net = nn.Sequential(
            conv(1, w, 5, 2), relu(),  # 64 -> 32
            conv(w, w, 1), relu(),
            bn(),
            conv(w, w, 3), relu(),
            conv(w, w, 3, 2), relu(),  # -> 16
            conv(w, w, 3, 2), bn(), relu(),  # -> 8
            conv(w, w, 3, 2), relu(),  # -> 4
            conv(w, w, 1), relu(),
            conv(w, w, 3, 2), relu(),  # -> 2
            conv(w, 2, 3), relu(),
        )  # fmt: skip
        he_normal_(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).mean(dim=(2, 3))  # (B, 2, 2, 2) -> (B, 2): global average pool


@MODELS.register("coordconv_painter")
def coordconv_painter(**kw: object) -> CoordConvPainter:
    return CoordConvPainter(**kw)  # type: ignore[arg-type]


@MODELS.register("deconv_painter")
def deconv_painter(**kw: object) -> DeconvPainter:
    return DeconvPainter(**kw)  # type: ignore[arg-type]


@MODELS.register("coordconv_regressor")
def coordconv_regressor(**kw: object) -> CoordConvRegressor:
    return CoordConvRegressor(**kw)  # type: ignore[arg-type]


@MODELS.register("conv_regressor")
def conv_regressor(**kw: object) -> ConvRegressor:
    return ConvRegressor(**kw)  # type: ignore[arg-type]
