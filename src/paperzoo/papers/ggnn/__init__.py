"""Gated Graph Sequence Neural Networks (Li et al., ICLR 2016), ``paperzoo reproduce ggnn``:
``config`` (settings, paper numbers, claims), ``training`` (the batched training loops, keepers
and evaluation), ``experiment`` (``GGNNExperiment``: folds, run, plan, merge), declared as
the entry point ``ggnn``. Protocol and results: docs/ggnn.md.
"""

from paperzoo.papers.ggnn.config import (
    BASELINE,
    CLAIMS,
    CONFIGS,
    DEVIATIONS,
    OFFICIAL,
    BaselineSetting,
    Config,
    TaskSetting,
)
from paperzoo.papers.ggnn.experiment import GGNNExperiment

__all__ = [
    "BASELINE",
    "CLAIMS",
    "CONFIGS",
    "DEVIATIONS",
    "OFFICIAL",
    "BaselineSetting",
    "Config",
    "GGNNExperiment",
    "TaskSetting",
]
