"""Random data in the real files' formats, for running full configs where the real data are not at
hand (`SYNTH=1 make gpu-check`).

    .venv/bin/python tools/synth_data.py DIR [--only mnist,cifar10,...] [--seed 0] [--small]

Writes, unless already present, every data set a ``--scale full`` config reads, in the layout its
loader expects under ``--data-root DIR``:

* ``mnist``: DIR/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz, 60,000 / 10,000 images
  of 28 x 28 (the real counts);
* ``cifar10``: DIR/cifar-10-batches-py/ (five training batches of 10,000 and a test batch,
  3 x 32 x 32 python pickles, as released);
* ``cifar100``: DIR/cifar-100-python/{train,test,meta} (50,000 / 10,000, fine and coarse labels);
* ``svhn``: DIR/svhn/{train,test}_32x32.mat (73,257 / 26,032; ``X`` (32, 32, 3, N) uint8, ``y``
  (N, 1) in 1..10), MATLAB files written by SciPy;
* ``imagenet``: DIR/imagenet/{train,val}/<wnid>/*.JPEG, 1,000 class folders named like WordNet
  ids (``n00000000``...) with 2 training and 1 validation JPEG each at ImageNet's size (500 x
  375 pixels, ``IMAGENET_JPEG_SIZE``: smooth random colours, so a step decodes, crops and resizes
  images as large as the real set's 1,281,167 / 50,000), and
  DIR/imagenet/declared_sizes.json declaring the real counts, so that a run plans the paper's
  epochs of 1,281,167 images (``paperzoo.data.declared``; the batches cycle over the files);
* ``dsprites``: DIR/dsprites/dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz, the archive's keys
  (``imgs`` 737,280 x 64 x 64 uint8, ``latents_classes``, ``latents_values``) on the full factor
  grid the loader requires (3 GB, streamed to disk);
* ``babi``: the GG-NN authors' 10 folds, DIR/processed_K/{train,test}/N_graphs.txt and
  DIR/extra_seq_tasks/fold_K/noisy_parsed/{train,test}/N_graphs.txt (K = 1..10), each task's
  graphs drawn by the package's generators (``paperzoo.data.babi.generate_task``), 1,000 training
  and 1,000 test graphs per task and fold, the folds' sizes in the paper (Sec. 5.1).

Pixels and labels are uniform random (dSprites' pixels are random bits, not sprites). A run on
them measures time per step and memory, never a finding: its verdicts mean nothing, and the
data checks mark it "not the paper's setting" (``paperzoo.data.layouts``). ``--small`` writes
tiny versions (a few examples per file, 3 ImageNet classes, a small dSprites grid that only
``DSpritesNPZ(factor_sizes=SMALL_DSPRITES_GRID)`` reads) for tests of the formats.
"""

from __future__ import annotations

import argparse
import gzip
import pickle
import struct
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

SMALL_DSPRITES_GRID = (3, 2, 2, 2, 2)  # shape, scale, orientation, x, y (prefixes of the real)


def _idx(path: Path, arr: np.ndarray) -> None:
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def write_mnist(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    d = root / "mnist"
    if (d / "t10k-labels-idx1-ubyte.gz").is_file():
        return False
    d.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 60_000), ("t10k", 10_000)):
        n = 64 if small else n
        _idx(d / f"{split}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28), np.uint8))
        _idx(d / f"{split}-labels-idx1-ubyte.gz", rng.integers(0, 10, (n,), np.uint8))
    return True


def _pickle(path: Path, obj: dict) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)


def write_cifar10(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    d = root / "cifar-10-batches-py"
    if (d / "test_batch").is_file():
        return False
    d.mkdir(parents=True, exist_ok=True)
    n = 16 if small else 10_000
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"batch_label": name.encode(),
            b"labels": rng.integers(0, 10, n).tolist(),
            b"data": rng.integers(0, 256, (n, 3072), np.uint8),
            b"filenames": [f"{name}_{i}.png".encode() for i in range(n)],
        }
        _pickle(d / name, batch)
    labels = ["airplane", "automobile", "bird", "cat", "deer"]
    labels += ["dog", "frog", "horse", "ship", "truck"]
    _pickle(d / "batches.meta", {b"label_names": [s.encode() for s in labels], b"num_vis": 3072})
    return True


