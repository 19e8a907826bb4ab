"""Batch transforms on image tensors: random translations (augmentation) and images as sets of
pixels (the Perceiver's input layout)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor

__all__ = ["as_set", "translate"]


def translate(x: Tensor, shift: int, fill: float) -> Tensor:
    """Shift every image by its own random offset of up to ``shift`` pixels per axis.

    Offsets are drawn from the global RNG (the trainer seeds it per run, so models trained with
    the same seed see the same offsets); uncovered pixels take the value ``fill`` (the
    background). ``shift <= 0`` returns ``x`` itself.

    Shapes:
        x: (N, C, H, W) -> (N, C, H, W)
    """
    if shift <= 0:
        return x
    n, c, h, w = x.shape
    padded = F.pad(x, (shift, shift, shift, shift), value=fill)
    dy = torch.randint(0, 2 * shift + 1, (n,), device=x.device)
    dx = torch.randint(0, 2 * shift + 1, (n,), device=x.device)
    rows = dy[:, None] + torch.arange(h, device=x.device)  # (N, H) rows of the padded image
    cols = dx[:, None] + torch.arange(w, device=x.device)  # (N, W)
    return padded[
        torch.arange(n, device=x.device)[:, None, None, None],
        torch.arange(c, device=x.device)[None, :, None, None],
        rows[:, None, :, None],
        cols[:, None, None, :],
    ]


def as_set(x: Tensor) -> Tensor:
    """Images to a set of pixels with their channels, rows in raster order.

    Shapes:
        x: (N, C, H, W) -> (N, H * W, C)
    """
    return rearrange(x, "n c h w -> n (h w) c")
