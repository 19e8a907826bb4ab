"""Generative Adversarial Trainer (Lee, Han and Lee, 2017, arXiv:1705.03387): five classifiers
(no defence, dropout, random noise, FGSM adversarial training, GAT) under FGSM and PGD.

``config.py``: the settings of each scale (``Config``, ``CONFIGS``), the five models and the
claims (``CLAIMS``); ``training.py``: one classifier's training, the clean and attacked
accuracies, the claims read from them and the full run's cost; ``plots.py``: the figures;
``experiment.py``: ``GATExperiment`` (data, the five models, the final evaluation and the notes),
with the protocol, the choice of c_g and the deviations in its docstring. Measured numbers:
docs/gat.md.
"""

from paperzoo.papers.gat.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.gat.experiment import GATExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "GATExperiment"]
