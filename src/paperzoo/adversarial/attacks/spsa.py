"""Gradient-free attacks used as baselines by the obfuscated-gradients checklist.

* ``SPSA``: Uesato, O'Donoghue, van den Oord & Kohli, "Adversarial Risk and the Dangers of
  Evaluating Against Weak Attacks", ICML 2018. The gradient is estimated from loss queries along
  random Rademacher directions (simultaneous perturbation stochastic approximation) and fed to
  Adam; iterates are projected onto the l_inf ball.
* ``RandomNoise``: brute-force random sampling inside the ball (Athalye et al.'s warning sign:
  "random sampling finds adversarial examples" that a gradient attack missed).

Both use only forward passes (``Attack.evaluate``), so they see through shattered or stochastic
gradients.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, check_norm, project, random_in_ball
from paperzoo.engine import budget


class SPSA(Attack):
    """SPSA l_inf attack (black-box: forward queries only).

    Args:
        model: the classifier.
        eps: l_inf radius.
        steps: optimisation steps.
        samples: Rademacher directions per step (each costs two queries per example).
        delta: finite-difference step.
        lr: Adam learning rate on the perturbation.
        early_stop: freeze an example once it is misclassified.
        **base: ``loss`` (default "cw", the margin Uesato et al. use), ``clip``, ``generator``.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        eps: float,
        steps: int = 100,
        samples: int = 64,
        delta: float = 0.01,
        lr: float = 0.01,
        early_stop: bool = True,
        **base: Any,
    ) -> None:
        base.setdefault("loss", "cw")
        super().__init__(model, **base)
        if eps < 0 or steps < 0 or samples < 1 or delta <= 0 or lr <= 0:
            raise ValueError("need eps >= 0, steps >= 0, samples >= 1, delta > 0, lr > 0")
        self.eps, self.steps, self.samples = float(eps), int(steps), int(samples)
        self.delta, self.lr, self.early_stop = float(delta), float(lr), early_stop

    def _rademacher(self, shape: tuple[int, ...], device: torch.device) -> Tensor:
        gdev = self.generator.device if self.generator is not None else device
        bits = torch.randint(0, 2, shape, generator=self.generator, device=gdev)
        return (2 * bits - 1).to(device=device, dtype=torch.float32)

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        b, k = len(x), self.samples
        view = (-1,) + (1,) * (x.dim() - 1)
        delta = torch.zeros_like(x, requires_grad=True)
        opt = torch.optim.Adam([delta], lr=self.lr)
        x_adv = x.clone()
        best_loss, done = self.evaluate(x, y)
        best = x.clone()
        y_rep = y.repeat(k)
        for _ in budget.loop(self.steps, "SPSA iterations"):
            if self.early_stop and bool(done.all()):
                break
            v = self._rademacher((k * b, *x.shape[1:]), x.device)  # (k * B, ...)
            base = (x + delta.detach()).repeat(k, *([1] * (x.dim() - 1)))
            lp, _ = self.evaluate(self.clamp(base + self.delta * v), y_rep)
            lm, _ = self.evaluate(self.clamp(base - self.delta * v), y_rep)
            # Eq. (SPSA): g ~= mean_i [(L(x + d v_i) - L(x - d v_i)) / (2 d)] * v_i, v_i ~ Rad.
            coeff = ((lp - lm) / (2 * self.delta)).view(k, b, *([1] * (x.dim() - 1)))
            g = (coeff * v.view(k, *x.shape)).mean(0)
            opt.zero_grad(set_to_none=True)
            delta.grad = -g  # Adam minimises; we ascend the loss
            if self.early_stop:
                delta.grad[done] = 0
            opt.step()
            with torch.no_grad():
                delta.copy_(self.clamp(x + project(delta, self.eps, "linf")) - x)
            x_adv = x + delta.detach()
            loss, wrong = self.evaluate(x_adv, y)
            better = (wrong & ~done) | ((wrong == done) & (loss > best_loss))
            best = torch.where(better.view(view), x_adv, best)
            best_loss = torch.where(better, loss, best_loss)
            done = done | wrong
        return best

    def __repr__(self) -> str:
        return f"SPSA(eps={self.eps}, steps={self.steps}, samples={self.samples}, lr={self.lr})"


class RandomNoise(Attack):
    """Uniform random samples in the ``norm`` ball; the first misclassifying one is kept.

    Args:
        model: the classifier.
        eps: ball radius.
        samples: draws per example.
        norm: "linf" or "l2".
        **base: ``loss``, ``clip``, ``generator``.
    """

    def __init__(
        self, model: nn.Module, *, eps: float, samples: int = 100, norm: str = "linf", **base: Any
    ) -> None:
        super().__init__(model, **base)
        if eps < 0 or samples < 1:
            raise ValueError(f"need eps >= 0 and samples >= 1, got {eps}, {samples}")
        self.eps, self.samples, self.norm = float(eps), int(samples), check_norm(norm)

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        view = (-1,) + (1,) * (x.dim() - 1)
        best = x.clone()
        best_loss, done = self.evaluate(x, y)
        for _ in range(self.samples):
            if bool(done.all()):
                break
            cand = self.clamp(x + random_in_ball(x, self.eps, self.norm, self.generator))
            loss, wrong = self.evaluate(cand, y)
            better = (wrong & ~done) | ((wrong == done) & ~done & (loss > best_loss))
            best = torch.where(better.view(view), cand, best)
            best_loss = torch.where(better, loss, best_loss)
            done = done | wrong
        return best

    def __repr__(self) -> str:
        return f"RandomNoise(eps={self.eps}, samples={self.samples}, norm={self.norm!r})"
