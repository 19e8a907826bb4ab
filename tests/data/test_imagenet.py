"""ImageNet class folders: the layout check, the listing, the transforms and the streaming loader,
on a tiny fixture written here (random 256 x 256 JPEGs in three class folders)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from paperzoo.data import DataError, layouts
from paperzoo.data.imagenet import (
    LAYOUT,
    MEAN,
    STD,
    ImageNetTrainSource,
    RandAugment,
    count_images,
    eval_transform,
    imagenet_info,
    iterate_eval,
    normalize,
    random_resized_crop_box,
    scan_image_folder,
    train_transform,
)
from paperzoo.engine.distributed import DistInfo

CLASSES = ("n01440764", "n01443537", "n01484850")  # what conftest's write_imagenet writes


def test_layout_is_registered_and_required(tmp_path: Path) -> None:
    with pytest.raises(layouts.DataRequired) as e:
        layouts.require("imagenet", None)
    msg = str(e.value)
    assert "\n" not in msg and "ImageNet" in msg and "DIR/imagenet/train/<wnid>/*.JPEG" in msg
    (tmp_path / "imagenet" / "train" / CLASSES[0]).mkdir(parents=True)
    with pytest.raises(layouts.DataRequired):  # no val folder yet
        layouts.require("imagenet", tmp_path)
    (tmp_path / "imagenet" / "val" / CLASSES[0]).mkdir(parents=True)
    layouts.require("imagenet", tmp_path)  # both present: no error


def test_listing_labels_classes_in_sorted_order(tmp_path: Path, write_imagenet) -> None:
    root = write_imagenet(tmp_path)
    train = scan_image_folder(root / "imagenet" / "train")
    val = scan_image_folder(root / "imagenet" / "val", train.classes)
    assert train.classes == CLASSES and len(train) == 6 and len(val) == 3
    assert count_images(root / "imagenet" / "train") == 6 and count_images(root / "x") is None
    assert train.labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert all(
        p.startswith(train.classes[k]) for p, k in zip(train.paths, train.labels, strict=True)
    )
    img = train.load(0)
    assert img.mode == "RGB" and img.size == (256, 256)
    info = imagenet_info(root, train, val)
    assert (info.name, info.n_train, info.n_test) == ("imagenet", 6, 3) and len(info.sha256) == 64
    # An extra validation class that is not a training class is an error.
    (root / "imagenet" / "val" / "n99999999").mkdir()
    with pytest.raises(DataError, match="not training classes"):
        scan_image_folder(root / "imagenet" / "val", train.classes)
    with pytest.raises(DataError, match="not a directory"):
        scan_image_folder(root / "missing")


def test_random_resized_crop_stays_inside_with_the_inception_ranges() -> None:
    rng = np.random.default_rng(1)
    for _ in range(500):
        w, h = int(rng.integers(50, 600)), int(rng.integers(50, 600))
        left, top, cw, ch = random_resized_crop_box(w, h, rng)
        assert 0 <= left and 0 <= top and left + cw <= w and top + ch <= h and cw > 0 and ch > 0
        area = cw * ch / (w * h)
        ratio = cw / ch
        # Sampled boxes: 8-100 % of the area and ratio 3/4-4/3 (up to rounding); the fallback
        # box keeps the ratio range too.
        assert area <= 1.0 and 0.74 * 0.95 <= ratio <= 1.34 / 0.95


def test_train_transform_is_a_function_of_its_seed(tmp_path: Path, write_imagenet) -> None:
    root = write_imagenet(tmp_path, train=1, val=1)
    img = scan_image_folder(root / "imagenet" / "train").load(0)
    ra = RandAugment(n=2, m=9)
    a = train_transform(img, np.random.default_rng(5), randaugment=ra)
    b = train_transform(img, np.random.default_rng(5), randaugment=ra)
    c = train_transform(img, np.random.default_rng(6), randaugment=ra)
    assert a.shape == (3, 224, 224) and a.dtype == torch.float32
    assert torch.equal(a, b) and not torch.equal(a, c)
    # uint8 pixels for the loader; normalize maps them to the same floats on the device.
    raw = train_transform(img, np.random.default_rng(5), randaugment=ra, normalized=False)
    assert raw.dtype == torch.uint8 and torch.allclose(normalize(raw), a, atol=1e-6)
    white = normalize(torch.full((3, 1, 1), 255, dtype=torch.uint8)).flatten()
    assert torch.allclose(white, (1 - torch.tensor(MEAN)) / torch.tensor(STD))
    with pytest.raises(TypeError, match="uint8"):
        normalize(a)


def test_eval_transform_takes_the_central_crop_after_resizing() -> None:
    from PIL import Image

    pixels = np.zeros((256, 320, 3), dtype=np.uint8)  # H 256, W 320: shorter side already 256
    pixels[:, 48:272] = 255  # the central 224 columns white, the borders black
    x = eval_transform(Image.fromarray(pixels))
    assert x.shape == (3, 224, 224)
    white = (1.0 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor([0.229, 0.224, 0.225])
    assert torch.allclose(x[:, :, 1:-1].amin(dim=(1, 2)), white, atol=1e-4)


def test_randaugment_operations_keep_the_size_and_magnitude_zero_is_identity() -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    img = Image.fromarray(rng.integers(0, 256, (64, 48, 3), dtype=np.uint8))
    strong, none = RandAugment(m=9), RandAugment(m=0)
    for op in RandAugment.OPS:
        out = strong.apply(img, op, rng)
        assert out.size == img.size and out.mode == "RGB"
        if op not in ("autocontrast", "equalize"):  # the two without a magnitude
            same = np.asarray(none.apply(img, op, rng))
            assert np.array_equal(same, np.asarray(img)), op
    with pytest.raises(ValueError):
        RandAugment(m=11)


def test_train_source_streams_whole_epochs_reproducibly(tmp_path: Path, write_imagenet) -> None:
    root = write_imagenet(tmp_path, train=4, val=1)
    index = scan_image_folder(root / "imagenet" / "train")

    def tf(img, rng):
        return train_transform(img, rng, size=32)

    src = ImageNetTrainSource(index, batch_size=4, seed=3, transform=tf, workers=2)
    assert src.steps_per_epoch == 3
    seen = []
    for step in range(3):
        g = torch.Generator().manual_seed(step)
        x, y = src(step, g)
        assert x.shape == (4, 3, 32, 32) and y.dtype == torch.int64
        seen += src.sampler.indices(step).tolist()
        assert y.tolist() == index.labels[src.sampler.indices(step).numpy()].tolist()
    assert sorted(seen) == list(range(12))  # one epoch visits every image once
    x1, _ = src(5, torch.Generator().manual_seed(9))
    x2, _ = src(5, torch.Generator().manual_seed(1))
    assert torch.equal(x1, x2)  # the same step: the same crops (a function of seed and step)
    src.close()


def _tf32(img, rng):
    return train_transform(img, rng, size=32, normalized=False)


def test_loader_workers_and_ranks_do_not_change_the_batches(tmp_path: Path, write_imagenet) -> None:
    root = write_imagenet(tmp_path, train=4, val=1)  # 12 images, batch 4: 3 steps an epoch
    index = scan_image_folder(root / "imagenet" / "train")
    rng_before = torch.get_rng_state()
    inline = ImageNetTrainSource(index, batch_size=4, seed=3, transform=_tf32, workers=0)
    pooled = ImageNetTrainSource(index, batch_size=4, seed=3, transform=_tf32, workers=2)
    # Decoding runs in DataLoader worker processes, kept across restarts, prefetching.
    assert pooled.loader.num_workers == 2 and pooled.loader.persistent_workers
    assert pooled.loader.prefetch_factor == 2 and not pooled.loader.pin_memory
    pinned = ImageNetTrainSource(
        index, batch_size=4, seed=3, transform=_tf32, workers=2, pin_memory=True
    )
    assert pinned.loader.pin_memory  # (set when the batches go to a GPU)
    # Steps in order, then a jump back (a new model, a resumed run): the same batches either way.
    steps = [0, 1, 2, 3, 4, 5, 1, 2, 6]
    a = [inline(s) for s in steps]
    b = [pooled(s) for s in steps]
    for (xa, ya), (xb, yb) in zip(a, b, strict=True):
        assert xa.dtype == torch.uint8 and xa.shape == (4, 3, 32, 32)
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert torch.equal(a[1][0], a[6][0])  # step 1 again: the same crops
    pooled.close()
    assert torch.equal(pooled(4)[0], a[4][0])  # new workers after close, same batches
    pooled.close()
    # Two ranks: each takes the strided half of the global batch (the same crops), and over an
    # epoch the ranks read every image once.
    ranks = [
        ImageNetTrainSource(
            index, batch_size=4, seed=3, transform=_tf32, workers=0, dist=DistInfo(r, 2, r)
        )
        for r in range(2)
    ]
    seen: list[int] = []
    for step in range(3, 6):  # epoch 1
        halves = [src(step) for src in ranks]
        whole = a[steps.index(step)][0]
        for r, (x, y) in enumerate(halves):
            assert len(y) == 2 and torch.equal(x, whole[r::2])
            seen += ranks[r].sampler.indices(step).tolist()
    assert sorted(seen) == list(range(12))
    assert torch.equal(torch.get_rng_state(), rng_before)  # the global RNG is left alone
    with pytest.raises(ValueError, match="split evenly"):
        ImageNetTrainSource(index, batch_size=3, seed=0, transform=_tf32, dist=DistInfo(0, 2, 0))


def test_iterate_eval_batches_the_first_images(tmp_path: Path, write_imagenet) -> None:
    root = write_imagenet(tmp_path, train=1, val=3)
    val = scan_image_folder(root / "imagenet" / "val")
    batches = list(iterate_eval(val, batch_size=4, workers=2))
    assert [len(y) for _, y in batches] == [4, 4, 1]
    assert torch.cat([y for _, y in batches]).tolist() == val.labels.tolist()
    assert [len(y) for _, y in iterate_eval(val, batch_size=2, limit=3, workers=0)] == [2, 1]
    order = [8, 0, 4]  # one image of each class first
    (_, y), *_ = iterate_eval(val, batch_size=3, limit=3, order=order, workers=0)
    assert y.tolist() == [2, 0, 1]
    assert "DIR/imagenet/val/<wnid>/*.JPEG" in LAYOUT


def test_subset_draws_across_classes_in_file_order(tmp_path: Path, write_imagenet) -> None:
    root = write_imagenet(tmp_path, train=4, val=1)
    index = scan_image_folder(root / "imagenet" / "train")
    sub = index.subset(6, seed=1)
    assert len(sub) == 6 and list(sub.paths) == sorted(sub.paths)
    assert set(sub.paths) <= set(index.paths) and len(set(sub.labels.tolist())) > 1
    assert sub.sha256 != index.sha256 and index.subset(None) is index and index.subset(99) is index
    assert sub.paths == index.subset(6, seed=1).paths


def test_kept_batches_let_the_models_of_a_capped_run_share_one_loader_start(
    tmp_path: Path, write_imagenet
) -> None:
    """Three models trained from step 0 for 2 steps each (a --max-steps 2 run): with the first
    2 batches kept, the persistent loader starts once and its workers make each batch once; the
    batches are those a source without kept batches makes, restarted for every model."""
    root = write_imagenet(tmp_path, train=4, val=1)
    index = scan_image_folder(root / "imagenet" / "train")
    kept = ImageNetTrainSource(index, batch_size=4, seed=3, transform=_tf32, workers=2, keep=2)
    fresh = ImageNetTrainSource(index, batch_size=4, seed=3, transform=_tf32, workers=2)
    for _model in range(3):
        for step in range(2):
            (xk, yk), (xf, yf) = kept(step), fresh(step)
            assert torch.equal(xk, xf) and torch.equal(yk, yf)
    assert kept.starts == 1 and fresh.starts == 3
    assert kept(2)[0].shape == (4, 3, 32, 32) and kept.starts == 1  # step 2 follows on: no restart
    kept.close()
    fresh.close()
    with pytest.raises(ValueError, match="keep"):
        ImageNetTrainSource(index, batch_size=4, seed=3, transform=_tf32, keep=-1)
