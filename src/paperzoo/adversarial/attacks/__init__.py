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
from paperzoo.adversarial.attacks.bpda import BPDA, BPDALayer, BPDAModel, bpda
from paperzoo.adversarial.attacks.cw import CW
from paperzoo.adversarial.attacks.eot import EOT
from paperzoo.adversarial.attacks.fgsm import FGSM
from paperzoo.adversarial.attacks.pgd import PGD
from paperzoo.adversarial.attacks.reparam import Reparameterize, Reparameterized
from paperzoo.adversarial.attacks.spsa import SPSA, RandomNoise
from paperzoo.adversarial.attacks.wrm import WRM, WRMReport, wrm_ascent

__all__ = [
    "BPDA",
    "CW",
    "EOT",
    "FGSM",
    "PGD",
    "SPSA",
    "WRM",
    "BPDALayer",
    "BPDAModel",
    "RandomNoise",
    "Reparameterize",
    "Reparameterized",
    "WRMReport",
    "bpda",
    "Attack",
    "AttackWrapper",
    "cross_entropy_loss",
    "cw_margin_loss",
    "normalize_grad",
    "project",
    "random_in_ball",
    "unwrap_model",
    "wrm_ascent",
]
