"""Module discovery and parameter counting."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

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


def count_params(module: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of parameters (shared parameters counted once)."""
    seen = {id(p): p for p in module.parameters() if p.requires_grad or not trainable_only}
    return sum(p.numel() for p in seen.values())
