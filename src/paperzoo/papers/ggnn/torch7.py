"""Two pieces of the authors' Torch7 setup, for GG-NN's training variants (``Config.adam``,
``Config.split``): Torch7's ``optim.adam`` update and its ``torch.randperm`` under a seed, the
permutation the authors' ``split_set`` (babi_data.lua) draws. Why: docs/ggnn.md ("Why one run in
four gets stuck").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import torch
from torch import Tensor


class Torch7Adam(torch.optim.Optimizer):
    """Adam as Torch7's ``optim.adam``: m and v as usual, then

    ``x -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)``

    (the bias corrections folded into the step size, epsilon added to sqrt(v) itself). torch's
    Adam divides by ``sqrt(v) / sqrt(1 - beta2^t) + eps`` instead: the two differ only in
    epsilon's weight, ``1 / sqrt(1 - beta2^t)`` times larger here (about 32x at the first
    update). Element-wise, so on stacked parameters it is one optimiser per model.
    """

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p.addcdiv_(m, v.sqrt().add_(group["eps"]), value=-step_size)
        return loss


def torch7_randperm(n: int, seed: int) -> np.ndarray:
    """``torch.manualSeed(seed); torch.randperm(n)`` of Torch7, 0-based: its generator is the
    standard MT19937 seeded by ``init_genrand`` (numpy's legacy ``RandomState(seed)`` gives the
    same 32-bit draws), and ``randperm`` swaps position i with i + draw % (n - i), i = 0 .. n-2.
    """
    draws = np.random.RandomState(seed).randint(0, 2**32, size=max(n - 1, 0), dtype=np.uint32)
    perm = np.arange(n)
    for i in range(n - 1):
        z = i + int(draws[i] % (n - i))
        perm[i], perm[z] = perm[z], perm[i]
    return perm
