"""WRM's inner maximisation: Sinha, Namkoong & Duchi, "Certifying Some Distributional Robustness
with Principled Adversarial Training", ICLR 2018 (https://arxiv.org/abs/1710.10571).

WRM trains on the robust surrogate loss (Eq. 5 / Algorithm 1)

    phi_gamma(theta; z0) = sup_z  l(theta; z) - gamma * ||z - z0||_2^2,

the Lagrangian relaxation of the worst case over a Wasserstein ball with transport cost
c(z, z0) = ||z - z0||_2^2. When gamma exceeds the smoothness constant of z -> l(theta; z) the
objective is strongly concave in z, so gradient ascent finds the unique maximiser T(theta; z0).

Step sizes follow the authors' TensorFlow code (``attacks_tf.wrm``): it ascends the rescaled
objective G(z) = F(z) / (2 gamma) = l(z) / (2 gamma) - ||z - z0||^2 / 2 with one step of size 1
from z0 followed by 15 steps of size 1 / sqrt(t + 2), t = 0..14. Here that is ``steps=16`` steps
of size ``alpha_k = 1 / sqrt(k + 1)``, k = 0..15:

    z_{k+1} = z_k + alpha_k * (grad_z l(z_k) / (2 gamma) - (z_k - z0))        (ascent on G)

For a loss that is linear in z the first step (size 1) lands exactly on the maximiser
z0 + grad l / (2 gamma); curvature of l is corrected by the following, shrinking steps.

Deviations / choices:
* ``clip`` defaults to ``None`` (no box), as in the official code, which never clips the WRM
  points even on MNIST; the theory takes Z = R^d. With a ``clip`` box each iterate is projected
  onto it (projected gradient ascent on the same objective, still a valid maximisation over the
  box) and the convergence report uses the projected-gradient norm.
* The official code runs the ascent in the model's training mode; here (as for every attack) the
  model is in eval mode; the WRM networks have no dropout or batch-norm, so this is the same.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, running
from paperzoo.engine import budget

log = logging.getLogger(__name__)

StepSize = float | Callable[[int], float] | None
LossAndGrad = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]


def official_step_size(k: int) -> float:
    """alpha_k = 1 / sqrt(k + 1): the authors' schedule on the rescaled objective (k from 0)."""
    return 1.0 / math.sqrt(k + 1)


def _sqnorm(t: Tensor) -> Tensor:
    """Per-example squared l2 norm. Shapes: (B, ...) -> (B,)"""
    return t.flatten(1).pow(2).sum(1)


@dataclass
class WRMReport:
    """What one ascent found, per example, plus its convergence diagnostics.

    Fields are (B,) tensors except ``objective`` (T, B): the penalised objective
    l(z_k) - gamma ||z_k - z0||^2 at the iterates z_0 = z0, z_1, ... (and at the returned point
    when the final evaluation ran).
    """

    gamma: float
    phi: Tensor  # l(z*) - gamma ||z* - z0||^2: the robust surrogate phi_gamma at each z0
    loss: Tensor  # l(theta; z*): the loss at the adversarial point
    rho: Tensor  # ||z* - z0||^2: the transport cost of each point
    grad_norm: Tensor  # ||grad_z (l - gamma ||z - z0||^2)|| at z* (projected if clipped)
    loss_grad_norm: Tensor  # ||grad_z l(z*)||: the scale the residual grad_norm is compared with
    objective: Tensor  # (T, B) penalised objective along the ascent

    def relative_grad_norm(self) -> float:
        """sum grad_norm / sum (||grad l(z*)|| + 2 gamma ||z* - z0||): the stationarity residual
        relative to the two gradients that cancel at a maximiser (0 exact, << 1 converged; summed
        over the batch so that points with vanishing gradients do not divide by zero)."""
        scale = self.loss_grad_norm + 2 * self.gamma * self.rho.sqrt()
        return (self.grad_norm.sum() / scale.sum().clamp_min(1e-12)).item()

    def summary(self) -> dict[str, float]:
        """Batch means (and the worst gradient norm), for logs and results.json."""
        return {
            "gamma": self.gamma,
            "phi": self.phi.mean().item(),
            "loss": self.loss.mean().item(),
            "rho": self.rho.mean().item(),
            "grad_norm_mean": self.grad_norm.mean().item(),
            "grad_norm_max": self.grad_norm.max().item(),
            "rel_grad_norm": self.relative_grad_norm(),
        }

    @staticmethod
    def cat(reports: list[WRMReport]) -> WRMReport:
        """Concatenate the reports of consecutive batches (same gamma and number of steps)."""
        if not reports:
            raise ValueError("no reports to concatenate")
        return WRMReport(
            gamma=reports[0].gamma,
            phi=torch.cat([r.phi for r in reports]),
            loss=torch.cat([r.loss for r in reports]),
            rho=torch.cat([r.rho for r in reports]),
            grad_norm=torch.cat([r.grad_norm for r in reports]),
            loss_grad_norm=torch.cat([r.loss_grad_norm for r in reports]),
            objective=torch.cat([r.objective for r in reports], dim=1),
        )


