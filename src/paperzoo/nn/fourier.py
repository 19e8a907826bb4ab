"""Fourier position features (Jaegle et al., 2021, "Perceiver: General Perception with Iterative
Attention", arXiv:2103.03206, Sec. 2.3 "Position encodings").

Each input element at coordinate ``x`` (one value per input axis, scaled to [-1, 1]) gets the
features ``[sin(f_k pi x_d), cos(f_k pi x_d), x_d]`` for every axis ``d`` and ``K`` frequency
bands ``f_k`` spaced linearly from 1 to ``mu / 2``, where ``mu`` is the axis's maximum resolution
(its Nyquist frequency at that sampling rate). On ImageNet the paper uses ``K = 64``, ``mu = 224``.

Layout of the output channels (ours; the official code puts the raw positions first, which only
permutes channels): ``[sin(axis 0, bands 1..K), ..., sin(axis d-1, ...), cos(...), x_0..x_{d-1}]``,
so ``d * (2K + 1)`` channels for ``d`` axes (``d * (K + 1)`` with ``sine_only``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn


def linear_positions(
    index_dims: Sequence[int],
    *,
    low: float = -1.0,
    high: float = 1.0,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Coordinates of every cell of a grid, each axis spaced linearly over [low, high].

    Args:
        index_dims: the grid's shape, e.g. (H, W) for an image or (T, H, W) for a video.

    Shapes:
        -> (*index_dims, len(index_dims)); ``[..., d]`` varies along axis ``d``.
    """
    if not index_dims or any(int(n) < 1 for n in index_dims):
        raise ValueError(f"index_dims must be a non-empty sequence of sizes >= 1, got {index_dims}")
    axes = [torch.linspace(low, high, int(n), device=device, dtype=dtype) for n in index_dims]
    grid = torch.meshgrid(*axes, indexing="ij")
    return torch.stack(grid, dim=-1)


