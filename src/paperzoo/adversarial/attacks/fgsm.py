"""Fast gradient (sign) method: Goodfellow, Shlens & Szegedy, "Explaining and Harnessing
Adversarial Examples", ICLR 2015.

With ``norm="l2"`` this is the fast gradient method ("FGM") that Sinha et al. (WRM) compare with:
one step of length ``eps`` along the l_2-normalised gradient.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, check_norm, normalize_grad


class FGSM(Attack):
    """One gradient step of size ``eps``.

    Args:
        model: the classifier.
        eps: the perturbation budget in ``norm``.
        norm: "linf" (x + eps * sign(g), the FGSM) or "l2" (x + eps * g / ||g||_2, the FGM).
        targeted: ``y`` holds target labels and the step decreases their loss (x - eps * ...),
            as torchattacks' targeted mode; default: ``y`` are the true labels, loss increased.
        **base: ``loss``, ``clip``, ``generator`` of ``Attack``.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        eps: float,
        norm: str = "linf",
        targeted: bool = False,
        **base: Any,
    ) -> None:
        super().__init__(model, **base)
        if eps < 0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        self.eps = float(eps)
        self.norm = check_norm(norm)
        self.targeted = bool(targeted)

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        _, g = self.loss_and_grad(x, y)
        # Eq. (FGSM): x_adv = x + eps * sign(grad_x L(x, y))  (l_2: eps * grad / ||grad||_2)
        # (targeted: x - eps * sign(grad_x L(x, target)), towards the target class)
        sign = -1.0 if self.targeted else 1.0
        return self.clamp(x + sign * self.eps * normalize_grad(g, self.norm))

    def __repr__(self) -> str:
        targeted = ", targeted=True" if self.targeted else ""
        return f"FGSM(eps={self.eps}, norm={self.norm!r}{targeted}, loss={self.loss!r})"
