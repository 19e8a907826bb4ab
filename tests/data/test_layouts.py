import gzip
import hashlib
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from paperzoo.data import DataError, DataRequired, babi, layouts, load_dataset
from paperzoo.data.layouts import (
    LAYOUTS,
    PINNED,
    PinnedFile,
    Release,
    all_files,
    check_files,
    file_digests,
    files_note,
    layout,
    pin_tree,
    register_layout,
    require,
)
from paperzoo.experiments import RunContext
from paperzoo.experiments.base import SCALES, ClaimSpec, Experiment, Outcome
from paperzoo.experiments.lookup import EXPERIMENTS, get_experiment
from paperzoo.experiments.runner import run_experiment


def test_every_real_data_set_declares_where_its_files_lie():
    for name in ("mnist", "fashion-mnist", "cifar10", "cifar100", "svhn", "dsprites"):
        lay = layout(name)
        assert lay.layout.startswith("DIR/") and lay.what
    with pytest.raises(KeyError, match="no file layout registered"):
        layout("no-such-data")
    with pytest.raises(ValueError, match="already registered"):
        register_layout("mnist", what="x", layout="DIR/x", downloadable=False, present=all_files())


def test_a_layout_is_found_in_a_process_that_imported_no_data_module():
    """``layout(name)`` imports the data modules that register layouts (a fresh interpreter
    that imported only ``paperzoo.data.layouts`` finds MNIST's)."""
    import subprocess
    import sys

    code = "from paperzoo.data.layouts import layout; print(layout('mnist').name)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "mnist"


def test_require_names_the_data_set_and_its_layout_on_one_line(tmp_path):
    with pytest.raises(DataRequired) as err:
        require("mnist", None)
    msg = str(err.value)
    assert "\n" not in msg and isinstance(err.value, DataError)
    assert msg.startswith("MNIST is the paper's data set") and "--data-root DIR" in msg
    assert "DIR/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]" in msg
    assert "--download" in msg and "--dataset" in msg
    with pytest.raises(DataRequired, match=f"--data-root {tmp_path} lacks them"):
        require("mnist", tmp_path)
    with pytest.raises(DataRequired, match="dSprites") as err:
        require("dsprites", tmp_path, download=True)  # no canonical download
    assert "--download" not in str(err.value)
    require("mnist", tmp_path / "new", download=True)  # --download will fetch them


