"""dSprites renderer and loader, abstract dSprites, colour shapes, the ground-truth interface."""

from __future__ import annotations

import itertools
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from paperzoo.data import DataError
from paperzoo.data.dsprites import (
    BACKGROUND_COLORS,
    FACTOR_SIZES,
    OBJECT_COLORS,
    ORIENTATIONS,
    POSITIONS,
    SCALES,
    AbstractDSprites,
    DSprites,
    DSpritesNPZ,
    write_dsprites_npz,
)
from paperzoo.data.ground_truth import (
    GROUND_TRUTH,
    Quantized,
    ground_truth_split,
    load_ground_truth,
)
from paperzoo.data.shapes import ColorShapes


def _grid(*axes: list[int]) -> np.ndarray:
    return np.array(list(itertools.product(*axes)), dtype=np.int64)


def _distinct(images: torch.Tensor) -> int:
    return len({bytes(img.to(torch.uint8).numpy().tobytes()) for img in (images * 255).round()})


def test_factor_grid_matches_the_real_data() -> None:
    assert FACTOR_SIZES == (3, 6, 40, 32, 32)
    assert int(np.prod(FACTOR_SIZES)) == 737_280
    assert np.allclose(SCALES, np.linspace(0.5, 1.0, 6))
    assert ORIENTATIONS[0] == 0.0 and math.isclose(ORIENTATIONS[-1], 2 * math.pi)
    assert len(POSITIONS) == 32 and POSITIONS[0] == 0.0 and POSITIONS[-1] == 1.0


def test_renderer_gives_one_distinct_binary_image_per_grid_point() -> None:
    data = DSprites()
    grid = _grid([0, 1, 2], list(range(6)), [0, 1, 2], [0, 11, 31], [0, 16, 31])  # 486 points
    images = data.sample_observations_from_factors(grid, np.random.default_rng(0))
    assert images.shape == (len(grid), 1, 64, 64)
    assert set(torch.unique(images).tolist()) == {0.0, 1.0}
    assert _distinct(images) == len(grid)
    assert (images.flatten(1).sum(1) > 0).all()  # every sprite is visible


def test_renderer_is_deterministic_and_ignores_the_generator() -> None:
    data = DSprites(image_size=32)
    f = data.sample_factors(20, np.random.default_rng(1))
    a = data.sample_observations_from_factors(f, np.random.default_rng(2))
    b = data.sample_observations_from_factors(f, np.random.default_rng(3))
    assert torch.equal(a, b) and a.shape == (20, 1, 32, 32)


