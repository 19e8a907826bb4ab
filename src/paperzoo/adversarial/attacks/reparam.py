"""Reparameterisation: Athalye, Carlini & Wagner, "Obfuscated Gradients Give a False Sense of
Security", ICML 2018, Sec. 4.3.

When a defence ``f(g(x))`` has a preprocessing ``g`` whose gradient vanishes or explodes (e.g. an
unrolled purification loop), but some differentiable ``h`` satisfies ``g(h(z)) ~= h(z)``, the
attacker searches over ``z`` instead of ``x``:

    # Sec. 4.3: x = h(z);  maximise L(f(h(z)), y) over z, never differentiating through g.

``Reparameterized`` runs any attack in z-space on ``classifier(h(z))`` from ``z0 = h_inv(x)``
and maps the result back with ``h``; with ``eps`` set it finally projects ``h(z*)`` onto the
x-space ball around ``x`` so the threat model is respected.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, check_norm, project


class Reparameterize(nn.Module):
    """``classifier(h(z))``: the model seen from the latent ``z``."""

    def __init__(self, *, classifier: nn.Module, h: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        self.classifier = classifier
        self.h = h

    def forward(self, z: Tensor) -> Tensor:
        return self.classifier(self.h(z))


class Reparameterized(Attack):
    """Run ``attack`` over ``z`` with ``x = h(z)``.

    Args:
        attack: the z-space attack (its ``eps``/steps are measured in z); it is re-aimed at
            ``classifier(h(z))`` with ``clip=None`` (z is unconstrained).
        h: differentiable map from z to the input space.
        h_inv: a right inverse, ``h(h_inv(x)) ~= x``, giving the starting point.
        classifier: the network after the defence's preprocessing (default: ``attack.model``'s
            ``.classifier`` if it has one, else ``attack.model``).
        eps, norm: the x-space threat model the result is projected onto (None: no projection).
    """

    def __init__(
        self,
        attack: Attack,
        *,
        h: Callable[[Tensor], Tensor],
        h_inv: Callable[[Tensor], Tensor],
        classifier: nn.Module | None = None,
        eps: float | None = None,
        norm: str = "linf",
    ) -> None:
        super().__init__(
            attack.model, loss=attack.loss, clip=attack.clip, generator=attack.generator
        )
        if classifier is None:
            classifier = getattr(attack.model, "classifier", attack.model)
        self.latent_model = Reparameterize(classifier=classifier, h=h)
        self.inner = attack.with_model(self.latent_model)
        self.inner.clip = None
        self.h, self.h_inv = h, h_inv
        self.eps, self.norm = eps, check_norm(norm)

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        with torch.no_grad():
            z0 = self.h_inv(x)
        z_adv = self.inner.perturb(z0, y)
        with torch.no_grad():
            x_adv = self.h(z_adv)
            if self.eps is not None:
                x_adv = x + project(x_adv - x, self.eps, self.norm)
        return self.clamp(x_adv)

    def __repr__(self) -> str:
        return f"Reparameterized({self.inner!r}, eps={self.eps}, norm={self.norm!r})"
