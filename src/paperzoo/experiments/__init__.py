"""The run machinery: what a paper declares (``base``), how a run is requested, run, judged,
merged and verified. The papers themselves are not here: paperzoo's ten live in
``paperzoo.papers``, and every paper, built in or a researcher's, is found through the
``paperzoo.papers`` entry point group on the first look-up in ``EXPERIMENTS`` (``lookup``).
Importing this package imports no paper."""

from paperzoo.experiments.base import SCALES, ClaimSpec, Experiment, Outcome, RunContext
from paperzoo.experiments.lookup import EXPERIMENTS, get_experiment

__all__ = [
    "EXPERIMENTS",
    "SCALES",
    "ClaimSpec",
    "Experiment",
    "Outcome",
    "RunContext",
    "get_experiment",
]
