"""Data set sizes: the training examples of each data set's standard files (``train_size``), and
the sizes stand-in files declare (a data set's planned steps on files that stand for it).

Synthetic files in a real data set's layout (``tools/synth_data.py``, for a GPU check of a full
config) may hold fewer examples than the data set they stand for (ImageNet: 2 training images a
class instead of about 1,281). An experiment that counts its steps in epochs would then plan a
fraction of the paper's steps, and a ``--max-steps`` estimate would scale the measured step time
by that fraction. So the writer of such files declares, beside them, the sizes of the data set
they stand for, in ``declared_sizes.json`` in the data set's folder::

    {"stands_for": "ILSVRC2012", "train": 1281167, "val": 50000}

and the experiment plans (and trains) its epochs over the declared sizes, cycling over the
files it has. Only stand-in files carry a declaration; their runs are "not the paper's setting"
anyway (their digests and counts are not the pinned ones, ``paperzoo.data.layouts``).
"""

from __future__ import annotations

import json
from pathlib import Path

from paperzoo.data.base import DataError
from paperzoo.utils.io import atomic_write_text

__all__ = ["DECLARED_SIZES", "TRAIN_SIZES", "declare_sizes", "declared_size", "train_size"]

DECLARED_SIZES = "declared_sizes.json"

# Training examples in each data set's standard files, for the ``Experiment.plan`` of experiments
# whose step counts follow from the data (files of another size change the real count).
TRAIN_SIZES = {
    "digits": 1_437, "mnist5k": 4_000, "mnist": 60_000, "fashion-mnist": 60_000,
    "cifar10": 50_000, "cifar100": 50_000, "svhn": 73_257,
}  # fmt: skip


def train_size(dataset: str, n_train: int | None = None) -> int:
    """Training examples of ``dataset``'s standard files, at most ``n_train`` (None: all)."""
    n = TRAIN_SIZES[dataset]
    return n if n_train is None else min(n, n_train)


def declare_sizes(folder: str | Path, stands_for: str, sizes: dict[str, int]) -> Path:
    """Write the declaration into ``folder`` (a data set's folder under ``--data-root``).

    Args:
        folder: the data set's folder, e.g. ``ROOT/imagenet``.
        stands_for: the data set the files stand for, e.g. "ILSVRC2012".
        sizes: examples per split, e.g. {"train": 1281167, "val": 50000}.

    Returns:
        the declaration's path.
    """
    bad = {k: v for k, v in sizes.items() if not isinstance(v, int) or v < 1}
    if bad:
        raise ValueError(f"declared sizes must be positive integers, got {bad}")
    path = Path(folder) / DECLARED_SIZES
    atomic_write_text(path, json.dumps({"stands_for": stands_for, **sizes}, indent=1) + "\n")
    return path


def declared_size(folder: str | Path, split: str) -> int | None:
    """The declared number of examples of ``split`` in ``folder`` (None: no declaration).

    Raises:
        DataError: the declaration is unreadable or gives no positive count for ``split``.
    """
    path = Path(folder) / DECLARED_SIZES
    if not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable size declaration ({err})") from err
    value = entry.get(split) if isinstance(entry, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DataError(f"{path}: no positive integer size for split {split!r}")
    return value
