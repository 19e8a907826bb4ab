"""Not-so-Clevr (Liu et al., 2018, Sec. 4): one 9x9 square on a 64x64 canvas.

The square's centre (ci, cj) takes every position that keeps the square inside the canvas:
rows and columns 4..59, i.e. 56 x 56 = 3,136 examples. Two splits:

* ``uniform``: a seeded random 80 / 20 split of the centres;
* ``quadrant``: the centres with both coordinates > 32 (27 x 27 = 729) are held out for testing,
  the other 2,407 are for training -- the test set lies in a region never seen in training.

Per example we provide the centre as pixel coordinates, as coordinates scaled to [-1, 1] (the
scale of ``paperzoo.nn.coord.coord_grid``), the one-hot centre image and the rendered square.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

CANVAS = 64  # canvas height and width
SQUARE = 9  # side of the square
HALF = SQUARE // 2
QUADRANT_THRESHOLD = 32  # held-out quadrant: both centre coordinates > 32


def all_centres(canvas: int = CANVAS, square: int = SQUARE) -> Tensor:
    """Every admissible centre, row-major.

    Shapes:
        -> (N, 2) int64 with N = (canvas - square + 1) ** 2 (3,136 for 64 / 9)
    """
    half = square // 2
    r = torch.arange(half, canvas - half)
    ci, cj = torch.meshgrid(r, r, indexing="ij")
    return torch.stack([ci.flatten(), cj.flatten()], dim=1)


def scale_coords(centres: Tensor, canvas: int = CANVAS) -> Tensor:
    """Pixel coordinates -> [-1, 1] (``2 * p / (canvas - 1) - 1``), as float32. (N, 2) -> (N, 2)."""
    return centres.float() * (2.0 / (canvas - 1)) - 1.0


def unscale_coords(coords: Tensor, canvas: int = CANVAS) -> Tensor:
    """Inverse of ``scale_coords`` (float pixel coordinates)."""
    return (coords + 1.0) * ((canvas - 1) / 2.0)


def onehot_images(centres: Tensor, canvas: int = CANVAS) -> Tensor:
    """Images with a single 1 at each centre. (N, 2) -> (N, 1, canvas, canvas)."""
    n = len(centres)
    img = torch.zeros(n, canvas * canvas)
    img[torch.arange(n), centres[:, 0] * canvas + centres[:, 1]] = 1.0
    return img.view(n, 1, canvas, canvas)


def square_images(centres: Tensor, canvas: int = CANVAS, square: int = SQUARE) -> Tensor:
    """The rendered squares: pixel (p, q) is 1 iff |p - ci| <= half and |q - cj| <= half.

    Shapes:
        (N, 2) -> (N, 1, canvas, canvas)
    """
    half = square // 2
    p = torch.arange(canvas)
    rows = (p.view(1, -1) - centres[:, :1]).abs() <= half  # (N, canvas)
    cols = (p.view(1, -1) - centres[:, 1:]).abs() <= half  # (N, canvas)
    return (rows.unsqueeze(2) & cols.unsqueeze(1)).float().unsqueeze(1)


@dataclass(frozen=True)
class NotSoClevrSplit:
    """Centres of one split; images are rendered on demand by the helpers above."""

    name: str  # "uniform" or "quadrant"
    train: Tensor  # (N_train, 2) int64 pixel centres
    test: Tensor  # (N_test, 2)


def make_split(kind: str, *, generator: torch.Generator | None = None) -> NotSoClevrSplit:
    """The ``uniform`` (seeded 80/20) or ``quadrant`` (held-out bottom-right) split."""
    centres = all_centres()
    if kind == "quadrant":
        held_out = (centres[:, 0] > QUADRANT_THRESHOLD) & (centres[:, 1] > QUADRANT_THRESHOLD)
        return NotSoClevrSplit("quadrant", centres[~held_out], centres[held_out])
    if kind == "uniform":
        perm = torch.randperm(len(centres), generator=generator)
        n_train = int(round(0.8 * len(centres)))
        return NotSoClevrSplit("uniform", centres[perm[:n_train]], centres[perm[n_train:]])
    raise ValueError(f"unknown Not-so-Clevr split {kind!r}; choose 'uniform' or 'quadrant'")
