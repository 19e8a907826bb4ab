"""ImageNet (ILSVRC2012) from class folders under ``--data-root``, streamed: images are decoded
with PIL when a batch needs them, never held in memory as a data set.

Layout (``LAYOUT``; registered as the ``imagenet`` layout, so a full run without it stops with one
line)::

    DIR/imagenet/train/<wnid>/*.JPEG   the 1,281,167 training images, one folder per class
    DIR/imagenet/val/<wnid>/*.JPEG     the 50,000 validation images sorted into the same folders

Class ``k`` is the ``k``-th training folder name in sorted order (the WordNet ids ``n01440764``
... sort to the usual label order); a validation folder that is not a training class is an
error. Files ending in .JPEG/.jpeg/.jpg/.png (any case) are images.

Preprocessing (the Perceiver paper, Sec. 4.1: "Inception-style preprocessing (Szegedy et al.,
2015), including standard 224 x 224 pixel crops. Additionally, we augment all images using
RandAugment (Cubuk et al., 2020) at training time"):

* training: a random-resized crop (area 8-100 % of the image, aspect ratio 3/4-4/3, the
  Inception crop), resized to 224 x 224, a horizontal flip with probability 1/2 (part of
  Inception-style preprocessing as commonly implemented; the paper does not list it), then
  RandAugment with ``N`` operations at magnitude ``M`` (the paper gives neither: project's
  choice, N = 2, M = 9, Cubuk et al.'s ResNet-50 ImageNet setting);
* evaluation: the shorter side resized to 256, the central 224 x 224 crop (the paper is silent:
  the standard protocol, project's choice);
* both: pixels scaled to [0, 1] and normalised per channel with the ImageNet mean and std
  (project's choice; the paper does not say how pixels are scaled).

Augmentation is a function of a seed per example (``np.random.Generator`` seeded by the run's
seed, the step and the example's place in the global batch), so a resumed run, a run with another
number of loader workers and a run split over ranks all see the same crops.

Loading (``ImageNetTrainSource``, ``iterate_eval``): JPEGs are decoded and augmented in
``torch.utils.data.DataLoader`` worker processes (``workers`` of them, persistent across the
models of a run, each batch prefetched ``prefetch`` steps ahead, pinned when the batches go to a
GPU). With ``normalize=False`` the transforms return uint8 pixels, 4x fewer bytes through the
workers' shared memory, the pinned buffers and the host-to-device copy; ``normalize`` then maps
them to floats on the device.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from paperzoo.data.base import DataError, DataInfo
from paperzoo.data.layouts import IMAGE_EXTENSIONS, register_layout
from paperzoo.engine.distributed import DistInfo

__all__ = [
    "IMAGENET_TRAIN_SIZE",
    "LAYOUT",
    "MEAN",
    "STD",
    "ImageFolderIndex",
    "ImageNetTrainSource",
    "RandAugment",
    "count_images",
    "eval_transform",
    "imagenet_info",
    "iterate_eval",
    "normalize",
    "random_resized_crop_box",
    "scan_image_folder",
    "train_transform",
]

IMAGENET_TRAIN_SIZE = 1_281_167  # ILSVRC2012 training images
MEAN = (0.485, 0.456, 0.406)  # per-channel mean of ImageNet training pixels, in [0, 1]
STD = (0.229, 0.224, 0.225)
LAYOUT = (
    "DIR/imagenet/train/<wnid>/*.JPEG and DIR/imagenet/val/<wnid>/*.JPEG "
    "(ILSVRC2012, the validation images sorted into the training class folders)"
)


def _has_class_folder(d: Path) -> bool:
    try:
        with os.scandir(d) as it:
            return any(e.is_dir() for e in it)
    except OSError:
        return False


def _present(root: Path) -> bool:
    return all(_has_class_folder(root / "imagenet" / s) for s in ("train", "val"))


register_layout(
    "imagenet",
    what="ImageNet (ILSVRC2012)",
    layout=LAYOUT,
    downloadable=False,  # no canonical source that serves the files without an account
    present=_present,
)


@dataclass(frozen=True)
class ImageFolderIndex:
    """The image files of one split: paths relative to ``root`` and their labels.

    Shapes:
        labels: (N,) int64, ``classes[labels[i]]`` is the folder of ``paths[i]``.
    """

    root: Path
    classes: tuple[str, ...]
    paths: tuple[str, ...]
    labels: np.ndarray
    sha256: str  # digest of the listing: every relative path, its size and label

    def __len__(self) -> int:
        return len(self.paths)

    def subset(self, n: int | None, *, seed: int = 0) -> ImageFolderIndex:
        """``n`` images drawn at random (seeded), kept in file order (None or >= len: self).

        The listing is sorted by class, so a prefix would keep only the first classes."""
        if n is None or n >= len(self):
            return self
        if n < 1:
            raise ValueError(f"a subset needs n >= 1, got {n}")
        keep = np.sort(np.random.default_rng(seed).choice(len(self), size=n, replace=False))
        paths = tuple(self.paths[i] for i in keep)
        digest = hashlib.sha256(f"{self.sha256}:{','.join(map(str, keep))}".encode())
        return ImageFolderIndex(
            self.root, self.classes, paths, self.labels[keep], digest.hexdigest()
        )

    def load(self, i: int):  # -> PIL.Image.Image (RGB)
        """Decode image ``i`` as RGB (greyscale and CMYK files are converted)."""
        from PIL import Image

        path = self.root / self.paths[i]
        try:
            with Image.open(path) as img:
                return img.convert("RGB")
        except OSError as e:
            raise DataError(f"ImageNet: cannot decode {path}: {e}") from e


def scan_image_folder(
    split_dir: str | Path, classes: Sequence[str] | None = None
) -> ImageFolderIndex:
    """List the images of ``split_dir/<class>/*`` (sorted), without reading them.

    Args:
        split_dir: e.g. ``DIR/imagenet/train``.
        classes: the class folder names in label order (default: the sorted subfolders of
            ``split_dir``); a subfolder not among them is an error.

    Raises:
        DataError: the folder is missing, has no class folders, an unknown class or no images.
    """
    split_dir = Path(split_dir)
    if not split_dir.is_dir():
        raise DataError(f"ImageNet: {split_dir} is not a directory (expected {LAYOUT})")
    found = sorted(e.name for e in os.scandir(split_dir) if e.is_dir())
    if not found:
        raise DataError(f"ImageNet: {split_dir} has no class folders (expected {LAYOUT})")
    if classes is None:
        classes = found
    label_of = {c: k for k, c in enumerate(classes)}
    unknown = [c for c in found if c not in label_of]
    if unknown:
        raise DataError(
            f"ImageNet: {split_dir} has class folders that are not training classes: "
            f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}"
        )
    paths: list[str] = []
    labels: list[int] = []
    h = hashlib.sha256()
    for c in found:
        with os.scandir(split_dir / c) as it:
            entries = sorted(
                (e for e in it if e.is_file() and e.name.lower().endswith(IMAGE_EXTENSIONS)),
                key=lambda e: e.name,
            )
        for e in entries:
            rel = f"{c}/{e.name}"
            paths.append(rel)
            labels.append(label_of[c])
            h.update(f"{rel}\t{e.stat().st_size}\t{label_of[c]}\n".encode())
    if not paths:
        raise DataError(f"ImageNet: no images (*.JPEG) under {split_dir}/<class>/")
    return ImageFolderIndex(
        split_dir, tuple(classes), tuple(paths), np.asarray(labels, dtype=np.int64), h.hexdigest()
    )


def count_images(split_dir: str | Path) -> int | None:
    """Images under ``split_dir/<class>/`` counted by name only (no ``stat``; for a run's plan
    line); None when the folder is missing."""
    split_dir = Path(split_dir)
    if not split_dir.is_dir():
        return None
    n = 0
    for c in os.scandir(split_dir):
        if c.is_dir():
            with os.scandir(c.path) as it:
                n += sum(1 for e in it if e.name.lower().endswith(IMAGE_EXTENSIONS))
    return n


def imagenet_info(root: Path, train: ImageFolderIndex, val: ImageFolderIndex) -> DataInfo:
    """The provenance record: sizes and a digest of both listings (paths, sizes, labels)."""
    digest = hashlib.sha256(f"{train.sha256}{val.sha256}".encode()).hexdigest()
    return DataInfo("imagenet", str(root), len(train), len(val), sha256=digest)


# -- transforms ------------------------------------------------------------------------------------


def random_resized_crop_box(
    width: int,
    height: int,
    rng: np.random.Generator,
    *,
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    attempts: int = 10,
) -> tuple[int, int, int, int]:
    """The Inception crop (Szegedy et al., 2015): a box of ``scale`` of the image's area and an
    aspect ratio drawn log-uniformly from ``ratio``; after ``attempts`` misses, the largest
    central box with the ratio clamped into range.

    Returns:
        (left, top, crop width, crop height), inside the image.
    """
    area = width * height
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(attempts):
        target = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_lo, log_hi))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            left = int(rng.integers(0, width - w + 1))
            top = int(rng.integers(0, height - h + 1))
            return left, top, w, h
    aspect = width / height
    if aspect < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif aspect > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def normalize(x: Tensor) -> Tensor:
    """uint8 pixels to [0, 1], then the ImageNet mean / std per channel, on ``x``'s device.

    Shapes:
        x: (..., 3, H, W) uint8 -> same shape, float32
    """
    if x.dtype != torch.uint8:
        raise TypeError(f"normalize expects uint8 pixels, got {x.dtype}")
    mean = torch.tensor(MEAN, device=x.device).view(3, 1, 1)
    std = torch.tensor(STD, device=x.device).view(3, 1, 1)
    return (x.float() / 255.0 - mean) / std


def _to_tensor(img, normalized: bool = True) -> Tensor:  # PIL RGB -> (3, H, W)
    x = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1).contiguous()
    return normalize(x) if normalized else x


class RandAugment:
    """RandAugment (Cubuk, Zoph, Shlens, Le, 2020): ``n`` operations drawn uniformly (with
    replacement) from 14, each applied at magnitude ``m`` on the paper's 0-10 scale.

    Each operation's strength is its maximum times ``m / 10`` (rotate 30 degrees, shear 0.3,
    translate 45 % of the image, colour / contrast / brightness / sharpness factors 1 +- 0.9,
    posterize down to 4 bits, solarize from threshold 256 down to 0; signed operations take a
    random sign). The maxima are the ones torchvision's RandAugment uses; Cubuk et al. do not
    list theirs in the paper.

    Args:
        n: operations per image.
        m: magnitude, 0 (identity) to 10.
    """

    OPS = (
        "identity", "autocontrast", "equalize", "rotate", "solarize", "color", "posterize",
        "contrast", "brightness", "sharpness", "shear_x", "shear_y", "translate_x", "translate_y",
    )  # fmt: skip

    def __init__(self, *, n: int = 2, m: float = 9.0) -> None:
        if n < 0:
            raise ValueError(f"RandAugment n must be >= 0, got {n}")
        if not 0 <= m <= 10:
            raise ValueError(f"RandAugment m must lie in [0, 10], got {m}")
        self.n, self.m = n, m

    def apply(self, img, op: str, rng: np.random.Generator):  # PIL -> PIL
        """Apply one named operation at this magnitude (``rng`` draws the sign)."""
        from PIL import Image, ImageEnhance, ImageOps

        f = self.m / 10.0
        sign = 1.0 if rng.random() < 0.5 else -1.0
        w, h = img.size
        fill = (128, 128, 128)
        if op == "identity":
            return img
        if op == "autocontrast":
            return ImageOps.autocontrast(img)
        if op == "equalize":
            return ImageOps.equalize(img)
        if op == "rotate":
            return img.rotate(sign * 30.0 * f, resample=Image.BILINEAR, fillcolor=fill)
        if op == "solarize":
            return ImageOps.solarize(img, threshold=int(round(256 * (1 - f))))
        if op == "posterize":
            return ImageOps.posterize(img, 8 - int(4 * f))
        if op in ("color", "contrast", "brightness", "sharpness"):
            enhancer = {
                "color": ImageEnhance.Color,
                "contrast": ImageEnhance.Contrast,
                "brightness": ImageEnhance.Brightness,
                "sharpness": ImageEnhance.Sharpness,
            }[op]
            return enhancer(img).enhance(1.0 + sign * 0.9 * f)
        if op in ("shear_x", "shear_y"):
            s = sign * 0.3 * f
            coeffs = (1, s, 0, 0, 1, 0) if op == "shear_x" else (1, 0, 0, s, 1, 0)
            return img.transform(img.size, Image.AFFINE, coeffs, Image.BILINEAR, fillcolor=fill)
        if op in ("translate_x", "translate_y"):
            dx = sign * 0.45 * f * w if op == "translate_x" else 0.0
            dy = sign * 0.45 * f * h if op == "translate_y" else 0.0
            coeffs = (1, 0, dx, 0, 1, dy)
            return img.transform(img.size, Image.AFFINE, coeffs, Image.BILINEAR, fillcolor=fill)
        raise ValueError(f"unknown RandAugment operation {op!r}")

    def __call__(self, img, rng: np.random.Generator):  # PIL -> PIL
        for k in rng.integers(0, len(self.OPS), size=self.n):
            img = self.apply(img, self.OPS[int(k)], rng)
        return img


def train_transform(
    img,
    rng: np.random.Generator,
    *,
    size: int = 224,
    scale: tuple[float, float] = (0.08, 1.0),
    flip: bool = True,
    randaugment: RandAugment | None = None,
    normalized: bool = True,
) -> Tensor:
    """Inception-style crop to ``size`` x ``size``, horizontal flip, RandAugment, normalise
    (``normalized=False``: uint8 pixels, for ``normalize`` on the device).

    Shapes:
        PIL image (any size) -> (3, size, size) float32 (uint8 if not ``normalized``)
    """
    from PIL import Image

    left, top, w, h = random_resized_crop_box(img.width, img.height, rng, scale=scale)
    img = img.resize((size, size), Image.BILINEAR, box=(left, top, left + w, top + h))
    if flip and rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    if randaugment is not None:
        img = randaugment(img, rng)
    return _to_tensor(img, normalized)


def eval_transform(img, *, size: int = 224, resize: int = 256, normalized: bool = True) -> Tensor:
    """Shorter side to ``resize``, the central ``size`` x ``size`` crop, normalise
    (``normalized=False``: uint8 pixels).

    Shapes:
        PIL image (any size) -> (3, size, size) float32 (uint8 if not ``normalized``)
    """
    from PIL import Image

    s = resize / min(img.width, img.height)
    w, h = max(size, round(img.width * s)), max(size, round(img.height * s))
    img = img.resize((w, h), Image.BILINEAR)
    left, top = (w - size) // 2, (h - size) // 2
    return _to_tensor(img.crop((left, top, left + size, top + size)), normalized)


# -- loaders ---------------------------------------------------------------------------------------


def crop_rng(seed: int, step: int, position: int) -> np.random.Generator:
    """The augmentation stream of the image at ``position`` of step ``step``'s global batch: a
    function of the three numbers only, so it is the same in any worker and on any rank."""
    return np.random.default_rng((seed, step, position))


class _StepBatches(Dataset):
    """Item ``s``: this rank's share of the batch of step ``s``, decoded and augmented (runs in
    the DataLoader's worker processes)."""

    def __init__(
        self,
        index: ImageFolderIndex,
        *,
        batch_size: int,
        seed: int,
        transform: Callable[..., Tensor],
        dist: DistInfo,
    ) -> None:
        from paperzoo.engine.sampler import BatchSampler

        self.index, self.batch_size, self.seed = index, batch_size, seed
        self.transform, self.dist = transform, dist
        self.sampler = BatchSampler(len(index), batch_size, seed=seed, drop_last=True, dist=dist)

    def __getitem__(self, step: int) -> tuple[Tensor, Tensor]:
        idx = self.sampler.indices(step).tolist()
        # BatchSampler gives rank r the global positions r, r + world, ... of the step's batch.
        positions = range(self.dist.rank, self.batch_size, self.dist.world_size)
        xs = [
            self.transform(self.index.load(i), crop_rng(self.seed, step, j))
            for i, j in zip(idx, positions, strict=True)
        ]
        return torch.stack(xs), torch.from_numpy(self.index.labels[idx])


class _StepsFrom(Sampler[int]):
    """Steps ``start, start + 1, ...`` without end (the trainer stops asking)."""

    def __init__(self) -> None:
        self.start = 0

    def __iter__(self) -> Iterator[int]:
        return itertools.count(self.start)


class ImageNetTrainSource:
    """A ``Trainer`` data source ``(step, generator) -> (x, y)``: the batch of step ``s`` is a
    slice of an epoch permutation seeded by ``(seed, epoch)`` (``paperzoo.engine.trainer.
    BatchSampler``: whole batches per epoch; under torchrun rank ``r`` of ``w`` takes the global
    positions ``r, r + w, ...``, the split DistributedSampler makes, so the ranks together read
    each image of an epoch once), each image augmented from ``crop_rng(seed, s, position)``. The
    trainer's per-step generator is not used: a batch is a function of ``(seed, s)`` alone, so it
    does not depend on the number of workers, and a resumed run reads the same batches.

    Decoding runs in ``workers`` DataLoader processes (0: in this process), kept alive across
    the models trained from this source (``persistent_workers``), each holding ``prefetch``
    batches in flight, copied into pinned memory when ``pin_memory`` (batches bound for a GPU).
    Asked for step ``s`` when it last gave ``s - 1``, the source hands over the next prefetched
    batch; asked for any other step (a new model, a resumed run), it restarts its stream there
    (``starts`` counts the starts). The batches of the first ``keep`` steps stay in memory once
    made and are handed over again when asked for: the models of a capped run (``--max-steps``),
    each trained from step 0 on the same batches, then share one start of the loader and its
    warm-up instead of waiting again for a worker to decode a whole batch.

    Args:
        index: the training images.
        batch_size: the global batch.
        seed: seeds the epoch permutations and the crops.
        transform: ``(PIL image, np.random.Generator) -> (3, S, S)``.
        workers: decoding processes.
        prefetch: batches in flight per worker.
        pin_memory: page-locked batches (for a CUDA device).
        keep: the steps from 0 whose batches are kept in memory (0: none).
        dist: this process's rank and world size (default: the running process group).

    Shapes:
        -> x (B, 3, S, S) (the transform's dtype), y (B,) int64 (B = this rank's share)
    """

    def __init__(
        self,
        index: ImageFolderIndex,
        *,
        batch_size: int,
        seed: int,
        transform: Callable[..., Tensor],
        workers: int = 8,
        prefetch: int = 2,
        pin_memory: bool = False,
        keep: int = 0,
        dist: DistInfo | None = None,
    ) -> None:
        from paperzoo.engine.distributed import current

        if workers < 0 or prefetch < 1 or keep < 0:
            raise ValueError(
                f"workers and keep must be >= 0 and prefetch >= 1, got {workers}, {keep}, "
                f"{prefetch}"
            )
        self.dist = dist if dist is not None else current()
        if batch_size % self.dist.world_size:
            raise ValueError(
                f"the batch of {batch_size} does not split evenly over {self.dist.world_size} ranks"
            )
        self.batches = _StepBatches(
            index, batch_size=batch_size, seed=seed, transform=transform, dist=self.dist
        )
        self.index, self.batch_size, self.seed = index, batch_size, seed
        self.workers, self.prefetch, self.pin_memory = workers, prefetch, pin_memory
        self._steps = _StepsFrom()
        self._loader: DataLoader | None = None
        self._stream: Iterator[tuple[Tensor, Tensor]] | None = None
        self._next = -1
        self.keep = keep
        self._kept: dict[int, tuple[Tensor, Tensor]] = {}
        self.starts = 0  # the times the loader's stream was started

    @property
    def sampler(self):  # -> BatchSampler (the epoch permutations, this rank's share)
        return self.batches.sampler

    @property
    def steps_per_epoch(self) -> int:
        return self.sampler.per_epoch

    @property
    def loader(self) -> DataLoader:
        """The DataLoader (built on first use, again after ``close``)."""
        if self._loader is None:
            self._loader = DataLoader(
                self.batches,
                batch_size=None,  # an item is a whole batch
                sampler=self._steps,
                num_workers=self.workers,
                pin_memory=self.pin_memory,
                persistent_workers=self.workers > 0,
                prefetch_factor=self.prefetch if self.workers > 0 else None,
                # The workers' base seed comes from here, not from the global RNG (whose
                # stream the trainer checkpoints); the transforms draw from crop_rng only.
                generator=torch.Generator().manual_seed(self.seed),
            )
        return self._loader

    def __call__(self, step: int, g: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        kept = self._kept.get(step)
        if kept is not None:
            return kept
        if self._stream is None or step != self._next:
            self._steps.start = step
            self._stream = iter(self.loader)  # persistent workers: restarted, not respawned
            self.starts += 1
        self._next = step + 1
        batch = next(self._stream)
        if step < self.keep:
            self._kept[step] = batch
        return batch

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones) and drop the kept
        batches."""
        self._kept.clear()
        self._stream = None
        self._loader = None  # the last reference: the iterator's workers shut down
        self._next = -1


class _EvalImages(Dataset):
    def __init__(self, index: ImageFolderIndex, transform: Callable[..., Tensor]) -> None:
        self.index, self.transform = index, transform

    def __getitem__(self, i: int) -> tuple[Tensor, int]:
        return self.transform(self.index.load(i)), int(self.index.labels[i])


def iterate_eval(
    index: ImageFolderIndex,
    *,
    batch_size: int,
    limit: int | None = None,
    transform: Callable[..., Tensor] = eval_transform,
    workers: int = 8,
    order: Sequence[int] | None = None,
    prefetch: int = 2,
    pin_memory: bool = False,
) -> Iterator[tuple[Tensor, Tensor]]:
    """The first ``limit`` evaluation images (None: all) of ``order`` (None: file order, which
    is sorted by class), in batches, decoded in ``workers`` DataLoader processes (0: here).

    Shapes:
        -> x (b, 3, S, S), y (b,) int64 per batch
    """
    ids_all = list(range(len(index))) if order is None else [int(i) for i in order]
    n = len(ids_all) if limit is None else min(limit, len(ids_all))
    loader = DataLoader(
        _EvalImages(index, transform),
        batch_size=batch_size,
        sampler=ids_all[:n],
        num_workers=workers,
        pin_memory=pin_memory,
        prefetch_factor=prefetch if workers > 0 else None,
        generator=torch.Generator().manual_seed(0),  # leaves the global RNG alone
    )
    yield from loader
