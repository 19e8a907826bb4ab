"""Where each real data set's files lie under ``--data-root``, and whether they are the paper's.

A ``--scale full`` run reads the paper's own data set. Before anything is trained or written to
``--out``, the runner asks ``require(name, data_root, download)``: when the files are absent (and
cannot be fetched with ``--download``) it raises ``DataRequired`` with one line naming the data
set and the layout it expects. Each data module registers the layout of its files next to its
loader (``register_layout``), so the message and the loader cannot drift apart.

Files that are present are not yet the paper's data: ``PINNED`` holds, for every data set with a
canonical release, the digests and sizes of the released files (each with the source that
published them), read once from the package data file ``paperzoo/data/pins.json``, and
``check_files`` compares the files under ``--data-root`` with them. A full run on files that do
not match still runs (a GPU check on synthetic files in the real layout must run), but
``Experiment.setting_note`` marks it "not the paper's setting" with the mismatch named
(``files_note``), so none of its findings counts. ``require`` computes the digests before
training; they are cached per file (path, size, mtime) for the process, and files are hashed in
1 MiB chunks, the three digests in one pass (a 178 MB file took 2.7 s on 2 busy cores, about the
size of CIFAR-10's six batches).

What is pinned, and from where (no digest here is computed from files of unknown origin):

* MNIST, Fashion-MNIST, SVHN: SHA-256 and byte sizes of the files as downloaded, from
  tensorflow/datasets ``url_checksums/{mnist,fashion_mnist,svhn_cropped}.txt``; the example
  counts (60,000 / 10,000; SVHN 73,257 / 26,032) from the data sets' pages. MNIST's counts are
  also read from each IDX header, so a file of the wrong size names its count.
* Fashion-MNIST as Debian's ``dataset-fashion-mnist`` package installs it: a repack, pinned as a
  second source of the same release (``Release.repacks``). Each of its ``.gz`` files is the
  release's deflate stream under a gzip header rewritten without the file name (FLG 0, MTIME
  2020-06-05); putting back the release's header (FLG FNAME, the file name, the release's MTIME
  of 2017-08-31, recorded per file as ``release_gzip_mtime``) gives the released file byte for
  byte, its SHA-256 the release's (``restore_gzip_release``; tests/data/test_layouts.py checks it
  wherever the package is installed). So the same bytes decompress to the same data.
* CIFAR-10 / CIFAR-100: only the MD5 of the extracted python batches is published (torchvision
  ``torchvision/datasets/cifar.py``, ``train_list`` / ``test_list``), so MD5 is pinned; no byte
  sizes of the extracted batches are published, so none is pinned.
* dSprites (and the abstract-reasoning study's variant, drawn from the same archive): the git
  blob SHA-1 of ``dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz`` in the authors' repository
  (github.com/deepmind/dsprites-dataset, tree of commit fa310c66) and the MD5 that dSprites
  loaders publish (see ``paperzoo.data.dsprites``); no SHA-256 or size is published.
* Symbolic bAbI (the GG-NN authors' 10 folds): SHA-256 and sizes of every file
  ``paperzoo.data.babi.load_official`` reads (the graphs of both splits and the training split's
  dictionaries), computed here from the blobs of github.com/chingyaoc/ggnn.pytorch at commit
  0c7897fe9b05e9b4f9a963ff55bd3ad917ea734e, ``babi_data/`` (each blob's git SHA-1 checked
  against the tree first; paths relative to ``babi_data/``: point --data-root at it).
* ImageNet (ILSVRC2012): counts only (hashing 140 GB per run is not an option): 1,000 class
  folders named by WordNet id (``n`` + 8 digits), the same in train and val, 1,281,167 training
  and 50,000 validation images (Russakovsky et al., IJCV 2015). The loader has no list of the
  class names, so the names are checked by form and by train/val agreement only.

Not pinned: the fixed binarized MNIST (Larochelle & Murray) - no paper here reads it (DRAW reads
MNIST and binarizes it, ``paperzoo.papers.draw.experiment``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from paperzoo.data.base import DataError

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".jpeg", ".jpg", ".png")  # the image files an ImageNet class folder holds
DEBIAN_FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist


class DataRequired(DataError):
    """A full run's data set is not under ``--data-root`` (one line: the data set and layout)."""


