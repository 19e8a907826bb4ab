"""Reparameterisation: Athalye, Carlini & Wagner, "Obfuscated Gradients Give a False Sense of
Security", ICML 2018, Sec. 4.3.

When a defence ``f(g(x))`` has a preprocessing ``g`` whose gradient vanishes or explodes (e.g. an
unrolled purification loop), but some differentiable ``h`` satisfies ``g(h(z)) ~= h(z)``, the
attacker searches over ``z`` instead of ``x``:

    # Sec. 4.3: x = h(z);  maximise L(f(h(z)), y) over z, never differentiating through g.

``Reparameterized`` runs any attack in z-space on ``classifier(h(z))`` from ``z0 = h_inv(x)``
and maps the result back with ``h``; with ``eps`` set it finally projects ``h(z*)`` onto the
x-space ball around ``x`` so the threat model is respected. ``EOT`` and ``BPDA`` compose with it in
either order: wrapped inside or around it, they act on the z-space attack.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, check_norm, innermost, project, rebase


class Reparameterize(nn.Module):
    """``classifier(h(z))``: the model seen from the latent ``z``."""

    def __init__(self, *, classifier: nn.Module, h: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        self.classifier = classifier
        self.h = h

    def forward(self, z: Tensor) -> Tensor:
        return self.classifier(self.h(z))


def _after_preprocessing(model: nn.Module) -> nn.Module:
    """The network behind a preprocessing defence (``.transform`` and ``.classifier``), else ``model``.

    Sec. 4.3 drops the preprocessing ``g`` because ``g(h(z)) ~= h(z)``. A model without that pair
    (e.g. BPDA's surrogate, whose forward pass keeps ``g`` exactly) is used whole.
    """
    if getattr(model, "transform", None) is not None and hasattr(model, "classifier"):
        return model.classifier
    return model


class Reparameterized(Attack):
    """Run ``attack`` over ``z`` with ``x = h(z)``.

    Wrappers compose with it in either order: ``Reparameterized(EOT(PGD(...)))`` and
    ``EOT(Reparameterized(PGD(...)))`` both average k gradients of the z-space model at every
    step; with ``BPDA`` inside or around it the z-space model is ``surrogate(h(z))``, exact
    forward through the defence's preprocessing and ``approx`` on the backward pass.
    ``loss_and_grad`` and ``evaluate`` stay the x-space oracles of the defended model.

    Args:
        attack: the z-space attack (its ``eps``/steps are measured in z); a copy is aimed at
            ``classifier(h(z))`` with ``clip=None`` (z is unconstrained), wrappers included.
        h: differentiable map from z to the input space.
        h_inv: a right inverse, ``h(h_inv(x)) ~= x``, giving the starting point.
        classifier: the network after the defence's preprocessing (default: the ``.classifier``
            of a model with ``.transform`` and ``.classifier``, else the model the attack
            differentiates, which is BPDA's surrogate under BPDA).
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
        base = innermost(attack)
        if isinstance(base, Reparameterized):
            raise ValueError("Reparameterized inside Reparameterized: compose the maps into one h")
        self.attack = attack  # as given, aimed at the defended model (with_model re-aims it)
        self.classifier = classifier  # as given (None: found on the model)
        self.h, self.h_inv = h, h_inv
        self.eps, self.norm = eps, check_norm(norm)
        net = classifier if classifier is not None else _after_preprocessing(base.model)
        self.latent_model = Reparameterize(classifier=net, h=h)
        self.inner = rebase(attack, self.latent_model)  # the z-space attack

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        return self._in_latent(self.inner, x, y)

    def run_with(self, oracle: Attack, x: Tensor, y: Tensor) -> Tensor:
        # ``oracle`` wraps this attack: carry its chain of wrappers into z-space around ``inner``.
        return self._in_latent(rebase(oracle, self.latent_model, stop=self, tail=self.inner), x, y)

    def _in_latent(self, attack: Attack, x: Tensor, y: Tensor) -> Tensor:
        with torch.no_grad():
            z0 = self.h_inv(x)
        z_adv = attack.perturb(z0, y)
        with torch.no_grad():
            x_adv = self.h(z_adv)
            if self.eps is not None:
                x_adv = x + project(x_adv - x, self.eps, self.norm)
        return self.clamp(x_adv)

    def models(self) -> list[nn.Module]:
        return [*self.attack.models(), self.latent_model, *self.inner.models()]

    def with_model(self, model: nn.Module) -> Attack:
        return Reparameterized(
            self.attack.with_model(model),
            h=self.h,
            h_inv=self.h_inv,
            classifier=self.classifier,
            eps=self.eps,
            norm=self.norm,
        )

    def __repr__(self) -> str:
        return f"Reparameterized({self.inner!r}, eps={self.eps}, norm={self.norm!r})"
