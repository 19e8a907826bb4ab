"""Where each real data set's files lie under ``--data-root``, checked before a full run starts.

A ``--scale full`` run reads the paper's own data set. Before anything is trained or written to
``--out``, the runner asks ``require(name, data_root, download)``: when the files are absent (and
cannot be fetched with ``--download``) it raises ``DataRequired`` with one line naming the data
set and the layout it expects. Each data module registers the layout of its files next to its
loader (``register_layout``), so the message and the loader cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from paperzoo.data.base import DataError


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


LAYOUTS: dict[str, Layout] = {}


def register_layout(
    name: str,
    *,
    what: str,
    layout: str,
    downloadable: bool,
    present: Callable[[Path], bool],
) -> Layout:
    """Declare where data set ``name``'s files lie; a second declaration of a name raises."""
    if name in LAYOUTS:
        raise ValueError(f"data layout {name!r} is already registered")
    LAYOUTS[name] = Layout(name, what, layout, downloadable, present)
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


def require(name: str, data_root: Path | str | None, download: bool = False) -> None:
    """Return when data set ``name`` can be read from ``data_root`` (or fetched with
    ``download``); else raise ``DataRequired`` with one line naming the data set and layout.

    Args:
        name: a registered layout name (``LAYOUTS``).
        data_root: the ``--data-root`` directory, or None.
        download: ``--download`` was given (only where the layout is downloadable).
    """
    lay = layout(name)
    root = Path(data_root).expanduser() if data_root is not None else None
    if root is not None and root.is_dir() and lay.present(root):
        return
    if download and lay.downloadable and root is not None:
        return
    raise DataRequired(message(name, root))


def all_files(*paths: str) -> Callable[[Path], bool]:
    """A ``present`` test: every path (relative to the data root) exists; ``a|b`` accepts either."""

    def present(root: Path) -> bool:
        return all(any((root / p).exists() for p in alt.split("|")) for alt in paths)

    return present
