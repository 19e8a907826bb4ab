"""CoordConv (Liu et al., 2018, arXiv:1807.03247) on the generated Not-so-Clevr data set.

``config.py``: the settings of each scale (``Config``, ``CONFIGS``) and the claims (``CLAIMS``);
``training.py``: the data splits, the training loop and the metrics; ``experiment.py``:
``CoordConvExperiment``, which trains the three tasks of Sec. 4 (or one, ``--part
classification`` / ``regression``), evaluates and writes the notes and figures. Protocol,
deviations and measured numbers: docs/coordconv.md.
"""

from paperzoo.papers.coordconv.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.coordconv.experiment import CoordConvExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "CoordConvExperiment"]
