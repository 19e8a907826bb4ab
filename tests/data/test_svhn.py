"""SVHN .mat reader: layout, label mapping (10 -> 0) and clear errors on bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.io import savemat

from paperzoo.data import DataError, load_dataset
from paperzoo.data.svhn import read_svhn_mat


def _write(path: Path, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=(32, 32, 3, n), dtype=np.uint8)
    y = rng.integers(1, 11, size=(n, 1)).astype(np.uint8)
    savemat(str(path), {"X": x, "y": y})
    return x, y


def test_reads_the_official_layout(tmp_path: Path) -> None:
    d = tmp_path / "svhn"
    d.mkdir()
    x, y = _write(d / "train_32x32.mat", 7, 0)
    _write(d / "test_32x32.mat", 3, 1)
    split = load_dataset("svhn", data_root=tmp_path)
    assert split.x_train.shape == (7, 3, 32, 32) and split.x_test.shape == (3, 3, 32, 32)
    assert split.info.n_train == 7 and split.num_classes == 10
    # channel c of image i at row r, column k is X[r, k, c, i] / 255
    assert split.x_train[2, 1, 5, 9] == pytest.approx(x[5, 9, 1, 2] / 255.0)
    expected = torch.from_numpy(y.reshape(-1).astype(np.int64) % 10)
    assert torch.equal(split.y_train, expected)
    assert int(split.y_train.max()) <= 9


def test_bad_files_raise_data_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        read_svhn_mat(tmp_path / "nope.mat")
    bad = tmp_path / "bad.mat"
    savemat(str(bad), {"X": np.zeros((32, 32, 3, 4), np.uint8), "y": np.zeros((5, 1), np.uint8)})
    with pytest.raises(DataError, match="bad.mat"):
        read_svhn_mat(bad)
    junk = tmp_path / "junk.mat"
    junk.write_bytes(b"not a mat file")
    with pytest.raises(DataError, match="junk.mat"):
        read_svhn_mat(junk)
    with pytest.raises(DataError, match="missing"):
        load_dataset("svhn", data_root=tmp_path)
