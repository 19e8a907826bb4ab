"""Thermometer encoding: Buckman, Roy, Raffel & Goodfellow, "Thermometer Encoding: One Hot Way To
Resist Adversarial Examples", ICLR 2018 (a shattered-gradient defence in Athalye et al. 2018).

Each input value in [0, 1] becomes ``levels`` binary channels:

    # tau(x)_k = 1[x > k / levels],  k = 0, ..., levels - 1
and the BPDA approximation of Athalye et al. (Sec. 5.2.1) replaces the steps by ramps:
    # tau_hat(x)_k = min(max(x - k / levels, 0) * levels, 1)
which agrees with tau on the grid and is differentiable almost everywhere.

Index convention: the paper's example (tau(0.66) = 1111110000 for 10 levels) counts k = 1..l;
here k = 0..l-1, so channels 1..l-1 are the paper's, channel 0 is 1[x > 0], and the paper's
channel l (1[x > 1], constant 0 on [0, 1]) is left out. Buckman et al.'s released code sets
level k = 0..l-1 when floor(0.99999 * x * l) >= k (its channel 0 is constant 1), and Athalye et
al.'s released attack (``thermometer/robustml_attack.py``) uses the same ramp on that convention,
thresholds (k - 1) / l for k = 0..l-1. The code and the ramp here use the same k, as BPDA needs.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class ThermometerEncoding(nn.Module):
    """Thermometer code of every input value (non-differentiable: zero gradient everywhere).

    Shapes:
        x: (B, C, H, W) -> (B, C * levels, H, W); channel ``c * levels + k`` is level k of c.
    """

    def __init__(self, *, levels: int = 16) -> None:
        super().__init__()
        if levels < 2:
            raise ValueError(f"levels must be >= 2, got {levels}")
        self.levels = levels
        self.register_buffer("thresholds", torch.arange(levels) / levels, persistent=False)

    def _expand(self, x: Tensor) -> Tensor:
        t = self.thresholds.to(x.dtype).view(1, 1, -1, *([1] * (x.dim() - 2)))
        return x.unsqueeze(2) - t  # (B, C, levels, H, W)

    def forward(self, x: Tensor) -> Tensor:
        code = (self._expand(x) > 0).to(x.dtype)  # a comparison: x leaves the autograd graph
        return code.flatten(1, 2)  # (B, C * levels, H, W)

    def bpda_approx(self, x: Tensor) -> Tensor:
        """Athalye et al.'s differentiable surrogate tau_hat."""
        return (self._expand(x) * self.levels).clamp(0, 1).flatten(1, 2)

    def extra_repr(self) -> str:
        return f"levels={self.levels}"
