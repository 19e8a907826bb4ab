"""A catalogue of bad inputs to every entry point.

Each case is one row: a name, what it writes into the data root (or into ``--out``) in the real
file formats, the command line, and a fragment the error must contain. Every case must end in
exit status 2 with a one-line error on stderr (no traceback), and every file that was under
``--out`` before the command (a sentinel ``results.json`` and whatever the case put there) must
be byte-identical afterwards. Commands run in-process through ``paperzoo.cli.main`` (same exit
code and stderr as the real process); a few run as real processes to prove that.

Placeholders in the command line: ``ROOT`` (the data root), ``OUT`` (the output directory, with
the sentinel), ``TMP`` (the test's temporary directory).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from scipy.io import savemat

from paperzoo.cli import main
from paperzoo.verdict import ClaimResult, Result

HERE = Path(__file__).resolve().parent
BABI_FIXTURES = HERE / "fixtures" / "babi"
SENTINEL = b'{"sentinel": "results of an earlier run"}\n'


def _helpers(name: str) -> ModuleType:
    """The fixture writers of the loader tests (tests/data/NAME.py), reused here."""
    spec = importlib.util.spec_from_file_location(
        f"_bad_inputs_{name}", HERE / "data" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_idx, _cifar, _dsprites = _helpers("test_idx"), _helpers("test_cifar"), _helpers("test_dsprites")

Setup = Callable[[Path, Path, Path], None]  # (tmp, root, out)


def _nothing(tmp: Path, root: Path, out: Path) -> None:
    pass


# -- IDX (MNIST / Fashion-MNIST) ------------------------------------------------------------------
MNIST = ["reproduce", "resnet", "--scale", "smoke", "--dataset", "mnist", "--data-root", "ROOT"]


def _mnist(mutate: Callable[[Path], None], gz: bool = False) -> Setup:
    def setup(tmp: Path, root: Path, out: Path) -> None:
        _idx._write_mnist_dir(root / "mnist", gz=gz)
        mutate(root / "mnist")

    return setup


def _truncate(path: Path, keep: float = 0.5) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep)])


def _idx_file(d: Path, name: str, arr: np.ndarray) -> None:
    (d / name).write_bytes(_idx._idx_bytes(arr))


# -- CIFAR-10 / CIFAR-100 python batches ----------------------------------------------------------
CIFAR = ["reproduce", "resnet", "--scale", "smoke", "--dataset", "cifar10", "--data-root", "ROOT"]
_BATCH1 = "cifar-10-batches-py/data_batch_1"


def _cifar10(mutate: Callable[[Path], None]) -> Setup:
    def setup(tmp: Path, root: Path, out: Path) -> None:
        _cifar._write_cifar10(root, n=4)
        mutate(root / "cifar-10-batches-py")

    return setup


def _batch(d: Path, name: str, data: np.ndarray, labels: list[int], key: bytes = b"labels") -> None:
    (d / name).write_bytes(_cifar.py2_cifar_pickle(data, labels, label_key=key))


def _images(n: int, width: int = 3072) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, width), dtype=np.uint8)


# -- SVHN .mat ------------------------------------------------------------------------------------
SVHN = ["reproduce", "path-sgd", "--scale", "smoke", "--dataset", "svhn", "--data-root", "ROOT"]


def _svhn(x_shape: tuple[int, ...] = (32, 32, 3, 5), y: list[int] | None = None, **kw) -> Setup:
    def setup(tmp: Path, root: Path, out: Path) -> None:
        d = root / "svhn"
        d.mkdir(parents=True)
        for name in ("train_32x32.mat", "test_32x32.mat"):
            x = np.zeros(x_shape, dtype=np.uint8)
            labels = np.array(y if y is not None else [1] * x_shape[-1], dtype=np.uint8)
            savemat(str(d / name), {"X": x, "y": labels.reshape(-1, 1)} | kw)
        if kw.get("truncate"):
            _truncate(d / "train_32x32.mat")

    return setup


# -- dSprites npz ---------------------------------------------------------------------------------
DSPRITES = ["reproduce", "disentanglement", "--scale", "smoke", "--dataset", "dsprites"]
DSPRITES += ["--data-root", "ROOT"]
_NPZ = "dsprites/dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz"


def _npz(kind: str) -> Setup:
    def setup(tmp: Path, root: Path, out: Path) -> None:
        path = root / _NPZ
        path.parent.mkdir(parents=True)
        if kind == "text":
            path.write_text("imgs, latents_classes\n")
            return
        _dsprites._write_npz(path, (3, 2, 2, 2, 2), image_size=8)  # a small grid, not the real one
        if kind == "truncated":
            _truncate(path)
        elif kind == "no-imgs":
            with np.load(path) as f:
                np.savez(path, latents_classes=f["latents_classes"])

    return setup


# -- official symbolic bAbI files -----------------------------------------------------------------
BABI = ["reproduce", "ggnn", "--scale", "smoke", "--data-root", "ROOT"]


def _babi(text: str | bytes | None = None, name: str = "4_graphs.txt") -> Setup:
    """The fixture folds, with ``processed_1/train/NAME`` replaced by ``text`` (None: removed)."""

    def setup(tmp: Path, root: Path, out: Path) -> None:
        shutil.copytree(BABI_FIXTURES, root, dirs_exist_ok=True)
        path = root / "processed_1" / "train" / name
        if text is None:
            path.unlink()
        elif isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)

    return setup


# -- --data-root and --download -------------------------------------------------------------------
def _root_is_a_file(tmp: Path, root: Path, out: Path) -> None:
    root.rmdir()
    root.write_text("not a directory\n")


def _wrong_mirror(tmp: Path, root: Path, out: Path) -> None:
    """Serve MNIST from a local 'mirror' whose first file is not what the checksum pins."""
    from paperzoo.data import idx
    from paperzoo.data.download import RemoteFile

    mirror = tmp / "mirror"
    mirror.mkdir()
    (mirror / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"tampered", mtime=0))
    first = idx.MNIST_FILES[0]
    _PATCHES.append(
        (idx, "MNIST_FILES", [RemoteFile(first.name, (mirror / first.name).as_uri(), first.sha256)])
    )


def _wrong_cifar_mirror(tmp: Path, root: Path, out: Path) -> None:
    from paperzoo.data import cifar
    from paperzoo.data.download import RemoteFile

    archive = tmp / "mirror" / cifar.CIFAR10_ARCHIVE.name
    archive.parent.mkdir()
    archive.write_bytes(b"not the archive")
    pinned = cifar.CIFAR10_ARCHIVE
    _PATCHES.append(
        (cifar, "CIFAR10_ARCHIVE", RemoteFile(pinned.name, archive.as_uri(), pinned.sha256))
    )


def _unreachable_mirror(tmp: Path, root: Path, out: Path) -> None:
    from paperzoo.data import idx
    from paperzoo.data.download import RemoteFile

    first = idx.MNIST_FILES[0]
    url = (tmp / "no-such-mirror" / first.name).as_uri()
    _PATCHES.append((idx, "MNIST_FILES", [RemoteFile(first.name, url, first.sha256)]))


_PATCHES: list[tuple[object, str, object]] = []  # (module, attribute, value) set for one case


# -- checkpoints of an interrupted run in --out ---------------------------------------------------
DIS = ["reproduce", "disentanglement", "--scale", "smoke", "--quiet"]
_VAE = "models/beta_vae-beta4-s0"  # the first VAE of the smoke grid


def _ckpt(kind: str) -> Setup:
    """An interrupted run's checkpoint of the first VAE in ``--out``, damaged in one way."""

    def setup(tmp: Path, root: Path, out: Path) -> None:
        from paperzoo.engine import save_state

        _interrupted_run(out)
        d = out / _VAE
        d.mkdir(parents=True)
        if kind.startswith("weights"):  # the trained VAE's weights
            w = d / "vae.safetensors"
            if kind == "weights-text":
                w.write_text("not safetensors\n")
            else:  # weights of another network, with their recorded hash
                save_file({"encoder.0.weight": torch.zeros(3, 3)}, str(w))
                digest = hashlib.sha256(w.read_bytes()).hexdigest()
                (d / "vae.safetensors.sha256").write_text(f"{digest}  vae.safetensors\n")
                if kind == "weights-truncated":
                    _truncate(w)
            return
        ckdir = d / "train" / "checkpoints"  # the VAE's training checkpoints
        save_state(ckdir, 3, {"modules": {"model": {"w": torch.zeros(2)}}, "rng": {}})
        if kind == "latest-garbage":
            (ckdir / "latest.json").write_text("{not json")
        elif kind == "latest-dangling":
            (ckdir / "latest.json").write_text(json.dumps({"step": 7, "stem": "step_00000007"}))
        elif kind == "json-truncated":
            _truncate(ckdir / "step_00000003.json")
        elif kind == "tensors-truncated":
            _truncate(ckdir / "step_00000003.safetensors")
        elif kind == "tensors-missing":
            (ckdir / "step_00000003.safetensors").unlink()
        elif kind == "json-list":
            (ckdir / "step_00000003.json").write_text("[3]")
        elif kind == "tensor-absent":  # the JSON names a tensor the safetensors lacks
            save_file({"other": torch.zeros(1)}, str(ckdir / "step_00000003.safetensors"))
        # kind == "other-model": a complete checkpoint, but of something else

    return setup


