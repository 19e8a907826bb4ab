"""Grids of models that one run trains: which items a ``--shard K/N`` and a rank take, and the
records a finished item leaves in ``--out`` so that a rerun loads it instead of training it again.

A paper whose grid is sliced by ``--shard`` overrides ``Experiment.merge`` (``paperzoo merge`` of
all N shards gives the whole run back) and declares the records' paths in
``Experiment.resume_state``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from paperzoo.engine.distributed import DistInfo
from paperzoo.utils.io import atomic_write_text

__all__ = ["rank_slice", "read_record", "shard_slice", "write_record"]

T = TypeVar("T")


def shard_slice(items: Sequence[T], shard: tuple[int, int] | None) -> list[T]:
    """The items of shard ``K`` of ``N`` (every N-th from the K-th); all of them without one."""
    if shard is None:
        return list(items)
    k, n = shard
    return list(items[k::n])


def rank_slice(items: Sequence[T], dist: DistInfo) -> list[T]:
    """The items this process trains when every rank trains its own (every world_size-th from
    this rank's index)."""
    return list(items[dist.rank :: dist.world_size])


def read_record(path: Path) -> dict[str, Any]:
    """A finished item's record (a JSON object); a corrupt one is a ``ValueError`` naming the
    file and the way out."""
    try:
        record = json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path} is not a valid cached record ({exc}); delete it to redo that model"
        ) from None
    if not isinstance(record, dict):
        raise ValueError(f"{path} is not a valid cached record (not a JSON object)")
    return record


def write_record(path: Path, record: dict[str, Any], *, indent: int | None = None) -> None:
    """Write a finished item's record atomically (a crash leaves the old file or none)."""
    text = json.dumps(record, indent=indent)
    atomic_write_text(Path(path), text + ("\n" if indent is not None else ""))
