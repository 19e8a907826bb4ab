"""MNIST and Fashion-MNIST from the IDX files (LeCun's format), optionally gzipped.

Layout: ``ROOT/mnist/`` and ``ROOT/fashion-mnist/`` holding
``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``. Without ``--data-root`` Fashion-MNIST is
also found where Debian's ``dataset-fashion-mnist`` package installs it.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from paperzoo.data.base import DATASETS, DataError, DataInfo, Split
from paperzoo.data.download import RemoteFile, ensure_files
from paperzoo.data.layouts import DEBIAN_FASHION_DIR, PINNED, all_files, register_layout

# IDX type codes -> numpy dtypes (big-endian as stored).
_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist"
FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com"


def _remote(name: str, url: str) -> list[RemoteFile]:
    """The files of ``name`` to download: the canonical .gz files, checked against the SHA-256
    pinned in ``paperzoo.data.layouts.PINNED`` (one table for downloads and full runs)."""
    return [
        RemoteFile(Path(p.path).name, f"{url}/{Path(p.path).name}", p.sha256 or "")
        for p in PINNED[name].files
    ]


MNIST_FILES = _remote("mnist", MNIST_URL)
FASHION_FILES = _remote("fashion-mnist", FASHION_URL)


def idx_count(path: str | Path) -> int:
    """The number of examples in an IDX file (``.gz`` or raw): its first dimension, read from the
    header alone (8 bytes), so checking a release's counts costs nothing.

    Raises:
        DataError: not an IDX file (bad magic number or truncated header).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            head = f.read(8)
    except (OSError, EOFError) as err:
        raise DataError(f"{path}: cannot read ({err})") from err
    if len(head) < 8 or head[0] or head[1] or head[2] not in _DTYPES or head[3] < 1:
        raise DataError(f"{path}: not an IDX file (header {head.hex()})")
    return struct.unpack(">I", head[4:8])[0]


def _idx_present(sub: str) -> Callable[[Path], bool]:
    stems = [f"{p}-{k}-ubyte" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")]
    return all_files(*(f"{sub}/{s}.gz|{sub}/{s}" for s in stems))


for _name, _what in (("mnist", "MNIST"), ("fashion-mnist", "Fashion-MNIST")):
    register_layout(
        _name,
        what=_what,
        layout=f"DIR/{_name}/{{train,t10k}}-{{images-idx3,labels-idx1}}-ubyte[.gz]",
        downloadable=True,
        present=_idx_present(_name),
        count=idx_count,  # checked against the release's 60,000 / 10,000
    )


_KIND_NDIM = {"images": 3, "labels": 1}  # MNIST-format files: idx3 images, idx1 labels


def read_idx(path: str | Path, kind: str | None = None) -> np.ndarray:
    """Parse one IDX file (``.gz`` or raw) into an array, checking magic number and size.

    Args:
        path: the file.
        kind: ``"images"`` or ``"labels"`` to also check that the magic number is of that kind
            (an idx3 image file or an idx1 label file), so that swapped files say so.
    """
    path = Path(path)
    if kind is not None and kind not in _KIND_NDIM:
        raise ValueError(f"kind must be 'images', 'labels' or None, got {kind!r}")
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError; truncated gzip: EOFError
        raise DataError(f"{path}: cannot read ({err})") from err
    if len(raw) < 4:
        raise DataError(f"{path}: too short to be an IDX file ({len(raw)} bytes)")
    zero, dtype_code, ndim = raw[0] << 8 | raw[1], raw[2], raw[3]
    if zero != 0 or dtype_code not in _DTYPES or ndim < 1:
        raise DataError(f"{path}: bad IDX magic number {raw[:4].hex()}")
    if kind is not None and ndim != _KIND_NDIM[kind]:
        found = {3: "an image file (idx3)", 1: "a label file (idx1)"}.get(
            ndim, f"an idx{ndim} file"
        )
        raise DataError(
            f"{path}: expected {'an image file (idx3)' if kind == 'images' else 'a label file (idx1)'}"
            f", but its magic number {raw[:4].hex()} says {found}"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"{path}: truncated IDX header")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_DTYPES[dtype_code])
    expected = int(np.prod(dims)) * dtype.itemsize
    if len(raw) - header != expected:
        raise DataError(
            f"{path}: expected {expected} data bytes for shape {dims}, found {len(raw) - header} "
            "(truncated or corrupt file)"
        )
    return (
        np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims).astype(dtype.newbyteorder("="))
    )


def _find(directory: Path, stem: str) -> Path:
    for name in (f"{stem}.gz", stem):
        if (directory / name).exists():
            return directory / name
    raise DataError(f"{directory}: missing {stem}[.gz]")


def load_idx_split(directory: Path, name: str) -> Split:
    """Read the four IDX files of an MNIST-format data set in ``directory``."""
    parts = []
    for prefix in ("train", "t10k"):
        images = read_idx(_find(directory, f"{prefix}-images-idx3-ubyte"), kind="images")
        labels = read_idx(_find(directory, f"{prefix}-labels-idx1-ubyte"), kind="labels")
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise DataError(
                f"{directory}: {prefix} images {images.shape} and labels {labels.shape} disagree"
            )
        if images.shape[1:] != (28, 28):
            h, w = images.shape[1:]
            raise DataError(
                f"{_find(directory, f'{prefix}-images-idx3-ubyte')}: images are {h} x {w}, "
                f"expected 28 x 28 (an MNIST-format file)"
            )
        if len(labels) and (labels.min() < 0 or labels.max() > 9):
            raise DataError(
                f"{_find(directory, f'{prefix}-labels-idx1-ubyte')}: labels outside 0..9 "
                f"(found {labels.min()}..{labels.max()})"
            )
        parts.append(torch.from_numpy(images.copy()).float().div_(255.0).unsqueeze(1))
        parts.append(torch.from_numpy(labels.astype(np.int64)))
    info = DataInfo(name, str(directory), len(parts[0]), len(parts[2]))
    return Split(*parts, info=info, num_classes=10)


def _root_dir(data_root: Path | None, sub: str, what: str) -> Path:
    if data_root is None:
        raise DataError(
            f"{what} needs --data-root DIR (files in DIR/{sub}/), optionally --download"
        )
    return data_root / sub


@DATASETS.register("mnist")
def mnist(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """The full MNIST (60k/10k) from ``data_root/mnist``."""
    d = _root_dir(data_root, "mnist", "MNIST")
    return load_idx_split(ensure_files(d, MNIST_FILES, download=download, what="MNIST"), "mnist")


@DATASETS.register("fashion-mnist")
def fashion_mnist(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """Fashion-MNIST (60k/10k) from ``data_root/fashion-mnist``, else Debian's copy if installed."""
    if data_root is None and DEBIAN_FASHION_DIR.is_dir():
        return load_idx_split(DEBIAN_FASHION_DIR, "fashion-mnist")
    d = _root_dir(data_root, "fashion-mnist", "Fashion-MNIST")
    files = ensure_files(d, FASHION_FILES, download=download, what="Fashion-MNIST")
    return load_idx_split(files, "fashion-mnist")
