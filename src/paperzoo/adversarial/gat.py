"""Generative Adversarial Trainer (Lee, Han & Lee, 2017, "Generative Adversarial Trainer: Defense
to Adversarial Perturbations with GAN", arXiv:1705.03387).

A generator ``G`` reads the gradient of the classifier's loss with respect to the input,
``Delta = d CE(f(x), y) / dx``, and outputs a perturbation ``G(Delta)``. The two networks are trained
alternately:

    generator:  min_G  -CE(f(x + G(Delta)), y) + c_g * ||G(Delta)||_2^2          (L_G)
    classifier: min_f  alpha * CE(f(x), y) + (1 - alpha) * CE(f(x + G(Delta)), y)  (L_f)

Choices the paper leaves open, made here and documented:

* the generator sees the gradient rescaled per example to unit l_inf norm (raw input gradients
  shrink by orders of magnitude as the classifier trains; the direction is what carries the
  information, as in FGSM);
* the generator's output is ``scale * tanh(.)``, so every pixel of the perturbation is bounded by
  ``scale`` (the c_g penalty then decides how much of that budget is used);
* ``x + G(Delta)`` is clamped to the valid input box (``clip``) before the classifier sees it;
* ``||.||_2^2`` is the per-example squared l2 norm, averaged over the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import unwrap_model


class PerturbationGenerator(nn.Module):
    """Gradient image -> perturbation: 3x3 conv-ReLU stack, 3x3 conv, ``scale * tanh``.

    Args:
        in_chans: channels of the image (and of its gradient).
        hidden: channels of the hidden convolutions.
        scale: l_inf bound of the output perturbation.

    Shapes:
        grad: (B, C, H, W) -> (B, C, H, W) with every entry in [-scale, scale]
    """

    def __init__(self, *, in_chans: int = 1, hidden: Sequence[int] = (32, 32), scale: float = 0.3):
        super().__init__()
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        layers: list[nn.Module] = []
        width = in_chans
        for h in hidden:
            layers += [nn.Conv2d(width, h, 3, padding=1), nn.ReLU()]
            width = h
        layers.append(nn.Conv2d(width, in_chans, 3, padding=1))
        self.net = nn.Sequential(*layers)
        self.scale = float(scale)

    def forward(self, grad: Tensor) -> Tensor:
        if grad.dim() != 4:
            raise ValueError(f"expected a gradient image (B, C, H, W), got {tuple(grad.shape)}")
        peak = grad.detach().abs().flatten(1).amax(1).clamp_min(1e-12).view(-1, 1, 1, 1)
        return self.scale * torch.tanh(self.net(grad / peak))  # bounded by construction


def input_gradient(classifier: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """``d CE(f(x), y) / dx`` per example (sum over the batch), without touching parameter grads.

    The classifier runs in eval mode; its own train/eval mode is restored afterwards.

    Shapes:
        x: (B, ...); y: (B,) -> (B, ...)
    """
    was_training = classifier.training
    classifier.eval()
    try:
        xg = x.detach().requires_grad_(True)
        with torch.enable_grad():
            loss = F.cross_entropy(classifier(xg), y, reduction="sum")
            (grad,) = torch.autograd.grad(loss, xg)
    finally:
        classifier.train(was_training)
    return grad.detach()


@dataclass(frozen=True)
class GATConfig:
    alpha: float = 0.5  # weight of the clean loss in L_f (paper: 0.5)
    c_g: float = 0.1  # weight of the squared-l2 perturbation penalty in L_G
    clip: tuple[float, float] | None = (0.0, 1.0)  # valid input box of x + G(Delta)

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.c_g < 0:
            raise ValueError(f"c_g must be >= 0, got {self.c_g}")


class GenerativeAdversarialTrainer:
    """Alternating generator / classifier updates; ``step`` is a manual ``Trainer`` loss function.

    Args:
        generator: maps input gradients to perturbations (e.g. ``PerturbationGenerator``).
        generator_optimizer: optimizer over the generator's parameters only.
        classifier_optimizer: optimizer over the classifier's parameters only.
        config: alpha, c_g and the input box.
    """

    def __init__(
        self,
        *,
        generator: nn.Module,
        generator_optimizer: torch.optim.Optimizer,
        classifier_optimizer: torch.optim.Optimizer,
        config: GATConfig = GATConfig(),
    ) -> None:
        self.generator = generator
        self.gen_opt = generator_optimizer
        self.clf_opt = classifier_optimizer
        self.config = config

    def perturb(self, classifier: nn.Module, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """(x + G(Delta) clamped to the box, G(Delta)); differentiable with respect to G."""
        delta = self.generator(input_gradient(unwrap_model(classifier), x, y))
        x_adv = x + delta
        if self.config.clip is not None:
            x_adv = x_adv.clamp(*self.config.clip)
        return x_adv, delta

    def generator_step(self, classifier: nn.Module, x: Tensor, y: Tensor) -> dict[str, Tensor]:
        """One update of G on L_G; the classifier's parameters and grads are left untouched.
        Returns its metrics as detached 0-dim tensors on the batch's device (``float()`` reads
        one; nothing is read here, so a training loop need not wait for the device each step)."""
        x_adv, delta = self.perturb(classifier, x, y)
        fooling = F.cross_entropy(classifier(x_adv), y)
        penalty = delta.pow(2).flatten(1).sum(1).mean()
        loss_g = -fooling + self.config.c_g * penalty  # L_G
        params = [p for p in self.generator.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss_g, params)
        self.gen_opt.zero_grad(set_to_none=True)
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        self.gen_opt.step()
        return {
            "gen_loss": loss_g.detach(),
            "gen_fooling_ce": fooling.detach(),
            "gen_l2": delta.detach().flatten(1).norm(dim=1).mean(),
            "gen_linf": delta.detach().abs().flatten(1).amax(1).mean(),
        }

    def classifier_step(self, classifier: nn.Module, x: Tensor, y: Tensor) -> dict[str, Tensor]:
        """One update of the classifier on L_f with G's current perturbations (G frozen); its
        metrics as ``generator_step``'s."""
        with torch.no_grad():
            x_adv, _ = self.perturb(classifier, x, y)
        a = self.config.alpha
        logits_clean, logits_adv = classifier(torch.cat([x, x_adv])).split(len(x))
        ce_clean = F.cross_entropy(logits_clean, y)
        ce_adv = F.cross_entropy(logits_adv, y)
        loss = a * ce_clean + (1.0 - a) * ce_adv  # L_f
        self.clf_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.clf_opt.step()
        return {
            "loss": loss.detach(),
            "acc": (logits_clean.detach().argmax(1) == y).float().mean(),
            "adv_acc": (logits_adv.detach().argmax(1) == y).float().mean(),
        }

    def step(self, classifier: nn.Module, batch: tuple[Tensor, Tensor]) -> dict[str, Tensor]:
        """Generator update, then classifier update, on the same batch."""
        x, y = batch[0], batch[1]
        return {**self.generator_step(classifier, x, y), **self.classifier_step(classifier, x, y)}
