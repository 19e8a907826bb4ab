"""CIFAR-10 and CIFAR-100 from the python-pickle batches, and the ResNet paper's augmentation.

Layout under ``--data-root DIR`` (as distributed by the CIFAR authors):

* ``DIR/cifar-10-batches-py/{data_batch_1..5,test_batch}`` (50,000 / 10,000 images, 10 classes);
* ``DIR/cifar-100-python/{train,test}`` (50,000 / 10,000 images, 100 fine classes).

The batches are Python pickles. They are read by ``parse_pickle``, a small interpreter of the
pickle opcodes (decoded by ``pickletools.genops``, which executes nothing) that builds only dicts,
lists, tuples, strings, numbers and numpy arrays of plain dtypes; any other global or opcode is
rejected, so a malicious file cannot run code. With ``download=True`` the official tarball is
fetched, checked against its SHA-256 and extracted (tar members restricted to plain files).

Augmentation (He et al. 2016, §4.2): "4 pixels are padded on each side, and a 32x32 crop is
randomly sampled from the padded image or its horizontal flip", implemented on batched tensors
with an explicit ``torch.Generator`` (``random_crop_flip``).
"""

from __future__ import annotations

import logging
import pickletools
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from paperzoo.data.base import DATASETS, DataError, DataInfo, Split
from paperzoo.data.download import RemoteFile, download_file
from paperzoo.data.layouts import all_files, register_layout
from paperzoo.engine.transfer import to_device
from paperzoo.utils.io import sha256_file

log = logging.getLogger(__name__)

CIFAR_URL = "https://www.cs.toronto.edu/~kriz"
# SHA-256 of the official archives, for --download (CIFAR-10: the value pinned by Keras'
# keras/datasets/cifar10.py; CIFAR-100: by Keras' keras/src/datasets/cifar100.py and
# torchvision's prototype cifar.py). The extracted batches a run reads are checked against the
# MD5 pinned in ``paperzoo.data.layouts.PINNED``.
CIFAR10_ARCHIVE = RemoteFile(
    "cifar-10-python.tar.gz",
    f"{CIFAR_URL}/cifar-10-python.tar.gz",
    "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
)
CIFAR100_ARCHIVE = RemoteFile(
    "cifar-100-python.tar.gz",
    f"{CIFAR_URL}/cifar-100-python.tar.gz",
    "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
)
CIFAR10_DIR, CIFAR100_DIR = "cifar-10-batches-py", "cifar-100-python"
CIFAR10_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
register_layout(
    "cifar10",
    what="CIFAR-10",
    layout=f"DIR/{CIFAR10_DIR}/{{data_batch_1..5,test_batch}} (the python version)",
    downloadable=True,
    present=all_files(*(f"{CIFAR10_DIR}/{f}" for f in (*CIFAR10_TRAIN, "test_batch"))),
)
register_layout(
    "cifar100",
    what="CIFAR-100",
    layout=f"DIR/{CIFAR100_DIR}/{{train,test}} (the python version)",
    downloadable=True,
    present=all_files(f"{CIFAR100_DIR}/train", f"{CIFAR100_DIR}/test"),
)

# -- a pickle subset interpreter --------------------------------------------------------------

_RECONSTRUCT = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
}
_FROMBUFFER = {("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer")}
_ALLOWED_GLOBALS = (
    _RECONSTRUCT
    | _FROMBUFFER
    | {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
    }
)
_PLAIN_DTYPE_KINDS = set("biuf")  # bool, signed, unsigned, float


class _Global:
    """A whitelisted global (a function or class reference) on the stack; never imported."""

    def __init__(self, module: str, name: str) -> None:
        if (module, name) not in _ALLOWED_GLOBALS:
            raise ValueError(f"refusing global {module}.{name} (only numpy arrays are allowed)")
        self.key = (module, name)


class _Mark:
    pass


_MARK = _Mark()


class _PendingArray:
    """``numpy.core.multiarray._reconstruct(ndarray, ...)``: an array waiting for its BUILD."""

    array: np.ndarray | None = None


def _as_bytes(v: object) -> bytes:
    """Raw bytes of a pickled buffer (Python 2 ``str`` arrives as a latin-1 decoded ``str``)."""
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("latin-1")
    raise ValueError(f"expected raw bytes, got {type(v).__name__}")


def _dtype(descr: object) -> np.dtype:
    if not isinstance(descr, str | bytes):
        raise ValueError(f"bad dtype descriptor {descr!r}")
    dt = np.dtype(descr.decode("latin-1") if isinstance(descr, bytes) else descr)
    if dt.kind not in _PLAIN_DTYPE_KINDS or dt.fields is not None or dt.subdtype is not None:
        raise ValueError(f"refusing dtype {dt} (only plain numeric arrays are allowed)")
    return dt