def test_require_accepts_the_files_gzipped_or_not(tmp_path):
    d = tmp_path / "mnist"
    d.mkdir()
    stems = [f"{p}-{k}-ubyte" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")]
    for i, s in enumerate(stems):
        (d / (f"{s}.gz" if i % 2 else s)).write_bytes(b"")
    require("mnist", tmp_path)
    (d / stems[0]).unlink()
    with pytest.raises(DataRequired):
        require("mnist", tmp_path)
    assert set(LAYOUTS) >= {"mnist", "cifar10"}


# -- the canonical releases (the paper's data, checked) ------------------------------------------

MNIST_STEMS = [f"{p}-{k}-ubyte" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")]


def _idx(arr: np.ndarray) -> bytes:
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def _noise_mnist(
    root: Path, n_train: int = 600, n_test: int = 100, gz: bool = True, noise: bool = True
) -> Path:
    """Random noise (else zeros, cheap to write) in MNIST's IDX layout under ``root/mnist``
    (the review's laundering attempt)."""
    rng = np.random.default_rng(0)
    d = root / "mnist"
    d.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        files = {
            f"{prefix}-images-idx3-ubyte": _idx(
                rng.integers(0, 256, (n, 28, 28)) if noise else np.zeros((n, 28, 28))
            ),
            f"{prefix}-labels-idx1-ubyte": _idx(rng.integers(0, 10, (n,))),
        }
        for name, data in files.items():
            if gz:
                (d / f"{name}.gz").write_bytes(gzip.compress(data, mtime=0))
            else:
                (d / name).write_bytes(data)
    return root


def _pin_fixture(monkeypatch, name: str, root: Path, examples: dict[str, int] | None = None):
    """Pin the files under ``root`` as data set ``name``'s release (with its own digests)."""
    pins = pin_tree(root)
    if examples is not None:
        pins = tuple(PinnedFile(**{**p.__dict__, "examples": examples.get(p.path)}) for p in pins)
    monkeypatch.setitem(PINNED, name, Release("test fixture", pins))
    return pins


def test_every_layout_has_a_pinned_release_with_digests_from_a_named_source():
    lengths = {"sha256": 64, "md5": 32, "git_sha1": 40}
    for name in layouts.LAYOUTS:
        release = PINNED[name]
        assert release.source and (release.files or release.folders), name
        for pin in release.files:
            given = {a: getattr(pin, a) for a in lengths if getattr(pin, a) is not None}
            assert given, pin.path  # at least one digest per file
            for algo, digest in given.items():
                assert len(digest) == lengths[algo] and int(digest, 16) >= 0, (pin.path, algo)
    # MNIST: tensorflow/datasets' sizes and SHA-256 of the four .gz files, 60,000 / 10,000.
    mnist = {Path(p.path).name: p for p in PINNED["mnist"].files}
    assert mnist["train-images-idx3-ubyte.gz"].size == 9_912_422
    assert [p.examples for p in PINNED["mnist"].files] == [60_000, 60_000, 10_000, 10_000]
    assert [p.examples for p in PINNED["fashion-mnist"].files] == [60_000, 60_000, 10_000, 10_000]
    # The download table is the same table (idx.py / svhn.py read it from PINNED).
    from paperzoo.data.idx import MNIST_FILES
    from paperzoo.data.svhn import SVHN_FILES

    assert {f.name: f.sha256 for f in MNIST_FILES} == {k: p.sha256 for k, p in mnist.items()}
    assert [f.sha256 for f in SVHN_FILES] == [p.sha256 for p in PINNED["svhn"].files]
    # CIFAR: only the MD5 of the extracted batches is published (torchvision); no size invented.
    assert all(p.md5 and p.sha256 is None and p.size is None for p in PINNED["cifar10"].files)
    assert len(PINNED["cifar10"].files) == 6 and len(PINNED["cifar100"].files) == 2
    assert PINNED["abstract-dsprites"] == PINNED["dsprites"]
    assert dict(PINNED["imagenet"].folders) == {"imagenet/train": 1_281_167, "imagenet/val": 50_000}
    assert PINNED["imagenet"].classes == 1000


def test_pins_are_a_package_data_file_with_a_clear_error_when_missing_or_corrupt(
    tmp_path, monkeypatch
):
    assert layouts.load_pins() == PINNED  # read once at import; a fresh read gives the same
    assert PINNED["abstract-dsprites"] is PINNED["dsprites"]  # "same_as": one release
    monkeypatch.setattr(layouts.resources, "files", lambda package: tmp_path)
    with pytest.raises(DataError, match=r"paperzoo/data/pins.json is missing .*reinstall"):
        layouts.load_pins()
    pins = tmp_path / "pins.json"
    pins.write_text('{"releases": {')
    with pytest.raises(DataError, match=r"paperzoo/data/pins.json is corrupt"):
        layouts.load_pins()
    for bad in (
        {"releases": {"x": {"source": "s", "files": [{"path": "a"}]}}},  # no digest
        {"releases": {"x": {"source": "s", "files": [{"path": "a", "sha1": "00"}]}}},
        {"releases": {"x": {"source": "s", "digests": []}}},
        {"releases": {"x": {"same_as": "y"}}},
        {"pins": {}},
    ):
        pins.write_text(json.dumps(bad))
        with pytest.raises(DataError, match=r"paperzoo/data/pins.json is corrupt"):
            layouts.load_pins()


def test_babi_pins_cover_every_file_the_loader_reads_in_all_ten_folds():
    pins = {p.path for p in PINNED["babi-folds"].files}
    assert len(pins) == 38 * babi.NUM_FOLDS
    for fold in range(1, babi.NUM_FOLDS + 1):
        for name, spec in babi.TASKS.items():
            base = (
                f"extra_seq_tasks/fold_{fold}/noisy_parsed"
                if spec.sequence_file
                else f"processed_{fold}"
            )
            for split in ("train", "test"):
                assert f"{base}/{split}/{spec.file_id}_graphs.txt" in pins, (fold, name, split)
            assert f"{base}/train/{spec.file_id}_question_types.txt" in pins


def test_git_blob_sha1_is_gits_own_digest(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    # `git hash-object` of an empty file, a constant of git.
    assert file_digests(empty)["git_sha1"] == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    hello = tmp_path / "hello"
    hello.write_bytes(b"hello\n")
    got = file_digests(hello)
    assert got["sha256"] == hashlib.sha256(b"hello\n").hexdigest()
    assert got["md5"] == hashlib.md5(b"hello\n").hexdigest()
    assert got["git_sha1"] == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object


def test_digests_are_computed_once_per_file_version(tmp_path, monkeypatch):
    f = tmp_path / "batch"
    f.write_bytes(b"x" * 3_000_000)  # three 1 MiB chunks
    calls = []
    real = layouts.hashlib.sha256

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(layouts.hashlib, "sha256", counting)
    first = file_digests(f)
    assert file_digests(f) == first and len(calls) == 1  # cached: path, size, mtime unchanged
    f.write_bytes(b"y" * 3_000_000)
    os.utime(f, ns=(1, 1))  # another version of the file, whatever the clock's resolution
    assert file_digests(f)["sha256"] == real(b"y" * 3_000_000).hexdigest() and len(calls) == 2


def test_a_fixture_matching_its_pinned_digests_is_the_papers_setting(tmp_path, monkeypatch):
    root = _noise_mnist(tmp_path, n_train=6, n_test=4)
    counts = {f"mnist/{s}.gz": 6 if s.startswith("train") else 4 for s in MNIST_STEMS}
    _pin_fixture(monkeypatch, "mnist", root, counts)
    check = check_files("mnist", root)
    assert check.matches and check.note() is None and len(check.sha256) == 64
    assert files_note("mnist", root) is None
    full = RunContext(scale="full", data_root=root)
    draw = get_experiment("draw")
    draw.require_data(full)
    assert draw.setting_note(full) is None


def test_one_changed_byte_is_not_the_papers_setting_and_names_the_file(tmp_path, monkeypatch):
    root = _noise_mnist(tmp_path, n_train=6, n_test=4)
    _pin_fixture(monkeypatch, "mnist", root)
    target = root / "mnist" / "t10k-labels-idx1-ubyte.gz"
    data = bytearray(target.read_bytes())
    data[-9] ^= 0xFF  # inside the deflate stream: same size, other bytes
    target.write_bytes(bytes(data))
    check = check_files("mnist", root)
    assert len(check.mismatches) == 1
    assert check.mismatches[0].startswith("mnist/t10k-labels-idx1-ubyte.gz has SHA-256 ")
    note = get_experiment("draw").setting_note(RunContext(scale="full", data_root=root))
    assert note is not None and "\n" not in note
    assert "not the canonical MNIST" in note and "t10k-labels-idx1-ubyte.gz" in note


def test_noise_in_mnists_layout_names_its_counts_against_the_real_release(tmp_path):
    root = _noise_mnist(tmp_path)  # 600 / 100 noise images, the real PINNED table
    check = check_files("mnist", root)
    assert check.mismatches == (
        "mnist/train-images-idx3-ubyte.gz holds 600 examples, the release 60,000",
        "mnist/train-labels-idx1-ubyte.gz holds 600 examples, the release 60,000",
        "mnist/t10k-images-idx3-ubyte.gz holds 100 examples, the release 10,000",
        "mnist/t10k-labels-idx1-ubyte.gz holds 100 examples, the release 10,000",
    )
    note = check.note()
    assert note.endswith("; and 1 more file") and note.count("holds") == 3
    readers = [n for n in EXPERIMENTS.names() if get_experiment(n).paper_data == "mnist"]
    assert readers, "no paper reads MNIST at full"
    for name in readers:  # every paper that reads MNIST at full
        exp = get_experiment(name)
        ctx = RunContext(scale="full", data_root=root)
        exp.require_data(ctx)  # the run still runs (a GPU check on synthetic files), marked:
        assert exp.setting_note(ctx) == note, name


def test_uncompressed_idx_files_have_no_published_digest(tmp_path):
    root = _noise_mnist(tmp_path, n_train=60_000, n_test=10_000, gz=False, noise=False)
    check = check_files("mnist", root)
    assert len(check.mismatches) == 4
    assert check.mismatches[0] == (
        "mnist/train-images-idx3-ubyte.gz is absent (train-images-idx3-ubyte is there "
        "uncompressed; only the .gz files as published have canonical digests)"
    )


def test_right_sized_noise_fails_on_its_digest_and_an_absent_file_is_named(tmp_path):
    # 60,000 / 10,000 blank images: counts right, so the byte size or digest must catch it.
    root = _noise_mnist(tmp_path, n_train=60_000, n_test=10_000, noise=False)
    (root / "mnist" / "t10k-labels-idx1-ubyte.gz").unlink()
    (root / "mnist" / "t10k-labels-idx1-ubyte").write_bytes(b"")  # `present`, but not the .gz
    mism = check_files("mnist", root).mismatches
    assert len(mism) == 4
    assert (
        mism[0].startswith("mnist/train-images-idx3-ubyte.gz is ")
        and "bytes, the release 9,912,422" in mism[0]
    )  # noqa: E501
    assert mism[3].startswith("mnist/t10k-labels-idx1-ubyte.gz is absent")


def test_md5_and_git_blob_pins_are_checked_where_no_sha256_is_published(tmp_path, monkeypatch):
    d = tmp_path / "cifar-10-batches-py"
    d.mkdir()
    (d / "data_batch_1").write_bytes(b"batch one")
    pin = PinnedFile("cifar-10-batches-py/data_batch_1", md5=hashlib.md5(b"batch one").hexdigest())
    monkeypatch.setitem(PINNED, "cifar10", Release("fixture", (pin,)))
    assert check_files("cifar10", tmp_path).matches
    (d / "data_batch_1").write_bytes(b"batch 0ne")
    (mism,) = check_files("cifar10", tmp_path).mismatches
    assert mism.startswith("cifar-10-batches-py/data_batch_1 has MD5 ")
    # dSprites: the git blob SHA-1 of the authors' repository.
    f = tmp_path / "dsprites" / "dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz"
    f.parent.mkdir()
    f.write_bytes(b"hello\n")
    blob = PinnedFile(
        f.relative_to(tmp_path).as_posix(), git_sha1="ce013625030ba8dba906f756967f9e9ca394464a"
    )  # noqa: E501
    monkeypatch.setitem(PINNED, "dsprites", Release("fixture", (blob,)))
    assert check_files("dsprites", tmp_path).matches
    f.write_bytes(b"hello!")
    assert "has git blob SHA-1" in check_files("dsprites", tmp_path).mismatches[0]
    # The real release: a stand-in archive is not the paper's data for the disentanglement study.
    assert "dsprites_ndarray" in (files_note("abstract-dsprites", tmp_path) or "")


def test_imagenet_is_checked_by_counts_and_class_folders(tmp_path, monkeypatch, write_imagenet):
    root = write_imagenet(tmp_path, train=2, val=1, size=8)  # 3 classes, 6 / 3 images
    folders = {"imagenet/train": 6, "imagenet/val": 3}
    fixture = Release("fixture", folders=folders, classes=3, class_pattern=r"n\d{8}")
    real = check_files("imagenet", root)  # the real counts: 1,000 classes, 1,281,167 images
    assert real.mismatches[:2] == (
        "imagenet/train has 3 class folders, the release 1,000",
        "imagenet/train holds 6 images, the release 1,281,167",
    )
    monkeypatch.setitem(PINNED, "imagenet", fixture)
    check = check_files("imagenet", root)
    assert check.matches and check.sha256 is not None
    extra = root / "imagenet" / "val" / "n01440764" / "extra.JPEG"
    extra.write_bytes((root / "imagenet" / "val" / "n01440764" / "n01440764_0.JPEG").read_bytes())
    assert check_files("imagenet", root).mismatches == (
        "imagenet/val holds 4 images, the release 3",
    )
    extra.unlink()
    (root / "imagenet" / "val" / "n01443537").rename(root / "imagenet" / "val" / "goldfish")
    mism = check_files("imagenet", root).mismatches
    assert mism == (
        r"imagenet/val has class folders not named like n\d{8}: goldfish",
        "imagenet/val's class folders are not those of imagenet/train",
    )


def test_require_hashes_present_files_before_training_and_returns_the_check(tmp_path, caplog):
    root = _noise_mnist(tmp_path)
    with caplog.at_level("WARNING", logger="paperzoo.data.layouts"):
        check = layouts.require("mnist", root)
    assert check is not None and not check.matches
    assert "not the paper's setting" in caplog.text and "600 examples" in caplog.text
    assert layouts.require("mnist", tmp_path / "new", download=True) is None  # to be fetched


def test_a_dataset_without_a_release_never_matches(tmp_path, monkeypatch):
    monkeypatch.delitem(PINNED, "svhn")
    check = check_files("svhn", tmp_path)
    assert check.mismatches == ("no canonical release is pinned",)


class ToyMnist(Experiment):
    """A paper whose full scale reads MNIST, run by the real runner in a second (no full-scale
    paper here runs in under a minute on 2 cores, even capped by --max-steps)."""

    name = "toy-mnist"
    title = "toy"
    claims = (ClaimSpec("mnist.mean_pixel", "the mean training pixel", None, ">= 0"),)
    datasets = ("mnist",)
    paper_data = "mnist"
    configs = {s: None for s in SCALES}

    def run(self, cfg, ctx):
        split = load_dataset("mnist", data_root=ctx.data_root)
        return Outcome(
            measured={"mnist.mean_pixel": float(split.x_train.mean())}, data=[split.info]
        )


def _full_run(monkeypatch, root: Path, out: Path) -> dict:
    monkeypatch.setitem(EXPERIMENTS._factories, ToyMnist.name, ToyMnist)
    ctx = RunContext(scale="full", seed=0, out_dir=out, data_root=root, quiet=True)
    run_experiment(ToyMnist.name, ctx)
    return json.loads((out / "results.json").read_text())


def test_full_run_on_noise_in_mnists_layout_is_not_the_papers_setting(tmp_path, monkeypatch):
    """The review's second laundering attempt: 600 noise images in MNIST's IDX layout at
    --scale full read ``paper_setting: true``; now the run runs, marked, with the mismatch
    named."""
    root = _noise_mnist(tmp_path / "data")
    res = _full_run(monkeypatch, root, tmp_path / "noise")
    assert res["paper_setting"] is False and res["claims"][0]["measured"] is not None
    assert res["setting_note"].startswith(f"the files under {root} are not the canonical MNIST: ")
    assert "mnist/train-images-idx3-ubyte.gz holds 600 examples" in res["setting_note"]
    assert "NOT THE PAPER'S SETTING" in (tmp_path / "noise" / "report.md").read_text()
    # The same files pinned as the release (their own digests and counts): the paper's setting.
    counts = {f"mnist/{s}.gz": 600 if s.startswith("train") else 100 for s in MNIST_STEMS}
    _pin_fixture(monkeypatch, "mnist", root, counts)
    res = _full_run(monkeypatch, root, tmp_path / "pinned")
    assert res["paper_setting"] is True and res["setting_note"] is None


DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(
    not any(DEBIAN_FASHION.glob("*.gz")),
    reason="Debian's dataset-fashion-mnist (.gz files) is not installed",
)
def test_debians_fashion_mnist_is_the_release_repacked():
    """Debian's files match its pinned repack, and each one with the release's gzip header put
    back is the released file: the release's SHA-256 and size, byte for byte."""
    check = check_files("fashion-mnist", DEBIAN_FASHION.parent)
    assert check.matches, check.note()
    assert check.repacks and "Debian" in check.repacks[0]
    assert files_note("fashion-mnist", None) is None
    release = PINNED["fashion-mnist"]
    (repack,) = release.repacks
    for pin, alt in zip(release.files, repack.files, strict=True):
        data = (DEBIAN_FASHION.parent / alt.path).read_bytes()
        assert alt.release_gzip_mtime is not None
        name = Path(pin.path).name.removesuffix(".gz")
        restored = layouts.restore_gzip_release(data, name, alt.release_gzip_mtime)
        assert len(restored) == pin.size
        assert hashlib.sha256(restored).hexdigest() == pin.sha256


def _bare_gzip(raw: bytes) -> bytes:
    """``raw`` gzipped, then its header rewritten without the file name (Debian's repack)."""
    named = gzip.compress(raw, mtime=1_500_000_000)
    assert named[3] == 0  # gzip.compress writes no file name: make the release's named header
    return b"\x1f\x8b\x08\x00" + (1_600_000_000).to_bytes(4, "little") + named[8:]


def test_a_repack_of_the_release_matches_and_other_files_do_not(tmp_path, monkeypatch):
    raw = bytes(range(256)) * 40
    bare = _bare_gzip(raw)
    release_bytes = layouts.restore_gzip_release(bare, "train-images-idx3-ubyte", 1_500_000_000)
    assert gzip.decompress(release_bytes) == raw == gzip.decompress(bare)
    rel_root, rep_root = tmp_path / "release", tmp_path / "repack"
    for root, data in ((rel_root, release_bytes), (rep_root, bare)):
        (root / "fashion-mnist").mkdir(parents=True)
        (root / "fashion-mnist" / "train-images-idx3-ubyte.gz").write_bytes(data)
    paths = ["fashion-mnist/train-images-idx3-ubyte.gz"]
    repack = Release("a repack", pin_tree(rep_root, paths))
    monkeypatch.setitem(
        PINNED, "fashion-mnist", Release("fixture", pin_tree(rel_root, paths), repacks=(repack,))
    )
    assert check_files("fashion-mnist", rel_root).matches
    assert check_files("fashion-mnist", rel_root).repacks == ()
    both = check_files("fashion-mnist", rep_root)
    assert both.matches and both.repacks == ("a repack",)
    (rep_root / paths[0]).write_bytes(bare + b"\x00")  # neither the release nor the repack
    other = check_files("fashion-mnist", rep_root)
    assert not other.matches and "bytes, the release" in (other.note() or "")
    with pytest.raises(ValueError, match="bare header"):
        layouts.restore_gzip_release(release_bytes, "x", 0)
