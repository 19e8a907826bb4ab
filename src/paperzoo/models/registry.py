"""The model registry behind ``paperzoo.create_model``."""

from __future__ import annotations

from torch import nn

from paperzoo.registry import Registry
from paperzoo.utils.modules import import_submodules


def _import_models() -> None:
    """Import every module of ``paperzoo.models`` (named, not imported here: the package imports
    this module): each registers its own model family in ``MODELS``."""
    import_submodules("paperzoo.models")


MODELS: Registry[nn.Module] = Registry("model", populate=_import_models)


def create_model(name: str, **kwargs: object) -> nn.Module:
    """Build the registered model ``name``; unknown keyword arguments raise ``TypeError``."""
    return MODELS.create(name, **kwargs)


def list_models() -> list[str]:
    """Names of all registered models."""
    return MODELS.names()
