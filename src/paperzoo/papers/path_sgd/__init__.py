"""Path-SGD (Neyshabur, Salakhutdinov and Srebro, 2015, arXiv:1506.02617), Section 6: Path-SGD
against SGD and AdaGrad from a balanced and an unbalanced initialisation.

``config.py``: the settings of each scale (``Config``, ``CONFIGS``) and the claims (``CLAIMS``);
``training.py``: the data preparation, one grid run, the invariance pair and the metrics;
``experiment.py``: ``PathSGDExperiment`` (the grid, the step-size choice, the final evaluation,
notes and figures). The optimizer itself: ``paperzoo.optim.PathSGD``. Protocol, deviations and
measured numbers: docs/path-sgd.md.
"""

from paperzoo.papers.path_sgd.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.path_sgd.experiment import PathSGDExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "PathSGDExperiment"]
