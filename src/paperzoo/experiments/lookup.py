"""The papers paperzoo knows, by name: ``EXPERIMENTS``, and ``get_experiment``.

Every paper, the ten of paperzoo's own included, comes through one door: the ``paperzoo.papers``
entry point group of the installed packages (``paperzoo.experiments.plugins``). paperzoo's
pyproject.toml declares its ten there exactly as a researcher's package declares its own. The
group is read on the first look-up in ``EXPERIMENTS`` (``names``, ``get``, ``create``, ``in``),
not when paperzoo is imported, and a paper's module is imported then, once.
"""

from __future__ import annotations

from paperzoo.experiments.base import Experiment
from paperzoo.experiments.plugins import load_plugins
from paperzoo.registry import Registry

__all__ = ["EXPERIMENTS", "get_experiment"]


def _load_papers() -> None:
    load_plugins(EXPERIMENTS)


EXPERIMENTS: Registry[Experiment] = Registry("experiment", populate=_load_papers)


def get_experiment(name: str) -> Experiment:
    """The paper ``name``: an instance of its ``Experiment`` subclass (``KeyError`` naming the
    known papers and the closest matches when there is none)."""
    return EXPERIMENTS.create(name)
