"""Validation splits: seeded, stratified random subsets of the training data, never its tail."""

from __future__ import annotations

import gzip
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from paperzoo.data import load_dataset
from paperzoo.data.splits import validation_split
from paperzoo.papers.path_sgd import PathSGDExperiment
from paperzoo.papers.path_sgd.training import prepare


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_split_is_stratified_disjoint_sorted_and_seeded():
    labels = torch.arange(10).repeat_interleave(50)  # sorted by class, 50 each
    tr, va = validation_split(labels, 100, generator=_gen())
    assert len(va) == 100 and len(tr) == 400
    assert torch.equal(torch.sort(torch.cat([tr, va])).values, torch.arange(500))
    assert torch.equal(tr, tr.sort().values) and torch.equal(va, va.sort().values)
    assert torch.bincount(labels[va], minlength=10).tolist() == [10] * 10
    assert torch.equal(validation_split(labels, 100, generator=_gen())[1], va)  # seeded
    assert not torch.equal(validation_split(labels, 100, generator=_gen(1))[1], va)
    assert not torch.equal(va, torch.arange(400, 500))  # not the tail


def test_split_allocates_unequal_classes_in_proportion():
    counts = [300, 100, 50, 30, 20]
    labels = torch.cat([torch.full((n,), c) for c, n in enumerate(counts)])
    labels = labels[torch.randperm(len(labels), generator=_gen(3))]
    _, va = validation_split(labels, fraction=0.1, generator=_gen())
    assert torch.bincount(labels[va]).tolist() == [30, 10, 5, 3, 2]
    # Rounding: the quotas sum to n_val, each within one of its exact share.
    _, va = validation_split(labels, 37, generator=_gen())
    got = torch.bincount(labels[va], minlength=5).double()
    exact = torch.tensor(counts, dtype=torch.float64) * 37 / sum(counts)
    assert len(va) == 37 and bool(((got - exact).abs() < 1).all())


def test_split_rejects_bad_sizes():
    labels = torch.zeros(10, dtype=torch.long)
    with pytest.raises(ValueError, match="exactly one"):
        validation_split(labels, generator=_gen())
    with pytest.raises(ValueError, match="n_val"):
        validation_split(labels, 10, generator=_gen())
    with pytest.raises(ValueError, match="fraction"):
        validation_split(labels, fraction=1.0, generator=_gen())
    tr, va = validation_split(labels, 0, generator=_gen())
    assert len(va) == 0 and torch.equal(tr, torch.arange(10))


def _idx(arr: np.ndarray) -> bytes:
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def _write_class_sorted_mnist(root: Path, per_class: int, per_class_test: int) -> None:
    """A legal MNIST directory whose training file is sorted by class (0, 0, ..., 9, 9); every
    image's first pixel encodes its label so that image/label alignment can be checked."""
    d = root / "mnist"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", per_class), ("t10k", per_class_test)):
        labels = np.repeat(np.arange(10), n)
        images = rng.integers(0, 200, (len(labels), 28, 28))
        images[:, 0, 0] = labels * 20
        (d / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(images)))
        (d / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(_idx(labels)))


def test_class_sorted_idx_file_gives_a_stratified_validation_split(tmp_path):
    _write_class_sorted_mnist(tmp_path, per_class=40, per_class_test=5)
    split = load_dataset("mnist", data_root=tmp_path)
    assert split.y_train.tolist() == sorted(split.y_train.tolist())  # the file is class-sorted
    tr, va = validation_split(split.y_train, 100, generator=_gen())
    assert torch.bincount(split.y_train[va], minlength=10).tolist() == [10] * 10
    assert torch.bincount(split.y_train[tr], minlength=10).tolist() == [30] * 10


def test_path_sgd_holds_out_every_class_of_a_class_sorted_file(tmp_path):
    """``paperzoo reproduce path-sgd --dataset mnist --data-root DIR`` on a class-sorted
    training file: the step-size choice sees every digit in proportion (the tail would hold out
    digits 8 and 9 only)."""
    _write_class_sorted_mnist(tmp_path, per_class=50, per_class_test=5)
    split = load_dataset("mnist", data_root=tmp_path)
    cfg = replace(PathSGDExperiment.configs["quick"], n_val=100, standardize=False)
    data = prepare(split, cfg, _gen())
    assert torch.bincount(data.y_val, minlength=10).tolist() == [10] * 10
    assert torch.bincount(data.y_train, minlength=10).tolist() == [40] * 10
    # Images travel with their labels (first pixel = 20 * label / 255).
    for x, y in ((data.x_val, data.y_val), (data.x_train, data.y_train)):
        assert torch.equal((x[:, 0, 0, 0] * 255 / 20).round().long(), y)
    assert len(data.x_test) == 50


def test_subset_is_a_stratified_draw_from_a_class_sorted_file():
    # Split.subset used to keep a file's first examples: a file written class by class then
    # trained on its first classes only (Path-SGD's smoke loss 0.29 instead of 1.64).
    from paperzoo.data import Split

    d = load_dataset("digits")
    i, j = torch.argsort(d.y_train, stable=True), torch.argsort(d.y_test, stable=True)
    split = Split(d.x_train[i], d.y_train[i], d.x_test[j], d.y_test[j], d.info, d.num_classes)
    sub = split.subset(400, 200, generator=_gen())
    for y_all, y_sub, n in ((split.y_train, sub.y_train, 400), (split.y_test, sub.y_test, 200)):
        share = torch.bincount(y_all, minlength=10) * n / len(y_all)
        assert len(y_sub) == n
        assert (torch.bincount(y_sub, minlength=10) - share).abs().max() <= 1
    assert (sub.info.n_train, sub.info.n_test) == (400, 200)
    assert torch.equal(sub.x_train, split.subset(400, 200).x_train)  # default: seeded with 0
    full = split.subset(None, len(split.y_test), generator=_gen())
    assert full.x_train is split.x_train and full.x_test is split.x_test
