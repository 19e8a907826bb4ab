"""Clean stops on SIGINT / SIGTERM: the training loop finishes its step, checkpoints, then stops.

An application (the ``paperzoo`` command) installs the handlers with ``handling()``. Outside a
training loop a signal raises ``Interrupted`` at once (everything trained so far is already
checkpointed). Inside one (``Trainer`` runs its loop under ``deferred()``), the signal is only
recorded: the loop completes the current step, writes a checkpoint and raises ``Interrupted``, so a
rerun continues from exactly that step.

A repeat of the signal within ``REPEAT_GRACE`` seconds counts as the same request (Ctrl-C reaches
a process both from the terminal and from a parent forwarding it); a later repeat stops at once,
without waiting for the checkpoint. Library code never installs handlers; without them a signal
has its default effect.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)
REPEAT_GRACE = 2.0  # seconds within which a repeated signal is the same request


class Interrupted(KeyboardInterrupt):
    """The run was stopped by ``signum``; the process should exit with ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    installed = False
    deferring = 0  # nesting depth of ``deferred()``
    pending: int | None = None  # the signal received, if any
    first_at = 0.0  # when it arrived (time.monotonic)


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    now = time.monotonic()
    if _state.pending is not None:
        if now - _state.first_at < REPEAT_GRACE:
            return  # the same request, delivered twice
        raise Interrupted(signum)  # asked again: stop now
    _state.pending, _state.first_at = signum, now
    if _state.deferring:
        log.warning(
            "%s received: stopping after this step (a checkpoint is written first; "
            "send it again to stop at once)",
            signal.Signals(signum).name,
        )
        return
    raise Interrupted(signum)


@contextmanager
def handling() -> Iterator[None]:
    """Install the SIGINT / SIGTERM handlers for the block (main thread only; else a no-op)."""
    if threading.current_thread() is not threading.main_thread() or _state.installed:
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _handler)
    _state.installed, _state.pending = True, None
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _state.installed, _state.pending = False, None


def requested() -> int | None:
    """The signal that asked the run to stop, or ``None``."""
    return _state.pending


@contextmanager
def deferred() -> Iterator[None]:
    """Within the block a signal only records a stop request (see ``requested``); a request
    still pending when the block ends raises ``Interrupted`` then."""
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
    if _state.pending is not None and not _state.deferring:
        raise Interrupted(_state.pending)