def wrm_ascent(
    loss_and_grad: LossAndGrad,
    x: Tensor,
    y: Tensor,
    *,
    gamma: float,
    steps: int = 16,
    step_size: StepSize = None,
    clip: tuple[float, float] | None = None,
    report: bool = True,
) -> tuple[Tensor, WRMReport | None]:
    """Maximise l(z) - gamma ||z - x||^2 over z by gradient ascent, for each example.

    Args:
        loss_and_grad: ``(z, y) -> (per-example loss (B,), d(sum loss)/dz)``.
        x: the original points z0.
        y: labels (held fixed: the transport cost is infinite for a change of label).
        gamma: the Lagrange multiplier (penalty) gamma > 0.
        steps: number of ascent steps (16 = the official initial step plus 15).
        step_size: step on the rescaled objective F / (2 gamma): ``None`` for the official
            1 / sqrt(k + 1), a constant, or ``k -> alpha_k``.
        clip: project every iterate onto this box (``None``: unconstrained, as in the paper).
        report: evaluate the last iterate too (one extra forward/backward) and return a
            ``WRMReport``. The returned point is then the last iterate unless the objective fell
            along the way (then the best iterate), and never worse than x itself, so
            phi >= l(x) by construction. With ``False`` the last iterate is returned, as in the
            official code, and the report is ``None``.

    Returns:
        ``(z*, report)``; z* is detached.

    Shapes:
        x: (B, ...); y: (B,) -> z*: (B, ...)
    """
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    alpha = _schedule(step_size)
    x = x.detach()
    z = x.clone()
    objective: list[Tensor] = []
    best: _Best | None = _Best() if report else None
    for k in budget.loop(steps, "WRM ascent iterations"):  # (--max-steps: capped, timed)
        loss, g = loss_and_grad(z, y)
        delta = z - x
        objective.append(loss - gamma * _sqnorm(delta))
        if best is not None:
            best.update(z, loss, objective[-1], g, delta, gamma, clip)
        # Ascent on G = l / (2 gamma) - ||z - x||^2 / 2:  z <- z + alpha_k * grad G(z)
        z = z + alpha(k) * (g / (2 * gamma) - delta)
        if clip is not None:
            z = z.clamp(*clip)
    z = z.detach()
    if best is None:
        return z, None
    loss, g = loss_and_grad(z, y)
    delta = z - x
    objective.append(loss - gamma * _sqnorm(delta))
    best.update(z, loss, objective[-1], g, delta, gamma, clip)
    best.finish()
    rep = WRMReport(
        gamma=float(gamma),
        phi=best.obj.detach(),
        loss=best.loss.detach(),
        rho=_sqnorm(best.z - x).detach(),
        grad_norm=best.grad_norm.detach(),
        loss_grad_norm=best.loss_grad_norm.detach(),
        objective=torch.stack(objective).detach(),
    )
    return best.z.detach(), rep


class _Best:
    """Running choice of the iterate to return, per example.

    A later iterate replaces the current choice unless its penalised objective is lower by more
    than float32 round-off (``_TOL`` relative), so a converged ascent returns its last iterate; if
    the choice ends below the objective at the start z0 = x, the start is returned, so
    phi >= l(x) holds exactly.
    """

    _TOL = 1e-5

    def __init__(self) -> None:
        self.z = self.loss = self.obj = self.grad_norm = self.loss_grad_norm = torch.empty(0)
        self.start: tuple[Tensor, ...] | None = None

    def update(
        self,
        z: Tensor,
        loss: Tensor,
        obj: Tensor,
        g: Tensor,
        delta: Tensor,
        gamma: float,
        clip: tuple[float, float] | None,
    ) -> None:
        grad_f = g - 2 * gamma * delta  # grad_z [l(z) - gamma ||z - x||^2]
        if clip is not None:
            # Gradient mapping of the box-constrained problem (0 exactly at a constrained maximiser).
            step = 1.0 / (2 * gamma)
            grad_f = ((z + step * grad_f).clamp(*clip) - z) / step
        gn = grad_f.flatten(1).norm(dim=1)
        lgn = g.flatten(1).norm(dim=1)
        if self.start is None:
            self.start = (z, loss, obj, gn, lgn)
            self.z, self.loss, self.obj, self.grad_norm, self.loss_grad_norm = self.start
            return
        self._take(obj >= self.obj - self._TOL * (1 + self.obj.abs()), z, loss, obj, gn, lgn)

    def finish(self) -> None:
        assert self.start is not None
        z, loss, obj, gn, lgn = self.start
        self._take(obj > self.obj, z, loss, obj, gn, lgn)

    def _take(
        self, mask: Tensor, z: Tensor, loss: Tensor, obj: Tensor, gn: Tensor, lgn: Tensor
    ) -> None:
        self.z = torch.where(mask.view(-1, *([1] * (z.dim() - 1))), z, self.z)
        self.loss = torch.where(mask, loss, self.loss)
        self.obj = torch.where(mask, obj, self.obj)
        self.grad_norm = torch.where(mask, gn, self.grad_norm)
        self.loss_grad_norm = torch.where(mask, lgn, self.loss_grad_norm)