def fourier_bands(
    max_resolution: Sequence[float],
    num_bands: int,
    *,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Frequencies ``f_k`` linear from 1 to ``mu_d / 2`` for every axis ``d``.

    Shapes:
        -> (len(max_resolution), num_bands)
    """
    if num_bands < 1:
        raise ValueError(f"num_bands must be >= 1, got {num_bands}")
    return torch.stack(
        [
            torch.linspace(1.0, mu / 2.0, num_bands, device=device, dtype=dtype)
            for mu in max_resolution
        ]
    )


def fourier_features(
    pos: Tensor,
    *,
    num_bands: int,
    max_resolution: Sequence[float],
    concat_pos: bool = True,
    sine_only: bool = False,
) -> Tensor:
    """Fourier features of coordinates ``pos`` (any number of axes).

    Args:
        pos: coordinates in [-1, 1], last dimension = number of axes ``d``.
        num_bands: ``K``, bands per axis.
        max_resolution: ``mu`` per axis (the number of samples along it).
        concat_pos: append the raw coordinates ``x``.
        sine_only: only the sine phase.

    Shapes:
        pos: (..., d) -> (..., d * (2K + 1)) (fewer channels with ``sine_only``/no ``concat_pos``)
    """
    d = pos.shape[-1]
    if len(max_resolution) != d:
        raise ValueError(f"pos has {d} axes but max_resolution has {len(max_resolution)} entries")
    bands = fourier_bands(max_resolution, num_bands, device=pos.device, dtype=pos.dtype)
    # Eq. (Sec. 2.3): phase = f_k * pi * x_d for every axis d and band k.
    phase = (pos.unsqueeze(-1) * bands * math.pi).flatten(-2)  # (..., d * K), axis-major
    feats = [torch.sin(phase)] if sine_only else [torch.sin(phase), torch.cos(phase)]
    if concat_pos:
        feats.append(pos)
    return torch.cat(feats, dim=-1)


def fourier_channels(
    num_axes: int, num_bands: int, *, concat_pos: bool = True, sine_only: bool = False
) -> int:
    """Channel count of ``fourier_features`` for ``num_axes`` axes and ``num_bands`` bands."""
    return num_axes * ((1 if sine_only else 2) * num_bands + (1 if concat_pos else 0))


def grid_features(
    index_dims: Sequence[int],
    *,
    num_bands: int,
    max_resolution: Sequence[float],
    concat_pos: bool = True,
    sine_only: bool = False,
) -> Tensor:
    """Fourier features of every cell of a grid, rows in raster (C) order, float32 on the CPU.

    Shapes:
        -> (prod(index_dims), fourier_channels(len(index_dims), num_bands, ...))
    """
    grid = linear_positions(index_dims).flatten(0, -2)  # (M, d)
    return fourier_features(
        grid,
        num_bands=num_bands,
        max_resolution=max_resolution,
        concat_pos=concat_pos,
        sine_only=sine_only,
    )


class FourierPositionEncoding(nn.Module):
    """Fixed Fourier features of a grid, precomputed once (a non-persistent buffer).

    ``for_grid(dims)`` gives the features of a grid of another shape (same bands, coordinates
    spaced over [-1, 1] along the new axes), computed once per shape and device.

    Args:
        index_dims: the grid's shape, e.g. (224, 224).
        num_bands: ``K`` bands per axis.
        max_resolution: ``mu`` per axis (default: ``index_dims``).
        concat_pos: append the raw coordinates.
        sine_only: only the sine phase.

    Shapes:
        forward() -> (prod(index_dims), out_channels), rows in raster (C) order of the grid;
        forward(pos) with coordinates pos (..., d) -> (..., out_channels).
    """

    def __init__(
        self,
        *,
        index_dims: Sequence[int],
        num_bands: int,
        max_resolution: Sequence[float] | None = None,
        concat_pos: bool = True,
        sine_only: bool = False,
    ) -> None:
        super().__init__()
        self.index_dims = tuple(int(n) for n in index_dims)
        self.num_bands = num_bands
        self.max_resolution = tuple(float(m) for m in (max_resolution or self.index_dims))
        self.concat_pos = concat_pos
        self.sine_only = sine_only
        grid = linear_positions(self.index_dims).flatten(0, -2)  # (M, d)
        self.register_buffer("grid", grid, persistent=False)
        self.register_buffer("features", self.encode(grid), persistent=False)
        self._cache: dict[tuple[tuple[int, ...], torch.device], Tensor] = {}

    def for_grid(self, index_dims: Sequence[int]) -> Tensor:
        """The features of every cell of an ``index_dims`` grid, on this module's device.

        The module's own grid gives the precomputed buffer; another shape (same number of axes)
        is computed as that buffer was (float32 on the CPU, then moved) and cached per shape and
        device.

        Shapes:
            -> (prod(index_dims), out_channels)
        """
        dims = tuple(int(n) for n in index_dims)
        if dims == self.index_dims:
            return self.features
        if len(dims) != len(self.index_dims):
            raise ValueError(f"a grid of {len(self.index_dims)} axes expected, got shape {dims}")
        key = (dims, self.features.device)
        out = self._cache.get(key)
        if out is None:
            out = grid_features(
                dims,
                num_bands=self.num_bands,
                max_resolution=self.max_resolution,
                concat_pos=self.concat_pos,
                sine_only=self.sine_only,
            ).to(self.features.device)
            self._cache[key] = out
        return out

    @property
    def out_channels(self) -> int:
        return fourier_channels(
            len(self.index_dims),
            self.num_bands,
            concat_pos=self.concat_pos,
            sine_only=self.sine_only,
        )

    def encode(self, pos: Tensor) -> Tensor:
        """Fourier features of arbitrary coordinates ``pos`` (..., d) in [-1, 1]."""
        return fourier_features(
            pos,
            num_bands=self.num_bands,
            max_resolution=self.max_resolution,
            concat_pos=self.concat_pos,
            sine_only=self.sine_only,
        )

    def forward(self, pos: Tensor | None = None) -> Tensor:
        return self.features if pos is None else self.encode(pos)

    def extra_repr(self) -> str:
        return (
            f"index_dims={self.index_dims}, num_bands={self.num_bands}, "
            f"max_resolution={self.max_resolution}, out_channels={self.out_channels}"
        )
