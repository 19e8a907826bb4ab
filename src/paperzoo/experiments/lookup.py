"""The papers paperzoo knows, by name: ``EXPERIMENTS``, and ``get_experiment``.

Every paper, the ten of paperzoo's own included, comes through one door: the ``paperzoo.papers``
entry point group of the installed packages (``paperzoo.experiments.plugins``). paperzoo's
pyproject.toml declares its ten there exactly as a researcher's package declares its own. The
group is read on the first look-up in ``EXPERIMENTS`` (``names``, ``get``, ``create``, ``in``),
not when paperzoo is imported, and a paper's module is imported then, once.
"""

from __future__ import annotations

import logging

from paperzoo.experiments.base import Experiment
from paperzoo.experiments.plugins import PluginError, load_plugins, recorded_errors
from paperzoo.registry import Registry

__all__ = ["EXPERIMENTS", "get_experiment", "plugin_errors"]

log = logging.getLogger(__name__)


def _load_papers() -> None:
    load_plugins(EXPERIMENTS)
    if not any(EXPERIMENTS.get(n).__module__.startswith("paperzoo.") for n in EXPERIMENTS.names()):
        log.warning(
            "paperzoo's own papers are not declared here: they are entry points of the installed "
            "paperzoo distribution (pip install -e . in a checkout, not PYTHONPATH=src alone)"
        )


EXPERIMENTS: Registry[Experiment] = Registry("experiment", populate=_load_papers)


def get_experiment(name: str) -> Experiment:
    """The paper ``name``: an instance of its ``Experiment`` subclass (``KeyError`` naming the
    known papers and the closest matches when there is none)."""
    return EXPERIMENTS.create(name)


def plugin_errors() -> list[PluginError]:
    """The papers of installed packages that could not be loaded in this process (the entry point
    group is read first if no look-up has read it yet)."""
    EXPERIMENTS.names()
    return recorded_errors()