def _interrupted_run(out: Path) -> None:
    """The record an interrupted ``DIS --out out`` run left (where runs record themselves)."""
    from paperzoo.experiments import RunContext, runner

    if not hasattr(runner, "claim_out_dir"):
        return
    ctx = RunContext(scale="smoke", seed=0, device="cpu", out_dir=out, quiet=True)
    cfg = runner.resolve_config("disentanglement", "smoke")
    dataset = runner.get_experiment("disentanglement").dataset_name(ctx)
    runner.claim_out_dir(out, runner.run_spec("disentanglement", ctx, cfg, dataset))


def _cached_record(tmp: Path, root: Path, out: Path) -> None:
    _interrupted_run(out)
    d = out / "models" / "ground-truth"
    d.mkdir(parents=True)
    (d / "result.json").write_text('{"id": "ground-truth", "metr')


# -- results.json for merge and summary -----------------------------------------------------------
def _result(**change: object) -> dict:
    res = Result(
        paper="resnet",
        title="Deep Residual Learning for Image Recognition",
        scale="smoke",
        seeds=[0],
        device="cpu",
        wall_seconds=1.0,
        paperzoo_version="0.2.0",
        torch_version="2.5.0",
        data=[],
        claims=[ClaimResult("a.b", "A beats B", 0.9, [0.95], ">= 0.9")],
    )
    return res.to_dict() | change


