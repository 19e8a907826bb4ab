"""Where each real data set's files lie under ``--data-root``, and whether they are the paper's.

A ``--scale full`` run reads the paper's own data set. Before anything is trained or written to
``--out``, the runner asks ``require(name, data_root, download)``: when the files are absent (and
cannot be fetched with ``--download``) it raises ``DataRequired`` with one line naming the data
set and the layout it expects. Each data module registers the layout of its files next to its
loader (``register_layout``), so the message and the loader cannot drift apart.

Files that are present are not yet the paper's data: ``PINNED`` holds, for every data set with a
canonical release, the digests and sizes of the released files (each with the source that
published them), and ``check_files`` compares the files under ``--data-root`` with them. A full
run on files that do not match still runs (a GPU check on synthetic files in the real layout
must run), but ``Experiment.setting_note`` marks it "not the paper's setting" with the mismatch
named (``files_note``), so none of its findings counts. ``require`` computes the digests before
training; they are cached per file (path, size, mtime) for the process, and files are hashed in
1 MiB chunks, the three digests in one pass (a 178 MB file took 2.7 s on 2 busy cores, about the
size of CIFAR-10's six batches).

What is pinned, and from where (no digest here is computed from files of unknown origin):

* MNIST, Fashion-MNIST, SVHN: SHA-256 and byte sizes of the files as downloaded, from
  tensorflow/datasets ``url_checksums/{mnist,fashion_mnist,svhn_cropped}.txt``; the example
  counts (60,000 / 10,000; SVHN 73,257 / 26,032) from the data sets' pages. MNIST's counts are
  also read from each IDX header, so a file of the wrong size names its count.
* CIFAR-10 / CIFAR-100: only the MD5 of the extracted python batches is published (torchvision
  ``torchvision/datasets/cifar.py``, ``train_list`` / ``test_list``), so MD5 is pinned; no byte
  sizes of the extracted batches are published, so none is pinned.
* dSprites (and the abstract-reasoning study's variant, drawn from the same archive): the git
  blob SHA-1 of ``dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz`` in the authors' repository
  (github.com/deepmind/dsprites-dataset, tree of commit fa310c66) and the MD5 that dSprites
  loaders publish (see ``paperzoo.data.dsprites``); no SHA-256 or size is published.
* Symbolic bAbI (the GG-NN authors' 10 folds): SHA-256 and sizes of every file the loader reads,
  computed here from the blobs of github.com/chingyaoc/ggnn.pytorch at commit
  0c7897fe9b05e9b4f9a963ff55bd3ad917ea734e, ``babi_data/`` (each blob's git SHA-1 checked
  against the tree first).
* ImageNet (ILSVRC2012): counts only (hashing 140 GB per run is not an option): 1,000 class
  folders named by WordNet id (``n`` + 8 digits), the same in train and val, 1,281,167 training
  and 50,000 validation images (Russakovsky et al., IJCV 2015). The loader has no list of the
  class names, so the names are checked by form and by train/val agreement only.

Not pinned: the fixed binarized MNIST (Larochelle & Murray) - no paper here reads it (DRAW reads
MNIST and binarizes it, ``paperzoo.experiments.draw``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from paperzoo.data.base import DataError

log = logging.getLogger(__name__)


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
    import paperzoo.data  # noqa: F401  (every data module registers its layout)

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


def _mnist_like(sub: str, sizes: Mapping[str, tuple[int, str]]) -> tuple[PinnedFile, ...]:
    counts = {"train": 60_000, "t10k": 10_000}
    return tuple(
        PinnedFile(
            f"{sub}/{stem}.gz", sha256=digest, size=size, examples=counts[stem.split("-")[0]]
        )
        for stem, (size, digest) in sizes.items()
    )


# tensorflow/datasets url_checksums/mnist.txt: bytes and SHA-256 of each file as downloaded.
_MNIST = {
    "train-images-idx3-ubyte": (9_912_422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
    "train-labels-idx1-ubyte": (28_881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
    "t10k-images-idx3-ubyte": (1_648_877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
    "t10k-labels-idx1-ubyte": (4_542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
}  # fmt: skip
# tensorflow/datasets url_checksums/fashion_mnist.txt.
_FASHION = {
    "train-images-idx3-ubyte": (26_421_880, "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"),
    "train-labels-idx1-ubyte": (29_515, "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"),
    "t10k-images-idx3-ubyte": (4_422_102, "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"),
    "t10k-labels-idx1-ubyte": (5_148, "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"),
}  # fmt: skip
_DSPRITES = Release(
    source=(
        "git blob SHA-1 in github.com/deepmind/dsprites-dataset (commit fa310c66); MD5 as "
        "published by dSprites loaders"
    ),
    files=(
        PinnedFile(
            "dsprites/dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz",
            git_sha1="d98996d3f8ee1550e06b9d4ed78d0beb478910d5",
            md5="7da33b31b13a06f4b04a70402ce90c2e",
        ),
    ),
)

PINNED: dict[str, Release] = {
    "mnist": Release(
        source="tensorflow/datasets url_checksums/mnist.txt", files=_mnist_like("mnist", _MNIST)
    ),
    "fashion-mnist": Release(
        source="tensorflow/datasets url_checksums/fashion_mnist.txt",
        files=_mnist_like("fashion-mnist", _FASHION),
    ),
    "cifar10": Release(
        source="MD5 of the extracted batches, torchvision/datasets/cifar.py",
        files=(
            PinnedFile("cifar-10-batches-py/data_batch_1", md5="c99cafc152244af753f735de768cd75f"),
            PinnedFile("cifar-10-batches-py/data_batch_2", md5="d4bba439e000b95fd0a9bffe97cbabec"),
            PinnedFile("cifar-10-batches-py/data_batch_3", md5="54ebc095f3ab1f0389bbae665268c751"),
            PinnedFile("cifar-10-batches-py/data_batch_4", md5="634d18415352ddfa80567beed471001a"),
            PinnedFile("cifar-10-batches-py/data_batch_5", md5="482c414d41f54cd18b22e5b47cb7c3cb"),
            PinnedFile("cifar-10-batches-py/test_batch", md5="40351d587109b95175f43aff81a1287e"),
        ),
    ),
    "cifar100": Release(
        source="MD5 of the extracted files, torchvision/datasets/cifar.py",
        files=(
            PinnedFile("cifar-100-python/train", md5="16019d7e3df5f24257cddd939b257f8d"),
            PinnedFile("cifar-100-python/test", md5="f0ef6b0ae62326f3e7ffdfab6717acfc"),
        ),
    ),
    "svhn": Release(
        source="tensorflow/datasets url_checksums/svhn_cropped.txt",
        files=(
            PinnedFile(
                "svhn/train_32x32.mat",
                sha256="435e94d69a87fde4fd4d7f3dd208dfc32cb6ae8af2240d066de1df7508d083b8",
                size=182_040_794,
            ),
            PinnedFile(
                "svhn/test_32x32.mat",
                sha256="cdce80dfb2a2c4c6160906d0bd7c68ec5a99d7ca4831afa54f09182025b6a75b",
                size=64_275_384,
            ),
        ),
    ),
    "dsprites": _DSPRITES,
    "abstract-dsprites": _DSPRITES,  # the study's variant is drawn from the same archive
    "imagenet": Release(
        source="ILSVRC2012 (Russakovsky et al., IJCV 2015): image and class counts",
        folders=MappingProxyType({"imagenet/train": 1_281_167, "imagenet/val": 50_000}),
        classes=1000,
        class_pattern=r"n\d{8}",
    ),
}


def pins_from_lines(text: str) -> tuple[PinnedFile, ...]:
    """Pinned files from ``SHA256 BYTES PATH`` lines (the format of ``BABI_FOLDS``)."""
    pins = []
    for line in text.strip().splitlines():
        digest, size, path = line.split(maxsplit=2)
        pins.append(PinnedFile(path, sha256=digest, size=int(size)))
    return tuple(pins)


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
    from paperzoo.data.imagenet import IMAGE_EXTENSIONS

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
    for pin in release.files:
        problem = _check_file(root, pin, lay.count)
        if problem is not None:
            mismatches.append(problem)
        if (root / pin.path).is_file():
            lines.append(f"{pin.path} {file_digests(root / pin.path)['sha256']}")
    if release.folders:
        more, counted = _check_folders(root, release)
        mismatches += more
        lines += counted
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest() if lines else None
    return FileCheck(name, lay.what, str(root), tuple(mismatches), digest)


def files_note(name: str, data_root: str | Path | None) -> str | None:
    """Why the files of ``name`` under ``data_root`` are not the paper's data (one line), or None
    when they are the canonical release. What ``Experiment.setting_note`` marks a full run with.

    Without ``data_root`` there is nothing to judge (``require`` refuses such a run), except for
    Fashion-MNIST, read from Debian's copy when installed.
    """
    if data_root is None:
        if name != "fashion-mnist":
            return None
        from paperzoo.data.idx import DEBIAN_FASHION_DIR

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


# -- symbolic bAbI: the GG-NN authors' 10 folds --------------------------------------------------
# ``SHA256 BYTES PATH`` of every file ``paperzoo.data.babi.load_official`` reads (the graphs of
# both splits and the training split's dictionaries), computed from the blobs of
# github.com/chingyaoc/ggnn.pytorch, commit 0c7897fe9b05e9b4f9a963ff55bd3ad917ea734e,
# ``babi_data/`` (paths here are relative to that directory: point --data-root at it).
BABI_FOLDS = """
a4e92c8324a7709776836597f127c75d2bee61429625156762cd31d0677a3f77 125368 extra_seq_tasks/fold_1/noisy_parsed/test/4_graphs.txt
2d735eb253dc4c16a7944334137b4d1576805985fbfa57463d9d0f38f74ffc98 129000 extra_seq_tasks/fold_1/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_1/noisy_parsed/train/4_edge_types.txt
a44b0a3c6980ae41435a50ca2d209e0a3d8eb7f398d4dc69c7554a0efa45f19b 125434 extra_seq_tasks/fold_1/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_1/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_1/noisy_parsed/train/5_edge_types.txt
cc1a7b9d505b1a3bc24629d0e46a5027fc1ebfbdbec6e214627b570f7c5b26cf 129000 extra_seq_tasks/fold_1/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_1/noisy_parsed/train/5_question_types.txt
e2234dd642a0ea7a04a4e0c91ce0cfed6e87c5a9a1a90dd0e7a9b121dc865a55 125404 extra_seq_tasks/fold_2/noisy_parsed/test/4_graphs.txt
f37b2b2a1cbf8b019d37618da42abc508b1bd50b1e19afe23fc672f287f03638 129000 extra_seq_tasks/fold_2/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_2/noisy_parsed/train/4_edge_types.txt
592b63f0ebe233e81ea9dc155bfc4859a5c62e3235107880cd2683962bbd7d08 125374 extra_seq_tasks/fold_2/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_2/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_2/noisy_parsed/train/5_edge_types.txt
d7f9e143e6fb7d446664d1e5291d57718540a9fca5ac296015eb1a6b1a2b0cf4 129000 extra_seq_tasks/fold_2/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_2/noisy_parsed/train/5_question_types.txt
a1bef5b3d559886e3836a446f147d46b73b1ded231fc29d663d9bfedcac0b7c8 125388 extra_seq_tasks/fold_3/noisy_parsed/test/4_graphs.txt
5cf1beef4c17224f685c19b73456396f8a913587691fda04b68c0e5032b8f5a4 129000 extra_seq_tasks/fold_3/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_3/noisy_parsed/train/4_edge_types.txt
e7410004634cb2d80188f1acef113b5da2d3728b0ee7402b25e258852677a293 125418 extra_seq_tasks/fold_3/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_3/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_3/noisy_parsed/train/5_edge_types.txt
8f4684106b274bde12393376670a54e82a7d93d33793119cf6d1ea3b0f6185b6 129000 extra_seq_tasks/fold_3/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_3/noisy_parsed/train/5_question_types.txt
49beb15d9f18eecead84287e4ecc476dac0bc4e8b08ce1b43da14d7219cea8d5 125378 extra_seq_tasks/fold_4/noisy_parsed/test/4_graphs.txt
0eecb0c3a7ff7a1643cad9dcfdf93d9d1e1752e860e71dec405b4fb4bde93eb9 129000 extra_seq_tasks/fold_4/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_4/noisy_parsed/train/4_edge_types.txt
c7791eca7499179a2f3c2e0f9e6c3924e4e0b80a4ebc9ce33eda62cb1daac345 125382 extra_seq_tasks/fold_4/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_4/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_4/noisy_parsed/train/5_edge_types.txt
01beb53d60dafdea13530ba2ca38fad791724c799b005d73f95eb4bd765aa551 129000 extra_seq_tasks/fold_4/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_4/noisy_parsed/train/5_question_types.txt
5e215f7e3079cc8ea1cd949454946e078e2fd9b479d59196562e6ae3f2a3443f 125392 extra_seq_tasks/fold_5/noisy_parsed/test/4_graphs.txt
7226d27abf61da0fee2c1155e2e1861e1f7087d1f46f83e0c26c13a41219560d 129000 extra_seq_tasks/fold_5/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_5/noisy_parsed/train/4_edge_types.txt
23db97db5747ffc5c10883ba060eaacaedb099aee7ac86fad1e6761e209c0493 125360 extra_seq_tasks/fold_5/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_5/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_5/noisy_parsed/train/5_edge_types.txt
8d62be062727daa666d69bc97dacb2056c780b3bccda392574606faf22903ed2 129000 extra_seq_tasks/fold_5/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_5/noisy_parsed/train/5_question_types.txt
45abd1de17edc47fccc1a4239c525d571bf4262f21f3d2c3e12b3aef6a4de4a3 125396 extra_seq_tasks/fold_6/noisy_parsed/test/4_graphs.txt
59025bd062c1aa484bf1cf5e04aae0ab1b75c8f341d884226bede7a80ae795f4 129000 extra_seq_tasks/fold_6/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_6/noisy_parsed/train/4_edge_types.txt
6fc9bee757afaec8fed581b6ac194daf54d22064c97ec8a8b44aebb61ca1c79f 125360 extra_seq_tasks/fold_6/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_6/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_6/noisy_parsed/train/5_edge_types.txt
485553c0a5d733d2c0fa7e491b71b8447047f05ce5ecc40205ba60ab80acadc8 129000 extra_seq_tasks/fold_6/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_6/noisy_parsed/train/5_question_types.txt
732b57c38c4fbefa0c4e5b9dc2c6759fd4a00c9fb10b6a1b8531efcef8a829bd 125418 extra_seq_tasks/fold_7/noisy_parsed/test/4_graphs.txt
3ccf234787ebb5fd205e5046087b3bd698a9c434134bbfde801bf75a2baf3254 129000 extra_seq_tasks/fold_7/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_7/noisy_parsed/train/4_edge_types.txt
58605bf799518b8babe1c480854ba2e17d0dae3bde93bffc4e4e5782892f2b60 125416 extra_seq_tasks/fold_7/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_7/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_7/noisy_parsed/train/5_edge_types.txt
54c035f55f7fc5fa3134e4fb843f3eebc50bfd6af2bbd091d6d38c8e41ca7275 129000 extra_seq_tasks/fold_7/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_7/noisy_parsed/train/5_question_types.txt
ef70324a02b0d245b981bb5033cebe29a3fa0b81ce2770509807a76ce178db98 125400 extra_seq_tasks/fold_8/noisy_parsed/test/4_graphs.txt
6ed2d837dc3a220676e1fa7e4e925533e0e4ebdce876cf01fa3f53967edcb50c 129000 extra_seq_tasks/fold_8/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_8/noisy_parsed/train/4_edge_types.txt
063ab3676062559508a942eeb094b514f70355e79afe95e81763f8bdd1c36af8 125424 extra_seq_tasks/fold_8/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_8/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_8/noisy_parsed/train/5_edge_types.txt
9bc33b9116d2ebc8f468a3bf9261dcbfd9a60bb0faf8d225b84448cfb1424485 129000 extra_seq_tasks/fold_8/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_8/noisy_parsed/train/5_question_types.txt
479545c6a62ed05208e6520ebb6e5332efb9fb9b3280976675e32213612aa2ab 125408 extra_seq_tasks/fold_9/noisy_parsed/test/4_graphs.txt
096f6e3591e989d916e35bbab5e35719e3efd5008b992b95a30128c2792f31a4 129000 extra_seq_tasks/fold_9/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_9/noisy_parsed/train/4_edge_types.txt
9ecdc38dc8b83d4c4f475690e195346718fd51b5ba033fc8a04f94554adabfc1 125350 extra_seq_tasks/fold_9/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_9/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_9/noisy_parsed/train/5_edge_types.txt
b69fbde063c6010ea77829815f67b0380c28aba53895d3f3230ed8b7993301b2 129000 extra_seq_tasks/fold_9/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_9/noisy_parsed/train/5_question_types.txt
f6771501e84fef466baccdbe610ce0f7f072c08fe25f0ecd6d0923368903f9e1 125392 extra_seq_tasks/fold_10/noisy_parsed/test/4_graphs.txt
c6afe02c26d9c7394450e529f14b77992b0544714c4075cfba8cad632a6cfee4 129000 extra_seq_tasks/fold_10/noisy_parsed/test/5_graphs.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_10/noisy_parsed/train/4_edge_types.txt
a9f15f905382b82a2e1695c9454582a56ad395d65455185b684010ad6cc20947 125346 extra_seq_tasks/fold_10/noisy_parsed/train/4_graphs.txt
2f460df49818553dc5e2fa8c20256346754a4da90db0617e7ae25d67c355abb6 16 extra_seq_tasks/fold_10/noisy_parsed/train/4_question_types.txt
8fdb3e52f95e6aa50baff10ea29ba8d80bea0c816135b92f45347e8fd6aa37e5 15 extra_seq_tasks/fold_10/noisy_parsed/train/5_edge_types.txt
949b7f419a180bdca5260e75cfd003dc9e09b80a0150e9152c5e7aebc70a078b 129000 extra_seq_tasks/fold_10/noisy_parsed/train/5_graphs.txt
273bcdbdcccd61fda4ac1bde01aa2972922ac8fa376aeb5edced0d59ef4a84fa 19 extra_seq_tasks/fold_10/noisy_parsed/train/5_question_types.txt
fd509810236a208167533773becbe40c906c861e85e4dfab72620f7b7b3b67e6 21000 processed_1/test/4_graphs.txt
38d4c8db050a430d7fe2dcf9b00a0939ebd583affcc72b7d7d9f3fad8ea50f0f 81000 processed_1/test/15_graphs.txt
8e2757aa51ca5ca717e5b56a2a761320ff4677e66dab602090f5c17945cee3b2 67909 processed_1/test/16_graphs.txt
e18053285f81f365821b1cc3d722ca73399c8fb2093671b7453a78ec4436803f 65944 processed_1/test/18_graphs.txt
c0e2735a1fc92d19dfcc8605137ae1b57a111c05b62967b8f6c46b3accd89eae 37000 processed_1/test/19_graphs.txt
27ea05cd03ab17d65f396d418931b1c5199f5ca65bd95d0e61fab8cebb779926 8 processed_1/train/4_edge_types.txt
acf205051fcd703a53754aface1fbe44f34c1427ebc92569750bba59aa2dc238 21000 processed_1/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_1/train/4_labels.txt
d47ca8e1957905e6ecbefc739ef6a279e802a168fd2160bc1266f36d57275c8a 16 processed_1/train/4_node_ids.txt
664ea244b40d1a5d9fe3be3248f87ffc46f256501b72a09fdc82fb617cae394c 16 processed_1/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_1/train/15_edge_types.txt
22b4c8d00cf4c9552ca7cf0a865c0517979127160fcc01d37fdf41cc0d964d5c 81000 processed_1/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_1/train/15_labels.txt
30e9a6ac8d47968f616d4c5f1142b2ae267866e22f67f164c5516fa92858b2f1 32 processed_1/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_1/train/15_question_types.txt
f14ea822538a749754a5c0aa9c9ff396d4c79cb6ce7831f22fec066d36fe71d7 17 processed_1/train/16_edge_types.txt
b4dd45494cccad16c7617f46fffa8522022c779865dfa0f404bb858057b745d6 68071 processed_1/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_1/train/16_labels.txt
0564a9aa8c796da93e11c29e28d40b8bac863160f61fdf50e71aef939bebc1d8 56 processed_1/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_1/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_1/train/18_edge_types.txt
1626122dbc9cce23874c3f0e49211593202a3b586323fbcc9f602f0b3cd28010 65518 processed_1/train/18_graphs.txt
ce85de424a29a791da3cf7295398689331d6eabef79f5d18eede3e1779b34f34 15 processed_1/train/18_labels.txt
ba85fd2e896729f3dcb2fa6331381efadd0fb130f0f2cff2412730af59b2419a 24 processed_1/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_1/train/18_question_types.txt
2d0a727f57c2247030a29035f1dceb95b651237076aa7496234458073360c2b1 16 processed_1/train/19_edge_types.txt
84713b3889cfc9f3c7c25c0e7e20c9dc2041b035b0447bcec48d77ceb05da6a3 37000 processed_1/train/19_graphs.txt
0477cb494b77f2bfd517b6ba33f2f2fe80be4c3edceecc9049162446b97d1627 16 processed_1/train/19_labels.txt
acfccb42a0e0e26e2b7e00d018a0fe6f77d81956ea8ef57b69c633c2db9b5da6 24 processed_1/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_1/train/19_question_types.txt
744256def0960c235bfb7568758459328be8124856eb7e38ad894be510f2f826 21000 processed_2/test/4_graphs.txt
49b9bab7ff03b5caa2cfa01e65b3015379fa851275b89261a09ad72b2c854c48 81000 processed_2/test/15_graphs.txt
00841842a9e9c047637ee691fa3d38d670b1f317fc0788e655569d8eb0198e64 68787 processed_2/test/16_graphs.txt
cddd1b17cb95621d70cdcd97045006f45ad298abdd80550739aee59da64b895f 66610 processed_2/test/18_graphs.txt
26e851fba18bfdaae11859b0bbf5af1ca6ffcf02f78fe264ae78308e393886bd 37000 processed_2/test/19_graphs.txt
fd015767474aab8975d340b281561af2844be9c9df91b6b254792d1e5d11acbd 8 processed_2/train/4_edge_types.txt
744256def0960c235bfb7568758459328be8124856eb7e38ad894be510f2f826 21000 processed_2/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_2/train/4_labels.txt
4d85b246a9b7133efb3b1b014b6f0017bab68c8d888c144e703512504776efdd 16 processed_2/train/4_node_ids.txt
4f9bc083aeecd7fcd4ebc627a868a94929804434de9316d7a4573d1f82fd7009 16 processed_2/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_2/train/15_edge_types.txt
f03ad8d28fac20f05344f49ed36c4e32531d3c4cdd3295a4500812bde03c364e 81000 processed_2/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_2/train/15_labels.txt
e34da082673a6a9b2b1b14b0fae313c175e0c91630b8a678141cfad2a451b841 32 processed_2/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_2/train/15_question_types.txt
f14ea822538a749754a5c0aa9c9ff396d4c79cb6ce7831f22fec066d36fe71d7 17 processed_2/train/16_edge_types.txt
81100d7918afcf20d5ade94d3c1a587b1183863ff9654d98b31b385ffe7cc94d 68840 processed_2/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_2/train/16_labels.txt
50d8b17a493af725736fa30cfce7be74d4f9bdbed788081bc6cd313c2252ac6d 56 processed_2/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_2/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_2/train/18_edge_types.txt
372ad4e9274959330590e19c73d799f3daecf52e9173834ff21e3b914865cfb6 65294 processed_2/train/18_graphs.txt
ce85de424a29a791da3cf7295398689331d6eabef79f5d18eede3e1779b34f34 15 processed_2/train/18_labels.txt
11a051993b001a2ce43c916b7ca2db2cea2d4bc9dc641f0a92d5815b271ee658 24 processed_2/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_2/train/18_question_types.txt
3bae4a23b61db3c67cce615c6a28329b5f1f351ca317de833915a0bd6e62440d 16 processed_2/train/19_edge_types.txt
70ef57f5f8c009c7b31f91d1f4159712400b6105b2074bb2f499c590dece546f 37000 processed_2/train/19_graphs.txt
2441d0a900b4b07e1a7af6d432180d4ca1528135cd72233b2266586f23a1fff6 16 processed_2/train/19_labels.txt
38bec3ffccf8e3034106f8be97394230a7e938a16ab78643afd286afceb91ea3 24 processed_2/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_2/train/19_question_types.txt
439b84554bbf7a56137d6e8c8a7199aef69d77caa6ee761d9b7e9faf8ace8fcc 21000 processed_3/test/4_graphs.txt
1a4dbe6b38df2d763e0271b24d1471e4fa2b0c2c4b31b7065c4f53c420c69c1e 81000 processed_3/test/15_graphs.txt
009cdcc150c0edb54d5c9b38c4cde4a323f957615476c6f06361f58428bd1cd6 68842 processed_3/test/16_graphs.txt
245ea28d1e2510a190a813879b5ab6858f48e27e3995ba411f23f85fec13edbc 65712 processed_3/test/18_graphs.txt
e90d9f765664041a9bed4b22baad2688f07b4b8bff3dd065a3a2a6fe804278bd 37000 processed_3/test/19_graphs.txt
fd015767474aab8975d340b281561af2844be9c9df91b6b254792d1e5d11acbd 8 processed_3/train/4_edge_types.txt
439b84554bbf7a56137d6e8c8a7199aef69d77caa6ee761d9b7e9faf8ace8fcc 21000 processed_3/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_3/train/4_labels.txt
4d85b246a9b7133efb3b1b014b6f0017bab68c8d888c144e703512504776efdd 16 processed_3/train/4_node_ids.txt
1e8a98d2c8b65613b9b0e681a0165b23400a5ba170b3eea115b187bd6bbf9d6d 16 processed_3/train/4_question_types.txt
8a9e6fa0593e6a8d24462859ee5a4630cefc22ec8c1c44d2f9e07f5d7222ec47 16 processed_3/train/15_edge_types.txt
a9208c152a5b0e4e59f13776a0a802aa2daae4c1a41888b351c97adfeda5244b 81000 processed_3/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_3/train/15_labels.txt
e2690349dcb8a847ff77a59bdf61793a2d1b2b42cbde06d0f1d1a615bb7296fa 32 processed_3/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_3/train/15_question_types.txt
f14ea822538a749754a5c0aa9c9ff396d4c79cb6ce7831f22fec066d36fe71d7 17 processed_3/train/16_edge_types.txt
8e9c1c1b5faf4a1d567638218fcfe674a9242700d2593bbd5045c70cb0baa144 68692 processed_3/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_3/train/16_labels.txt
4d739e5fe5222815d783c806e6506a946be097d104da814424dfdee7e341fb4b 56 processed_3/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_3/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_3/train/18_edge_types.txt
e389cac4ecf717789daf9c6a6fb5180c2269e5dcaa9807c0c5c0dac5d014ad8b 64788 processed_3/train/18_graphs.txt
d8d63dbbe8b35527c29bda2e3c3b9912e4c58e45628ca549e94dd049e9c79b52 15 processed_3/train/18_labels.txt
29f83b6ea47147991fad47e27c71048d0f55ad0553de860b4cb2e87fe9b72a31 24 processed_3/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_3/train/18_question_types.txt
45af28fa0bc1626c5c9a79831da39b675b95621875155b7f311b96120ee5d728 16 processed_3/train/19_edge_types.txt
9f876d8612b79497ec656b849c3eae15d63d63d45cca552eaca95690417ef340 37000 processed_3/train/19_graphs.txt
fd205ea98e96d649dcb89fa5eeeea59eecd1bd79e8385d1a1d6127c086c88b4b 16 processed_3/train/19_labels.txt
6dde95be1c7b3ddc72a5c49a4db4d8b2664960b4dd321b70c86d281112c831dd 24 processed_3/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_3/train/19_question_types.txt
eb2c05ee6a1d49025b31de9f1b2603467ef3fb08998ee3fab9292e55a72101a6 21000 processed_4/test/4_graphs.txt
5847cde84c3526778dfffc21a0b0d42b5e443f3647adb62f86bccad13ddaa8a4 81000 processed_4/test/15_graphs.txt
87e0cc1682f9bcef88e7b5e1c2b127ee72ce7fb2d4edb03735e73085b7d94ac2 68718 processed_4/test/16_graphs.txt
ccfcfac6e2c4729a846d389c7df48c0412423318e523dc53f7022faf179fdb84 64866 processed_4/test/18_graphs.txt
3bb805f0268baaa76731ebf3e76ee8bcdb971e83a9a638bb3371cbddc6fc780a 37000 processed_4/test/19_graphs.txt
fd015767474aab8975d340b281561af2844be9c9df91b6b254792d1e5d11acbd 8 processed_4/train/4_edge_types.txt
eb2c05ee6a1d49025b31de9f1b2603467ef3fb08998ee3fab9292e55a72101a6 21000 processed_4/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_4/train/4_labels.txt
67380ea4b6d383d11b11897273f6cdcbe399292ddcf90f73d19675e2a62d1446 16 processed_4/train/4_node_ids.txt
45af28fa0bc1626c5c9a79831da39b675b95621875155b7f311b96120ee5d728 16 processed_4/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_4/train/15_edge_types.txt
4d8196297598e225a5ac7fb486cc9941f88aa401635ca04a8f63327272395112 81000 processed_4/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_4/train/15_labels.txt
dd7640f5a351664175141ea2bc9ec554dc1f849badbb594d9e59142bb54fc6cf 32 processed_4/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_4/train/15_question_types.txt
f14ea822538a749754a5c0aa9c9ff396d4c79cb6ce7831f22fec066d36fe71d7 17 processed_4/train/16_edge_types.txt
d586084a7fc687ba2857a240b07f6fc8cd514330bba3bd1b9a3f3345c7750031 68756 processed_4/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_4/train/16_labels.txt
462d21a007ea90c3a75f1ff30870203248d54c71813d6fe8bd3f2a09deb51d9c 56 processed_4/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_4/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_4/train/18_edge_types.txt
c2d6a745961c2f6b277f03fad18104148473fecb729f2de344fc6095db790e00 65404 processed_4/train/18_graphs.txt
d8d63dbbe8b35527c29bda2e3c3b9912e4c58e45628ca549e94dd049e9c79b52 15 processed_4/train/18_labels.txt
c5d1681280bbbd65d8e6ee4fb24b3d2da715f7b1079472c594503b73cc2bb509 24 processed_4/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_4/train/18_question_types.txt
b1972b3e3a3f756efe76c70e2c8ed294f5e5124ba70532a80a6c58a9c5664fcf 16 processed_4/train/19_edge_types.txt
307083c19f55746ebec53e1eef4392cff8a5c08b47961967cfefd36b1eae6b7a 37000 processed_4/train/19_graphs.txt
31e0f45268fc44aa34ab76f0dab4f9f40fa38910dba8d752048b4d65e5a47403 16 processed_4/train/19_labels.txt
4945f8a4b9802ac0387cf9b8ad5074a8ea964d766e0ad85b9dde9ce21c36dfd5 24 processed_4/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_4/train/19_question_types.txt
cfaf2976a69e394ac41e43e66ea4e50f7ddfec67c1a148bdcd8dae2b3ca04cef 21000 processed_5/test/4_graphs.txt
10e8fc9eb603a339a2b521cbb4ccf8729930d359535eee88985faaf6d406d5c8 81000 processed_5/test/15_graphs.txt
d94bc4e9f4ca2b8bd2ee335177587c89637d5742f26ff558a738bccb24e6d259 68769 processed_5/test/16_graphs.txt
95806534a60f0b6893cb015a2532c2a7707e474a1ef038f9d1048928d3a96df5 64734 processed_5/test/18_graphs.txt
0b12df304f025a16c2d65abcbc4490d6a08bdc133d95808b2e5df70a86554dce 37000 processed_5/test/19_graphs.txt
fd015767474aab8975d340b281561af2844be9c9df91b6b254792d1e5d11acbd 8 processed_5/train/4_edge_types.txt
c30ed6967455d5526bd1c5cff88f86103172cd93feb9af0a6a71802d7aeddb56 21000 processed_5/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_5/train/4_labels.txt
e799548456049e02ea8efa268f170269844fd7feb04749506f6d4636809fc598 16 processed_5/train/4_node_ids.txt
f7532ffc64f7ba461016bf7ada5a59f968d83f6bf170f51de2602875ac489ee7 16 processed_5/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_5/train/15_edge_types.txt
9eb83582607d4bc8e1f1a0dd4a744941a0a38e36f11c24e85d2c0571213933fe 81000 processed_5/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_5/train/15_labels.txt
65ea946f2741be2ca202af5730eb4eb507f8ae77c71cf3525f6b958521115445 32 processed_5/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_5/train/15_question_types.txt
ccfd101c47026059f20df4be0b30d5c9d9c250501811002d1afc64019173a01f 17 processed_5/train/16_edge_types.txt
f393d3a505b2b07085a7e3fba37083d06e5b222bbcd983b4fb9c558922684f05 68782 processed_5/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_5/train/16_labels.txt
6b2554dec47290e3efb01692aa6b423f5846fac346a06030d90648bfcbcb3186 56 processed_5/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_5/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_5/train/18_edge_types.txt
f364f1dca55faf192c370827b2c4689bde4903a6990c9b9cbbc7b9d2029d23ef 65512 processed_5/train/18_graphs.txt
ce85de424a29a791da3cf7295398689331d6eabef79f5d18eede3e1779b34f34 15 processed_5/train/18_labels.txt
5894d92a331bda4705b0aae98ba4f0a135b15e0f5e1085c7054e31ae283ef148 24 processed_5/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_5/train/18_question_types.txt
b1972b3e3a3f756efe76c70e2c8ed294f5e5124ba70532a80a6c58a9c5664fcf 16 processed_5/train/19_edge_types.txt
689df1bec5e1cf5a5b836826612289b69ff8de19da0eb51737a5b3eeac1f8538 37000 processed_5/train/19_graphs.txt
fd205ea98e96d649dcb89fa5eeeea59eecd1bd79e8385d1a1d6127c086c88b4b 16 processed_5/train/19_labels.txt
44d02f7252fe2f63d4c7a3ca07361230258af9322086cb33abeee8263fffecb7 24 processed_5/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_5/train/19_question_types.txt
43f6fd49b22defa246f537f6354139b54cf76281108c7914e157d3a1fa48658c 21000 processed_6/test/4_graphs.txt
b92b2fa328f0417b81ddfe45ad3fd2a5f7fa3656fed22c0d60343dad1d99f7d4 81000 processed_6/test/15_graphs.txt
afe5b38db9337a5dfb6296eb1588207fddb8351ce110e367a7120e77bdfd204e 67984 processed_6/test/16_graphs.txt
1d3c31da0704b88ff08eecc8cbd163fc2818b0fce138e27e1f7198e3fbaa7328 65898 processed_6/test/18_graphs.txt
435dcd7027d9cde3ce1565ffb6d91427bc8f268edf26ed5058509acf38c63041 37000 processed_6/test/19_graphs.txt
27ea05cd03ab17d65f396d418931b1c5199f5ca65bd95d0e61fab8cebb779926 8 processed_6/train/4_edge_types.txt
e44b159b5335092c010e9942706d788ec54037b9cc549f6389f31f3343811211 21000 processed_6/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_6/train/4_labels.txt
ab660a616de9f275219f66d20af8a03e77f0d024b878c5ad90ce193d2d3e9fb1 16 processed_6/train/4_node_ids.txt
cc77ccd3d1e49fb0ae206786ea22591c3db2dd4ac7a7d6309d6eb387752e3da5 16 processed_6/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_6/train/15_edge_types.txt
7e8158dc5242e0d73646fb87a13e2b2b7444639e875d6b68f681e5304f4b5fb3 81000 processed_6/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_6/train/15_labels.txt
7604a3f106c101887cd1c6ba70fc7828b0a14944d3a175fa2201326d44681ac8 32 processed_6/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_6/train/15_question_types.txt
ccfd101c47026059f20df4be0b30d5c9d9c250501811002d1afc64019173a01f 17 processed_6/train/16_edge_types.txt
b82b5559716026f650294b4de33101cbe285bf74493db084fdf50b2392831662 68002 processed_6/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_6/train/16_labels.txt
01ccf21c6b166e4313cea5948af35fda74d44072036550669b710a9b1e1c2581 56 processed_6/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_6/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_6/train/18_edge_types.txt
d80ad6e1d1a6e65da1221a8e8f1ebc988fa33dd093b379bef64213c097983d19 65858 processed_6/train/18_graphs.txt
d8d63dbbe8b35527c29bda2e3c3b9912e4c58e45628ca549e94dd049e9c79b52 15 processed_6/train/18_labels.txt
6d8719458541fcba031b0762c7f6a47385a88c71f4171eaea27d73847acde58a 24 processed_6/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_6/train/18_question_types.txt
2441d0a900b4b07e1a7af6d432180d4ca1528135cd72233b2266586f23a1fff6 16 processed_6/train/19_edge_types.txt
8240b4155ebac17de52fcf274e596e7be04b501e0b2d42cc3deac825e845b61f 37000 processed_6/train/19_graphs.txt
31e0f45268fc44aa34ab76f0dab4f9f40fa38910dba8d752048b4d65e5a47403 16 processed_6/train/19_labels.txt
d3ac378d70094e1ff7ba49bc76720d26e75204f4d8ee02ecff64137d29627950 24 processed_6/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_6/train/19_question_types.txt
5306b90a9c17992f35d174f9d71a33d475d31be46509ca2d4a07684a7e801802 21000 processed_7/test/4_graphs.txt
4ea7c092934f1abd326e8dbe44fc7a4bd551acfbb40aa40f72852dd8cbbc1cf4 81000 processed_7/test/15_graphs.txt
64bb93931f26f6520b1e52223c5e4582a4c0af774aee310377833738f4e90161 68037 processed_7/test/16_graphs.txt
f9ec7f51c67f56f568baaab587a17130d72ea1aca901d36aa79d3ea56bbd54e0 65864 processed_7/test/18_graphs.txt
29a14ab1e204a71d0bce65160ccbd39834b1a347f18c6696a119d8ec313f63a1 37000 processed_7/test/19_graphs.txt
fd015767474aab8975d340b281561af2844be9c9df91b6b254792d1e5d11acbd 8 processed_7/train/4_edge_types.txt
7bc0f4ec2722709e918036eb4346c4b38156021e83546fe2ea961f04e827bc0e 21000 processed_7/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_7/train/4_labels.txt
ab660a616de9f275219f66d20af8a03e77f0d024b878c5ad90ce193d2d3e9fb1 16 processed_7/train/4_node_ids.txt
4f9bc083aeecd7fcd4ebc627a868a94929804434de9316d7a4573d1f82fd7009 16 processed_7/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_7/train/15_edge_types.txt
a40ae6e7986361b85ea1e1ea304aa2020cd443c82ce59f5d8f3747b8e1b97d19 81000 processed_7/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_7/train/15_labels.txt
0c7bed3d278cc95254a22b66fb9578a2a5010c9ef6e9bc4b6a4197d60fd0bdbc 32 processed_7/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_7/train/15_question_types.txt
ccfd101c47026059f20df4be0b30d5c9d9c250501811002d1afc64019173a01f 17 processed_7/train/16_edge_types.txt
af6d180b305a0bc77a96c701acfeb267ceffd0364fa4447f3f9089e4cd47cb0e 67944 processed_7/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_7/train/16_labels.txt
410b60ac055a4c2f02862c8040e8c0a0181ecbf9da7331658b50076399803671 56 processed_7/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_7/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_7/train/18_edge_types.txt
ae9ed584806488e5789ab453f20ded722c6221169f4a7c4dc559026420258564 65196 processed_7/train/18_graphs.txt
d8d63dbbe8b35527c29bda2e3c3b9912e4c58e45628ca549e94dd049e9c79b52 15 processed_7/train/18_labels.txt
8eade528732988b2e35c5fd817fc8e615fdb97c56843f1520e8a5e268cd24345 24 processed_7/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_7/train/18_question_types.txt
664ea244b40d1a5d9fe3be3248f87ffc46f256501b72a09fdc82fb617cae394c 16 processed_7/train/19_edge_types.txt
064e8a29a5414973b064fe4b445c73496bb69eef27b0a81bd9ab7023331cd182 37000 processed_7/train/19_graphs.txt
1f3c4d55d20aee4fe13e044ae6ef59a5f7951d208d6b291c75e2c6e3cb53fd02 16 processed_7/train/19_labels.txt
80405474e8d024fd2652faaa12a53f7b88b1a8a6de27c25f5952fb201497fca1 24 processed_7/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_7/train/19_question_types.txt
75980fbdf9985af239a80c6905b164aac52fa6cc18a7897939e1656c5f45e89e 21000 processed_8/test/4_graphs.txt
12cd831dac600b48632a89427d04c1693aa7c5dcce78c27269748a288ff7880e 81000 processed_8/test/15_graphs.txt
a2a6709e1f42dea5358a47a79d73c951e4581e15ff737da6a04c33fa53dc49a4 68755 processed_8/test/16_graphs.txt
760d2fc4e1359a79e971698214c81567a9e7067a9183409fca55f22066462253 66004 processed_8/test/18_graphs.txt
b07220b501a3e2cc657336b2ff9da83965dd2ff5b83d3ac5bb1cdb37bd36f94c 37000 processed_8/test/19_graphs.txt
27ea05cd03ab17d65f396d418931b1c5199f5ca65bd95d0e61fab8cebb779926 8 processed_8/train/4_edge_types.txt
75980fbdf9985af239a80c6905b164aac52fa6cc18a7897939e1656c5f45e89e 21000 processed_8/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_8/train/4_labels.txt
ab660a616de9f275219f66d20af8a03e77f0d024b878c5ad90ce193d2d3e9fb1 16 processed_8/train/4_node_ids.txt
664ea244b40d1a5d9fe3be3248f87ffc46f256501b72a09fdc82fb617cae394c 16 processed_8/train/4_question_types.txt
8a9e6fa0593e6a8d24462859ee5a4630cefc22ec8c1c44d2f9e07f5d7222ec47 16 processed_8/train/15_edge_types.txt
70e9667fa8500b606eadc59dbaf8adb91ad0e850e74a1e3e08e01c64fb664fad 81000 processed_8/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_8/train/15_labels.txt
d15c6d215b96f810c1b921a9fbcc0694b3a57685b7186cbf3b55c4b35a2b392e 32 processed_8/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_8/train/15_question_types.txt
f14ea822538a749754a5c0aa9c9ff396d4c79cb6ce7831f22fec066d36fe71d7 17 processed_8/train/16_edge_types.txt
56c99a3c69bf37d1c58b8f7355e03559700c73651da195fb18bc309036645847 68639 processed_8/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_8/train/16_labels.txt
196ee24c251123921a3ed789f336c9458f9d05dacd98c047c2a242588dc7b02d 56 processed_8/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_8/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_8/train/18_edge_types.txt
bc6e02cba8ab9bfaa0c452a014bf88a3acd4fc1f79852a91144c9166fc40aab4 65762 processed_8/train/18_graphs.txt
ce85de424a29a791da3cf7295398689331d6eabef79f5d18eede3e1779b34f34 15 processed_8/train/18_labels.txt
2ac2718b25f2d1f7eb1a867ef5d36609e2ab3380e40ea1016a5c63b55a20d4c8 24 processed_8/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_8/train/18_question_types.txt
28e641f255a3d501e7aec5196cee9491352ec8092cf052f8af34d32d85ddff79 16 processed_8/train/19_edge_types.txt
297df68368bb77013b027335b73fdfd476bcd5faaf6cdd9db127bbbdffb7c337 37000 processed_8/train/19_graphs.txt
e7ad4aaa59e0d1f80c9de8fa7eea45532a27e5b60698e4d343e5d92d0a566ecf 16 processed_8/train/19_labels.txt
5b5038ee3e1be3467984a924cb0bcc8bd998725af1acacd62abbbd972d04a0db 24 processed_8/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_8/train/19_question_types.txt
9b64fab7bbd26a4edf3d91571d321604c440f16007af20ef5e7d42c6945062fb 21000 processed_9/test/4_graphs.txt
85abba6b9b38e0240d067dcf16a39d09c49caff70c33954989e42e319bc25e59 81000 processed_9/test/15_graphs.txt
d4dec5c0566b6dedee50195b74fd6f951dde6877d43a23566b1e8a50e9b16c66 68791 processed_9/test/16_graphs.txt
2e775fff55a95c452c8c3ca851ba0689f3c3d5014858f9621e2f84ff73051393 65266 processed_9/test/18_graphs.txt
6dda31d2e685f92cb9909e048a82e12e26a5cc95b6e94e057faa979e1cf2e77a 37000 processed_9/test/19_graphs.txt
27ea05cd03ab17d65f396d418931b1c5199f5ca65bd95d0e61fab8cebb779926 8 processed_9/train/4_edge_types.txt
3bd94c69eaef9550d467d0cd3a47f4678bbb336342eb1ba89bd825bb94ce463c 21000 processed_9/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_9/train/4_labels.txt
d47ca8e1957905e6ecbefc739ef6a279e802a168fd2160bc1266f36d57275c8a 16 processed_9/train/4_node_ids.txt
3bae4a23b61db3c67cce615c6a28329b5f1f351ca317de833915a0bd6e62440d 16 processed_9/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_9/train/15_edge_types.txt
8b70fb8ca86860219e93f50aa8c327e5f907ee659c885112952219ba03682018 81000 processed_9/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_9/train/15_labels.txt
5989ed10d3c0311308b9698f3cba1c0b46c3643615a5e929672a7b54bb581728 32 processed_9/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_9/train/15_question_types.txt
f14ea822538a749754a5c0aa9c9ff396d4c79cb6ce7831f22fec066d36fe71d7 17 processed_9/train/16_edge_types.txt
b75993e8bbecc8dd3fa86580e265ba5a5a780d1deb547bde01c473bca5ae8f0f 68713 processed_9/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_9/train/16_labels.txt
c97680c23779262468c9fed9684bc2beb4cda5f65167895a687b852ce6029240 56 processed_9/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_9/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_9/train/18_edge_types.txt
ae1fe7fb128f9e9495b15109ddc9b656a75d11bcf57fc1227ec9d85c907a9cd6 65198 processed_9/train/18_graphs.txt
ce85de424a29a791da3cf7295398689331d6eabef79f5d18eede3e1779b34f34 15 processed_9/train/18_labels.txt
73a3b9b7d6431c7d9a5376da0e00042a37a9acf0abc07743d39cf1a609abea44 24 processed_9/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_9/train/18_question_types.txt
0477cb494b77f2bfd517b6ba33f2f2fe80be4c3edceecc9049162446b97d1627 16 processed_9/train/19_edge_types.txt
a3ccbb353d0ad5d9a768fa491d74d871b8e5067674f1af3f11dab73d3632aee3 37000 processed_9/train/19_graphs.txt
31cc6323f827542b5e95c829d586dc56a9ff68661ceb3756bfbfb717a56f92c2 16 processed_9/train/19_labels.txt
b2175acbbd3242d920a3d02289269b708fac304910124762b164d972d97be36d 24 processed_9/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_9/train/19_question_types.txt
ed1c55dc22615e129c20c89e0dd09af747591e26b9137722515ed6b16b68587e 21000 processed_10/test/4_graphs.txt
626b5078f5d7b04bf0069d3303c4c4a8d52e193b8ecfe891be8005e751dfb6f3 81000 processed_10/test/15_graphs.txt
1368ba2062a921625fabc4ef9bad51eb13b32f43430a03f4f8dceeaaadaa335c 68743 processed_10/test/16_graphs.txt
231e5291c88222fbb9f470895791c2a76042fffd87123ee79909920ee47ae9c0 64800 processed_10/test/18_graphs.txt
fae8075e92aa29dbee3b4203a8c437c4ad0129789bf5b605d069bd027c61c821 37000 processed_10/test/19_graphs.txt
27ea05cd03ab17d65f396d418931b1c5199f5ca65bd95d0e61fab8cebb779926 8 processed_10/train/4_edge_types.txt
ed1c55dc22615e129c20c89e0dd09af747591e26b9137722515ed6b16b68587e 21000 processed_10/train/4_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_10/train/4_labels.txt
67380ea4b6d383d11b11897273f6cdcbe399292ddcf90f73d19675e2a62d1446 16 processed_10/train/4_node_ids.txt
333f50840a92a61b475a924123181b5468a6bf779a15eac1fe0c29872801de12 16 processed_10/train/4_question_types.txt
9cb499d421174134046392f1f35fb14a8a2f27ac66df593c2d297d7cb48b8abd 16 processed_10/train/15_edge_types.txt
792e67ea00137c74f9540b20d8bbcde1dad32507d383afeb1be97826daacaac2 81000 processed_10/train/15_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_10/train/15_labels.txt
1634e664fde81caec2724d903cbe13e16e9f89b0806aec145edc463b4bd48838 32 processed_10/train/15_node_ids.txt
ae70a17e9e7943fb2f6b8c54c85087deb47fe5228bb2422dd8a77cf44b413f29 11 processed_10/train/15_question_types.txt
ccfd101c47026059f20df4be0b30d5c9d9c250501811002d1afc64019173a01f 17 processed_10/train/16_edge_types.txt
18ce207dbd8362a9ce1db3169a0e9a32636d739b017c1a4c1f25dd996d34e6f0 68688 processed_10/train/16_graphs.txt
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 processed_10/train/16_labels.txt
f6fec7dc1fc931779a7ab5d6c7fcaaa4dc44131506f6fc6c5564f81c44e4f0e6 56 processed_10/train/16_node_ids.txt
7785a6ebe5fb3adc2d42bd0369277f50b9ac89c4dc7e7f5abfc9269795e4619a 12 processed_10/train/16_question_types.txt
4901ae2ddd9ea500a27f3d54809dc6e88ad4f9a4dbe171fa678f70343f50dcc2 4 processed_10/train/18_edge_types.txt
ea73b4a71af58314eb8ffdde7628a371a0884ef39be48fbc3929585c6e6513cf 65194 processed_10/train/18_graphs.txt
d8d63dbbe8b35527c29bda2e3c3b9912e4c58e45628ca549e94dd049e9c79b52 15 processed_10/train/18_labels.txt
fd04c54fbbfca9f00fdd16bd69c15f0b9fc054adb23593c67e1a14a68cbd28d4 24 processed_10/train/18_node_ids.txt
d3ea646ef08a88978518c7c34d69c5eb4210c96a7910c08da72f58a2681e3271 4 processed_10/train/18_question_types.txt
8faa5edf848508aa5b765b6694e7ac1609474345cbc44eec83588721eed80c2f 16 processed_10/train/19_edge_types.txt
16df7721d50b09fb7f62c35cf8efe07ef458201483e097d547b3390d77bde743 37000 processed_10/train/19_graphs.txt
1f3c4d55d20aee4fe13e044ae6ef59a5f7951d208d6b291c75e2c6e3cb53fd02 16 processed_10/train/19_labels.txt
d42aaa3105737e8e9e7e67764ea403504c8b928562164bdcec21a628f54d762a 24 processed_10/train/19_node_ids.txt
9ee20a2addbfe15ed2a77008f1a5cb72b7682bae620916aaaaca06473a11f0b6 7 processed_10/train/19_question_types.txt
"""
PINNED["babi-folds"] = Release(
    source="github.com/chingyaoc/ggnn.pytorch babi_data/ (commit 0c7897fe), SHA-256 computed here",
    files=pins_from_lines(BABI_FOLDS),
)
