"""Gated Graph Sequence Neural Networks (Li et al., ICLR 2016), ``paperzoo reproduce ggnn``:
``config`` (settings, paper numbers, claims), ``training`` (the batched training loops, keepers
and evaluation), ``experiment`` (``GGNNExperiment``: folds, run, plan, merge). Registered as
``ggnn``. Protocol and results: docs/ggnn.md.
"""

from paperzoo.experiments.base import EXPERIMENTS
from paperzoo.experiments.ggnn.config import (
    BASELINE,
    CLAIMS,
    CONFIGS,
    DEVIATIONS,
    OFFICIAL,
    BaselineSetting,
    Config,
    TaskSetting,
)
from paperzoo.experiments.ggnn.experiment import GGNNExperiment

EXPERIMENTS.register("ggnn")(GGNNExperiment)

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
