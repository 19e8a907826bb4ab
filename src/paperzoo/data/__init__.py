"""Data sources: real-file loaders (``--data-root``), embedded data, and procedural generators;
batch transforms on image tensors (``data.transforms``).

Importing this package registers every source module in it (each module registers its own
sources in ``DATASETS``).
"""

import paperzoo.data as _pkg
from paperzoo.data.base import DATASETS, DataError, DataInfo, Split, load_dataset
from paperzoo.data.layouts import DataRequired
from paperzoo.data.transforms import as_set, translate
from paperzoo.utils.modules import import_submodules

import_submodules(_pkg)

__all__ = [
    "DATASETS",
    "DataError",
    "DataInfo",
    "DataRequired",
    "Split",
    "as_set",
    "load_dataset",
    "translate",
]
