"""Projected gradient descent: Madry, Makelov, Schmidt, Tsipras & Vladu, "Towards Deep Learning
Models Resistant to Adversarial Attacks", ICLR 2018.

Projected steepest ascent on the loss inside the ``eps`` ball (l_inf or l_2) around ``x``,
intersected with the valid input box, from a uniformly random start; with ``restarts > 1`` the
worst case per example over the restarts is kept (misclassified first, then highest loss). With
``targeted=True`` the labels are targets and the descent lowers their loss; restarts then keep
the run that reaches the target first, then the lowest loss.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import (
    Attack,
    check_norm,
    normalize_grad,
    project,
    random_in_ball,
)
from paperzoo.engine import budget


class PGD(Attack):
    """Projected gradient ascent with random start and restarts.

    Args:
        model: the classifier.
        eps: radius of the ``norm`` ball.
        alpha: step size (in ``norm``).
        steps: number of ascent steps.
        norm: "linf" or "l2".
        random_start: start from a uniform sample of the ball instead of ``x``.
        restarts: independent runs; the worst case per example is returned.
        targeted: ``y`` holds target labels and each step decreases their loss (torchattacks'
            targeted mode); default: ``y`` are the true labels and the loss is increased.
        **base: ``loss``, ``clip``, ``generator`` of ``Attack``.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        eps: float,
        alpha: float,
        steps: int,
        norm: str = "linf",
        random_start: bool = True,
        restarts: int = 1,
        targeted: bool = False,
        **base: Any,
    ) -> None:
        super().__init__(model, **base)
        if eps < 0 or alpha < 0:
            raise ValueError(f"eps and alpha must be >= 0, got eps={eps}, alpha={alpha}")
        if steps < 0 or restarts < 1:
            raise ValueError(f"need steps >= 0 and restarts >= 1, got {steps}, {restarts}")
        self.eps, self.alpha, self.steps = float(eps), float(alpha), int(steps)
        self.norm = check_norm(norm)
        self.random_start = random_start
        self.restarts = int(restarts)
        self.targeted = bool(targeted)

    def _one_run(self, x: Tensor, y: Tensor) -> Tensor:
        delta = torch.zeros_like(x)
        if self.random_start:
            delta = random_in_ball(x, self.eps, self.norm, self.generator)
        x_adv = self.clamp(x + delta)
        sign = -1.0 if self.targeted else 1.0  # targeted: descend the target labels' loss
        for _ in budget.loop(self.steps, "PGD iterations"):  # (--max-steps: capped, timed)
            _, g = self.loss_and_grad(x_adv, y)
            # Madry et al. Eq. (2): x_{t+1} = Pi_{x+S}(x_t + alpha * sgn(grad_x L(theta, x_t, y)))
            x_adv = x_adv + sign * self.alpha * normalize_grad(g, self.norm)
            x_adv = self.clamp(x + project(x_adv - x, self.eps, self.norm))
        return x_adv

    def _score(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """(loss to maximise, success) per example: untargeted, the loss and misclassification;
        targeted, minus the target loss and whether the prediction is the target."""
        loss, wrong = self.evaluate(x, y)
        if not self.targeted:
            return loss, wrong
        return -loss, ~wrong  # predicted == target

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        best = self._one_run(x, y)
        if self.restarts == 1:
            return best
        best_loss, best_wrong = self._score(best, y)
        for _ in budget.loop(self.restarts - 1, "PGD restarts", kind="repeat"):
            cand = self._one_run(x, y)
            loss, wrong = self._score(cand, y)
            # Worst case per example: a misclassifying candidate beats a correct one; ties by loss
            # (targeted: reaching the target beats missing it; ties by the lower target loss).
            better = (wrong & ~best_wrong) | ((wrong == best_wrong) & (loss > best_loss))
            m = better.view(-1, *([1] * (x.dim() - 1)))
            best = torch.where(m, cand, best)
            best_loss = torch.where(better, loss, best_loss)
            best_wrong = best_wrong | wrong
        return best

    def __repr__(self) -> str:
        return (
            f"PGD(eps={self.eps}, alpha={self.alpha}, steps={self.steps}, norm={self.norm!r}, "
            f"random_start={self.random_start}, restarts={self.restarts}, "
            f"{'targeted=True, ' if self.targeted else ''}loss={self.loss!r})"
        )
