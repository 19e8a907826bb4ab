"""The 2-D "spheres" data set of Sinha, Namkoong & Duchi (2018), Section 4.1.

Sinha, Namkoong, Duchi, "Certifying Some Distributional Robustness with Principled Adversarial
Training", ICLR 2018 (https://arxiv.org/abs/1710.10571).

Points are drawn from a standard Gaussian, x ~ N(0, I_d), and labelled by their norm,
y = 1{||x||_2 > sqrt(2)}. To open a wide margin between the classes, every point whose norm falls
in the band (sqrt(2) / 1.3, 1.3 * sqrt(2)) is removed (and replaced by a fresh draw, so exactly
``n`` points are returned). The paper uses d = 2 and n = 10^4 training points.

Registered as the data source ``"spheres"`` (10^4 training and 10^4 test points); the generator
``make_spheres`` takes any size, dimension, radius and band.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import Tensor

from paperzoo.data.base import DATASETS, DataInfo, Split
from paperzoo.engine.seeding import derive_seed

RADIUS = math.sqrt(2.0)  # the class boundary ||x|| = sqrt(2)
GAP = 1.3  # points with RADIUS / GAP < ||x|| < RADIUS * GAP are removed


def make_spheres(
    n: int,
    *,
    generator: torch.Generator,
    dim: int = 2,
    radius: float = RADIUS,
    gap: float = GAP,
) -> tuple[Tensor, Tensor]:
    """Draw ``n`` labelled points outside the band around the sphere of ``radius``.

    Args:
        n: number of points returned.
        generator: source of randomness.
        dim: input dimension.
        radius: the true class boundary ||x|| = radius.
        gap: points with radius / gap < ||x|| < radius * gap are rejected (gap = 1: no band).

    Returns:
        ``(x, y)``: x float32 (n, dim); y int64 (n,), 1 outside the sphere, 0 inside.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    if radius <= 0 or gap < 1:
        raise ValueError(f"need radius > 0 and gap >= 1, got radius={radius}, gap={gap}")
    inner, outer = radius / gap, radius * gap
    kept: list[Tensor] = []
    have = 0
    while have < n:
        # Draw in chunks; the band removes a fixed fraction, so a few rounds always suffice.
        z = torch.randn(max(2 * (n - have), 256), dim, generator=generator)
        r = z.norm(dim=1)
        z = z[(r <= inner) | (r >= outer)]
        kept.append(z)
        have += len(z)
    x = torch.cat(kept)[:n] if kept else torch.empty(0, dim)
    y = (x.norm(dim=1) > radius).long()
    return x.float(), y


@DATASETS.register("spheres")
def spheres(
    *,
    data_root: Path | None = None,
    download: bool = False,
    seed: int = 0,
    n_train: int = 10_000,
    n_test: int = 10_000,
) -> Split:
    """The paper's 2-D set: 10^4 training points and an independent test draw of ``n_test``."""
    g_train = torch.Generator().manual_seed(derive_seed(seed, "spheres", "train"))
    g_test = torch.Generator().manual_seed(derive_seed(seed, "spheres", "test"))
    xtr, ytr = make_spheres(n_train, generator=g_train)
    xte, yte = make_spheres(n_test, generator=g_test)
    info = DataInfo("spheres", "generated", len(xtr), len(xte))
    return Split(xtr, ytr, xte, yte, info=info, num_classes=2)
