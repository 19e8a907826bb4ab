"""Sinha, Namkoong and Duchi, "Certifying Some Distributional Robustness with Principled
Adversarial Training" (ICLR 2018, arXiv:1710.10571): the 2-D spheres (Sec. 4.1, Figures 1-2) and
MNIST (Sec. 4.2, Figure 3).

``config.py``: the settings of each scale (``Config``, ``CONFIGS``) and the claims (``CLAIMS``);
``geometry.py``: the decision boundary of a 2-D model and the Figure 1 numbers;
``training.py``: the training adversaries, the PGM attack errors, the spheres models with their
restarts and the two parts of the paper; ``plots.py``: the figures; ``experiment.py``:
``WRMExperiment``, which runs both parts (or one, ``--part spheres`` / ``mnist``). Protocol,
deviations and measured numbers: docs/wrm.md.
"""

from paperzoo.papers.wrm.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.wrm.experiment import WRMExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "WRMExperiment"]
