"""paperzoo: ten deep-learning papers, implemented faithfully, tested, and reproduced.

``create_model`` and ``list_models`` (``paperzoo.models.registry``) are imported on first use, so
that ``import paperzoo`` and the command line's listing import no model code.
"""

from typing import TYPE_CHECKING, Any

from paperzoo.registry import Registry

if TYPE_CHECKING:
    from paperzoo.models.registry import create_model, list_models

__version__ = "0.2.0"

__all__ = ["Registry", "__version__", "create_model", "list_models"]


def __getattr__(name: str) -> Any:
    if name in ("create_model", "list_models"):
        from paperzoo.models import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'paperzoo' has no attribute {name!r}")