def _runs(*changes: dict | str | None) -> Setup:
    """Seed runs TMP/run-0, TMP/run-1, ...: a valid results.json changed by each dict, or raw
    text, or no results.json at all (None)."""

    def setup(tmp: Path, root: Path, out: Path) -> None:
        for i, change in enumerate(changes):
            d = tmp / f"run-{i}"
            d.mkdir()
            if isinstance(change, str):
                (d / "results.json").write_text(change)
            elif change is not None:
                (d / "results.json").write_text(json.dumps(_result(**({"seeds": [i]} | change))))

    return setup


def _drop(key: str) -> Setup:
    def setup(tmp: Path, root: Path, out: Path) -> None:
        d = tmp / "run-0"
        d.mkdir()
        res = _result()
        del res[key]
        (d / "results.json").write_text(json.dumps(res))

    return setup


def _claim(**change: object) -> dict:
    return {"claims": [_result()["claims"][0] | change]}


MERGE = ["merge", "TMP/run-0", "TMP/run-1", "--out", "OUT"]
SUMMARY = ["summary", "TMP/run-0", "--html", "OUT/summary.html"]


def _out_is_a_file(tmp: Path, root: Path, out: Path) -> None:
    _runs({}, {})(tmp, root, out)
    (tmp / "file").write_text("not a directory\n")


