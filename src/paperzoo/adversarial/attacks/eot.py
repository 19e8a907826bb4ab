"""Expectation over Transformation: Athalye, Engstrom, Ilyas & Kwok, "Synthesizing Robust
Adversarial Examples", ICML 2018; used against randomised defences in Athalye, Carlini & Wagner,
"Obfuscated Gradients Give a False Sense of Security", ICML 2018, Sec. 4.2.

For a defence that applies a random transformation t ~ T before (or inside) the classifier, the
attacker ascends the expected loss, whose gradient is estimated by the sample mean:

    # Eq. (EOT): grad_x E_{t~T}[L(f(t(x)), y)] = E_{t~T}[grad_x L(f(t(x)), y)]
    #            ~= (1/k) sum_{i=1}^{k} grad_x L(f(t_i(x)), y)
"""

from __future__ import annotations

from torch import Tensor

from paperzoo.adversarial.attacks.base import Attack, AttackWrapper


class EOT(AttackWrapper):
    """Run ``attack`` with gradients averaged over ``samples`` draws of the model's randomness.

    The randomness must be drawn inside the model's forward pass, independently per example (all
    defences in ``paperzoo.adversarial.defenses`` do). With ``batched=True`` the ``samples`` draws
    are one forward pass over the batch repeated ``samples`` times (faster; more memory).
    With ``samples=1`` this is exactly the wrapped attack.

    Args:
        attack: any gradient attack (PGD, FGSM, CW, or another wrapper such as BPDA).
        samples: k, the number of draws per gradient.
        batched: draw the k samples in one forward pass.
    """

    def __init__(self, attack: Attack, *, samples: int, batched: bool = True) -> None:
        super().__init__(attack)
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        self.samples = int(samples)
        self.batched = batched

    def _repeat(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        k = self.samples
        return x.repeat(k, *([1] * (x.dim() - 1))), y.repeat(k)  # (k * B, ...), (k * B,)

    def loss_and_grad(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        k, b = self.samples, len(x)
        if k == 1:
            return self.attack.loss_and_grad(x, y)
        if self.batched:
            loss, grad = self.attack.loss_and_grad(*self._repeat(x, y))
            return loss.view(k, b).mean(0), grad.view(k, *x.shape).mean(0)
        loss_sum, grad_sum = self.attack.loss_and_grad(x, y)
        for _ in range(k - 1):
            loss, grad = self.attack.loss_and_grad(x, y)
            loss_sum, grad_sum = loss_sum + loss, grad_sum + grad
        return loss_sum / k, grad_sum / k

    def evaluate(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Mean loss over k draws; misclassified when most draws misclassify."""
        k, b = self.samples, len(x)
        if k == 1:
            return self.attack.evaluate(x, y)
        loss, wrong = self.attack.evaluate(*self._repeat(x, y))
        return loss.view(k, b).mean(0), wrong.view(k, b).float().mean(0) > 0.5

    def __repr__(self) -> str:
        return f"EOT({self.attack!r}, samples={self.samples})"
