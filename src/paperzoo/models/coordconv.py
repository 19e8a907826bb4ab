"""The Not-so-Clevr networks of Liu et al. (2018): CoordConv models and conventional baselines.

* ``CoordConvPainter``: coordinates (i, j) tiled to a 64x64x2 map, AddCoords, then 1x1
  convolutions 32-32-64-64-1 (7,553 parameters): one logit per pixel. Used for supervised
  coordinate classification (softmax over all pixels, Sec. 4.1) and for rendering (a sigmoid per
  pixel, Sec. 4.3).
* ``DeconvPainter``: the conventional baseline -- coordinates -> dense projection to 4x4 -> a stack
  of stride-2 transposed convolutions up to 64x64. The paper's deconv nets started from the 1x1x2
  input; we project to 4x4 with a dense layer first (as DCGAN-style generators do), which makes
  the baseline fit its training set faster on a CPU. It remains translation-equivariant from 4x4
  on, which is what makes it fail to extrapolate to an unseen quadrant.
* ``CoordConvRegressor``: one-hot image -> AddCoords -> 1x1 convolutions -> per-pixel score and
  coordinate estimate -> attention pooling over pixels: the predicted (i, j) in [-1, 1] (Sec. 4.2).
* ``ConvRegressor``: the conventional baseline -- strided 3x3 convolutions and a dense head.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from paperzoo.models.registry import MODELS
from paperzoo.nn.coord import AddCoords


def _check_coords(c: Tensor) -> None:
    if c.dim() != 2 or c.shape[1] != 2:
        raise ValueError(f"expected coordinates of shape (B, 2), got {tuple(c.shape)}")


class CoordConvPainter(nn.Module):
    """(i, j) -> one logit per pixel, through AddCoords and 1x1 convolutions.

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
            layers += [nn.Conv2d(width, h, 1), nn.ReLU()]
            width = h
        layers.append(nn.Conv2d(width, 1, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, coords: Tensor) -> Tensor:
        _check_coords(coords)
        tiled = coords[:, :, None, None].expand(-1, -1, self.size, self.size)  # (B, 2, S, S)
        return self.net(self.add_coords(tiled))


class DeconvPainter(nn.Module):
    """(i, j) -> dense -> (C, 4, 4) -> stride-2 transposed convolutions -> (1, size, size) logits.

    Shapes:
        coords: (B, 2) -> (B, 1, size, size)
    """

    def __init__(
        self, *, size: int = 64, channels: Sequence[int] = (64, 64, 32, 32), stem: int = 256
    ) -> None:
        super().__init__()
        n_up = len(channels)
        if size != 4 * 2**n_up:
            raise ValueError(f"size {size} must be 4 * 2**len(channels) = {4 * 2**n_up}")
        c0 = channels[0]
        self.stem = nn.Sequential(
            nn.Linear(2, stem), nn.ReLU(), nn.Linear(stem, c0 * 16), nn.ReLU()
        )
        layers: list[nn.Module] = []
        width = c0
        for c in channels[1:]:
            layers += [nn.ConvTranspose2d(width, c, 4, stride=2, padding=1), nn.ReLU()]
            width = c
        layers.append(nn.ConvTranspose2d(width, 1, 4, stride=2, padding=1))
        self.up = nn.Sequential(*layers)
        self.c0 = c0

    def forward(self, coords: Tensor) -> Tensor:
        _check_coords(coords)
        h = self.stem(coords).view(-1, self.c0, 4, 4)  # (B, C0, 4, 4)
        return self.up(h)


class CoordConvRegressor(nn.Module):
    """Image -> AddCoords -> 1x1 convolutions -> a score per pixel -> soft-argmax over the
    coordinate channels -> (i, j).

    The output is ``sum_p softmax(a)_p * (i, j)_p``: the attention-weighted average of the
    coordinate channels that AddCoords supplied. We tried two other read-outs and saw both
    stall: global max pooling (the gradient reaches only the current arg-max, usually a
    background pixel) and learned per-pixel values (score and values must be found together
    from a gradient diluted over 4,096 pixels; with learned offsets added to the coordinates
    it trains but extrapolates worse to the held-out quadrant).

    Shapes:
        x: (B, 1, H, W) -> (B, 2) in [-1, 1] units
    """

    def __init__(self, *, hidden: Sequence[int] = (32, 32), with_r: bool = False) -> None:
        super().__init__()
        self.add_coords = AddCoords(with_r=with_r)
        layers: list[nn.Module] = []
        width = 1 + self.add_coords.extra_channels
        for h in hidden:
            layers += [nn.Conv2d(width, h, 1), nn.ReLU()]
            width = h
        layers.append(nn.Conv2d(width, 1, 1))  # the attention score of each pixel
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        h = self.add_coords(x)  # (B, 1 + 2 (+1), H, W)
        weights = self.net(h).flatten(2).softmax(dim=2)  # (B, 1, H*W): attention over pixels
        return (weights * h[:, 1:3].flatten(2)).sum(dim=2)  # (B, 2): expected (i, j)


class ConvRegressor(nn.Module):
    """Image -> strided 3x3 convolutions -> dense -> (i, j) (the conventional baseline).

    Shapes:
        x: (B, 1, 64, 64) -> (B, 2)
    """

    def __init__(self, *, channels: Sequence[int] = (16, 32, 32, 32), size: int = 64) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = 1
        for c in channels:
            layers += [nn.Conv2d(width, c, 3, stride=2, padding=1), nn.ReLU()]
            width = c
        feat = size // 2 ** len(channels)
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(width * feat * feat, 64), nn.ReLU(), nn.Linear(64, 2)
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


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