@dataclass(frozen=True)
class Layout:
    """The files of one real data set under a data root."""

    name: str  # data set name, as in ``--dataset`` or an experiment's ``paper_data``
    what: str  # how a message calls it, e.g. "MNIST"
    layout: str  # the expected files, relative to DIR, e.g. "DIR/mnist/{train,t10k}-..."
    downloadable: bool  # ``--download`` fetches them from the canonical source
    present: Callable[[Path], bool]  # whether the files are under this data root
    # The number of examples in one file, read from its header (None: not counted, the digest
    # alone identifies the file); raises ``DataError`` / ``OSError`` on an unreadable file.
    count: Callable[[Path], int] | None = None


LAYOUTS: dict[str, Layout] = {}


def register_layout(
    name: str,
    *,
    what: str,
    layout: str,
    downloadable: bool,
    present: Callable[[Path], bool],
    count: Callable[[Path], int] | None = None,
) -> Layout:
    """Declare where data set ``name``'s files lie; a second declaration of a name raises.

    Args:
        name: the data set name (``--dataset``, ``Experiment.paper_data``).
        what: how messages call it.
        layout: the expected files, relative to ``DIR``.
        downloadable: ``--download`` can fetch them.
        present: whether the files are under a data root.
        count: the number of examples in one file (checked against ``PinnedFile.examples``).

    Returns:
        The registered ``Layout``.
    """
    if name in LAYOUTS:
        raise ValueError(f"data layout {name!r} is already registered")
    LAYOUTS[name] = Layout(name, what, layout, downloadable, present, count)
    return LAYOUTS[name]


def layout(name: str) -> Layout:
    """The registered layout of ``name`` (``KeyError`` naming the known ones)."""
    if name not in LAYOUTS:  # each data module registers its layouts when it is imported
        from paperzoo.data.base import DATASETS

        DATASETS.names()  # imports every data module
    try:
        return LAYOUTS[name]
    except KeyError:
        known = ", ".join(sorted(LAYOUTS))
        raise KeyError(f"no file layout registered for data set {name!r}; known: {known}") from None


def message(name: str, data_root: Path | None = None) -> str:
    """The one line a run without ``name``'s files stops with."""
    lay = layout(name)
    where = "give --data-root DIR" if data_root is None else f"--data-root {data_root} lacks them:"
    fetch = " (or add --download)" if lay.downloadable else ""
    return (
        f"{lay.what} is the paper's data set at full scale; {where} with {lay.layout}{fetch}, "
        "or name a substitute with --dataset (not the paper's setting)"
    )


def require(name: str, data_root: Path | str | None, download: bool = False) -> FileCheck | None:
    """Return when data set ``name`` can be read from ``data_root`` (or fetched with
    ``download``); else raise ``DataRequired`` with one line naming the data set and layout.

    When the files are there, they are also compared with the canonical release (``check_files``,
    digests computed now, before training, and cached): a mismatch is logged and returned, not
    raised; ``files_note`` later marks the run with it.

    Args:
        name: a registered layout name (``LAYOUTS``).
        data_root: the ``--data-root`` directory, or None.
        download: ``--download`` was given (only where the layout is downloadable).

    Returns:
        The comparison with the canonical release, or None when the files are still to be
        downloaded.
    """
    lay = layout(name)
    root = Path(data_root).expanduser() if data_root is not None else None
    if root is not None and root.is_dir() and lay.present(root):
        check = check_files(name, root)
        if not check.matches:
            log.warning("%s: not the paper's setting: %s", name, check.note())
        return check
    if download and lay.downloadable and root is not None:
        return None
    raise DataRequired(message(name, root))


def all_files(*paths: str) -> Callable[[Path], bool]:
    """A ``present`` test: every path (relative to the data root) exists; ``a|b`` accepts either."""

    def present(root: Path) -> bool:
        return all(any((root / p).exists() for p in alt.split("|")) for alt in paths)

    return present


# -- the canonical releases ----------------------------------------------------------------------


