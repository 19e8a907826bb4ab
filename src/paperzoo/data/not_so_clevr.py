"""Not-so-Clevr (Liu et al., 2018, Sec. 4): one 9x9 square on a 64x64 canvas.

The square's centre (ci, cj) takes every position that keeps the square inside the canvas:
rows and columns 4..59, i.e. 56 x 56 = 3,136 examples. Two splits:

* ``uniform``: a seeded random 80 / 20 split of the centres (2,509 / 627), or, with
  ``protocol="authors"``, the authors' own split (2,368 training / 768 test centres, the same for
  every seed; ``authors_uniform_test_mask``);
* ``quadrant``: the centres with both coordinates > 32 (27 x 27 = 729) are held out for testing,
  the other 2,407 are for training -- the test set lies in a region never seen in training (the
  authors' split too).

Per example we provide the centre as pixel coordinates, as coordinates scaled to [-1, 1] (the
scale of ``paperzoo.nn.coord.coord_grid``), the one-hot centre image and the rendered square.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

CANVAS = 64  # canvas height and width
SQUARE = 9  # side of the square
HALF = SQUARE // 2
QUADRANT_THRESHOLD = 32  # held-out quadrant: both centre coordinates > 32
# The authors' uniform split (uber-research/CoordConv, data/not_so_clevr_generator.py): numpy's
# global generator seeded with 20202 (``MAGIC_SEED_OF_WONDER``), then one ``np.random.random()``
# per centre, in the generator's sweep order, sends the centre to the test ("val") file when it is
# below 0.25 (``random_split(pct=0.25)``); 768 test centres, as train.py's shape comments say.
AUTHORS_UNIFORM_SEED = 20202
AUTHORS_UNIFORM_TEST_SHARE = 0.25
SPLIT_PROTOCOLS = ("seeded", "authors")


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


def authors_uniform_test_mask(canvas: int = CANVAS, square: int = SQUARE) -> Tensor:
    """Which centres the authors' uniform split holds out for testing, over ``all_centres()``.

    The authors' ``objectsweep_generator`` sweeps ``x`` (the column: their one-hot is
    ``field[y, x]``) in the outer loop and ``y`` (the row) in the inner loop, over
    ``range(4, 60)``; ``random_split`` draws ``np.random.random() < 0.25`` once per centre in that
    order after ``np.random.seed(20202)``. Our centres are (row, col), row-major, so the draws are
    transposed back into our order. Reproduced with numpy's legacy ``RandomState`` (the same
    Mersenne Twister stream as ``np.random.seed`` + ``np.random.random``).

    Shapes:
        -> (N,) bool over ``all_centres(canvas, square)``
    """
    side = canvas - 2 * (square // 2)
    draws = np.random.RandomState(AUTHORS_UNIFORM_SEED).random_sample(side * side)
    by_col_row = torch.from_numpy(draws < AUTHORS_UNIFORM_TEST_SHARE).view(side, side)
    return by_col_row.t().reshape(-1)  # (col, row) sweep -> our row-major (row, col)


@dataclass(frozen=True)
class NotSoClevrSplit:
    """Centres of one split; images are rendered on demand by the helpers above."""

    name: str  # "uniform" or "quadrant"
    train: Tensor  # (N_train, 2) int64 pixel centres
    test: Tensor  # (N_test, 2)


def make_split(
    kind: str, *, generator: torch.Generator | None = None, protocol: str = "seeded"
) -> NotSoClevrSplit:
    """The ``uniform`` or ``quadrant`` (held-out bottom-right) split.

    Args:
        kind: ``"uniform"`` or ``"quadrant"``.
        generator: draws the seeded uniform split (``protocol="seeded"``); unused otherwise.
        protocol: ``"seeded"`` (the uniform split a seeded random 80 / 20) or ``"authors"`` (the
            authors' fixed uniform split, 2,368 / 768). The quadrant split is the same for both.

    Returns:
        The split's training and test centres.
    """
    if protocol not in SPLIT_PROTOCOLS:
        raise ValueError(f"unknown split protocol {protocol!r}; choose one of {SPLIT_PROTOCOLS}")
    centres = all_centres()
    if kind == "quadrant":
        held_out = (centres[:, 0] > QUADRANT_THRESHOLD) & (centres[:, 1] > QUADRANT_THRESHOLD)
        return NotSoClevrSplit("quadrant", centres[~held_out], centres[held_out])
    if kind == "uniform" and protocol == "authors":
        test = authors_uniform_test_mask()
        return NotSoClevrSplit("uniform", centres[~test], centres[test])
    if kind == "uniform":
        perm = torch.randperm(len(centres), generator=generator)
        n_train = int(round(0.8 * len(centres)))
        return NotSoClevrSplit("uniform", centres[perm[:n_train]], centres[perm[n_train:]])
    raise ValueError(f"unknown Not-so-Clevr split {kind!r}; choose 'uniform' or 'quadrant'")
