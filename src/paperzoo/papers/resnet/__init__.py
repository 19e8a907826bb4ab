"""He, Zhang, Ren and Sun, "Deep Residual Learning for Image Recognition" (CVPR 2016,
arXiv:1512.03385): the degradation problem and its residual solution (Fig. 1, Fig. 6), and the
sizes of Table 6 and Table 1.

``config.py``: the settings of each scale (``Config``, ``CONFIGS``), the paper's Table 6 test
errors and the claims (``CLAIMS``); ``training.py``: the data, the augmented batches, the
learning-rate schedule, the training and evaluation of one net, the sharing of the nets over
torchrun processes and the architecture sizes; ``experiment.py``: ``ResNetExperiment``, which
trains the plain and residual nets, measures the claims and writes the notes and the figure.
Protocol, deviations and measured numbers: docs/resnet.md.
"""

from paperzoo.papers.resnet.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.resnet.experiment import ResNetExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "ResNetExperiment"]
