"""One module per paper; importing this package registers every experiment in ``EXPERIMENTS``."""

import paperzoo.experiments as _pkg
from paperzoo.experiments.base import (
    EXPERIMENTS,
    SCALES,
    ClaimSpec,
    Experiment,
    Outcome,
    RunContext,
)
from paperzoo.utils.modules import import_submodules

import_submodules(_pkg)

__all__ = ["EXPERIMENTS", "SCALES", "ClaimSpec", "Experiment", "Outcome", "RunContext"]
