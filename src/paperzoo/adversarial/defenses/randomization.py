"""Random resizing and padding: Xie, Wang, Zhang, Ren & Yuille, "Mitigating Adversarial Effects
Through Randomization", ICLR 2018 (a stochastic-gradient defence broken with EOT by Athalye et al.
2018, Sec. 5.3.2).

Each image is resized to a random ``r x r`` (``min_size <= r <= out_size``) and placed at a random
offset inside an ``out_size x out_size`` zero canvas. Both draws are per example, so EOT can draw
many samples in one batched forward pass. The resize is a ``grid_sample`` (bilinear by default;
Xie et al. use nearest neighbour, ``mode="nearest"``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class RandomResizePad(nn.Module):
    """Random resize to ``r x r`` then random zero padding to ``out_size x out_size``.

    Args:
        out_size: side of the output canvas.
        min_size: smallest resized side (the largest is ``out_size``).
        mode: interpolation of ``grid_sample`` ("bilinear" or "nearest").
        generator: source of the randomness (None: torch's global RNG).
        random_in_train: also randomise in training mode (as data augmentation).

    Shapes:
        x: (B, C, H, W) -> (B, C, out_size, out_size)
    """

    def __init__(
        self,
        *,
        out_size: int,
        min_size: int,
        mode: str = "bilinear",
        generator: torch.Generator | None = None,
        random_in_train: bool = True,
    ) -> None:
        super().__init__()
        if not 1 <= min_size <= out_size:
            raise ValueError(f"need 1 <= min_size <= out_size, got {min_size}, {out_size}")
        self.out_size, self.min_size, self.mode = out_size, min_size, mode
        self.generator = generator
        self.random_in_train = random_in_train

    def _draw(self, b: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
        g = self.generator
        gdev = g.device if g is not None else torch.device("cpu")
        size = torch.randint(self.min_size, self.out_size + 1, (b,), generator=g, device=gdev)
        ox = (torch.rand(b, generator=g, device=gdev) * (self.out_size - size + 1)).floor()
        oy = (torch.rand(b, generator=g, device=gdev) * (self.out_size - size + 1)).floor()
        return size.float().to(device), ox.to(device), oy.to(device)

    def forward(self, x: Tensor) -> Tensor:
        s = self.out_size
        b = len(x)
        if self.training and not self.random_in_train:
            size = torch.full((b,), float(s), device=x.device)
            ox = oy = torch.zeros(b, device=x.device)
        else:
            size, ox, oy = self._draw(b, x.device)
        # Output pixel u (normalised, align_corners=False) samples input v = (u - c) * s / r, where
        # c is the centre of the pasted image: c = -1 + (2 * offset + r) / s.
        scale = s / size
        cx = -1 + (2 * ox + size) / s
        cy = -1 + (2 * oy + size) / s
        theta = torch.zeros(b, 2, 3, device=x.device, dtype=x.dtype)
        theta[:, 0, 0] = scale
        theta[:, 0, 2] = -cx * scale
        theta[:, 1, 1] = scale
        theta[:, 1, 2] = -cy * scale
        grid = F.affine_grid(theta, [b, x.shape[1], s, s], align_corners=False)  # (B, s, s, 2)
        return F.grid_sample(x, grid, mode=self.mode, padding_mode="zeros", align_corners=False)

    def extra_repr(self) -> str:
        return f"out_size={self.out_size}, min_size={self.min_size}, mode={self.mode!r}"