def _shape(v: object) -> tuple[int, ...]:
    if not isinstance(v, tuple | list) or not all(isinstance(d, int) and d >= 0 for d in v):
        raise ValueError(f"bad array shape {v!r}")
    return tuple(v)


def _array(raw: object, dtype: object, shape: object, fortran: bool) -> np.ndarray:
    if not isinstance(dtype, np.dtype):
        raise ValueError(f"bad array dtype {dtype!r}")
    shp = _shape(shape)
    data = _as_bytes(raw)
    expected = int(np.prod(shp, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(
            f"array of shape {shp} and dtype {dtype} needs {expected} bytes, got {len(data)}"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shp, order="F" if fortran else "C")


def _reduce(fn: object, args: object) -> object:
    if not isinstance(fn, _Global) or not isinstance(args, tuple):
        raise ValueError("REDUCE of a non-whitelisted callable")
    if fn.key in _RECONSTRUCT:
        if not (
            len(args) == 3 and isinstance(args[0], _Global) and args[0].key == ("numpy", "ndarray")
        ):
            raise ValueError("_reconstruct of something other than numpy.ndarray")
        return _PendingArray()
    if fn.key == ("numpy", "dtype"):
        return _dtype(args[0] if args else None)
    if fn.key in _FROMBUFFER:  # protocol 5: _frombuffer(buffer, dtype, shape, order)
        if len(args) != 4:
            raise ValueError("bad _frombuffer arguments")
        return _array(args[0], args[1], args[2], fortran=args[3] == "F")
    if fn.key == ("_codecs", "encode"):  # protocol 2 written by Python 3: bytes as latin-1 text
        if len(args) != 2 or not isinstance(args[0], str) or args[1] not in ("latin1", "latin-1"):
            raise ValueError("bad _codecs.encode arguments")
        return args[0].encode("latin-1")
    raise ValueError(f"cannot call {fn.key}")


def _build(obj: object, state: object) -> object:
    if isinstance(obj, np.dtype):  # state: (version, byteorder, subarray, names, fields, ...)
        if not isinstance(state, tuple) or len(state) < 5 or any(s is not None for s in state[2:5]):
            raise ValueError("refusing structured dtype")
        order = state[1]
        return obj.newbyteorder(order) if order in ("<", ">") else obj
    if isinstance(obj, _PendingArray):  # state: (version, shape, dtype, is_fortran, raw data)
        if not isinstance(state, tuple) or len(state) != 5:
            raise ValueError("bad ndarray state")
        _, shape, dtype, fortran, raw = state
        obj.array = _array(raw, dtype, shape, bool(fortran))
        return obj
    raise ValueError(f"BUILD on a {type(obj).__name__}")


def _resolve(obj: Any) -> Any:
    if isinstance(obj, _PendingArray):
        if obj.array is None:
            raise ValueError("array without data")
        return obj.array
    if isinstance(obj, dict):
        return {_resolve(k): _resolve(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_resolve(v) for v in obj)
    if isinstance(obj, _Global | _Mark):
        raise ValueError("dangling global or mark in the result")
    return obj


_SCALAR_OPS = {
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
    "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
}  # fmt: skip
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}


def parse_pickle(raw: bytes, *, source: str = "<bytes>") -> Any:
    """Decode a pickle of plain containers and numeric numpy arrays without executing it.

    Args:
        raw: the pickle bytes (protocols 0-5; Python 2 ``str`` values come back as ``str``
            decoded as latin-1, except array buffers, which are raw bytes again).
        source: name used in error messages (e.g. the file path).

    Returns:
        The unpickled dict / list / tuple / scalar tree, with numpy arrays as leaves.

    Raises:
        DataError: the bytes are truncated, malformed, or reference anything not allowed.
    """
    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[int, Any] = {}
    pos = 0

    def pop_mark() -> list[Any]:
        start = marks.pop()
        items = stack[start:]
        del stack[start:]
        return items

    try:
        for op, arg, p in pickletools.genops(raw):
            pos = p if p is not None else pos
            name = op.name
            if name in ("PROTO", "FRAME"):
                continue
            if name == "STOP":
                if len(stack) != 1 or marks:
                    raise ValueError("unbalanced stack at STOP")
                return _resolve(stack[0])
            if name in _SCALAR_OPS:
                stack.append(arg)
            elif name in _CONSTANTS:
                stack.append(_CONSTANTS[name])
            elif name == "MARK":
                marks.append(len(stack))
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "TUPLE":
                stack.append(tuple(pop_mark()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                if len(stack) < n:
                    raise ValueError("stack underflow")
                items = tuple(stack[-n:])
                del stack[-n:]
                stack.append(items)
            elif name == "LIST":
                stack.append(pop_mark())
            elif name == "DICT":
                items = pop_mark()
                stack.append(dict(zip(items[::2], items[1::2], strict=True)))
            elif name == "APPEND":
                v = stack.pop()
                stack[-1].append(v)
            elif name == "APPENDS":
                items = pop_mark()
                stack[-1].extend(items)
            elif name == "SETITEM":
                v, k = stack.pop(), stack.pop()
                stack[-1][k] = v
            elif name == "SETITEMS":
                items = pop_mark()
                stack[-1].update(zip(items[::2], items[1::2], strict=True))
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(arg)] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo[int(arg)])
            elif name == "GLOBAL":
                module, _, attr = str(arg).partition(" ")
                stack.append(_Global(module, attr))
            elif name == "STACK_GLOBAL":
                attr, module = stack.pop(), stack.pop()
                stack.append(_Global(str(module), str(attr)))
            elif name == "REDUCE":
                args = stack.pop()
                stack.append(_reduce(stack.pop(), args))
            elif name == "BUILD":
                state = stack.pop()
                stack[-1] = _build(stack[-1], state)
            else:
                raise ValueError(f"opcode {name} is not allowed")
    except DataError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
        raise DataError(f"{source}: not a valid CIFAR pickle (near byte {pos}): {err}") from None
    raise DataError(f"{source}: truncated pickle (no STOP opcode)")


# -- CIFAR batches ------------------------------------------------------------------------------


def _text_keys(d: object, source: str) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise DataError(f"{source}: expected a dict at the top level, got {type(d).__name__}")
    return {(k.decode("latin-1") if isinstance(k, bytes) else str(k)): v for k, v in d.items()}


def read_cifar_batch(
    path: str | Path, *, label_key: str = "labels", num_classes: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Read one CIFAR python batch file.

    Args:
        path: e.g. ``cifar-10-batches-py/data_batch_1`` or ``cifar-100-python/train``.
        label_key: "labels" (CIFAR-10), "fine_labels" or "coarse_labels" (CIFAR-100).
        num_classes: labels must lie in [0, num_classes).

    Returns:
        images uint8 (N, 3, 32, 32) and labels int64 (N,).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err})") from err
    if not raw:
        raise DataError(f"{path}: empty file (expected a CIFAR python batch)")
    d = _text_keys(parse_pickle(raw, source=str(path)), str(path))
    if "data" not in d or label_key not in d:
        raise DataError(f"{path}: missing 'data' or {label_key!r} (keys: {sorted(d)})")
    data, labels = d["data"], d[label_key]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2:
        raise DataError(f"{path}: 'data' must be a uint8 (N, 3072) array")
    if data.shape[1] != 3 * 32 * 32:
        raise DataError(f"{path}: 'data' rows have {data.shape[1]} values, expected 3072")
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    if len(y) != len(data):
        raise DataError(f"{path}: {len(data)} images but {len(y)} labels")
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise DataError(f"{path}: labels outside [0, {num_classes})")
    # each row: 1024 red, 1024 green, 1024 blue values, each a row-major 32x32 plane
    return data.reshape(-1, 3, 32, 32), y


def _fetch_archive(root: Path, archive: RemoteFile) -> None:
    """Download (unless present and valid) and extract ``archive`` into ``root``."""
    path = root / archive.name
    if not path.exists() or sha256_file(path) != archive.sha256:
        download_file(archive.url, path, archive.sha256)
    log.info("extracting %s", path)
    try:
        with tarfile.open(path, "r:gz") as tar:
            tar.extractall(root, filter="data")  # no absolute paths, links out, or devices
    except (tarfile.TarError, OSError, EOFError) as err:
        raise DataError(f"{path}: cannot extract ({err}); delete it and retry") from err


def _locate(
    data_root: Path | None,
    sub: str,
    files: tuple[str, ...],
    archive: RemoteFile,
    download: bool,
    what: str,
) -> Path:
    if data_root is None:
        raise DataError(
            f"{what} needs --data-root DIR (files in DIR/{sub}/), optionally --download"
        )
    d = data_root / sub
    missing = [f for f in files if not (d / f).is_file()]
    if missing and download:
        data_root.mkdir(parents=True, exist_ok=True)
        _fetch_archive(data_root, archive)
        missing = [f for f in files if not (d / f).is_file()]
    if missing:
        hint = "" if download else " or pass --download"
        raise DataError(f"{what}: missing {', '.join(missing)} in {d}; put the files there{hint}")
    return d


def _split(
    parts: list[tuple[np.ndarray, np.ndarray]],
    test: tuple[np.ndarray, np.ndarray],
    name: str,
    source: Path,
    num_classes: int,
) -> Split:
    x_tr = np.concatenate([p[0] for p in parts])  # (N, 3, 32, 32) uint8
    y_tr = np.concatenate([p[1] for p in parts])

    def to_float(x: np.ndarray) -> Tensor:
        return torch.from_numpy(np.array(x)).float().div_(255.0)  # (N, 3, 32, 32) in [0, 1]

    info = DataInfo(name, str(source), len(x_tr), len(test[0]))
    return Split(
        to_float(x_tr),
        torch.from_numpy(y_tr),
        to_float(test[0]),
        torch.from_numpy(test[1].copy()),
        info=info,
        num_classes=num_classes,
    )


def load_cifar10(directory: str | Path) -> Split:
    """CIFAR-10 (50,000 train / 10,000 test) from a ``cifar-10-batches-py`` directory."""
    d = Path(directory)
    parts = [read_cifar_batch(d / f, label_key="labels", num_classes=10) for f in CIFAR10_TRAIN]
    test = read_cifar_batch(d / "test_batch", label_key="labels", num_classes=10)
    return _split(parts, test, "cifar10", d, 10)


def load_cifar100(directory: str | Path, *, coarse: bool = False) -> Split:
    """CIFAR-100 (50,000 / 10,000) from a ``cifar-100-python`` directory (fine labels by default)."""
    d = Path(directory)
    key, k = ("coarse_labels", 20) if coarse else ("fine_labels", 100)
    train = read_cifar_batch(d / "train", label_key=key, num_classes=k)
    test = read_cifar_batch(d / "test", label_key=key, num_classes=k)
    return _split([train], test, "cifar100-coarse" if coarse else "cifar100", d, k)


@DATASETS.register("cifar10")
def cifar10(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """CIFAR-10 from ``data_root/cifar-10-batches-py`` (official split; ``seed`` unused)."""
    files = (*CIFAR10_TRAIN, "test_batch")
    d = _locate(data_root, CIFAR10_DIR, files, CIFAR10_ARCHIVE, download, "CIFAR-10")
    return load_cifar10(d)


@DATASETS.register("cifar100")
def cifar100(*, data_root: Path | None = None, download: bool = False, seed: int = 0) -> Split:
    """CIFAR-100 (fine labels) from ``data_root/cifar-100-python`` (official split)."""
    d = _locate(data_root, CIFAR100_DIR, ("train", "test"), CIFAR100_ARCHIVE, download, "CIFAR-100")
    return load_cifar100(d)


# -- augmentation -------------------------------------------------------------------------------


def random_crop_flip(
    x: Tensor, *, generator: torch.Generator, padding: int = 4, flip: bool = True
) -> Tensor:
    """Zero-pad by ``padding``, take a random crop of the original size, flip with p = 1/2.

    The §4.2 augmentation, applied independently to every image of a batch.

    Args:
        x: images; pad with zeros after mean subtraction to pad with the mean, as the paper did.
        generator: CPU generator drawing the crop offsets and flips (same draws on any device).
        padding: pixels added on each side (4 in the paper).
        flip: also mirror horizontally with probability 1/2.

    Shapes:
        x: (B, C, H, W) -> (B, C, H, W)
    """
    if x.dim() != 4:
        raise ValueError(f"expected a (B, C, H, W) batch, got shape {tuple(x.shape)}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    b, _, h, w = x.shape
    oy = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    ox = torch.randint(0, 2 * padding + 1, (b,), generator=generator)
    mirror = torch.rand(b, generator=generator) < 0.5 if flip else torch.zeros(b, dtype=torch.bool)
    cols_fwd = torch.arange(w)
    cols = torch.where(mirror[:, None], cols_fwd.flip(0)[None, :], cols_fwd[None, :])  # (B, W)
    # (the draws are made on the CPU: copied to x's device without blocking the host)
    rows = to_device(oy[:, None] + torch.arange(h), x.device)  # (B, H) rows of the padded image
    cols = to_device(ox[:, None] + cols, x.device)  # (B, W), mirrored where flipped
    xp = F.pad(x, (padding, padding, padding, padding)).permute(0, 2, 3, 1)  # (B, H+2p, W+2p, C)
    bidx = torch.arange(b, device=x.device)[:, None, None]
    out = xp[bidx, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()  # (B, C, H, W)
