"""One module or package per paper; importing this package registers in ``EXPERIMENTS`` every
experiment built in (a paper package's class is in its ``experiment`` module), then those that
installed packages declare (``plugins``: the ``paperzoo.papers`` entry point group)."""

import importlib
import importlib.util

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

for _mod in import_submodules(_pkg):
    # a paper package whose __init__ imports nothing: its class registers in <paper>.experiment
    if hasattr(_mod, "__path__") and importlib.util.find_spec(f"{_mod.__name__}.experiment"):
        importlib.import_module(f"{_mod.__name__}.experiment")
load_plugins(EXPERIMENTS)

__all__ = ["EXPERIMENTS", "SCALES", "ClaimSpec", "Experiment", "Outcome", "RunContext"]
