"""Module discovery and parameter counting."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from torch import nn


def import_submodules(package: ModuleType | str) -> list[ModuleType]:
    """Import every direct submodule of ``package`` (not starting with ``_``), sorted by name.

    ``package`` may be given by name (``"paperzoo.data"``): a registry that fills itself from a
    package then names the package instead of importing it.
    """
    if isinstance(package, str):
        package = importlib.import_module(package)
    mods = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            mods.append(importlib.import_module(f"{package.__name__}.{info.name}"))
    return mods


def lazy_exports(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` (PEP 562) of ``package``, which exports each name of
    ``where`` from the module ``where[name]`` names, imported on first use (then kept in the
    package's namespace): importing the package, or one of its modules, imports no other.

    In the package's ``__init__``: ``__getattr__, __dir__ = lazy_exports(__name__, {...})``.
    """
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(where))

    return getattr_, dir_


def count_params(module: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of parameters (shared parameters counted once)."""
    seen = {id(p): p for p in module.parameters() if p.requires_grad or not trainable_only}
    return sum(p.numel() for p in seen.values())
