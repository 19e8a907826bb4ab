"""Random data in the real files' formats and sizes, for timing full configs where the real
data are not at hand (`SYNTH=1 make gpu-check`).

    .venv/bin/python tools/synth_data.py DIR [--only mnist,cifar10] [--seed 0]

Writes, unless already present, DIR/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
(60,000 / 10,000 images, 28 x 28) and DIR/cifar-10-batches-py/ (five training batches of 10,000
and a test batch, 3 x 32 x 32, python pickles). Pixels and labels are uniform random: a run on
them measures time per step and memory at the real sizes, never a finding (its verdicts mean
nothing; `--max-steps` runs count nothing anyway). ImageNet, dSprites and the official bAbI
folds are not synthesised: their checks are skipped with the data's own one-line message.
"""

from __future__ import annotations

import argparse
import gzip
import pickle
import struct
import sys
from pathlib import Path

import numpy as np


def _idx(path: Path, arr: np.ndarray) -> None:
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def write_mnist(root: Path, rng: np.random.Generator) -> bool:
    d = root / "mnist"
    if (d / "t10k-labels-idx1-ubyte.gz").is_file():
        return False
    d.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 60_000), ("t10k", 10_000)):
        _idx(d / f"{split}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28), np.uint8))
        _idx(d / f"{split}-labels-idx1-ubyte.gz", rng.integers(0, 10, (n,), np.uint8))
    return True


def write_cifar10(root: Path, rng: np.random.Generator) -> bool:
    d = root / "cifar-10-batches-py"
    if (d / "test_batch").is_file():
        return False
    d.mkdir(parents=True, exist_ok=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        batch = {
            b"batch_label": name.encode(),
            b"labels": rng.integers(0, 10, 10_000).tolist(),
            b"data": rng.integers(0, 256, (10_000, 3072), np.uint8),
            b"filenames": [f"{name}_{i}.png".encode() for i in range(10_000)],
        }
        with open(d / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)
    labels = ["airplane", "automobile", "bird", "cat", "deer"]
    labels += ["dog", "frog", "horse", "ship", "truck"]
    meta = {b"label_names": [s.encode() for s in labels], b"num_vis": 3072}
    with open(d / "batches.meta", "wb") as f:
        pickle.dump(meta, f, protocol=2)
    return True


WRITERS = {"mnist": write_mnist, "cifar10": write_cifar10}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--only", default=",".join(WRITERS), help="comma-separated: mnist,cifar10")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    for name in args.only.split(","):
        if name not in WRITERS:
            sys.stderr.write(f"synth_data: unknown data set {name!r} (have {', '.join(WRITERS)})\n")
            return 2
        wrote = WRITERS[name](args.root, rng)
        state = "wrote" if wrote else "kept"
        sys.stdout.write(f"{state} synthetic {name} under {args.root}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