def _schedule(step_size: StepSize) -> Callable[[int], float]:
    if step_size is None:
        return official_step_size
    if callable(step_size):
        return step_size
    if not step_size > 0:
        raise ValueError(f"step_size must be > 0, got {step_size}")
    const = float(step_size)
    return lambda k: const


class WRM(Attack):
    """The WRM adversary: z* = argmax_z l(theta; z) - gamma ||z - x||_2^2 (Sinha et al. 2018).

    ``attack(x, y)`` returns z*; ``attack.maximize(x, y)`` also returns a ``WRMReport`` (phi_gamma,
    transport cost, loss at z*, final gradient norm of the penalised objective). The report of the
    last call is kept in ``attack.last_report`` (when ``report=True``) and logged at DEBUG level.

    WRM training is adversarial training with this attack:
    ``adversarial_loss_fn(lambda m: WRM(m, gamma=2.0))``.

    Args:
        model: the classifier (smooth activations such as ELU for the guarantee to apply).
        gamma: the penalty gamma > 0; the paper uses 2 on the 2-D data and 0.04 * C2 on MNIST
            (C2 = the mean l2 norm of the inputs). The official code's ``eps`` is 1 / (2 gamma).
        steps: ascent steps (16 = the official code's initial step plus 15 iterations).
        step_size: see ``wrm_ascent`` (``None``: the official 1 / sqrt(k + 1)).
        report: compute the convergence report after the ascent (one extra forward/backward)
            and return the best iterate (see ``wrm_ascent``); ``False`` for training, where only
            the last iterate is needed (as in the official code).
        **base: ``loss`` (default "ce"), ``clip`` (default ``None``: unconstrained, as the official
            code), ``generator`` of ``Attack``.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        gamma: float,
        steps: int = 16,
        step_size: StepSize = None,
        report: bool = True,
        **base: Any,
    ) -> None:
        base.setdefault("clip", None)
        super().__init__(model, **base)
        if not gamma > 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        _schedule(step_size)  # validate
        self.gamma = float(gamma)
        self.steps = int(steps)
        self.step_size = step_size
        self.report = report
        self.last_report: WRMReport | None = None

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        z, rep = wrm_ascent(
            self.loss_and_grad,
            x,
            y,
            gamma=self.gamma,
            steps=self.steps,
            step_size=self.step_size,
            clip=self.clip,
            report=self.report,
        )
        self.last_report = rep
        if rep is not None and log.isEnabledFor(logging.DEBUG):
            log.debug("WRM ascent: %s", rep.summary())
        return z

    def maximize(self, x: Tensor, y: Tensor) -> tuple[Tensor, WRMReport]:
        """``(z*, report)`` for a batch, in eval mode (the caller's mode is restored).

        Shapes:
            x: (B, ...); y: (B,) -> z*: (B, ...)
        """
        if len(x) != len(y):
            raise ValueError(f"x and y differ in length: {len(x)} vs {len(y)}")
        with running(self):  # eval mode; restores each submodule's own mode afterwards
            z, rep = wrm_ascent(
                self.loss_and_grad,
                x.detach(),
                y.detach(),
                gamma=self.gamma,
                steps=self.steps,
                step_size=self.step_size,
                clip=self.clip,
                report=True,
            )
        assert rep is not None
        self.last_report = rep
        return z, rep

    def __repr__(self) -> str:
        return (
            f"WRM(gamma={self.gamma}, steps={self.steps}, step_size={self.step_size!r}, "
            f"loss={self.loss!r}, clip={self.clip})"
        )
