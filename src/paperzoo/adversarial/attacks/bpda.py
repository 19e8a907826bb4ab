"""Backward Pass Differentiable Approximation: Athalye, Carlini & Wagner, "Obfuscated Gradients
Give a False Sense of Security", ICML 2018, Sec. 4.1.

A defence ``f(g(x))`` whose preprocessing ``g`` is non-differentiable (thresholds, quantisation,
JPEG, ...) shatters the gradient. BPDA keeps the exact forward pass and replaces ``g`` only on the
backward pass by a differentiable ``h`` with ``h(x) ~= g(x)``:

    # Sec. 4.1.1: forward  f(g(x));   backward  grad_x f(g(x)) ~= grad f(.)|_{g(x)} . J_h(x)
    # Special case h(x) = x (g(x) ~= x): the backward pass treats g as the identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, AttackWrapper


class _BPDAFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, transform: Callable, approx: Callable | None) -> Tensor:
        ctx.approx = approx
        ctx.save_for_backward(x)
        with torch.no_grad():
            return transform(x)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, None, None]:
        (x,) = ctx.saved_tensors
        if ctx.approx is None:  # h = identity
            if grad_out.shape != x.shape:
                raise RuntimeError(
                    "BPDA with the identity approximation needs a shape-preserving transform "
                    f"(input {tuple(x.shape)}, output {tuple(grad_out.shape)}); pass approx=..."
                )
            return grad_out, None, None
        with torch.enable_grad():
            xd = x.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(ctx.approx(xd), xd, grad_out)  # vector-Jacobian of h
        return g, None, None


def bpda(
    x: Tensor, transform: Callable[[Tensor], Tensor], approx: Callable | None = None
) -> Tensor:
    """``transform(x)`` on the forward pass, the gradient of ``approx`` (identity if None) backward."""
    return _BPDAFunction.apply(x, transform, approx)


class BPDALayer(nn.Module):
    """A module computing ``transform`` forward and differentiating ``approx`` backward.

    Use it anywhere in a network (e.g. in place of a non-differentiable layer).
    """

    def __init__(self, transform: nn.Module | Callable, *, approx: Callable | None = None) -> None:
        super().__init__()
        self.transform = transform
        self.approx = approx

    def forward(self, x: Tensor) -> Tensor:
        return bpda(x, self.transform, self.approx)


class BPDAModel(nn.Module):
    """``classifier(transform(x))`` forward; backward through ``approx`` instead of ``transform``.

    Shares ``transform`` and ``classifier`` with the defended model (no copies).
    """

    def __init__(
        self,
        *,
        transform: Callable[[Tensor], Tensor],
        classifier: Callable[[Tensor], Tensor],
        approx: Callable | None = None,
    ) -> None:
        super().__init__()
        self.layer = BPDALayer(transform, approx=approx)
        self.classifier = classifier

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.layer(x))


class BPDA(AttackWrapper):
    """Run ``attack`` with gradients taken through a differentiable approximation of the defence.

    The defended model ``attack.model`` must expose ``transform`` (the non-differentiable
    preprocessing) and ``classifier`` (as ``InputTransformDefense`` does), or pass them here.
    Forward passes are exact; only gradients change. Works with any gradient attack and any
    wrapper (``EOT(BPDA(...))`` handles randomised non-differentiable defences; with
    ``Reparameterized`` in either order the z-space model is ``classifier(bpda(h(z)))``).

    Args:
        attack: the attack to run (aimed at the defended model).
        approx: the smooth ``h ~= transform``; ``None`` is the identity (the common case). A
            transform may also provide ``transform.bpda_approx``, used when ``approx`` is None.
        transform, classifier: override the parts found on ``attack.model``; either may be an
            ``nn.Module`` or a plain callable (a function runs as it is: modules it closes over
            are not switched to eval mode by the attack).

    ``with_model`` keeps the arguments passed explicitly and finds the rest (including a
    ``bpda_approx``) on the new model.
    """

    def __init__(
        self,
        attack: Attack,
        *,
        approx: Callable[[Tensor], Tensor] | None = None,
        transform: Callable[[Tensor], Tensor] | None = None,
        classifier: Callable[[Tensor], Tensor] | None = None,
    ) -> None:
        defended = attack.model
        found_transform = (
            transform if transform is not None else getattr(defended, "transform", None)
        )
        found_classifier = (
            classifier if classifier is not None else getattr(defended, "classifier", None)
        )
        if found_transform is None or found_classifier is None:
            raise ValueError(
                "BPDA needs the defence's preprocessing and classifier: aim the attack at a model "
                "with .transform and .classifier (e.g. InputTransformDefense) or pass both"
            )
        super().__init__(attack)
        # The arguments as given (None: found on the model), so with_model can find them again.
        self.explicit: dict[str, Any] = {
            "approx": approx,
            "transform": transform,
            "classifier": classifier,
        }
        self.approx = (
            approx if approx is not None else getattr(found_transform, "bpda_approx", None)
        )
        self.surrogate = BPDAModel(
            transform=found_transform, classifier=found_classifier, approx=self.approx
        )
        self._original = attack
        self.attack = attack.with_model(self.surrogate)

    def with_model(self, model: nn.Module) -> Attack:
        return BPDA(self._original.with_model(model), **self.explicit)

    def __repr__(self) -> str:
        name = getattr(self.approx, "__name__", type(self.approx).__name__)
        return f"BPDA({self._original!r}, approx={'identity' if self.approx is None else name})"
