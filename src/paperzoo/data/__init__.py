"""Data sources: real-file loaders (``--data-root``), embedded data, and procedural generators;
batch transforms on image tensors (``data.transforms``); ground-truth factor data for the
disentanglement metrics (``data.ground_truth``).

Each source module registers its own sources in ``DATASETS``; they are imported on the first
look-up (``load_dataset``, ``DATASETS.names()``), not when this package is imported.
"""

from paperzoo.data.base import DATASETS, DataError, DataInfo, Split, load_dataset
from paperzoo.data.layouts import DataRequired
from paperzoo.data.transforms import as_set, translate

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
