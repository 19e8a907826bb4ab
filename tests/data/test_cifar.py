"""CIFAR python-batch parser, loaders, download and the pad-crop-flip augmentation."""

from __future__ import annotations

import hashlib
import io
import pickle
import struct
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from paperzoo.data import DataError, load_dataset
from paperzoo.data.cifar import (
    CIFAR10_TRAIN,
    parse_pickle,
    random_crop_flip,
    read_cifar_batch,
)
from paperzoo.data.download import ChecksumError, RemoteFile


def _short_str(s: bytes) -> bytes:
    return b"U" + bytes([len(s)]) + s  # SHORT_BINSTRING (a Python 2 str)


def _int(v: int) -> bytes:
    if v < 256:
        return b"K" + bytes([v])  # BININT1
    if v < 65536:
        return b"M" + struct.pack("<H", v)  # BININT2
    return b"J" + struct.pack("<i", v)  # BININT


def py2_cifar_pickle(data: np.ndarray, labels: list[int], label_key: bytes = b"labels") -> bytes:
    """The byte layout Python 2's cPickle (protocol 2) wrote for the official CIFAR batches."""
    out = [b"\x80\x02}q\x01(", _short_str(b"data"), b"q\x02"]
    out += [b"cnumpy.core.multiarray\n_reconstruct\nq\x03cnumpy\nndarray\nq\x04"]
    out += [b"K\x00\x85", _short_str(b"b"), b"\x87Rq\x05("]
    out += [b"K\x01", _int(data.shape[0]), _int(data.shape[1]), b"\x86"]
    out += [b"cnumpy\ndtype\nq\x06", _short_str(b"u1"), b"K\x00K\x01\x87Rq\x07("]
    out += [b"K\x03", _short_str(b"|"), b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"]
    raw = data.tobytes()
    out += [b"\x89T", struct.pack("<i", len(raw)), raw, b"tb"]
    out += [_short_str(label_key), b"](" + b"".join(_int(v) for v in labels) + b"e"]
    out += [_short_str(b"batch_label"), _short_str(b"training batch 1 of 5")]
    names = b"".join(_short_str(f"img_{i}.png".encode()) for i in range(len(labels)))
    out += [_short_str(b"filenames"), b"](" + names + b"e", b"u."]
    return b"".join(out)


def _fake_batch(n: int, num_classes: int, seed: int) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), rng.integers(0, num_classes, n).tolist()


def test_parser_matches_stdlib_on_the_python2_layout() -> None:
    data, labels = _fake_batch(7, 10, 0)
    raw = py2_cifar_pickle(data, labels)
    ref = pickle.loads(raw, encoding="latin1")  # the trusted reference decoder (our own bytes)
    got = parse_pickle(raw)
    assert set(got) == set(ref) == {"data", "labels", "batch_label", "filenames"}
    np.testing.assert_array_equal(got["data"], ref["data"])
    assert got["labels"] == ref["labels"] == labels
    assert got["filenames"] == ref["filenames"]


@pytest.mark.parametrize("protocol", [0, 2, 3, 4, 5])
def test_parser_reads_python3_pickles(protocol: int) -> None:
    obj = {
        "data": np.arange(24, dtype=np.uint8).reshape(2, 12),
        "f": np.linspace(0, 1, 6, dtype=">f4").reshape(3, 2).T,  # big-endian, Fortran order
        "labels": [1, 2**40, -3],
        "t": (1.5, None, True, "x", b"y"),
    }
    got = parse_pickle(pickle.dumps(obj, protocol=protocol))
    np.testing.assert_array_equal(got["data"], obj["data"])
    np.testing.assert_array_equal(got["f"], obj["f"])
    assert got["labels"] == obj["labels"] and got["t"] == obj["t"]


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("pwned",))


@pytest.mark.parametrize(
    "payload",
    [
        pickle.dumps({"data": _Evil()}, protocol=2),
        pickle.dumps(np.array([object(), 1], dtype=object), protocol=2),
        b"cos\nsystem\n(S'true'\ntR.",
    ],
)
def test_parser_refuses_code_and_object_arrays(payload: bytes) -> None:
    with pytest.raises(DataError, match="not a valid CIFAR pickle"):
        parse_pickle(payload, source="evil")


def _write_cifar10(root: Path, n: int = 6) -> dict[str, tuple[np.ndarray, list[int]]]:
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True)
    batches = {}
    for i, name in enumerate((*CIFAR10_TRAIN, "test_batch")):
        batches[name] = _fake_batch(n, 10, i)
        (d / name).write_bytes(py2_cifar_pickle(*batches[name]))
    return batches


