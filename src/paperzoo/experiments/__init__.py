"""One module or package per paper; importing this package registers in ``EXPERIMENTS`` every
experiment built in (a package whose ``__init__`` imports nothing registers from its
``experiment`` submodule), then those that installed packages declare (``plugins``: the
``paperzoo.papers`` entry point group)."""

from importlib import import_module
from importlib.util import find_spec

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

for _module in import_submodules(_pkg):
    if hasattr(_module, "__path__") and find_spec(f"{_module.__name__}.experiment") is not None:
        import_module(f"{_module.__name__}.experiment")
load_plugins(EXPERIMENTS)

__all__ = ["EXPERIMENTS", "SCALES", "ClaimSpec", "Experiment", "Outcome", "RunContext"]
