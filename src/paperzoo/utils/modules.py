"""Discovery of a package's submodules (so each paper registers itself from its own file)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def import_submodules(package: ModuleType) -> list[ModuleType]:
    """Import every direct submodule of ``package`` (not starting with ``_``), sorted by name."""
    mods = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            mods.append(importlib.import_module(f"{package.__name__}.{info.name}"))
    return mods
