"""CoordConv layers (Liu et al., 2018, "An intriguing failing of convolutional neural networks and
the CoordConv solution", arXiv:1807.03247).

``AddCoords`` appends coordinate channels to a feature map; ``CoordConv2d`` is AddCoords followed
by an ordinary convolution (Sec. 3 of the paper).

Coordinate convention (ours, stated because popular implementations get it wrong): channel ``i``
holds the row index and varies along the height axis, channel ``j`` holds the column index and
varies along the width axis, each scaled to [-1, 1] by its *own* extent:
``i = 2 * row / (H - 1) - 1``, ``j = 2 * col / (W - 1) - 1``. The official TensorFlow code divides
each channel by the other axis's extent, which is only correct for square inputs. An axis of
length 1 gets the coordinate 0. The optional radius channel is ``r = sqrt(i^2 + j^2)``, the
distance from the centre in these normalised units.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn


def coord_grid(
    height: int,
    width: int,
    *,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """The (i, j) coordinate channels of an ``height x width`` map.

    Shapes:
        -> (2, height, width); [0] varies along rows (height), [1] along columns (width).
    """

    def axis(n: int) -> Tensor:
        if n == 1:
            return torch.zeros(1, device=device, dtype=dtype)
        return torch.linspace(-1.0, 1.0, n, device=device, dtype=dtype)  # 2 * k / (n - 1) - 1

    ii, jj = torch.meshgrid(axis(height), axis(width), indexing="ij")
    return torch.stack([ii, jj])


class AddCoords(nn.Module):
    """Concatenate coordinate channels (i, j[, r]) to the input (the paper's AddCoords layer).

    The coordinate map is cached per (height, width, device, dtype).

    Args:
        with_r: also append the radius channel r = sqrt(i^2 + j^2).

    Shapes:
        x: (B, C, H, W) -> (B, C + 2 (+1 with_r), H, W)
    """

    def __init__(self, *, with_r: bool = False) -> None:
        super().__init__()
        self.with_r = with_r
        self._cache: dict[tuple[Any, ...], Tensor] = {}

    @property
    def extra_channels(self) -> int:
        return 3 if self.with_r else 2

    def coords(self, height: int, width: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        key = (height, width, device, dtype)
        grid = self._cache.get(key)
        if grid is None:
            grid = coord_grid(height, width, device=device, dtype=dtype)
            if self.with_r:
                grid = torch.cat([grid, grid.pow(2).sum(0, keepdim=True).sqrt()])
            self._cache[key] = grid
        return grid

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 4:
            raise ValueError(f"AddCoords expects (B, C, H, W), got shape {tuple(x.shape)}")
        b, _, h, w = x.shape
        grid = self.coords(h, w, x.device, x.dtype)
        return torch.cat([x, grid.unsqueeze(0).expand(b, -1, -1, -1)], dim=1)

    def extra_repr(self) -> str:
        return f"with_r={self.with_r}"


class CoordConv2d(nn.Module):
    """``AddCoords`` followed by ``nn.Conv2d``; takes ``nn.Conv2d``'s arguments.

    ``CoordConv2d(3, 8, 3, 1, 1)`` is in_channels, out_channels, kernel_size, stride, padding, as
    for ``nn.Conv2d``; ``dilation``, ``groups``, ``bias`` and ``padding_mode`` follow positionally
    too, and ``with_r``, ``device`` and ``dtype`` are keyword-only. ``in_channels`` counts the
    input's own channels; the convolution sees 2 (3 with ``with_r``) more.

    Shapes:
        x: (B, in_channels, H, W) -> (B, out_channels, H', W')
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] | str = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        *,
        with_r: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.add_coords = AddCoords(with_r=with_r)
        self.conv = nn.Conv2d(
            in_channels + self.add_coords.extra_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device=device,
            dtype=dtype,
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(self.add_coords(x))
