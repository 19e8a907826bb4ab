"""Adversarial attacks on a common base: ``attack(x, y) -> x_adv`` (inputs in [0, 1] by default)."""

from paperzoo.adversarial.attacks.base import (
    Attack,
    AttackWrapper,
    cross_entropy_loss,
    cw_margin_loss,
    normalize_grad,
    project,
    random_in_ball,
    unwrap_model,
)
from paperzoo.adversarial.attacks.fgsm import FGSM
from paperzoo.adversarial.attacks.pgd import PGD

__all__ = [
    "FGSM",
    "PGD",
    "Attack",
    "AttackWrapper",
    "cross_entropy_loss",
    "cw_margin_loss",
    "normalize_grad",
    "project",
    "random_in_ball",
    "unwrap_model",
]