# -- the catalogue --------------------------------------------------------------------------------
# (case id, setup, command line, the error must contain)
CASES: list[tuple[str, Setup, list[str], str]] = [
    # IDX
    ("idx-missing-dir", _nothing, MNIST, "MNIST: missing train-images-idx3-ubyte.gz"),
    ("idx-missing-file", _mnist(lambda d: (d / "t10k-labels-idx1-ubyte").unlink()), MNIST,
     "missing t10k-labels-idx1-ubyte.gz"),
    ("idx-truncated", _mnist(lambda d: _truncate(d / "train-images-idx3-ubyte")), MNIST,
     "train-images-idx3-ubyte: expected 4704 data bytes"),
    ("idx-truncated-gz", _mnist(lambda d: _truncate(d / "t10k-images-idx3-ubyte.gz"), gz=True),
     MNIST, "t10k-images-idx3-ubyte.gz: cannot read"),
    ("idx-empty", _mnist(lambda d: (d / "train-labels-idx1-ubyte").write_bytes(b"")), MNIST,
     "train-labels-idx1-ubyte: too short to be an IDX file"),
    ("idx-not-gzip", _mnist(lambda d: (d / "train-images-idx3-ubyte.gz").write_text("x")), MNIST,
     "train-images-idx3-ubyte.gz: cannot read"),
    ("idx-wrong-kind", _mnist(lambda d: shutil.copy(d / "train-labels-idx1-ubyte",
                                                     d / "train-images-idx3-ubyte")), MNIST,
     "expected an image file (idx3), but its magic number 00000801 says a label file"),
    ("idx-wrong-image-size", _mnist(lambda d: _idx_file(d, "train-images-idx3-ubyte",
                                                         np.zeros((6, 32, 32)))), MNIST,
     "train-images-idx3-ubyte: images are 32 x 32, expected 28 x 28"),
    ("idx-count-mismatch", _mnist(lambda d: _idx_file(d, "train-labels-idx1-ubyte",
                                                       np.zeros(5))), MNIST,
     "train images (6, 28, 28) and labels (5,) disagree"),
    ("idx-label-range", _mnist(lambda d: _idx_file(d, "t10k-labels-idx1-ubyte",
                                                    np.array([0, 1, 12, 3]))), MNIST,
     "t10k-labels-idx1-ubyte: labels outside 0..9 (found 0..12)"),
    ("idx-dir-as-file", _mnist(lambda d: ((d / "train-images-idx3-ubyte").unlink(),
                                          (d / "train-images-idx3-ubyte").mkdir())), MNIST,
     "train-images-idx3-ubyte: cannot read"),
    ("idx-missing-seeds", _nothing, [*MNIST, "--seeds", "0-1", "--threads", "1"],
     "MNIST: missing train-images-idx3-ubyte.gz"),
    ("fashion-missing", _nothing, [*MNIST[:5], "fashion-mnist", *MNIST[6:]],
     "Fashion-MNIST: missing train-images-idx3-ubyte.gz"),
    # CIFAR
    ("cifar-missing", _nothing, CIFAR, "CIFAR-10: missing data_batch_1"),
    ("cifar-truncated", _cifar10(lambda d: _truncate(d / "data_batch_3")), CIFAR,
     "data_batch_3: not a valid CIFAR pickle"),
    ("cifar-empty", _cifar10(lambda d: (d / "test_batch").write_bytes(b"")), CIFAR,
     "test_batch: empty file"),
    ("cifar-not-pickle", _cifar10(lambda d: (d / "data_batch_1").write_text("a,b\n1,2\n")), CIFAR,
     "data_batch_1: not a valid CIFAR pickle"),
    ("cifar-wrong-kind", _cifar10(lambda d: _batch(d, "data_batch_2", _images(4), [1] * 4,
                                                    key=b"fine_labels")), CIFAR,
     "data_batch_2: missing 'data' or 'labels'"),
    ("cifar-wrong-shape", _cifar10(lambda d: _batch(d, "data_batch_1", _images(4, 1024),
                                                     [1] * 4)), CIFAR,
     "data_batch_1: 'data' rows have 1024 values, expected 3072"),
    ("cifar-label-range", _cifar10(lambda d: _batch(d, "test_batch", _images(4), [0, 1, 10, 2])),
     CIFAR, "test_batch: labels outside [0, 10)"),
    ("cifar-count-mismatch", _cifar10(lambda d: _batch(d, "test_batch", _images(4), [0, 1])),
     CIFAR, "test_batch: 4 images but 2 labels"),
    ("cifar-code", _cifar10(lambda d: (d / "data_batch_4").write_bytes(
        b"cos\nsystem\n(S'true'\ntR.")), CIFAR, "refusing global os.system"),
    ("cifar100-wrong-kind", lambda tmp, root, out: (
        (root / "cifar-100-python").mkdir(parents=True),
        _batch(root / "cifar-100-python", "train", _images(4), [1] * 4),
        _batch(root / "cifar-100-python", "test", _images(4), [1] * 4)),
     [*CIFAR[:5], "cifar100", *CIFAR[6:]], "cifar-100-python/train: missing 'data' or 'fine_labels'"),
    # SVHN
    ("svhn-missing", _nothing, SVHN, "SVHN: missing train_32x32.mat"),
    ("svhn-truncated", _svhn(truncate=True), SVHN, "train_32x32.mat: cannot read as a MATLAB"),
    ("svhn-not-mat", lambda tmp, root, out: (
        (root / "svhn").mkdir(parents=True),
        (root / "svhn" / "train_32x32.mat").write_text("X,y\n"),
        (root / "svhn" / "test_32x32.mat").write_text("X,y\n")),
     SVHN, "train_32x32.mat: cannot read as a MATLAB"),
    ("svhn-wrong-shape", _svhn((28, 28, 1, 5)), SVHN,
     "X has shape (28, 28, 1, 5) and y (5,); expected (32,32,3,N)"),
    ("svhn-label-range", _svhn(y=[0, 1, 2, 3, 4]), SVHN, "labels outside 1..10 (found 0..4)"),
    ("svhn-wrong-kind", lambda tmp, root, out: (
        (root / "svhn").mkdir(parents=True),
        *(savemat(str(root / "svhn" / n), {"images": np.zeros((2, 2))})
          for n in ("train_32x32.mat", "test_32x32.mat"))),
     SVHN, "expected variables X and y, found"),
    # dSprites
    ("dsprites-missing", _nothing, DSPRITES, "dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz not found"),
    ("dsprites-not-zip", _npz("text"), DSPRITES, "_64x64.npz: cannot read the archive"),
    ("dsprites-truncated", _npz("truncated"), DSPRITES, "_64x64.npz: cannot read the archive"),
    ("dsprites-wrong-grid", _npz("small"), DSPRITES,
     "latents_classes has shape (48, 6), expected (737280, 6)"),
    ("dsprites-no-imgs", _npz("no-imgs"), DSPRITES, "not a dSprites archive (no 'imgs' array)"),
    ("dsprites-download", _nothing, [*DSPRITES, "--download"], "--download is not supported"),
    # 3dshapes: not read; its procedural stand-in takes no files
    ("shapes-files", _nothing, [*DSPRITES[:5], "color-shapes", *DSPRITES[6:]],
     "color-shapes is generated (a stand-in for 3dshapes"),
    # official bAbI files
    ("babi-missing", _nothing, BABI, "no 4_graphs.txt for task babi4 (fold 1)"),
    ("babi-no-such-fold", _babi(""), [*BABI, "--fold", "3"], "no 4_graphs.txt for task babi4 (fold 3)"),
    ("babi-missing-fold", _babi(""), [*BABI, "--folds", "1-2"], "fold 2 of task babi4: no directory"),
    ("babi-empty", _babi(""), BABI, "4_graphs.txt: no graphs found"),
    ("babi-not-integer", _babi("1 1 2\n? 1 x 2\n"), BABI,
     "4_graphs.txt:2: expected non-negative integers, got 'x'"),
    ("babi-short-edge", _babi("1 2\n? 1 2 3\n"), BABI,
     "4_graphs.txt:1: an edge line is 'src edge_type dst', got 2 numbers"),
    ("babi-zero-id", _babi("0 1 2\n? 1 2 3\n"), BABI, "4_graphs.txt:1: ids are 1-based"),
    ("babi-short-question", _babi("1 1 2\n? 1 2\n"), BABI,
     "4_graphs.txt:2: a question is '? qtype args... answer', got 2 numbers"),
    ("babi-no-question", _babi("1 1 2\n\n1 1 2\n? 1 2 1\n"), BABI,
     "the graph starting at line 1 has no question line"),
    ("babi-wrong-kind", _babi("n=1\ne=2\n"), BABI, "4_graphs.txt:1: expected non-negative integers"),
    ("babi-binary", _babi(b"\x89PNG\r\n\x1a\n\xff\xfe"), BABI, "4_graphs.txt: not a text file"),
    ("babi-download", _nothing, [*BABI, "--download"], "have no canonical download"),
    ("babi-bad-dictionary", _babi("n 1\n", name="4_edge_types.txt"), BABI,
     "4_edge_types.txt:1: expected 'name=id'"),
    # --data-root and --download
    ("root-is-file", _root_is_a_file, MNIST, "is not a directory"),
    ("root-is-file-download", _root_is_a_file, [*MNIST, "--download"], "is not a directory"),
    ("download-checksum", _wrong_mirror, [*MNIST, "--download"],
     "checksum mismatch for file://"),
    ("download-cifar-checksum", _wrong_cifar_mirror, [*CIFAR, "--download"],
     "checksum mismatch for file://"),
    ("download-unreachable", _unreachable_mirror, [*MNIST, "--download"], "could not download"),
    # checkpoints of an interrupted run
    ("weights-truncated", _ckpt("weights-truncated"), DIS, "vae.safetensors is corrupt"),
    ("weights-not-safetensors", _ckpt("weights-text"), DIS, "vae.safetensors is corrupt"),
    ("weights-other-model", _ckpt("weights-other"), DIS, "vae.safetensors does not match VAE"),
    ("ckpt-latest-garbage", _ckpt("latest-garbage"), DIS, "checkpoints/latest.json is corrupt"),
    ("ckpt-latest-dangling", _ckpt("latest-dangling"), DIS,
     "checkpoints/latest.json is corrupt: it records no content hashes"),
    ("ckpt-json-truncated", _ckpt("json-truncated"), DIS,
     "checkpoints/step_00000003.json does not match the SHA-256 recorded"),
    ("ckpt-tensors-truncated", _ckpt("tensors-truncated"), DIS,
     "checkpoints/step_00000003.safetensors does not match the SHA-256 recorded"),
    ("ckpt-tensors-missing", _ckpt("tensors-missing"), DIS,
     "checkpoint file missing: TMP/out/models/beta_vae-beta4-s0/train/checkpoints/step_00000003.safetensors"),
    ("ckpt-tensor-absent", _ckpt("tensor-absent"), DIS,
     "step_00000003.safetensors does not match the SHA-256 recorded"),
    ("ckpt-json-not-object", _ckpt("json-list"), DIS,
     "step_00000003.json does not match the SHA-256 recorded"),
    ("ckpt-other-model", _ckpt("other-model"), DIS, "checkpoints does not match this model"),
    ("cached-record-corrupt", _cached_record, DIS, "models/ground-truth/result.json"),
    # results.json to merge and summary
    ("merge-missing", _runs({}, None), MERGE, "run-1/results.json not found"),
    ("merge-other-paper", _runs({}, {"paper": "coordconv"}), MERGE, "one paper and scale"),
    ("merge-other-scale", _runs({}, {"scale": "quick"}), MERGE, "one paper and scale"),
    ("merge-other-version", _runs({}, {"paperzoo_version": "0.1.0"}), MERGE,
     "seed runs must share one paperzoo_version, got 0.1.0, 0.2.0"),
    ("merge-other-claims", _runs({}, _claim(target=">= 0.5")), MERGE,
     "declares other claims or targets"),
    ("merge-repeated-seed", _runs({}, {"seeds": [0]}), MERGE, "repeat a seed"),
    ("merge-malformed-json", _runs({}, '{"paper": "resnet", '), MERGE,
     "run-1/results.json is not valid JSON"),
    ("merge-not-results", _runs({}, "[1, 2, 3]"), MERGE, "run-1/results.json is not a paperzoo"),
    ("merge-old-format", _drop("config"), ["merge", "TMP/run-0", "--out", "OUT"],
     "is not a paperzoo results file of this version's format"),
    ("merge-bad-value", _runs({}, _claim(per_seed=["high"])), MERGE,
     "run-1/results.json: claim a.b has a non-numeric measurement 'high'"),
    ("merge-bad-target", _runs({}, _claim(target="about 0.9")), MERGE,
     "run-1/results.json: claim a.b: cannot parse claim target 'about 0.9'"),
    ("merge-bad-count", _runs({}, _claim(per_seed=[0.9, 0.95])), MERGE,
     "run-1/results.json: claim a.b has 2 measurements for 1 seeds"),
    ("merge-bad-kind", _runs({}, _claim(kind="hunch")), MERGE,
     "run-1/results.json: claim a.b has kind 'hunch'"),
    ("merge-unknown-paper-shards", _runs({"paper": "nosuch", "shard": [0, 2]},
                                         {"paper": "nosuch", "shard": [1, 2]}), MERGE,
     "unknown experiment 'nosuch'"),
    ("merge-out-is-file", _out_is_a_file, [*MERGE[:3], "--out", "TMP/file"],
     "--out TMP/file is not a directory"),
    ("summary-malformed", _runs('{"paper"'), SUMMARY, "run-0/results.json is not valid JSON"),
    ("summary-other-version", _drop("overrides"), SUMMARY, "(paperzoo 0.2.0; problem: KeyError"),
    ("summary-bad-value", _runs(_claim(per_seed=[[1]])), SUMMARY,
     "claim a.b has a non-numeric measurement [1]"),
    ("summary-html-is-dir", _runs({}), ["summary", "TMP/run-0", "--html", "OUT"],
     "--html TMP/out is a directory"),
    # bad values of --set, --seeds, --folds, --threads and friends
    ("set-unknown-key", _nothing, ["reproduce", "resnet", "--set", "stpes=3"], "did you mean steps"),
    ("set-bad-int", _nothing, ["reproduce", "resnet", "--set", "steps=many"], "expected int"),
    ("set-no-value", _nothing, ["reproduce", "resnet", "--set", "steps"], "KEY=VALUE"),
    ("set-negative-steps", _nothing, ["reproduce", "resnet", "--scale", "smoke", "--set", "steps=-5"],
     "steps"),
    ("set-unknown-task", _nothing,
     ["reproduce", "ggnn", "--scale", "smoke", "--set", 'tasks=["babi99"]'], "babi99"),
    ("seeds-letters", _nothing, ["reproduce", "resnet", "--seeds", "a-b"],
     "argument --seeds: --seeds takes a range"),
    ("seeds-reversed", _nothing, ["reproduce", "resnet", "--seeds", "3-1"], "got '3-1'"),
    ("seeds-empty", _nothing, ["reproduce", "resnet", "--seeds", ""], "got ''"),
    ("seeds-too-many", _nothing, ["reproduce", "resnet", "--seeds", "0-30000000"],
     "argument --seeds: at most 1000 seeds, got '0-30000000'"),
    ("seed-negative", _nothing, ["reproduce", "resnet", "--seed", "-1"], "argument --seed"),
    ("seed-and-seeds", _nothing, ["reproduce", "resnet", "--seed", "1", "--seeds", "0-3"],
     "not allowed with argument"),
    ("folds-zero", _nothing, ["reproduce", "ggnn", "--folds", "0-3"], "folds >= 1"),
    ("folds-letters", _nothing, ["reproduce", "ggnn", "--folds", "x"], "got 'x'"),
    ("folds-no-root", _nothing, ["reproduce", "ggnn", "--folds", "1-3"], "give --data-root"),
    ("fold-zero", _nothing, ["reproduce", "ggnn", "--fold", "0"], "argument --fold: must be >= 1"),
    ("threads-zero", _nothing, ["reproduce", "resnet", "--threads", "0"],
     "argument --threads: must be >= 1, got 0"),
    ("threads-letters", _nothing, ["reproduce", "resnet", "--threads", "x"],
     "argument --threads: must be an integer, got 'x'"),
    ("threads-too-many", _nothing,
     ["reproduce", "resnet", "--seeds", "0-3", "--jobs", "4", "--threads", "512"], "exceeds the"),
    ("jobs-letters", _nothing, ["reproduce", "resnet", "--seeds", "0-1", "--jobs", "two"],
     "argument --jobs: must be an integer, got 'two'"),
    ("shard-out-of-range", _nothing, ["reproduce", "disentanglement", "--shard", "2/2"],
     "needs 0 <= K < N"),
    ("out-under-file", _root_is_a_file,
     ["reproduce", "resnet", "--scale", "smoke", "--out", "ROOT/run"],
     "--out TMP/data/run is not a directory (TMP/data is a file)"),
    ("scale-unknown", _nothing, ["reproduce", "resnet", "--scale", "huge"], "invalid choice: 'huge'"),
    ("out-is-file", _root_is_a_file, ["reproduce", "resnet", "--scale", "smoke", "--out", "ROOT"],
     "--out TMP/data is not a directory"),
]  # fmt: skip

