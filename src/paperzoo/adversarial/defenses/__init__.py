"""Defences against adversarial examples, as ``nn.Module`` wrappers (and PGD adversarial training).

Shattered gradients: ``ThermometerEncoding``, ``BitDepthReduction`` (inside an
``InputTransformDefense``). Stochastic gradients: ``RandomResizePad``,
``StochasticActivationPruning`` (``FixedDraw`` freezes their randomness for a fixed-draw attack). The defence that holds: ``pgd_adversarial_training``.
"""

from paperzoo.adversarial.defenses.adversarial_training import pgd_adversarial_training
from paperzoo.adversarial.defenses.base import InputTransformDefense
from paperzoo.adversarial.defenses.quantization import BitDepthReduction
from paperzoo.adversarial.defenses.randomization import FixedDraw, RandomResizePad
from paperzoo.adversarial.defenses.sap import StochasticActivationPruning, add_activation_pruning
from paperzoo.adversarial.defenses.thermometer import ThermometerEncoding

__all__ = [
    "BitDepthReduction",
    "FixedDraw",
    "InputTransformDefense",
    "RandomResizePad",
    "StochasticActivationPruning",
    "ThermometerEncoding",
    "add_activation_pruning",
    "pgd_adversarial_training",
]