@dataclass(frozen=True)
class PinnedFile:
    """One file of a canonical release: where it lies and what identifies it.

    Every digest given must match; at least one digest is given for a pinned file."""

    path: str  # relative to the data root, e.g. "mnist/train-images-idx3-ubyte.gz"
    sha256: str | None = None
    md5: str | None = None  # where only the MD5 of the very file is published
    git_sha1: str | None = None  # git blob SHA-1: the file as committed in the authors' repo
    size: int | None = None  # bytes (None: no published size)
    examples: int | None = None  # examples in the file, checked where the layout can count them
    # A repack's gzip file: the MTIME of the release's gzip header (see ``restore_gzip_release``)
    release_gzip_mtime: int | None = None


@dataclass(frozen=True)
class Release:
    """The canonical release of one data set: its files, or (ImageNet) its image-folder counts."""

    source: str  # who published the digests / sizes / counts
    files: tuple[PinnedFile, ...] = ()
    # Image folders checked by counts (ImageNet): split directory (relative to the data root)
    # -> number of images, each with ``classes`` class folders named like ``class_pattern``.
    folders: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    classes: int | None = None
    class_pattern: str | None = None
    # Other byte-level copies of the same data (each a ``Release``: its source, its files' pins
    # under the same paths): a file matches when it is the release's or a repack's.
    repacks: tuple[Release, ...] = ()


PINS_FILE = "pins.json"  # package data next to this module: every release's pins


def _release(name: str, entry: Mapping[str, Any], done: Mapping[str, Release]) -> Release:
    """One entry of the pins file as a ``Release`` (``same_as``: an earlier entry's release)."""
    if "same_as" in entry:
        return done[entry["same_as"]]
    unknown = set(entry) - {"source", "files", "folders", "classes", "class_pattern", "repacks"}
    if unknown or not isinstance(entry["source"], str):
        raise ValueError(f"{name}: unknown keys {sorted(unknown)} or no source")
    files = tuple(PinnedFile(**f) for f in entry.get("files", ()))
    for f in files:
        if f.sha256 is None and f.md5 is None and f.git_sha1 is None:
            raise ValueError(f"{name}: {f.path} has no digest")
    return Release(
        source=entry["source"],
        files=files,
        folders=MappingProxyType(dict(entry.get("folders", {}))),
        classes=entry.get("classes"),
        class_pattern=entry.get("class_pattern"),
        repacks=tuple(
            _release(f"{name} repack {i}", r, done) for i, r in enumerate(entry.get("repacks", ()))
        ),
    )


def load_pins() -> dict[str, Release]:
    """Every canonical release, read from the package's ``pins.json`` (``PINNED`` holds the
    result, read once at import).

    Raises:
        DataError: the file is missing from the installed package, or is not a valid pins file
            (names the file and what is wrong).
    """
    where = f"paperzoo/data/{PINS_FILE}"
    try:
        text = resources.files("paperzoo.data").joinpath(PINS_FILE).read_text(encoding="utf-8")
    except OSError as err:
        raise DataError(
            f"{where} is missing from the installed package ({err}); reinstall paperzoo"
        ) from None
    try:
        releases: dict[str, Release] = {}
        for name, entry in json.loads(text)["releases"].items():
            releases[name] = _release(name, entry, releases)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise DataError(f"{where} is corrupt: {type(err).__name__}: {err}") from None
    return releases


PINNED: dict[str, Release] = load_pins()


# -- comparing files with a release --------------------------------------------------------------

_DIGESTS: dict[tuple[str, int, int], dict[str, str]] = {}
_CLASS_COUNTS: dict[tuple[str, int], int] = {}


def file_digests(path: str | Path) -> dict[str, str]:
    """SHA-256, MD5 and git blob SHA-1 of a file, in one streamed pass, cached for the process by
    (resolved path, size, mtime).

    Returns:
        ``{"sha256": hex, "md5": hex, "git_sha1": hex}``.
    """
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
        git = hashlib.sha1(f"blob {st.st_size}\0".encode(), usedforsecurity=False)
        with open(p, "rb") as f:
            while block := f.read(1 << 20):
                sha256.update(block)
                md5.update(block)
                git.update(block)
        _DIGESTS[key] = {"sha256": sha256.hexdigest(), "md5": md5.hexdigest(), "git_sha1": git.hexdigest()}  # fmt: skip
    return dict(_DIGESTS[key])


