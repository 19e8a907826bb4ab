"""Bit-depth reduction: Xu, Evans & Qi, "Feature Squeezing: Detecting Adversarial Examples in Deep
Neural Networks", NDSS 2018; one of the input transformations of Guo et al. (ICLR 2018) broken
with BPDA (identity backward pass) by Athalye et al. 2018.

    # q(x) = round(x * (2^bits - 1)) / (2^bits - 1)
``round`` has zero derivative almost everywhere, so a naive gradient attack is blind; since
q(x) ~= x, BPDA with the identity recovers a useful gradient.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class BitDepthReduction(nn.Module):
    """Quantise inputs in [0, 1] to ``2**bits`` levels.

    Shapes:
        x: (B, ...) -> (B, ...)
    """

    def __init__(self, *, bits: int = 3) -> None:
        super().__init__()
        if not 1 <= bits <= 16:
            raise ValueError(f"bits must be in [1, 16], got {bits}")
        self.bits = bits

    def forward(self, x: Tensor) -> Tensor:
        m = 2**self.bits - 1
        return torch.round(x * m) / m

    def extra_repr(self) -> str:
        return f"bits={self.bits}"
