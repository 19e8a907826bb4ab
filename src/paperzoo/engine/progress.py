"""Training progress where there is no terminal (a log file, a batch job): log lines, not a bar.

The ``Trainer`` shows a tqdm bar on a TTY; elsewhere it logs a ``ProgressLines`` line every
``progress_seconds`` of wall time, through the logger it passes in (its own).
"""

from __future__ import annotations

import logging
import math
import time

__all__ = ["ProgressLines"]


class ProgressLines:
    """A log line every ``every_seconds`` of wall time and at the last step: phase, step /
    total, last logged loss, steps per second, elapsed and estimated time left."""

    def __init__(
        self, desc: str, steps: int, every_seconds: float, start_step: int, *, log: logging.Logger
    ) -> None:
        self.desc, self.steps, self.every_seconds = desc, steps, every_seconds
        self.start_step = start_step
        self.log = log
        self.t0 = self.last = time.monotonic()
        log.info("%s: %d steps%s", desc, steps, f" (from step {start_step})" if start_step else "")

    def tick(self, step: int, loss: float | None) -> None:
        """After ``step`` (``loss``: the last logged loss, None before the first record)."""
        now = time.monotonic()
        if now - self.last < self.every_seconds and step < self.steps:
            return
        self.last = now
        elapsed = now - self.t0
        rate = (step - self.start_step) / max(elapsed, 1e-9)
        left = (self.steps - step) / rate if rate > 0 else float("inf")
        self.log.info(
            "%s: step %d/%d, loss %s, %.2f steps/s, elapsed %s, left ~%s",
            self.desc, step, self.steps, "-" if loss is None else f"{loss:.4g}", rate,
            _hms(elapsed), _hms(left),
        )  # fmt: skip


def _hms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