@dataclass(frozen=True)
class FileCheck:
    """How the files of one data set under a data root compare with its canonical release."""

    name: str
    what: str
    root: str
    mismatches: tuple[str, ...]  # one phrase per file (or folder) that differs, naming it
    # SHA-256 of the files found (``path sha256`` lines) or, for image folders, of their counts:
    # what identifies the data a run read. None: nothing was found.
    sha256: str | None
    # sources of the repacks some files matched instead of the release (empty: the release's)
    repacks: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        """Whether every pinned file is there with its digests, size and count."""
        return not self.mismatches

    def note(self, limit: int = 3) -> str | None:
        """None when the files match; else one line naming the first ``limit`` mismatches."""
        if self.matches:
            return None
        shown = "; ".join(self.mismatches[:limit])
        more = len(self.mismatches) - limit
        tail = f"; and {more} more file{'s' * (more != 1)}" if more > 0 else ""
        return f"the files under {self.root} are not the canonical {self.what}: {shown}{tail}"


def _short(digest: str) -> str:
    return digest[:16]


def _check_file(root: Path, pin: PinnedFile, count: Callable[[Path], int] | None) -> str | None:
    p = root / pin.path
    if not p.is_file():
        raw = p.with_suffix("") if p.suffix == ".gz" else None
        if raw is not None and raw.is_file():
            return (
                f"{pin.path} is absent ({raw.name} is there uncompressed; only the .gz files "
                "as published have canonical digests)"
            )
        return f"{pin.path} is absent"
    if pin.examples is not None and count is not None:
        try:
            n = count(p)
        except (DataError, OSError, EOFError, ValueError) as err:
            return f"{pin.path} cannot be counted ({err})"
        if n != pin.examples:
            return f"{pin.path} holds {n:,} examples, the release {pin.examples:,}"
    size = p.stat().st_size
    if pin.size is not None and size != pin.size:
        return f"{pin.path} is {size:,} bytes, the release {pin.size:,}"
    got = file_digests(p)
    for algo, label in (("sha256", "SHA-256"), ("md5", "MD5"), ("git_sha1", "git blob SHA-1")):
        want = getattr(pin, algo)
        if want is not None and got[algo] != want.lower():
            return f"{pin.path} has {label} {_short(got[algo])}..., the release {_short(want)}..."
    return None


def _image_count(class_dir: Path) -> int:
    key = (str(class_dir.resolve()), class_dir.stat().st_mtime_ns)
    if key not in _CLASS_COUNTS:
        with os.scandir(class_dir) as it:
            _CLASS_COUNTS[key] = sum(
                1 for e in it if e.is_file() and e.name.lower().endswith(IMAGE_EXTENSIONS)
            )
    return _CLASS_COUNTS[key]


def _check_folders(root: Path, release: Release) -> tuple[list[str], list[str]]:
    """(mismatches, ``split class count`` lines) of the image folders of ``release``."""
    mismatches: list[str] = []
    lines: list[str] = []
    first: tuple[str, list[str]] | None = None
    for split, want in release.folders.items():
        d = root / split
        if not d.is_dir():
            mismatches.append(f"{split} is absent")
            continue
        classes = sorted(e.name for e in os.scandir(d) if e.is_dir())
        if release.classes is not None and len(classes) != release.classes:
            mismatches.append(
                f"{split} has {len(classes):,} class folders, the release {release.classes:,}"
            )
        if release.class_pattern is not None:
            odd = [c for c in classes if not re.fullmatch(release.class_pattern, c)]
            if odd:
                mismatches.append(
                    f"{split} has class folders not named like {release.class_pattern}: "
                    f"{', '.join(odd[:3])}{' ...' if len(odd) > 3 else ''}"
                )
        if first is None:
            first = (split, classes)
        elif classes != first[1]:
            mismatches.append(f"{split}'s class folders are not those of {first[0]}")
        counts = {c: _image_count(d / c) for c in classes}
        lines += [f"{split} {c} {n}" for c, n in counts.items()]
        if sum(counts.values()) != want:
            mismatches.append(
                f"{split} holds {sum(counts.values()):,} images, the release {want:,}"
            )
    return mismatches, lines


