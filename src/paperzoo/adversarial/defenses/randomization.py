"""Random resizing and padding: Xie, Wang, Zhang, Ren & Yuille, "Mitigating Adversarial Effects
Through Randomization", ICLR 2018 (a stochastic-gradient defence broken with EOT by Athalye et al.
2018, Sec. 5.3.2).

Each image is resized to a random ``r x r`` (``min_size <= r <= max_size``, ``max_size`` defaults
to ``out_size``) and placed at a random offset inside an ``out_size x out_size`` canvas filled with
``pad_value`` (0 by default). Both draws are per example, so EOT can draw many samples in one
batched forward pass. The resize is a ``grid_sample`` (bilinear by default; Xie et al. use
nearest neighbour, ``mode="nearest"``).

Xie et al.'s geometry (Sec. 3 of their paper; the same numbers in Athalye et al.'s released
defence): a 299 x 299 input is resized to ``rnd x rnd`` with ``rnd`` uniform in [299, 331) and
padded at random to 331 x 331, i.e. ``RandomResizePad(out_size=331, min_size=299,
max_size=330)``. Athalye et al.'s implementation pads with 0.5 (their comment: the value is not
stated by Xie et al.).

``FixedDraw`` freezes the randomness of a model for the attacks Xie et al. evaluated (one draw
kept for the whole attack, their "single-pattern" attack).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class RandomResizePad(nn.Module):
    """Random resize to ``r x r`` then random zero padding to ``out_size x out_size``.

    Args:
        out_size: side of the output canvas.
        min_size: smallest resized side.
        max_size: largest resized side (default ``out_size``; Xie et al.: ``out_size - 1``).
        mode: interpolation of ``grid_sample`` ("bilinear" or "nearest").
        pad_value: value of the canvas around the resized image.
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
        max_size: int | None = None,
        mode: str = "bilinear",
        pad_value: float = 0.0,
        generator: torch.Generator | None = None,
        random_in_train: bool = True,
    ) -> None:
        super().__init__()
        max_size = out_size if max_size is None else max_size
        if not 1 <= min_size <= max_size <= out_size:
            raise ValueError(
                f"need 1 <= min_size <= max_size <= out_size, got {min_size}, {max_size}, "
                f"{out_size}"
            )
        self.out_size, self.min_size, self.max_size = out_size, min_size, max_size
        self.mode, self.pad_value = mode, float(pad_value)
        self.generator = generator
        self.random_in_train = random_in_train

    def _draw(self, b: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
        g = self.generator
        gdev = g.device if g is not None else torch.device("cpu")
        size = torch.randint(self.min_size, self.max_size + 1, (b,), generator=g, device=gdev)
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
        v = self.pad_value  # sampling x - v with zero padding, then adding v, pads with v
        src = x - v if v else x
        out = F.grid_sample(src, grid, mode=self.mode, padding_mode="zeros", align_corners=False)
        return out + v if v else out

    def extra_repr(self) -> str:
        return (
            f"out_size={self.out_size}, min_size={self.min_size}, max_size={self.max_size}, "
            f"mode={self.mode!r}, pad_value={self.pad_value}"
        )


class FixedDraw(nn.Module):
    """``model`` with its randomness frozen: every forward pass replays one draw.

    Before each forward pass the ``generators`` the model draws from are set to the states they
    had when this wrapper was built, and restored afterwards, so the wrapped model is
    deterministic (for a fixed batch size) while ``model`` itself keeps drawing fresh samples.
    Attacking ``FixedDraw(model, [g])`` is the attack Xie et al. evaluated their defence with
    (one pattern of the randomness for the whole attack); the robust accuracy is then measured
    on ``model`` with fresh draws.

    Args:
        model: a randomised model whose randomness comes only from ``generators``.
        generators: the generators to freeze.
        states: the frozen generator states (default: the generators' current states). Pass
            states from another stream when ``model`` is evaluated afterwards with fresh draws:
            with the default, the next fresh draw of ``model`` would be the frozen one.

    Shapes:
        x: whatever ``model`` takes.
    """

    def __init__(
        self,
        model: nn.Module,
        generators: list[torch.Generator],
        states: list[Tensor] | None = None,
    ) -> None:
        super().__init__()
        if not generators:
            raise ValueError("FixedDraw needs the generators the model draws from")
        if states is not None and len(states) != len(generators):
            raise ValueError(f"{len(states)} states for {len(generators)} generators")
        self.model = model
        self.generators = list(generators)
        self.states = [g.get_state() for g in self.generators] if states is None else list(states)

    def forward(self, x: Tensor) -> Tensor:
        saved = [g.get_state() for g in self.generators]
        for g, st in zip(self.generators, self.states, strict=True):
            g.set_state(st)
        try:
            return self.model(x)
        finally:
            for g, st in zip(self.generators, saved, strict=True):
                g.set_state(st)
