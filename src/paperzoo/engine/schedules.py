"""Learning-rate schedules: pure functions ``step -> multiplier`` of each parameter group's
initial learning rate, the form ``Trainer(lr_schedule=...)`` takes.

A schedule closes over the planned number of steps, so a run capped by ``--max-steps`` follows
the same multipliers as the full run over its first steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["cosine", "step_decay", "warmup_cosine"]


def warmup_cosine(steps: int, warmup: float) -> Callable[[int], float]:
    """Linear warm-up over ``round(warmup * steps)`` steps (at least one), then cosine decay to 0
    at ``steps``.

    Args:
        steps: the planned number of optimisation steps.
        warmup: the fraction of ``steps`` spent warming up.

    Returns:
        ``step -> multiplier``: ``(step + 1) / n_warm`` during the warm-up, then
        ``0.5 * (1 + cos(pi * t))`` with ``t`` going from 0 to 1 over the remaining steps
        (0 from ``steps`` on).
    """
    n_warm = max(1, int(round(warmup * steps)))

    def mult(step: int) -> float:
        if step < n_warm:
            return (step + 1) / n_warm
        t = (step - n_warm) / max(1, steps - n_warm)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, t)))

    return mult


def step_decay(
    steps_per_epoch: int,
    decay_epochs: tuple[int, ...],
    factor: float,
    warmup_epochs: float = 0.0,
) -> Callable[[int], float]:
    """Multiply by ``factor`` at each epoch of ``decay_epochs`` passed (e.g. the Perceiver's / 10
    at epochs 84, 102 and 114), after an optional linear warm-up over ``warmup_epochs``.

    Args:
        steps_per_epoch: optimisation steps in one epoch.
        decay_epochs: the epochs at whose start the multiplier is scaled by ``factor``.
        factor: the scale of each decay (0.1: divide by 10).
        warmup_epochs: epochs of linear warm-up from ``1 / n_warm`` to 1 (0: none).
    """
    n_warm = warmup_epochs * steps_per_epoch

    def mult(step: int) -> float:
        epoch = step / steps_per_epoch
        m = factor ** sum(epoch >= e for e in decay_epochs)
        if step < n_warm:
            m *= (step + 1) / n_warm
        return m

    return mult


def cosine(steps: int) -> Callable[[int], float]:
    """Cosine decay from 1 to 0 over ``steps``: ``step -> 0.5 * (1 + cos(pi * step / steps))``
    (no warm-up; CoordConv's schedule)."""
    return lambda step: 0.5 * (1.0 + math.cos(math.pi * step / steps))
