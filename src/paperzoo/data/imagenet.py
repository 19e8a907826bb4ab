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

Augmentation is a function of a seed per example (``np.random.Generator``), drawn from the
trainer's per-step generator, so a resumed run sees the same crops.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from paperzoo.data.base import DataError, DataInfo
from paperzoo.data.layouts import register_layout

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
    "random_resized_crop_box",
    "scan_image_folder",
    "train_transform",
]

IMAGENET_TRAIN_SIZE = 1_281_167  # ILSVRC2012 training images
IMAGE_EXTENSIONS = (".jpeg", ".jpg", ".png")
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


def _to_tensor(img) -> Tensor:  # PIL RGB -> (3, H, W) float32, normalised
    x = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1).float() / 255.0
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    return (x - mean) / std


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
) -> Tensor:
    """Inception-style crop to ``size`` x ``size``, horizontal flip, RandAugment, normalise.

    Shapes:
        PIL image (any size) -> (3, size, size)
    """
    from PIL import Image

    left, top, w, h = random_resized_crop_box(img.width, img.height, rng, scale=scale)
    img = img.resize((size, size), Image.BILINEAR, box=(left, top, left + w, top + h))
    if flip and rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    if randaugment is not None:
        img = randaugment(img, rng)
    return _to_tensor(img)


def eval_transform(img, *, size: int = 224, resize: int = 256) -> Tensor:
    """Shorter side to ``resize``, the central ``size`` x ``size`` crop, normalise.

    Shapes:
        PIL image (any size) -> (3, size, size)
    """
    from PIL import Image

    s = resize / min(img.width, img.height)
    w, h = max(size, round(img.width * s)), max(size, round(img.height * s))
    img = img.resize((w, h), Image.BILINEAR)
    left, top = (w - size) // 2, (h - size) // 2
    return _to_tensor(img.crop((left, top, left + size, top + size)))


# -- loaders ---------------------------------------------------------------------------------------


class ImageNetTrainSource:
    """A ``Trainer`` data source ``(step, generator) -> (x, y)``: the batch of step ``s`` is a
    slice of an epoch permutation seeded by ``(seed, epoch)`` (``paperzoo.engine.trainer.
    BatchSampler``, whole batches per epoch, this rank's share under torchrun), each image
    decoded and augmented from its own seed, drawn from the step's generator. Decoding runs on
    ``workers`` threads (PIL releases the GIL while it decodes and resizes).

    Args:
        index: the training images.
        batch_size: the global batch.
        seed: seeds the epoch permutations.
        transform: ``(PIL image, np.random.Generator) -> (3, S, S)``.
        workers: decoding threads.

    Shapes:
        -> x (B, 3, S, S) float32, y (B,) int64 (B = this rank's share of ``batch_size``)
    """

    def __init__(
        self,
        index: ImageFolderIndex,
        *,
        batch_size: int,
        seed: int,
        transform: Callable[..., Tensor],
        workers: int = 8,
    ) -> None:
        from paperzoo.engine.distributed import current
        from paperzoo.engine.trainer import BatchSampler

        self.index = index
        self.batch_size = batch_size
        self.transform = transform
        self.workers = max(1, workers)
        self.dist = current()
        self.sampler = BatchSampler(
            len(index), batch_size, seed=seed, drop_last=True, dist=self.dist
        )
        self._pool: ThreadPoolExecutor | None = None

    @property
    def steps_per_epoch(self) -> int:
        return self.sampler.per_epoch

    def _item(self, i: int, seed: int) -> Tensor:
        return self.transform(self.index.load(i), np.random.default_rng(seed))

    def __call__(self, step: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
        idx = self.sampler.indices(step).tolist()
        seeds = torch.randint(0, 2**62, (self.batch_size,), generator=g)
        seeds = seeds[self.dist.rank :: self.dist.world_size].tolist()
        if self._pool is None and self.workers > 1:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="imagenet")
        if self._pool is None:
            xs = [self._item(i, s) for i, s in zip(idx, seeds, strict=True)]
        else:
            xs = list(self._pool.map(self._item, idx, seeds))
        y = torch.from_numpy(self.index.labels[idx])
        return torch.stack(xs), y

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def iterate_eval(
    index: ImageFolderIndex,
    *,
    batch_size: int,
    limit: int | None = None,
    transform: Callable[..., Tensor] = eval_transform,
    workers: int = 8,
    order: Sequence[int] | None = None,
) -> Iterator[tuple[Tensor, Tensor]]:
    """The first ``limit`` evaluation images (None: all) of ``order`` (None: file order, which
    is sorted by class), in batches.

    Shapes:
        -> x (b, 3, S, S), y (b,) per batch
    """
    ids_all = list(range(len(index))) if order is None else [int(i) for i in order]
    n = len(ids_all) if limit is None else min(limit, len(ids_all))
    pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="imagenet-eval")
    try:
        for start in range(0, n, batch_size):
            ids = ids_all[start : min(n, start + batch_size)]
            xs = list(pool.map(lambda i: transform(index.load(i)), ids))
            yield torch.stack(xs), torch.from_numpy(index.labels[ids])
    finally:
        pool.shutdown()
