"""The common interface of data sources: a ``Split`` of tensors plus a ``DataInfo`` record.

Image sources return ``x`` as float32 in [0, 1] with shape (N, C, H, W) and ``y`` as int64 (N,).
Every source is registered by name in ``DATASETS`` so that ``--dataset NAME`` picks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch import Tensor

from paperzoo.registry import Registry
from paperzoo.utils.modules import import_submodules


class DataError(RuntimeError):
    """Data are missing, truncated or malformed; the message says which file and what to do."""


@dataclass(frozen=True)
class DataInfo:
    name: str  # data set name, e.g. "mnist"
    source: str  # "generated", "embedded:<package>", or the directory the files came from
    n_train: int
    n_test: int
    # SHA-256 of the data read (``examples_sha256``, or of the files); None: not recorded (data
    # generated from the seed: the generator's config identifies them)
    sha256: str | None = None
    fold: int | None = None  # which fold of a data set published in folds (official bAbI)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def tensor_sha256(*tensors: Tensor) -> str:
    """SHA-256 over the dtype, shape and bytes of ``tensors``, in order (e.g. a fixed probe of a
    data set's images). Guarded test data are hashed too: a digest selects nothing."""
    import hashlib

    h = hashlib.sha256()
    with torch._C.DisableTorchFunctionSubclass():
        for t in tensors:
            t = t.detach().cpu().contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)};".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def examples_sha256(*pairs: tuple[Tensor, Tensor]) -> str:
    """SHA-256 of a set of labelled examples, whatever their order and however they are split:
    each example (input bytes and label) is hashed, the digests sorted, and those hashed. Equal
    files give equal digests wherever they were read from, and a seeded split or shuffle of one
    source keeps its digest. Guarded test data (``paperzoo.data.holdout``) are hashed too: a
    digest identifies them, it selects nothing.

    Args:
        pairs: ``(x, y)`` with ``x`` (N, ...) and ``y`` (N,) per part (train, test).
    """
    import hashlib

    digests: list[bytes] = []
    shapes: set[str] = set()
    with torch._C.DisableTorchFunctionSubclass():
        for x, y in pairs:
            xs = x.detach().cpu().contiguous()
            ys = y.detach().cpu().contiguous()
            shapes.add(f"{xs.dtype}{tuple(xs.shape[1:])}{ys.dtype}")
            xb = xs.reshape(len(xs), -1).view(torch.uint8).numpy()
            yb = ys.reshape(len(ys), -1).view(torch.uint8).numpy()
            digests += [
                hashlib.blake2b(xb[i].tobytes() + b"|" + yb[i].tobytes(), digest_size=16).digest()
                for i in range(len(xb))
            ]
    h = hashlib.sha256(";".join(sorted(shapes)).encode())
    for d in sorted(digests):
        h.update(d)
    return h.hexdigest()


@dataclass(frozen=True)
class Split:
    """A train/test split of a supervised data set.

    Shapes:
        x_train: (N, ...) inputs; y_train: (N,) labels; likewise for the test half.
    """

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    info: DataInfo
    num_classes: int

    def __post_init__(self) -> None:
        if len(self.x_train) != len(self.y_train) or len(self.x_test) != len(self.y_test):
            raise DataError(
                f"{self.info.name}: inputs and labels differ in length "
                f"({len(self.x_train)}/{len(self.y_train)}, {len(self.x_test)}/{len(self.y_test)})"
            )

    def subset(
        self,
        n_train: int | None = None,
        n_test: int | None = None,
        *,
        generator: torch.Generator | None = None,
    ) -> Split:
        """``n_train`` training and ``n_test`` test examples drawn at random, stratified by class.

        Not the first examples: a file written class by class would keep only its first classes.
        The drawn examples keep the file's order. Test labels under the holdout guard
        (``paperzoo.data.holdout``) are not read: that half is then a uniform random draw.

        Args:
            n_train, n_test: examples to keep; ``None`` (or at least the size): all, untouched.
            generator: the random stream of the draws (default: seeded with 0).
        """
        from paperzoo.data.holdout import HoldoutTensor
        from paperzoo.data.splits import validation_split

        g = generator if generator is not None else torch.Generator().manual_seed(0)
        halves = []
        for x, y, n in ((self.x_train, self.y_train, n_train), (self.x_test, self.y_test, n_test)):
            if n is not None and n < len(y):
                if isinstance(y, HoldoutTensor):
                    keep = torch.randperm(len(y), generator=g)[:n].sort().values
                else:
                    _, keep = validation_split(y, n, generator=g)  # a stratified draw of n
                x, y = x[keep], y[keep]
            halves.append((x, y))
        (xtr, ytr), (xte, yte) = halves
        # the digest stays the source's (what was read), the sizes are the subset's
        info = replace(self.info, n_train=len(ytr), n_test=len(yte))
        return Split(xtr, ytr, xte, yte, info, self.num_classes)


SourceFn = Callable[..., Split]


def _import_sources() -> None:
    """Import every module of ``paperzoo.data`` (named, not imported here: the package imports
    this module): each registers its own sources in ``DATASETS``."""
    import_submodules("paperzoo.data")


DATASETS: Registry[Split] = Registry("dataset", populate=_import_sources)


def load_dataset(
    name: str,
    *,
    data_root: str | Path | None = None,
    download: bool = False,
    seed: int = 0,
) -> Split:
    """Load the registered data set ``name``.

    Args:
        name: a name in ``DATASETS`` (``paperzoo.data.DATASETS.names()``).
        data_root: directory holding the standard file layouts (docs/running.md, "Outputs,
            exit codes and data"; ``paperzoo.data.layouts``).
        download: fetch missing files from the canonical source (checksum verified).
        seed: seeds the shuffle/split of sources that have no official split.
    """
    root = Path(data_root).expanduser() if data_root is not None else None
    split = DATASETS.create(name, data_root=root, download=download, seed=seed)
    if split.info.sha256 is None:
        digest = examples_sha256((split.x_train, split.y_train), (split.x_test, split.y_test))
        split = replace(split, info=replace(split.info, sha256=digest))
    return split


def stratified_split(
    x: Tensor, y: Tensor, n_test_per_class: int, *, seed: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Shuffle and split so the test half has ``n_test_per_class`` examples of every class."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(y), generator=g)
    x, y = x[perm], y[perm]
    test_mask = torch.zeros(len(y), dtype=torch.bool)
    for c in torch.unique(y):
        idx = torch.nonzero(y == c).flatten()
        if len(idx) <= n_test_per_class:
            raise DataError(f"class {int(c)} has only {len(idx)} examples")
        test_mask[idx[:n_test_per_class]] = True
    return x[~test_mask], y[~test_mask], x[test_mask], y[test_mask]
