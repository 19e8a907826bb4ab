"""Model families; importing this package registers every model in ``MODELS``."""

import paperzoo.models as _pkg
from paperzoo.models.registry import MODELS, create_model, list_models
from paperzoo.utils.modules import import_submodules

import_submodules(_pkg)

__all__ = ["MODELS", "create_model", "list_models"]