def write_cifar100(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    d = root / "cifar-100-python"
    if (d / "test").is_file():
        return False
    d.mkdir(parents=True, exist_ok=True)
    for name, n in (("train", 50_000), ("test", 10_000)):
        n = 32 if small else n
        fine = rng.integers(0, 100, n)
        batch = {
            b"filenames": [f"{name}_{i}.png".encode() for i in range(n)],
            b"batch_label": f"{name} batch".encode(),
            b"fine_labels": fine.tolist(),
            b"coarse_labels": (fine // 5).tolist(),  # 20 superclasses of 5 (not the real map)
            b"data": rng.integers(0, 256, (n, 3072), np.uint8),
        }
        _pickle(d / name, batch)
    meta = {
        b"fine_label_names": [f"class_{k}".encode() for k in range(100)],
        b"coarse_label_names": [f"superclass_{k}".encode() for k in range(20)],
    }
    _pickle(d / "meta", meta)
    return True


def write_svhn(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    from scipy.io import savemat

    d = root / "svhn"
    if (d / "test_32x32.mat").is_file():
        return False
    d.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 73_257), ("test", 26_032)):
        n = 40 if small else n
        x = rng.integers(0, 256, (32, 32, 3, n), np.uint8)
        y = rng.integers(1, 11, (n, 1), np.uint8)  # 10 stands for the digit 0
        savemat(str(d / f"{split}_32x32.mat"), {"X": x, "y": y})
    return True


# (width, height) of the synthetic ImageNet JPEGs: ILSVRC2012's commonest size (its images
# average about 470 x 390), so that decoding, cropping and resizing cost what they cost there
IMAGENET_JPEG_SIZE = (500, 375)


def write_imagenet(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    from PIL import Image

    from paperzoo.data.declared import declare_sizes
    from paperzoo.data.imagenet import IMAGENET_TRAIN_SIZE

    d = root / "imagenet"
    sizes = {"train": IMAGENET_TRAIN_SIZE, "val": 50_000}  # ILSVRC2012's images
    if (d / "val").is_dir():  # kept from an earlier check: declare the sizes if it predates them
        declare_sizes(d, "ILSVRC2012", sizes)
        return False
    classes = [f"n{k:08d}" for k in range(3 if small else 1000)]
    for split, per_class in (("train", 2), ("val", 1)):
        for c in classes:
            (d / split / c).mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                # smooth random colours (noise upsampled), JPEG as released
                small_img = rng.integers(0, 256, (8, 10, 3), np.uint8)
                img = Image.fromarray(small_img).resize(IMAGENET_JPEG_SIZE, Image.BILINEAR)
                img.save(d / split / c / f"{c}_{split}_{i}.JPEG", quality=85)
    declare_sizes(d, "ILSVRC2012", sizes)  # the paper's epochs: 1,281,167 images each
    return True


def write_dsprites(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    from paperzoo.data.dsprites import (
        DSPRITES_FILE,
        FACTOR_SIZES,
        ORIENTATIONS,
        POSITIONS,
        SCALES,
    )

    path = root / "dsprites" / DSPRITES_FILE
    if path.is_file():
        return False
    sizes = SMALL_DSPRITES_GRID if small else FACTOR_SIZES
    n, side = int(np.prod(sizes)), 64
    classes = np.stack(np.unravel_index(np.arange(n), sizes), axis=1)  # (N, 5), row-major
    latents_classes = np.concatenate([np.zeros((n, 1), np.int64), classes], axis=1)
    values = [np.arange(3) + 1.0, SCALES, ORIENTATIONS, POSITIONS, POSITIONS]
    latents_values = np.concatenate(
        [np.ones((n, 1))] + [v[classes[:, i]][:, None] for i, v in enumerate(values)], axis=1
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in (("latents_classes", latents_classes), ("latents_values", latents_values)):
            with zf.open(f"{key}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)
        header = {"descr": "|u1", "fortran_order": False, "shape": (n, side, side)}
        with zf.open("imgs.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            chunk = 8192
            for s in range(0, n, chunk):
                m = min(chunk, n - s)
                bits = np.frombuffer(rng.bytes(m * side * side), np.uint8) & 1  # pixels 0 / 1
                f.write(bits.tobytes())
    tmp.replace(path)  # a run cut short leaves no truncated archive under the real name
    return True


def write_babi(root: Path, rng: np.random.Generator, small: bool = False) -> bool:
    from paperzoo.data import babi

    if babi.official_folds(root) == list(range(1, babi.NUM_FOLDS + 1)):
        return False
    n = 20 if small else 1000  # graphs per split, task and fold (the paper's 1,000 + 1,000)
    base = int(rng.integers(0, 2**31))
    for fold in range(1, babi.NUM_FOLDS + 1):
        tasks = {
            name: babi.generate_task(name, n_train=n, n_test=n, seed=base + fold)
            for name in babi.TASKS
        }
        babi.write_official_fold(root, fold, tasks)
    return True


WRITERS: dict[str, Callable[[Path, np.random.Generator, bool], bool]] = {
    "mnist": write_mnist,
    "cifar10": write_cifar10,
    "cifar100": write_cifar100,
    "svhn": write_svhn,
    "imagenet": write_imagenet,
    "dsprites": write_dsprites,
    "babi": write_babi,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument(
        "--only", default=",".join(WRITERS), help=f"comma-separated: {','.join(WRITERS)}"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--small", action="store_true", help="tiny files, for tests of the formats")
    args = ap.parse_args(argv)
    names = [s for s in args.only.split(",") if s]
    unknown = [s for s in names if s not in WRITERS]
    if unknown:
        sys.stderr.write(
            f"synth_data: unknown data set {unknown[0]!r} (have {', '.join(WRITERS)})\n"
        )
        return 2
    if args.root.exists() and not args.root.is_dir():
        sys.stderr.write(f"synth_data: {args.root} is not a directory\n")
        return 2
    for name in names:
        rng = np.random.default_rng([args.seed, *name.encode()])  # one stream per data set
        wrote = WRITERS[name](args.root, rng, args.small)
        state = "wrote" if wrote else "kept"
        sys.stdout.write(f"{state} synthetic {name} under {args.root}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
