"""Colour shapes: a small procedural data set in the spirit of 3dshapes (Burgess & Kim, 2018).

3dshapes renders a 3-D room with six factors: floor hue 10, wall hue 10, object hue 10, scale 8,
shape 4 (cube, cylinder, sphere, capsule), orientation 15 (camera azimuth -30..30 degrees). This
renderer keeps the same six factors and grid in a flat 2-D scene:

* wall (upper part) and floor (lower part), each in its hue; the horizon tilts with the
  orientation and the room's corner (a shaded wall half) moves sideways with it;
* one object in the middle of the floor: square (cube), upright rectangle with round top
  (cylinder), disc (sphere) or horizontal pill (capsule), in its hue (darkened by 0.8, so it
  stays visible on a floor of the same hue) and scaled by ``scale``.

Every point of the 10 x 10 x 10 x 8 x 4 x 15 = 480,000-point grid gives a distinct RGB image
(pixel-exactness against 3dshapes is not a goal; it is a second, colourful ground-truth data set
with a different factor structure from dSprites).
"""

from __future__ import annotations

import colorsys
import math
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from paperzoo.data.base import DATASETS, DataError, Split
from paperzoo.data.ground_truth import GROUND_TRUTH, GroundTruthData, ground_truth_split

HUES = np.linspace(0.0, 0.9, 10)
SCALES = np.linspace(0.75, 1.25, 8)
ORIENTATIONS = np.linspace(-30.0, 30.0, 15)  # degrees
_PALETTE = np.array([colorsys.hsv_to_rgb(h, 0.85, 0.9) for h in HUES], dtype=np.float32)  # (10, 3)
_CHUNK = 2048


class ColorShapes(GroundTruthData):
    """Factors (floor hue 10, wall hue 10, object hue 10, scale 8, shape 4, orientation 15).

    Args:
        image_size: side of the square RGB images (64 as in 3dshapes).
    """

    name = "color-shapes"
    factor_names = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
    factor_sizes = (10, 10, 10, 8, 4, 15)

    def __init__(self, *, image_size: int = 64) -> None:
        self.image_size = image_size
        self.observation_shape = (3, image_size, image_size)

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        f = self.check_factors(factors)
        n, s = len(f), self.image_size
        out = torch.empty(n, 3, s, s)
        c = (torch.arange(s, dtype=torch.float32) + 0.5) / s  # pixel centres in [0, 1]
        xs, ys = c.view(1, 1, -1), c.view(1, -1, 1)  # (1, 1, W), (1, H, 1)
        palette = torch.from_numpy(_PALETTE)
        for a in range(0, n, _CHUNK):
            fc = f[a : a + _CHUNK]
            m = len(fc)
            theta = torch.as_tensor(np.deg2rad(ORIENTATIONS[fc[:, 5]]), dtype=torch.float32).view(
                -1, 1, 1
            )
            # Horizon through (0.5, 0.45) with slope tan(theta / 2); the corner moves with theta.
            horizon = 0.45 + (xs - 0.5) * torch.tan(theta / 2)  # (m, 1, W)
            wall = ys < horizon  # (m, H, W)
            corner = 0.5 + theta / math.radians(60.0) * 0.4  # (m, 1, 1) in [0.1, 0.9]
            shade = torch.where(wall & (xs < corner), 0.75, 1.0)  # left wall half in shadow
            floor_rgb = palette[fc[:, 0]].view(m, 3, 1, 1)
            wall_rgb = palette[fc[:, 1]].view(m, 3, 1, 1)
            img = torch.where(wall.unsqueeze(1), wall_rgb, floor_rgb) * shade.unsqueeze(1)
            # The object, centred at (0.5, 0.68), half-size 0.14 * scale.
            h = torch.as_tensor(0.14 * SCALES[fc[:, 3]], dtype=torch.float32).view(-1, 1, 1)
            u, v = (xs - 0.5) / h, (ys - 0.68) / h  # (m, 1, W), (m, H, 1)
            obj = torch.zeros(m, s, s, dtype=torch.bool)
            shape = torch.as_tensor(fc[:, 4])
            for kind in range(4):
                idx = torch.nonzero(shape == kind).flatten()
                if len(idx):
                    obj[idx] = _object(kind, u[idx], v[idx])
            obj_rgb = (
                palette[fc[:, 2]].view(m, 3, 1, 1) * 0.8
            )  # darker: visible on a same-hue floor
            out[a : a + m] = torch.where(obj.unsqueeze(1), obj_rgb, img)
        return out


def _object(kind: int, u: Tensor, v: Tensor) -> Tensor:
    """Inside test of object ``kind`` at object-frame points (u, v) (units of the half-size)."""
    if kind == 0:  # cube: square
        return (u.abs() <= 0.85) & (v.abs() <= 0.85)
    if kind == 1:  # cylinder: upright rectangle with an elliptic top
        body = (u.abs() <= 0.6) & (v.abs() <= 1.0)
        top = u.square() / 0.36 + (v + 1.0).square() / 0.09 <= 1.0
        return body | top
    if kind == 2:  # sphere: disc
        return u.square() + v.square() <= 1.0
    # capsule: horizontal pill
    core = (u.abs() <= 0.6) & (v.abs() <= 0.5)
    caps = (u.abs() - 0.6).square() + v.square() <= 0.25
    return core | caps


@GROUND_TRUTH.register("color-shapes")
def color_shapes(
    *, data_root: Path | None = None, download: bool = False, image_size: int = 64
) -> GroundTruthData:
    """The procedural colour-shapes scenes (generated; no files)."""
    if download:
        raise DataError("color-shapes is generated; there is nothing to download")
    if data_root is not None:
        raise DataError(
            "color-shapes is generated (a stand-in for 3dshapes, whose files paperzoo does not "
            "read): drop --data-root, or use --dataset dsprites / abstract-dsprites with it"
        )
    return ColorShapes(image_size=image_size)


@DATASETS.register("color-shapes")
def color_shapes_split(
    *, data_root: Path | None = None, download: bool = False, seed: int = 0
) -> Split:
    """A classification view: 20,000 / 5,000 sampled scenes labelled by object shape."""
    return ground_truth_split(ColorShapes(), n_train=20000, n_test=5000, seed=seed, label_factor=4)
