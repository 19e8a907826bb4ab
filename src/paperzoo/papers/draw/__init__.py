"""DRAW (Gregor et al., ICML 2015, Table 2): the binarized-MNIST likelihood bound with attention
and with the full-image read and write.

``config.py``: the settings of each scale (``Config``, ``CONFIGS``), the paper's numbers and the
claims (``CLAIMS``); ``training.py``: each variant's model config, the training loop and the full
run's cost; ``plots.py``: the figures; ``experiment.py``: ``DRAWExperiment`` (data, both models,
the final evaluation and the notes), with the protocol, the deviations and how the quick config
was selected in its docstring. Measured numbers: docs/draw.md.
"""

from paperzoo.papers.draw.config import CLAIMS, CONFIGS, Config
from paperzoo.papers.draw.experiment import DRAWExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "DRAWExperiment"]