def test_factors_are_validated() -> None:
    data = DSprites(image_size=16)
    with pytest.raises(ValueError, match="out of range"):
        data.sample_observations_from_factors(np.array([[3, 0, 0, 0, 0]]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        data.sample_observations_from_factors(np.zeros((2, 4), dtype=int), np.random.default_rng(0))


def _write_npz(path: Path, sizes: tuple[int, ...], image_size: int = 16) -> torch.Tensor:
    grid = np.stack(np.unravel_index(np.arange(int(np.prod(sizes))), sizes), axis=1)
    images = DSprites(image_size=image_size).sample_observations_from_factors(
        grid, np.random.default_rng(0)
    )
    classes = np.concatenate([np.zeros((len(grid), 1), dtype=np.int64), grid], axis=1)
    np.savez_compressed(path, imgs=images[:, 0].numpy().astype(np.uint8), latents_classes=classes)
    return images


def test_npz_loader_reads_the_official_layout(tmp_path: Path) -> None:
    sizes = (3, 2, 2, 3, 2)
    images = _write_npz(tmp_path / "d.npz", sizes)
    data = DSpritesNPZ(tmp_path / "d.npz", factor_sizes=sizes)
    f = data.sample_factors(30, np.random.default_rng(0))
    idx = np.ravel_multi_index(f.T, sizes)
    assert torch.equal(
        data.sample_observations_from_factors(f, np.random.default_rng(0)), images[idx]
    )
    small = DSpritesNPZ(tmp_path / "d.npz", factor_sizes=sizes, image_size=8)
    assert small.sample_observations_from_factors(f, np.random.default_rng(0)).shape == (
        30,
        1,
        8,
        8,
    )


def test_npz_loader_rejects_bad_files(tmp_path: Path) -> None:
    sizes = (3, 2, 2, 2, 2)
    _write_npz(tmp_path / "d.npz", sizes)
    with pytest.raises(DataError, match="latents_classes"):
        DSpritesNPZ(tmp_path / "d.npz", factor_sizes=(3, 2, 2, 2, 3))
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(DataError, match="junk.npz"):
        DSpritesNPZ(tmp_path / "junk.npz", factor_sizes=sizes)
    raw = (tmp_path / "d.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match="cut.npz"):
        DSpritesNPZ(tmp_path / "cut.npz", factor_sizes=sizes)
    with zipfile.ZipFile(tmp_path / "noimgs.npz", "w") as zf:
        zf.writestr("latents_classes.npy", b"")
    with pytest.raises(DataError, match="imgs"):
        DSpritesNPZ(tmp_path / "noimgs.npz", factor_sizes=sizes)
    with pytest.raises(DataError, match="not found"):
        DSpritesNPZ(tmp_path / "missing.npz")


def test_registry_picks_renderer_or_file(tmp_path: Path) -> None:
    assert {"dsprites", "abstract-dsprites", "color-shapes"} <= set(GROUND_TRUTH.names())
    assert isinstance(load_ground_truth("dsprites", image_size=32), DSprites)
    with pytest.raises(DataError, match="7da33b31b13a06f4b04a70402ce90c2e"):
        load_ground_truth("dsprites", data_root=tmp_path)
    with pytest.raises(DataError, match="--download is not supported"):
        load_ground_truth("abstract-dsprites", data_root=tmp_path, download=True)


def test_abstract_dsprites_colours_sprite_and_background() -> None:
    data = AbstractDSprites(DSprites(image_size=32))
    assert data.factor_sizes == (5, 6, 3, 6, 32, 32) and data.observation_shape == (3, 32, 32)
    f = data.sample_factors(50, np.random.default_rng(0))
    x = data.sample_observations_from_factors(f, np.random.default_rng(0))
    corner = x[:, :, 0, 0]  # sprites never reach the corner
    assert torch.allclose(corner, torch.from_numpy(BACKGROUND_COLORS[f[:, 0]]))
    fg = torch.from_numpy(OBJECT_COLORS[f[:, 1]])
    has_fg = (x == fg[:, :, None, None]).all(dim=1).flatten(1).any(dim=1)
    assert has_fg.all()


def test_color_shapes_renders_distinct_scenes() -> None:
    data = ColorShapes(image_size=32)
    assert data.factor_sizes == (10, 10, 10, 8, 4, 15)
    grid = _grid([0, 5], [1, 7], [2, 9], [0, 7], [0, 1, 2, 3], [0, 7, 14])
    x = data.sample_observations_from_factors(grid, np.random.default_rng(0))
    assert x.shape == (len(grid), 3, 32, 32) and 0 <= x.min() and x.max() <= 1
    assert _distinct(x) == len(grid)


def test_quantized_maps_values_by_floor() -> None:
    q = Quantized(AbstractDSprites(DSprites(image_size=16)), [5, 6, 3, 3, 4, 4])
    assert q.factor_sizes == (5, 6, 3, 3, 4, 4)
    f = np.array([[4, 5, 2, 2, 3, 1]])
    assert q.to_original(f).tolist() == [[4, 5, 2, 4, 24, 8]]
    assert q.sample_observations(4, np.random.default_rng(0)).shape == (4, 3, 16, 16)


def test_ground_truth_split_labels_by_factor() -> None:
    split = ground_truth_split(
        DSprites(image_size=16), n_train=40, n_test=10, seed=0, label_factor=0
    )
    assert split.x_train.shape == (40, 1, 16, 16) and split.num_classes == 3
    assert split.y_train.dtype == torch.int64 and split.y_train.max() <= 2


def test_written_archive_has_the_official_format_and_the_renderers_images(tmp_path: Path) -> None:
    sizes = (3, 2, 3, 2, 4)
    path = write_dsprites_npz(tmp_path / "d" / "d.npz", factor_sizes=sizes, chunk=7)
    with np.load(path) as z:
        assert sorted(z.files) == ["imgs", "latents_classes", "latents_values"]
        imgs, classes, values = z["imgs"], z["latents_classes"], z["latents_values"]
    assert imgs.shape == (144, 64, 64) and imgs.dtype == np.uint8 and set(np.unique(imgs)) == {0, 1}
    assert classes[:, 0].tolist() == [0] * 144 and values[:, 0].tolist() == [1.0] * 144
    assert np.allclose(values[:, 2], SCALES[classes[:, 2]])  # scale values match their classes
    data = DSpritesNPZ(path, factor_sizes=sizes)  # the loader's order check passes
    grid = _grid(*(list(range(n)) for n in sizes))
    rng = np.random.default_rng(0)
    expect = DSprites().sample_observations_from_factors(grid, rng)
    assert torch.equal(data.sample_observations_from_factors(grid, rng), expect)
    with pytest.raises(ValueError, match="factor_sizes"):
        write_dsprites_npz(tmp_path / "x.npz", factor_sizes=(4, 1, 1, 1, 1))


def test_archive_digest_names_the_images_not_the_file(tmp_path: Path) -> None:
    sizes = (3, 1, 2, 2, 2)
    a = DSpritesNPZ(write_dsprites_npz(tmp_path / "a.npz", factor_sizes=sizes), factor_sizes=sizes)
    b = DSpritesNPZ(write_dsprites_npz(tmp_path / "b.npz", factor_sizes=sizes), factor_sizes=sizes)
    assert a.sha256 == b.sha256 and len(a.sha256) == 64
    assert AbstractDSprites(a).sha256 == a.sha256
    assert AbstractDSprites(DSprites(image_size=16)).sha256 is None  # the renderer: no file
    with zipfile.ZipFile(tmp_path / "a.npz") as zf:  # one pixel flipped: another digest
        arrays = {n[:-4]: np.load(zf.open(n)) for n in zf.namelist()}
    arrays["imgs"][0, 0, 0] ^= 1
    np.savez(tmp_path / "c.npz", **arrays)
    assert DSpritesNPZ(tmp_path / "c.npz", factor_sizes=sizes).sha256 != a.sha256
