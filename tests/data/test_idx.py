import gzip
import hashlib
import http.server
import struct
import threading
from functools import partial

import numpy as np
import pytest

from paperzoo.data import DataError, load_dataset
from paperzoo.data.download import ChecksumError, RemoteFile, download_file, ensure_files
from paperzoo.data.idx import DEBIAN_FASHION_DIR, load_idx_split, read_idx


def _idx_bytes(arr: np.ndarray) -> bytes:
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def _write_mnist_dir(d, n_train=6, n_test=4, gz=True):
    rng = np.random.default_rng(0)
    d.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        files = {
            f"{prefix}-images-idx3-ubyte": _idx_bytes(rng.integers(0, 256, (n, 28, 28))),
            f"{prefix}-labels-idx1-ubyte": _idx_bytes(rng.integers(0, 10, (n,))),
        }
        for name, data in files.items():
            if gz:
                (d / f"{name}.gz").write_bytes(gzip.compress(data))
            else:
                (d / name).write_bytes(data)


@pytest.mark.parametrize("gz", [True, False])
def test_reads_good_files(tmp_path, gz):
    _write_mnist_dir(tmp_path / "mnist", gz=gz)
    split = load_dataset("mnist", data_root=tmp_path)
    assert split.x_train.shape == (6, 1, 28, 28) and split.x_test.shape == (4, 1, 28, 28)
    assert 0.0 <= split.x_train.min() and split.x_train.max() <= 1.0
    assert split.y_train.dtype.is_floating_point is False
    raw = read_idx(
        tmp_path / "mnist" / ("train-images-idx3-ubyte.gz" if gz else "train-images-idx3-ubyte")
    )
    assert np.allclose(split.x_train[:, 0].numpy() * 255.0, raw)


def test_wrong_magic_truncated_and_bad_gzip_are_reported(tmp_path):
    good = _idx_bytes(np.zeros((3, 2, 2)))
    (tmp_path / "magic").write_bytes(b"\x01\x02" + good[2:])
    with pytest.raises(DataError, match="bad IDX magic"):
        read_idx(tmp_path / "magic")
    (tmp_path / "short").write_bytes(good[:-3])
    with pytest.raises(DataError, match="truncated or corrupt"):
        read_idx(tmp_path / "short")
    (tmp_path / "x.gz").write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="cannot read"):
        read_idx(tmp_path / "x.gz")
    (tmp_path / "tiny").write_bytes(b"\x00")
    with pytest.raises(DataError, match="too short"):
        read_idx(tmp_path / "tiny")


def test_missing_root_and_files_give_clear_errors(tmp_path):
    with pytest.raises(DataError, match="needs --data-root"):
        load_dataset("mnist")
    with pytest.raises(DataError, match="missing train-images.*--download"):
        load_dataset("mnist", data_root=tmp_path)


def test_images_and_labels_must_agree(tmp_path):
    _write_mnist_dir(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(_idx_bytes(np.zeros(5))))
    with pytest.raises(DataError, match="disagree"):
        load_idx_split(tmp_path, "mnist")


def test_swapped_image_and_label_files_say_so(tmp_path):
    _write_mnist_dir(tmp_path, gz=False)
    images = tmp_path / "t10k-images-idx3-ubyte"
    labels = tmp_path / "t10k-labels-idx1-ubyte"
    img_bytes, lab_bytes = images.read_bytes(), labels.read_bytes()
    images.write_bytes(lab_bytes)
    labels.write_bytes(img_bytes)
    with pytest.raises(DataError, match=r"expected an image file \(idx3\).*a label file \(idx1\)"):
        load_idx_split(tmp_path, "mnist")
    images.write_bytes(img_bytes)
    with pytest.raises(DataError, match=r"expected a label file \(idx1\).*an image file"):
        load_idx_split(tmp_path, "mnist")
    with pytest.raises(ValueError, match="kind must be"):
        read_idx(images, kind="pixels")


def test_download_verifies_sha256_via_file_url(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"payload")
    good = hashlib.sha256(b"payload").hexdigest()
    dest = download_file(src.as_uri(), tmp_path / "out" / "f.bin", good)
    assert dest.read_bytes() == b"payload"
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        download_file(src.as_uri(), tmp_path / "out" / "g.bin", "0" * 64)
    assert not (tmp_path / "out" / "g.bin").exists()


def test_download_from_local_http_server(tmp_path):
    served = tmp_path / "served"
    _write_mnist_dir(served)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        files = [
            RemoteFile(p.name, f"{base}/{p.name}", hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(served.iterdir())
        ]
        root = tmp_path / "root"
        ensure_files(root, files, download=True, what="test")
        split = load_idx_split(root, "mnist")
        assert len(split.x_train) == 6
        bad = [RemoteFile("new.gz", files[0].url, "f" * 64)]
        with pytest.raises(ChecksumError):
            ensure_files(root, bad, download=True, what="test")
    finally:
        server.shutdown()


def test_unreachable_url_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="could not download"):
        download_file((tmp_path / "missing").as_uri(), tmp_path / "x", "0" * 64)


def test_embedded_mnist5k_is_real_stratified_and_seeded():
    a = load_dataset("mnist5k", seed=0)
    b = load_dataset("mnist5k", seed=1)
    assert a.x_train.shape == (4000, 1, 28, 28) and a.x_test.shape == (1000, 1, 28, 28)
    assert a.y_test.bincount().tolist() == [100] * 10
    assert not a.x_train[:10].equal(b.x_train[:10])


@pytest.mark.skipif(
    not DEBIAN_FASHION_DIR.is_dir(), reason="Debian's dataset-fashion-mnist not installed"
)
def test_debian_fashion_mnist():
    split = load_dataset("fashion-mnist")
    assert split.x_train.shape == (60000, 1, 28, 28) and len(split.y_test) == 10000


@pytest.mark.parametrize("gz", [True, False])
def test_idx_count_reads_the_number_of_examples_from_the_header(tmp_path, gz):
    from paperzoo.data.idx import idx_count

    _write_mnist_dir(tmp_path / "mnist", n_train=7, n_test=3, gz=gz)
    suffix = ".gz" if gz else ""
    assert idx_count(tmp_path / "mnist" / f"train-images-idx3-ubyte{suffix}") == 7
    assert idx_count(tmp_path / "mnist" / f"t10k-labels-idx1-ubyte{suffix}") == 3
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x01\x02\x08\x03" + b"\x00" * 8)
    with pytest.raises(DataError, match="not an IDX file"):
        idx_count(bad)
    bad.write_bytes(b"\x00\x00")
    with pytest.raises(DataError, match="not an IDX file"):
        idx_count(bad)
