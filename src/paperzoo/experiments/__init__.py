"""One module per paper; importing this package registers in ``EXPERIMENTS`` every experiment
built in; those that installed packages declare (``plugins``: the ``paperzoo.papers`` entry
point group) are loaded on the first look-up in ``EXPERIMENTS``, so that a package's module may
import ``paperzoo.paper`` first, whichever of them a process imports first."""

import paperzoo.experiments as _pkg
from paperzoo.experiments.base import (
    EXPERIMENTS,
    SCALES,
    ClaimSpec,
    Experiment,
    Outcome,
    RunContext,
)
from paperzoo.experiments.plugins import load_plugins
from paperzoo.utils.modules import import_submodules

import_submodules(_pkg)
EXPERIMENTS.populate_later(lambda: load_plugins(EXPERIMENTS))

__all__ = ["EXPERIMENTS", "SCALES", "ClaimSpec", "Experiment", "Outcome", "RunContext"]
