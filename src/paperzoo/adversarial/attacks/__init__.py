"""Adversarial attacks on a common base: ``attack(x, y) -> x_adv`` (inputs in [0, 1] by default)."""

from typing import TYPE_CHECKING

# ``bpda`` names both a function and its module: bound here, so that the package's attribute is
# the function whichever of the two is imported first (the other names load on first use)
from paperzoo.adversarial.attacks.bpda import BPDA, BPDALayer, BPDAModel, bpda
from paperzoo.utils.modules import lazy_exports

if TYPE_CHECKING:
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

# each name is imported from its module on first use: importing this package (or one of its
# modules, as a paper's config does) imports no attack
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CW": "paperzoo.adversarial.attacks.cw",
        "EOT": "paperzoo.adversarial.attacks.eot",
        "FGSM": "paperzoo.adversarial.attacks.fgsm",
        "PGD": "paperzoo.adversarial.attacks.pgd",
        "SPSA": "paperzoo.adversarial.attacks.spsa",
        "WRM": "paperzoo.adversarial.attacks.wrm",
        "RandomNoise": "paperzoo.adversarial.attacks.spsa",
        "Reparameterize": "paperzoo.adversarial.attacks.reparam",
        "Reparameterized": "paperzoo.adversarial.attacks.reparam",
        "WRMReport": "paperzoo.adversarial.attacks.wrm",
        "Attack": "paperzoo.adversarial.attacks.base",
        "AttackWrapper": "paperzoo.adversarial.attacks.base",
        "cross_entropy_loss": "paperzoo.adversarial.attacks.base",
        "cw_margin_loss": "paperzoo.adversarial.attacks.base",
        "normalize_grad": "paperzoo.adversarial.attacks.base",
        "project": "paperzoo.adversarial.attacks.base",
        "random_in_ball": "paperzoo.adversarial.attacks.base",
        "unwrap_model": "paperzoo.adversarial.attacks.base",
        "wrm_ascent": "paperzoo.adversarial.attacks.wrm",
    },
)