# Defects outside the files this catalogue's author may change: kept visible, expected to fail
# (strict: remove the entry with the fix). Case id -> (where and what, strict).
KNOWN: dict[str, tuple[str, bool]] = {}  # case id -> (the defect, strict): none open
# The same cases as real processes: exit status and stderr match the in-process run.
SUBPROCESS = ("idx-wrong-kind", "threads-letters", "merge-malformed-json")


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def _prepare(tmp: Path, setup: Setup, argv: list[str]) -> tuple[list[str], Path, dict[str, bytes]]:
    root, out = tmp / "data", tmp / "out"
    out.mkdir()
    (out / "results.json").write_bytes(SENTINEL)
    (out / "summary.html").write_bytes(b"<p>sentinel</p>\n")
    root.mkdir()
    setup(tmp, root, out)
    before = _tree(out)
    subst = {"ROOT": str(root), "OUT": str(out), "TMP": str(tmp)}
    args = []
    for a in argv:
        for k, v in subst.items():
            a = a.replace(k, v)
        args.append(a)
    if "--out" not in args and args[0] == "reproduce":
        args += ["--out", str(out)]
    if args[0] == "reproduce":
        args += ["--device", "cpu"]
    return args, out, before


def _check(code: int, err: str, message: str, tmp: Path, out: Path, before: dict) -> None:
    err = err.replace(str(tmp), "TMP")
    lines = err.splitlines()
    assert "Traceback" not in err, err
    assert code == 2, err
    errors = [ln for ln in lines if ": error: " in ln]
    assert len(errors) == 1 and errors[0] == lines[-1], err  # one line, the last one
    assert message in errors[0], errors[0]
    after = _tree(out)
    assert {k: after.get(k) for k in before} == before, "files under --out changed"


