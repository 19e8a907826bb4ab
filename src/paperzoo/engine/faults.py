"""Fault injection for tests of the failure paths: ``PAPERZOO_INJECT_NAN=RANK:STEP``.

With the variable set, the ``Trainer`` makes the training loss NaN on the process of global rank
RANK (0 in a process that is not part of a ``torchrun`` group) at step STEP (counted from 0, the
step a ``NonFiniteLossError`` names) of every model that process trains. A run under ``torchrun``
then shows how a divergence on one rank ends every rank and how it is recorded. The value is
parsed once per distinct setting; a malformed one is a ``ValueError`` naming the variable.
"""

from __future__ import annotations

import functools
import os

INJECT_NAN_ENV = "PAPERZOO_INJECT_NAN"

__all__ = ["INJECT_NAN_ENV", "inject_nan_at"]


@functools.lru_cache(maxsize=4)
def _parse(raw: str) -> tuple[int, int]:
    rank, sep, step = raw.strip().partition(":")
    try:
        if not sep:
            raise ValueError
        out = int(rank), int(step)
    except ValueError:
        out = (-1, -1)
    if min(out) < 0:
        raise ValueError(
            f"{INJECT_NAN_ENV} must be RANK:STEP with two integers >= 0 (e.g. 1:5), got {raw!r}"
        )
    return out


def inject_nan_at() -> tuple[int, int] | None:
    """``(rank, step)`` from ``PAPERZOO_INJECT_NAN``, or None when it is unset or empty.

    Raises:
        ValueError: the value is not ``RANK:STEP`` with two non-negative integers.
    """
    raw = os.environ.get(INJECT_NAN_ENV)
    if raw is None or not raw.strip():
        return None
    return _parse(raw)
