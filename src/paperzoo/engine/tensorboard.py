"""TensorBoard event files of the training loops, written only when asked for.

A ``Trainer`` writes its logged records to TensorBoard when built with ``tensorboard=True``, or,
left at None, while ``requested`` is in force: the runner turns it on around an experiment's
``run`` for ``paperzoo reproduce --tensorboard``. Otherwise nothing is opened: a process that
builds thousands of Trainers (a grid of models) holds no writer threads or files for them.

Each Trainer's ``ScalarWriter`` opens its ``SummaryWriter`` (a thread and an open event file) at
the first record and closes it when the Trainer's ``fit`` ends, normally or not, and on
``Trainer.close``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

_REQUESTED: ContextVar[bool] = ContextVar("paperzoo_tensorboard", default=False)


@contextmanager
def requested(on: bool = True) -> Iterator[None]:
    """Within the block, Trainers built without ``tensorboard=`` write TensorBoard files iff
    ``on``."""
    token = _REQUESTED.set(on)
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def is_requested() -> bool:
    """Whether TensorBoard files were asked for (``requested``); False outside it."""
    return _REQUESTED.get()


def require() -> None:
    """Raise ``ValueError`` (one line) when TensorBoard's writer cannot be imported."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError as err:
        raise ValueError(
            f"--tensorboard needs the tensorboard package ({err}): pip install tensorboard"
        ) from None


class ScalarWriter:
    """The records of one training loop as TensorBoard scalars under ``log_dir``.

    Args:
        log_dir: the directory of the event files.
    """

    def __init__(self, log_dir: str | Path) -> None:
        self.log_dir = Path(log_dir)
        self._writer: Any = None

    @property
    def is_open(self) -> bool:
        return self._writer is not None

    def add(self, record: Mapping[str, float]) -> None:
        """Write ``record``'s values at its ``step`` (the writer is opened at the first one)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.log_dir))
        step = int(record["step"])
        for k, v in record.items():
            if k != "step":
                self._writer.add_scalar(k, v, step)

    def close(self) -> None:
        """Flush and close the writer (its thread and file); a later ``add`` opens a new one."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
