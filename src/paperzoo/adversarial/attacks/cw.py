"""Carlini & Wagner l_2 attack: "Towards Evaluating the Robustness of Neural Networks", IEEE S&P
2017.

Minimises distortion plus a weighted margin term in the tanh change of variables, with a binary
search over the weight ``c`` per example:

    # Eq. (CW-l2): minimise ||x' - x||_2^2 + c * f(x'),   x' = lo + (hi - lo) * (tanh(w) + 1) / 2
    #              f(x') = max(Z(x')_y - max_{j != y} Z(x')_j, -kappa)

``f`` is ``-min(margin, kappa)`` with ``margin = max_{j != y} Z_j - Z_y`` (the "cw" attack loss),
so its gradient comes from ``loss_and_grad`` and the attack composes with BPDA and EOT.
The smallest successful x' per example is returned; examples never broken come back unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack
from paperzoo.engine import budget


class CW(Attack):
    """Carlini-Wagner l_2 (untargeted).

    Args:
        model: the classifier.
        c: initial trade-off constant.
        kappa: confidence margin required for success.
        steps: Adam steps per binary-search round.
        lr: Adam learning rate.
        binary_search_steps: rounds of the search over ``c``.
        abort_early: stop a round once the objective stops improving (checked every steps/10).
        **base: ``clip``, ``generator`` of ``Attack``; the loss must be a margin (default "cw").
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        c: float = 1e-2,
        kappa: float = 0.0,
        steps: int = 100,
        lr: float = 1e-2,
        binary_search_steps: int = 5,
        abort_early: bool = True,
        **base: Any,
    ) -> None:
        base.setdefault("loss", "cw")
        super().__init__(model, **base)
        if c <= 0 or kappa < 0 or steps < 1 or binary_search_steps < 1:
            raise ValueError("need c > 0, kappa >= 0, steps >= 1 and binary_search_steps >= 1")
        self.c, self.kappa, self.steps, self.lr = float(c), float(kappa), int(steps), float(lr)
        self.binary_search_steps = int(binary_search_steps)
        self.abort_early = abort_early

    # x' = to_x(w): the box-constrained change of variables (identity when clip is None).
    def _to_x(self, w: Tensor) -> Tensor:
        if self.clip is None:
            return w
        lo, hi = self.clip
        return lo + (hi - lo) * (torch.tanh(w) + 1) / 2

    def _to_w(self, x: Tensor) -> Tensor:
        if self.clip is None:
            return x.clone()
        lo, hi = self.clip
        u = ((x - lo) / (hi - lo) * 2 - 1).clamp(-1 + 1e-6, 1 - 1e-6)
        return torch.atanh(u)

    def _dx_dw(self, w: Tensor) -> Tensor:
        if self.clip is None:
            return torch.ones_like(w)
        lo, hi = self.clip
        return (hi - lo) * (1 - torch.tanh(w) ** 2) / 2

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        b = len(x)
        view = (-1,) + (1,) * (x.dim() - 1)
        c = torch.full((b,), self.c, device=x.device)
        lower = torch.zeros(b, device=x.device)
        upper = torch.full((b,), float("inf"), device=x.device)
        best_l2 = torch.full((b,), float("inf"), device=x.device)
        best = x.clone()
        for _ in budget.loop(self.binary_search_steps, "C&W binary search", kind="repeat"):
            w = self._to_w(x).requires_grad_(True)
            opt = torch.optim.Adam([w], lr=self.lr)
            succeeded = torch.zeros(b, dtype=torch.bool, device=x.device)
            prev = float("inf")
            for step in budget.loop(self.steps, "C&W iterations"):
                xw = self._to_x(w.detach())
                margin, g_margin = self.loss_and_grad(xw, y)
                l2sq = (xw - x).flatten(1).pow(2).sum(1)
                # f = -min(margin, kappa): active (gradient -grad margin) only while margin < kappa.
                f = -margin.clamp(max=self.kappa)
                active = (margin < self.kappa).float().view(view)
                g_x = 2 * (xw - x) - c.view(view) * active * g_margin
                # Record successes found at this iterate (before the step).
                ok = margin > self.kappa if self.kappa > 0 else margin > 0
                improve = ok & (l2sq < best_l2)
                best_l2 = torch.where(improve, l2sq, best_l2)
                best = torch.where(improve.view(view), xw, best)
                succeeded |= ok
                opt.zero_grad(set_to_none=True)
                w.grad = g_x * self._dx_dw(w.detach())
                opt.step()
                objective = float((l2sq + c * f).sum())
                if self.abort_early and step % max(self.steps // 10, 1) == 0:
                    if objective > prev * 0.9999:
                        break
                    prev = objective
            # Binary search on c: success -> smaller c; failure -> larger (x10 until bracketed).
            upper = torch.where(succeeded, torch.minimum(upper, c), upper)
            lower = torch.where(succeeded, lower, torch.maximum(lower, c))
            bracketed = upper < float("inf")
            c = torch.where(bracketed, (lower + upper) / 2, c * 10)
        return best

    def __repr__(self) -> str:
        return (
            f"CW(c={self.c}, kappa={self.kappa}, steps={self.steps}, lr={self.lr}, "
            f"binary_search_steps={self.binary_search_steps})"
        )
