"""paperzoo: ten deep-learning papers, implemented faithfully, tested, and reproduced."""

from paperzoo.models.registry import create_model, list_models
from paperzoo.registry import Registry

__version__ = "0.2.0"

__all__ = ["Registry", "__version__", "create_model", "list_models"]
