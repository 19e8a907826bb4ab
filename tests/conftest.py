"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperzoo.experiments import RunContext

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def smoke_ctx(tmp_path: Path) -> RunContext:
    """A run context for ``--scale smoke`` writing into a temporary directory."""
    return RunContext(scale="smoke", seed=0, device="cpu", out_dir=tmp_path / "out", quiet=True)


IMAGENET_CLASSES = ("n01440764", "n01443537", "n01484850")


def _write_imagenet(root: Path, *, train: int = 2, val: int = 1, size: int = 256) -> Path:
    """A tiny ImageNet in the ILSVRC2012 folder layout, DIR/imagenet/{train,val}/<wnid>/*.JPEG:
    random JPEGs in three class folders; returns DIR."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, n in (("train", train), ("val", val)):
        for c in IMAGENET_CLASSES:
            d = root / "imagenet" / split / c
            d.mkdir(parents=True)
            for i in range(n):
                pixels = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(d / f"{c}_{i}.JPEG", quality=90)
    return root


@pytest.fixture
def write_imagenet():
    """``write_imagenet(root, *, train=2, val=1, size=256) -> root`` (``_write_imagenet``)."""
    return _write_imagenet


@pytest.fixture
def keep_threads():
    """``main(... --threads 1)`` sets torch's thread count for the process: restore it."""
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)
