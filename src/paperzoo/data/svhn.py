"""SVHN (Netzer et al., 2011), cropped-digits format: 32x32 RGB house-number digits.

Layout: ``ROOT/svhn/{train,test}_32x32.mat`` as distributed at
http://ufldl.stanford.edu/housenumbers/ (73,257 train / 26,032 test images; the 531,131 "extra"
images are not used). Each ``.mat`` file holds ``X`` (32, 32, 3, N) uint8 and ``y`` (N, 1) with
labels 1..10, where 10 stands for the digit 0; labels are mapped to 0..9. Reading needs SciPy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from paperzoo.data.base import DATASETS, DataError, DataInfo, Split
from paperzoo.data.download import RemoteFile, ensure_files
from paperzoo.data.layouts import PINNED, all_files, register_layout

SVHN_URL = "http://ufldl.stanford.edu/housenumbers"
# The canonical files, checked against the SHA-256 pinned in ``paperzoo.data.layouts.PINNED``
# (tensorflow_datasets' url_checksums/svhn_cropped.txt): one table for downloads and full runs.
SVHN_FILES = [
    RemoteFile(Path(p.path).name, f"{SVHN_URL}/{Path(p.path).name}", p.sha256 or "")
    for p in PINNED["svhn"].files
]
register_layout(
    "svhn",
    what="SVHN",
    layout="DIR/svhn/{train,test}_32x32.mat",
    downloadable=True,
    present=all_files("svhn/train_32x32.mat", "svhn/test_32x32.mat"),
)


def read_svhn_mat(path: str | Path) -> tuple[torch.Tensor, torch.Tensor]:
    """One ``*_32x32.mat`` file as (x (N, 3, 32, 32) float in [0, 1], y (N,) int64 in 0..9)."""
    path = Path(path)
    try:
        from scipy.io import loadmat
        from scipy.io.matlab import MatReadError
    except ImportError as err:  # pragma: no cover - scipy comes with scikit-learn
        raise DataError("reading SVHN's .mat files needs SciPy: pip install scipy") from err
    try:
        mat = loadmat(str(path))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except (MatReadError, OSError, ValueError, TypeError) as err:  # truncated / not a MATLAB file
        raise DataError(f"{path}: cannot read as a MATLAB .mat file ({err})") from err
    if "X" not in mat or "y" not in mat:
        raise DataError(f"{path}: expected variables X and y, found {sorted(mat)}")
    x, y = np.asarray(mat["X"]), np.asarray(mat["y"]).reshape(-1)
    if x.ndim != 4 or x.shape[:3] != (32, 32, 3) or x.shape[3] != len(y):
        raise DataError(
            f"{path}: X has shape {x.shape} and y {y.shape}; expected (32,32,3,N), (N,1)"
        )
    if len(y) and (y.min() < 1 or y.max() > 10):
        raise DataError(f"{path}: labels outside 1..10 (found {y.min()}..{y.max()})")
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(3, 2, 0, 1))).float().div_(255.0)
    yt = torch.from_numpy(y.astype(np.int64) % 10)  # label 10 is the digit 0
    return xt, yt


@DATASETS.register("svhn")
def svhn(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """SVHN cropped digits (73,257 / 26,032) from ``data_root/svhn``."""
    if data_root is None:
        raise DataError("SVHN needs --data-root DIR (files in DIR/svhn/), optionally --download")
    d = ensure_files(data_root / "svhn", SVHN_FILES, download=download, what="SVHN")
    xtr, ytr = read_svhn_mat(d / "train_32x32.mat")
    xte, yte = read_svhn_mat(d / "test_32x32.mat")
    return Split(
        xtr, ytr, xte, yte, info=DataInfo("svhn", str(d), len(xtr), len(xte)), num_classes=10
    )
