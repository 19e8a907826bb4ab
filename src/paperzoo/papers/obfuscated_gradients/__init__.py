"""Obfuscated gradients (Athalye, Carlini & Wagner, ICML 2018, arXiv:1802.00420): four defences
that obfuscate gradients, broken with BPDA and EOT, against PGD adversarial training.

``config.py``: the MNIST part's ``Config``, the CIFAR-10 part's ``CifarConfig``, ``CONFIGS`` and
``CLAIMS``; ``training.py``: training and attacking the models of each part; ``experiment.py``:
``ObfuscatedGradientsExperiment`` (the run, its notes and figure). Protocol, deviations and
measured numbers: docs/obfuscated-gradients.md.
"""

from paperzoo.papers.obfuscated_gradients.config import (
    CLAIMS,
    CONFIGS,
    CifarConfig,
    Config,
)
from paperzoo.papers.obfuscated_gradients.experiment import ObfuscatedGradientsExperiment

__all__ = ["CLAIMS", "CONFIGS", "CifarConfig", "Config", "ObfuscatedGradientsExperiment"]
