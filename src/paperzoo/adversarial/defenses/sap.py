"""Stochastic activation pruning (SAP): Dhillon, Azizzadenesheli, Lipton, Bernstein, Kossaifi,
Khanna & Anandkumar, "Stochastic Activation Pruning for Robust Adversarial Defense", ICLR 2018
(a stochastic-gradient defence broken with EOT by Athalye et al. 2018, Sec. 5.3.1).

At inference, each layer's activations h (per example, flattened) are sampled with replacement
``r`` times with probabilities proportional to their magnitude; unsampled activations are zeroed
and survivors are rescaled so the layer output is unbiased:

    # p_j = |h_j| / sum_k |h_k|;   keep_j ~ 1[j drawn at least once in r draws]
    # h_j <- h_j * keep_j / (1 - (1 - p_j)^r)
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class StochasticActivationPruning(nn.Module):
    """SAP on the activations passing through (active in eval mode only, as a post-hoc defence).

    Args:
        frac: draws per example as a fraction of the layer's activation count (SAP-100 is 1.0).
        exact: draw the ``r`` samples with ``torch.multinomial`` (Dhillon et al.'s procedure);
            otherwise keep each activation independently with the same marginal probability
            ``1 - (1 - p_j)^r`` (much faster; same expectation and rescaling).
        generator: source of the randomness (None: torch's global RNG).

    Shapes:
        h: (B, ...) -> (B, ...)
    """

    def __init__(
        self, *, frac: float = 1.0, exact: bool = False, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        if frac <= 0:
            raise ValueError(f"frac must be > 0, got {frac}")
        self.frac, self.exact, self.generator = frac, exact, generator

    def forward(self, h: Tensor) -> Tensor:
        if self.training:
            return h
        flat = h.flatten(1)  # (B, N)
        n = flat.shape[1]
        r = max(1, round(self.frac * n))
        mag = flat.abs()
        total = mag.sum(1, keepdim=True)
        p = mag / total.clamp_min(1e-12)  # (B, N)
        keep_prob = 1 - (1 - p).pow(r)
        g = self.generator
        gdev = g.device if g is not None else torch.device("cpu")
        with torch.no_grad():
            if self.exact:
                rows = p.detach().to(gdev).clone()
                rows[total.squeeze(1).to(gdev) == 0] = 1.0  # all-zero rows: any index (h is 0)
                idx = torch.multinomial(rows, r, replacement=True, generator=g)  # (B, r)
                keep = torch.zeros_like(rows).scatter_(1, idx, 1.0).to(h.device)
            else:
                u = torch.rand(flat.shape, generator=g, device=gdev).to(h.device)
                keep = (u < keep_prob.detach()).to(h.dtype)
        scale = keep / keep_prob.clamp_min(1e-12)
        return (flat * scale).view_as(h)

    def extra_repr(self) -> str:
        return f"frac={self.frac}, exact={self.exact}"


def add_activation_pruning(
    model: nn.Module,
    *,
    frac: float = 1.0,
    exact: bool = False,
    generator: torch.Generator | None = None,
    after: tuple[type[nn.Module], ...] = (nn.ReLU,),
) -> nn.Module:
    """Insert SAP after every activation of the types in ``after`` (in place); returns ``model``."""
    count = 0
    for name, child in list(model.named_children()):
        if isinstance(child, after):
            sap = StochasticActivationPruning(frac=frac, exact=exact, generator=generator)
            setattr(model, name, nn.Sequential(child, sap))
            count += 1
        else:
            add_activation_pruning(child, frac=frac, exact=exact, generator=generator, after=after)
    return model
