"""Step budgets (``paperzoo reproduce ... --max-steps N``): run every loop of an experiment for
at most N steps, time them, and estimate how long the whole run would take on this device.

The runner activates a ``StepBudget`` around an experiment's ``run`` (``capped``); without one,
everything here is a no-op and loops run exactly as planned. Two kinds of loop report to it:

* ``steps`` loops (the ``Trainer``'s optimisation steps, an attack's iterations): at most N
  iterations run; the estimate is ``planned x`` the measured time per step (the first step,
  which pays for warm-up, is left out of the average when more than one ran). Loops *inside*
  a step (an attack inside an adversarial-training step) are part of that step: they are neither
  capped nor recorded, so the step time that is measured is the real one.
* ``repeat`` loops (restarts, the models of a grid or a study): at most N repetitions run; the
  estimate scales what one repetition took, with its own capped loops replaced by their
  estimates, by ``planned / run``.

Whatever runs outside any loop (data loading, model construction, evaluation) counts at the
time it took; so evaluations that a budget shortened are under-counted, which the report says.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Loop", "StepBudget", "active", "capped", "items", "loop"]


@dataclass
class Loop:
    """One capped loop (or all calls of one loop with the same description under the same parent,
    e.g. an attack run batch after batch): what was planned, what ran, how long it took."""

    desc: str
    kind: str  # "steps" | "repeat"
    planned: int = 0  # iterations the full run makes (summed over calls)
    calls: int = 0
    run: int = 0  # iterations that ran (summed over calls)
    seconds: float = 0.0  # wall time of the iterations that ran (children included)
    steady_seconds: float = 0.0  # steps loops: iterations after each call's first (warm-up)
    steady_iterations: int = 0
    extra_seconds: float = 0.0  # what the full loop adds besides its iterations (evaluations)
    children: list[Loop] = field(default_factory=list)

    def add(self, run: int, seconds: float, steady_seconds: float = 0.0) -> None:
        """Account one call's iterations: ``run`` of them in ``seconds``, of which iterations
        2..run took ``steady_seconds``."""
        self.run += run
        self.seconds += seconds
        if run > 1:
            self.steady_seconds += steady_seconds
            self.steady_iterations += run - 1

    def per_iteration(self) -> float | None:
        """Estimated seconds of one full iteration (None: nothing ran, so nothing measured)."""
        if self.run == 0:
            return None
        if self.kind == "steps" and self.steady_iterations > 0:
            return self.steady_seconds / self.steady_iterations
        own = self.seconds - sum(c.seconds for c in self.children)
        est = [c.estimate() for c in self.children]
        if any(e is None for e in est):
            return None
        return (max(own, 0.0) + sum(e for e in est if e is not None)) / self.run

    def estimate(self) -> float | None:
        """Estimated seconds of the whole loop as planned."""
        if self.planned == 0:  # nothing to do (e.g. zero attack steps): nothing to measure
            return self.extra_seconds
        per = self.per_iteration()
        return None if per is None else per * self.planned + self.extra_seconds

    def to_dict(self) -> dict[str, Any]:
        per, est = self.per_iteration(), self.estimate()
        d: dict[str, Any] = {
            "desc": self.desc,
            "kind": self.kind,
            "planned": self.planned,
            "run": self.run,
            "calls": self.calls,
            "seconds": round(self.seconds, 4),
            "seconds_per_iteration": None if per is None else round(per, 6),
            "estimate_seconds": None if est is None else round(est, 3),
        }
        if self.extra_seconds:
            d["extra_seconds"] = round(self.extra_seconds, 3)
        if self.children:
            d["children"] = [c.to_dict() for c in self.children]
        return d


class StepBudget:
    """At most ``max_steps`` iterations per loop; the record of every capped loop.

    Args:
        max_steps: the cap (>= 1).
        device: where the experiment runs ("cuda..." synchronises before reading the clock).
    """

    def __init__(self, max_steps: int, device: str | torch.device = "cpu") -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.max_steps = max_steps
        self.device = torch.device(device)
        self.root = Loop("run", "repeat", planned=1, calls=1, run=1)
        self._stack: list[Loop] = [self.root]
        self._in_step = 0  # > 0 while a steps loop runs an iteration

    def cap(self, planned: int) -> int:
        return min(planned, self.max_steps)

    def _sync(self) -> None:
        if self.device.type == "cuda" and torch.cuda.is_initialized():
            torch.cuda.synchronize(self.device)

    @property
    def inside_step(self) -> bool:
        """A loop started now is part of an enclosing step (not capped, not recorded)."""
        return self._in_step > 0

    @contextmanager
    def track(self, desc: str, kind: str, planned: int) -> Iterator[Loop]:
        """Record a loop the caller caps and times itself (``Trainer``; it calls ``Loop.add``):
        loops started in the block are its children, except inside ``stepping()``, where they
        are part of a step. Calls with the same ``desc`` and ``kind`` under one parent share
        a record."""
        parent = self._stack[-1]
        node = next((c for c in parent.children if (c.desc, c.kind) == (desc, kind)), None)
        if node is None:
            node = Loop(desc, kind)
            parent.children.append(node)
        node.planned += planned
        node.calls += 1
        self._stack.append(node)
        try:
            yield node
        finally:
            self._stack.pop()

    @contextmanager
    def stepping(self) -> Iterator[None]:
        """The block runs the iterations of a steps loop: loops inside are part of a step."""
        self._in_step += 1
        try:
            yield
        finally:
            self._in_step -= 1

    def iterate(self, planned: int, desc: str, kind: str) -> Iterator[int]:
        """``range(min(planned, max_steps))``, timed and recorded."""
        with self.track(desc, kind, planned) as node:
            self._sync()
            t0 = t1 = time.perf_counter()
            run = 0
            try:
                for i in range(self.cap(planned)):
                    run = i + 1  # iteration i runs (a ``break`` in its body counts it too)
                    if kind == "steps":
                        with self.stepping():
                            yield i
                    else:
                        yield i
                    if i == 0:
                        self._sync()
                        t1 = time.perf_counter()
            finally:
                self._sync()
                now = time.perf_counter()
                node.add(run, now - t0, now - t1)

    def summary(self, wall_seconds: float) -> dict[str, Any]:
        """The partial-run record for results.json: the cap, the estimate of the whole run on this
        device (None when a loop never ran here, e.g. loaded from an earlier run), and the loops."""
        self.root.seconds = wall_seconds  # (everything outside the loops counts as it ran)
        est = self.root.estimate()
        return {
            "max_steps": self.max_steps,
            "estimate_seconds": None if est is None else round(est, 1),
            "loops": [c.to_dict() for c in self.root.children],
        }


_ACTIVE: ContextVar[StepBudget | None] = ContextVar("paperzoo_step_budget", default=None)


def active() -> StepBudget | None:
    """The budget in force (None: loops run as planned)."""
    return _ACTIVE.get()


@contextmanager
def capped(budget: StepBudget) -> Iterator[StepBudget]:
    """Put ``budget`` in force for the block."""
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def loop(planned: int, desc: str, *, kind: str = "steps") -> Iterator[int]:
    """``range(planned)``, or under a budget its first ``max_steps`` iterations, timed.

    Args:
        planned: iterations the full run makes.
        desc: what the loop is, for the report ("PGD-100 on the test set", "restarts").
        kind: ``"steps"`` (iterations of one computation; loops inside are part of a step) or
            ``"repeat"`` (whole repetitions: models, restarts; capped loops inside are estimated
            on their own and scaled).
    """
    if kind not in ("steps", "repeat"):
        raise ValueError(f"kind must be 'steps' or 'repeat', got {kind!r}")
    b = active()
    if b is None or b.inside_step:
        return iter(range(planned))
    return b.iterate(planned, desc, kind)


def items(n: int, batch_size: int) -> int:
    """How many of ``n`` evaluation items to use: all of them, or under a budget at most
    ``max_steps`` batches of ``batch_size`` ("evaluation on a few batches")."""
    b = active()
    if b is None or b.inside_step:
        return n
    return min(n, b.max_steps * max(batch_size, 1))