def check_files(name: str, data_root: str | Path) -> FileCheck:
    """Compare data set ``name``'s files under ``data_root`` with its canonical release.

    Files are hashed once per process (``file_digests``); a data set without a pinned release
    never matches (its mismatch says so).

    Args:
        name: a registered layout name with a release in ``PINNED``.
        data_root: the ``--data-root`` directory.

    Returns:
        A ``FileCheck``: its ``mismatches`` name every file that is absent or differs (count,
        size or digest, in that order: the first that differs).
    """
    lay = layout(name)
    root = Path(data_root).expanduser()
    release = PINNED.get(name)
    if release is None:
        return FileCheck(name, lay.what, str(root), ("no canonical release is pinned",), None)
    mismatches: list[str] = []
    lines: list[str] = []
    repacks: list[str] = []
    for pin in release.files:
        problem = _check_file(root, pin, lay.count)
        if problem is not None:
            repack = _repack_match(root, release, pin, lay.count)
            if repack is None:
                mismatches.append(problem)
            elif repack not in repacks:
                repacks.append(repack)
        if (root / pin.path).is_file():
            lines.append(f"{pin.path} {file_digests(root / pin.path)['sha256']}")
    if release.folders:
        more, counted = _check_folders(root, release)
        mismatches += more
        lines += counted
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest() if lines else None
    return FileCheck(name, lay.what, str(root), tuple(mismatches), digest, tuple(repacks))


def _repack_match(
    root: Path, release: Release, pin: PinnedFile, count: Callable[[Path], int] | None
) -> str | None:
    """The source of the first repack whose pin of ``pin.path`` the file matches, or None."""
    for repack in release.repacks:
        alt = next((f for f in repack.files if f.path == pin.path), None)
        if alt is not None and _check_file(root, alt, count) is None:
            return repack.source
    return None


def restore_gzip_release(data: bytes, name: str, mtime: int) -> bytes:
    """A gzip file whose header was rewritten without the file name (FLG 0), with the header a
    ``gzip`` of file ``name`` at ``mtime`` writes put back (FLG FNAME, the name, XFL 0, OS Unix):
    how a repack's file is shown to carry the release's deflate stream byte for byte.

    Raises:
        ValueError: ``data`` is not a gzip file with a bare 10-byte header.
    """
    if data[:4] != b"\x1f\x8b\x08\x00":
        raise ValueError("not a gzip file with a bare header (magic, deflate, FLG 0)")
    return (
        b"\x1f\x8b\x08\x08"
        + mtime.to_bytes(4, "little")
        + b"\x00\x03"
        + name.encode()
        + b"\0"
        + data[10:]
    )


def files_note(name: str, data_root: str | Path | None) -> str | None:
    """Why the files of ``name`` under ``data_root`` are not the paper's data (one line), or None
    when they are the canonical release. What ``Experiment.setting_note`` marks a full run with.

    Without ``data_root`` there is nothing to judge (``require`` refuses such a run), except for
    Fashion-MNIST, read from Debian's copy when installed.
    """
    if data_root is None:
        if name != "fashion-mnist":
            return None
        if not DEBIAN_FASHION_DIR.is_dir():
            return None
        data_root = DEBIAN_FASHION_DIR.parent
    return check_files(name, data_root).note()


def pin_tree(root: str | Path, paths: Iterable[str] | None = None) -> tuple[PinnedFile, ...]:
    """The pins (SHA-256 and size) of local files: every file under ``root`` (following links),
    or only ``paths`` (relative to it). For pinning a new release, and for test fixtures that
    stand in for one (``monkeypatch.setitem(PINNED, name, Release("fixture", pin_tree(root)))``).
    """
    root = Path(root)
    if paths is None:
        paths = sorted(
            str((Path(d) / f).relative_to(root))
            for d, _, files in os.walk(root, followlinks=True)
            for f in files
        )
    return tuple(
        PinnedFile(p, sha256=file_digests(root / p)["sha256"], size=(root / p).stat().st_size)
        for p in paths
    )