def test_cifar10_loader_on_files_in_the_real_format(tmp_path: Path) -> None:
    batches = _write_cifar10(tmp_path)
    split = load_dataset("cifar10", data_root=tmp_path)
    assert split.x_train.shape == (30, 3, 32, 32) and split.x_test.shape == (6, 3, 32, 32)
    assert split.num_classes == 10 and split.info.n_train == 30
    data, labels = batches["data_batch_2"]
    # row layout: 1024 red, 1024 green, 1024 blue values; pixel (r, c) at r * 32 + c
    img = split.x_train[6]
    assert img[1, 2, 5].item() == pytest.approx(data[0, 1024 + 2 * 32 + 5] / 255.0)
    assert split.y_train[6:12].tolist() == labels
    assert 0.0 <= split.x_train.min() and split.x_train.max() <= 1.0


def test_cifar100_loader_fine_labels(tmp_path: Path) -> None:
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    for i, name in enumerate(("train", "test")):
        data, labels = _fake_batch(5, 100, 10 + i)
        (d / name).write_bytes(py2_cifar_pickle(data, labels, b"fine_labels"))
    split = load_dataset("cifar100", data_root=tmp_path)
    assert split.num_classes == 100 and len(split.x_train) == 5 and len(split.y_test) == 5


def test_corrupt_and_truncated_files_raise_data_error(tmp_path: Path) -> None:
    data, labels = _fake_batch(4, 10, 0)
    raw = py2_cifar_pickle(data, labels)
    bad = tmp_path / "data_batch_1"
    bad.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match="data_batch_1"):
        read_cifar_batch(bad)
    bad.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(DataError, match="data_batch_1"):
        read_cifar_batch(bad)
    bad.write_bytes(py2_cifar_pickle(data, labels[:3]))  # labels and images disagree
    with pytest.raises(DataError, match="4 images but 3 labels"):
        read_cifar_batch(bad)
    bad.write_bytes(py2_cifar_pickle(data, [0, 1, 2, 10]))
    with pytest.raises(DataError, match="labels outside"):
        read_cifar_batch(bad)


def test_missing_files_explain_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="--data-root"):
        load_dataset("cifar10")
    with pytest.raises(DataError, match="--download"):
        load_dataset("cifar10", data_root=tmp_path)


def _tarball(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    _write_cifar10(src, n=2)
    path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(src / "cifar-10-batches-py", arcname="cifar-10-batches-py")
    return path


def test_download_verifies_checksum_and_extracts(tmp_path: Path, monkeypatch) -> None:
    import paperzoo.data.cifar as cifar

    tgz = _tarball(tmp_path)
    digest = hashlib.sha256(tgz.read_bytes()).hexdigest()
    root = tmp_path / "root"
    good = RemoteFile(tgz.name, tgz.as_uri(), digest)
    monkeypatch.setattr(cifar, "CIFAR10_ARCHIVE", good)
    split = load_dataset("cifar10", data_root=root, download=True)
    assert len(split.x_train) == 10 and (root / "cifar-10-python.tar.gz").is_file()

    monkeypatch.setattr(cifar, "CIFAR10_ARCHIVE", RemoteFile(tgz.name, tgz.as_uri(), "0" * 64))
    with pytest.raises(ChecksumError):
        load_dataset("cifar10", data_root=tmp_path / "other", download=True)


def test_random_crop_flip_is_a_shifted_window_of_the_padded_image() -> None:
    x = torch.rand(64, 3, 8, 8)
    g = torch.Generator().manual_seed(0)
    out = random_crop_flip(x, generator=g, padding=2)
    assert out.shape == x.shape
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    flips = 0
    for i in range(len(x)):
        windows = [padded[i, :, dy : dy + 8, dx : dx + 8] for dy in range(5) for dx in range(5)]
        plain = any(torch.equal(out[i], w) for w in windows)
        mirrored = any(torch.equal(out[i], w.flip(-1)) for w in windows)
        assert plain or mirrored
        flips += int(mirrored and not plain)
    assert 16 < flips < 48  # about half are mirrored
    again = random_crop_flip(x, generator=torch.Generator().manual_seed(0), padding=2)
    assert torch.equal(out, again)
    same = random_crop_flip(x, generator=g, padding=0, flip=False)
    assert torch.equal(same, x)


def test_parser_error_names_the_position() -> None:
    with pytest.raises(DataError, match="near byte"):
        parse_pickle(b"\x80\x02]q\x01(K\x01K\x02\xffe.", source="x")
    with pytest.raises(DataError):
        parse_pickle(io.BytesIO(b"").getvalue(), source="x")
