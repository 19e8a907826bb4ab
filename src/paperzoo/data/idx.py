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
from paperzoo.data.layouts import all_files, register_layout

# IDX type codes -> numpy dtypes (big-endian as stored).
_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist"
MNIST_FILES = [
    RemoteFile("train-images-idx3-ubyte.gz", f"{MNIST_URL}/train-images-idx3-ubyte.gz",
               "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
    RemoteFile("train-labels-idx1-ubyte.gz", f"{MNIST_URL}/train-labels-idx1-ubyte.gz",
               "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
    RemoteFile("t10k-images-idx3-ubyte.gz", f"{MNIST_URL}/t10k-images-idx3-ubyte.gz",
               "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
    RemoteFile("t10k-labels-idx1-ubyte.gz", f"{MNIST_URL}/t10k-labels-idx1-ubyte.gz",
               "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
]  # fmt: skip
FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com"
FASHION_FILES = [
    RemoteFile("train-images-idx3-ubyte.gz", f"{FASHION_URL}/train-images-idx3-ubyte.gz",
               "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"),
    RemoteFile("train-labels-idx1-ubyte.gz", f"{FASHION_URL}/train-labels-idx1-ubyte.gz",
               "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"),
    RemoteFile("t10k-images-idx3-ubyte.gz", f"{FASHION_URL}/t10k-images-idx3-ubyte.gz",
               "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"),
    RemoteFile("t10k-labels-idx1-ubyte.gz", f"{FASHION_URL}/t10k-labels-idx1-ubyte.gz",
               "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"),
]  # fmt: skip
DEBIAN_FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")


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
