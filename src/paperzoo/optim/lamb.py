"""LAMB: layer-wise adaptive moments for large batches (You, Li, Reddi, Hseu, Kumar,
Bhojanapalli, Song, Demmel, Keutzer, Hsieh, "Large Batch Optimization for Deep Learning: Training
BERT in 76 minutes", ICLR 2020, arXiv:1904.00962, Algorithm 2).

Adam's bias-corrected moment ratio plus decoupled weight decay gives a direction per parameter
tensor ("layer"); LAMB rescales that direction so that each layer moves by a fixed fraction of its
own norm (the trust ratio), whatever the scale of its gradients:

    m_t = beta1 m_{t-1} + (1 - beta1) g_t,   v_t = beta2 v_{t-1} + (1 - beta2) g_t^2
    r_t = m_hat_t / (sqrt(v_hat_t) + eps),   m_hat, v_hat bias-corrected (Alg. 2)
    u_t = r_t + lambda x_t                   (decoupled weight decay)
    x_{t+1} = x_t - lr * phi(||x_t||) / ||u_t|| * u_t

with ``phi`` the identity (``||x|| / ||u||`` is the trust ratio), and a ratio of 1 where either
norm is zero (a layer at zero, e.g. a freshly zeroed bias, takes plain Adam-sized steps), as in
the optimiser libraries the Perceiver's authors used (optax's ``lamb``). ``max_trust_ratio``
clips the ratio from above (``phi`` clipped, Sec. 3 of the paper allows it); None: no clip.

A param group with ``"trust_ratio": False`` takes plain AdamW-style steps (ratio 1): the usual way
to exclude biases and normalisation scales from layer adaptation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer

__all__ = ["Lamb", "trust_ratio"]


def trust_ratio(param: Tensor, update: Tensor) -> Tensor:
    """``||param|| / ||update||`` (Euclidean norms of the whole tensor), 1 where either is 0.

    Shapes:
        param, update: any equal shapes -> () scalar tensor
    """
    w = torch.linalg.vector_norm(param)
    u = torch.linalg.vector_norm(update)
    return torch.where((w > 0) & (u > 0), w / u.clamp_min(torch.finfo(u.dtype).tiny), 1.0)


class Lamb(Optimizer):
    """LAMB (You et al., 2020, Algorithm 2).

    Args:
        params: parameters or param groups (a group may set ``"trust_ratio": False``).
        lr: step size ``eta``.
        betas: ``(beta1, beta2)`` of the moment estimates.
        eps: added to ``sqrt(v_hat)``.
        weight_decay: ``lambda``, decoupled (added to the Adam direction before the trust ratio).
        bias_correction: divide the moments by ``1 - beta^t`` (Alg. 2 does).
        max_trust_ratio: clip the trust ratio at this value (None: no clip).
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        bias_correction: bool = True,
        max_trust_ratio: float | None = None,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"lr must be >= 0, got {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        if not eps >= 0.0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        if max_trust_ratio is not None and not max_trust_ratio > 0:
            raise ValueError(f"max_trust_ratio must be positive, got {max_trust_ratio}")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "bias_correction": bias_correction,
            "max_trust_ratio": max_trust_ratio,
            "trust_ratio": True,
        }
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One LAMB update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if g.is_sparse:
                    raise RuntimeError("Lamb does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                t = state["step"]
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(g, alpha=1 - beta1)  # m_t
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)  # v_t
                if group["bias_correction"]:
                    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
                else:
                    m_hat, v_hat = m, v
                update = m_hat / (v_hat.sqrt() + group["eps"])  # r_t (Alg. 2)
                if group["weight_decay"] != 0:
                    update = update.add(p, alpha=group["weight_decay"])  # r_t + lambda x_t
                if group["trust_ratio"]:
                    ratio = trust_ratio(p, update)  # phi(||x_t||) / ||r_t + lambda x_t||
                    if group["max_trust_ratio"] is not None:
                        ratio = ratio.clamp(max=group["max_trust_ratio"])
                    update = update * ratio
                p.add_(update, alpha=-group["lr"])
        return loss