@pytest.mark.parametrize(
    ("setup", "argv", "message"),
    [
        pytest.param(
            s,
            a,
            m,
            id=i,
            marks=[pytest.mark.xfail(reason=KNOWN[i][0], strict=KNOWN[i][1])] if i in KNOWN else [],
        )
        for i, s, a, m in CASES
    ],
)
def test_bad_input_is_one_line_exit_2_and_out_untouched(
    setup: Setup, argv: list[str], message: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _PATCHES.clear()
    args, out, before = _prepare(tmp_path, setup, argv)
    for mod, attr, value in _PATCHES:
        monkeypatch.setattr(mod, attr, value)
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as exc:  # argparse
        code = exc.code
    _check(code, capsys.readouterr().err, message, tmp_path, out, before)


@pytest.mark.parametrize("case", SUBPROCESS)
def test_real_process_behaves_the_same(case: str, tmp_path: Path) -> None:
    _, setup, argv, message = next(c for c in CASES if c[0] == case)
    args, out, before = _prepare(tmp_path, setup, argv)
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "paperzoo", *args], capture_output=True, text=True, env=env
    )
    _check(proc.returncode, proc.stderr, message, tmp_path, out, before)


def test_a_failed_download_leaves_no_file(tmp_path: Path, capsys, monkeypatch) -> None:
    _PATCHES.clear()
    args, _, _ = _prepare(tmp_path, _wrong_mirror, [*MNIST, "--download"])
    for mod, attr, value in _PATCHES:
        monkeypatch.setattr(mod, attr, value)
    assert main(args) == 2
    assert not [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    digest = hashlib.sha256(gzip.compress(b"tampered", mtime=0)).hexdigest()
    assert digest[:12] in capsys.readouterr().err
