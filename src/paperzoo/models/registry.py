"""The model registry behind ``paperzoo.create_model``."""

from __future__ import annotations

from torch import nn

from paperzoo.registry import Registry

MODELS: Registry[nn.Module] = Registry("model")


def create_model(name: str, **kwargs: object) -> nn.Module:
    """Build the registered model ``name``; unknown keyword arguments raise ``TypeError``."""
    import paperzoo.models  # noqa: F401  (registers every model family)

    return MODELS.create(name, **kwargs)


def list_models() -> list[str]:
    """Names of all registered models."""
    import paperzoo.models  # noqa: F401

    return MODELS.names()
