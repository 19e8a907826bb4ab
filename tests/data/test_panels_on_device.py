"""Abstract dSprites' panels made on the device equal the host's, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from paperzoo.data.abstract_reasoning import render_pgms, sample_pgms
from paperzoo.data.dsprites import AbstractDSprites, DSprites, DSpritesNPZ, write_dsprites_npz
from paperzoo.data.ground_truth import Quantized

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    ),
]
PGM_SIZES = (5, 6, 3, 3, 4, 4)  # the study's quantized grid of abstract dSprites


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The renderer's full dSprites grid at 8 x 8 in the official archive's format."""
    return write_dsprites_npz(
        tmp_path_factory.mktemp("dsprites") / "d.npz", image_size=8, chunk=65536
    )


def _bases(archive: Path) -> dict[str, DSprites | DSpritesNPZ]:
    return {
        "archive 8x8": DSpritesNPZ(archive),
        "archive pooled to 4x4": DSpritesNPZ(archive, image_size=4),
        "renderer 16x16": DSprites(image_size=16),
    }


@pytest.mark.parametrize("device", DEVICES)
def test_panels_made_on_the_device_equal_the_hosts(archive: Path, device: str) -> None:
    for what, base in _bases(archive).items():
        data = Quantized(AbstractDSprites(base), PGM_SIZES)
        pgms = sample_pgms(data.factor_sizes, 40, np.random.default_rng(1))
        host = render_pgms(data, pgms, np.random.default_rng(2))
        made = render_pgms(data, pgms, np.random.default_rng(2), device)
        for h, m in zip(host, made, strict=True):
            assert m.device.type == device and m.dtype == h.dtype == torch.float32, what
            assert torch.equal(m.cpu(), h), what
        # the same draws: the next values of the generator agree too
        a, b = np.random.default_rng(3), np.random.default_rng(3)
        render_pgms(data, pgms, a)
        render_pgms(data, pgms, b, device)
        assert a.integers(1 << 30) == b.integers(1 << 30), what


def test_the_archive_is_copied_to_a_device_once(archive: Path) -> None:
    base = DSpritesNPZ(archive)
    data = AbstractDSprites(base)
    f = data.sample_factors(16, np.random.default_rng(0))
    for _ in range(3):
        data.observations_on(f, np.random.default_rng(0), "cpu")
    assert list(base._on_device) == [torch.device("cpu")]
