"""Step budgets (``paperzoo reproduce ... --max-steps N``): run every loop of an experiment for
at most N steps, time them, and estimate how long the whole run would take on this device.

The runner activates a ``StepBudget`` around an experiment's ``run`` (``capped``); without one,
everything here is a no-op and loops run exactly as planned. Two kinds of loop report to it:

* ``steps`` loops (the ``Trainer``'s optimisation steps, an attack's iterations): at most N
  iterations run. Each call's first iteration (warm-up: first-use allocations, the first record
  written) counts once, as it ran; the other planned iterations count at the measured time of a
  steady iteration, which leaves out the sync points (the host reading the device's results,
  writing a record): those are timed apart and counted once per sync point of the full run, as
  are the evaluations and checkpoints the full run makes on the way (``extra_seconds``). Loops
  *inside* a step (an attack inside an adversarial-training step) are part of that step: they
  are neither capped nor recorded, so the step time that is measured is the real one.
* ``repeat`` loops (restarts, the models of a grid or a study, folds): at most N repetitions
  run. A repetition's cost is its own time plus its capped loops' estimates; the first
  repetition counts as it ran (it pays the process's first-use costs: lazy imports, kernel
  caches, a writer opened once), every other planned one at the mean cost of the later
  repetitions that ran (with one repetition run, all count at its cost).

Whatever runs outside any loop (data loading, model construction, the final evaluation) counts
at the time it took; so evaluations that a budget shortened are under-counted, which the report
says.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Loop", "StepBudget", "StepClock", "active", "capped", "items", "loop", "sync_points"]


def sync_points(steps: int, every: int) -> int:
    """Sync points of a loop of ``steps`` iterations that syncs every ``every`` iterations and
    after the last (the ``Trainer``'s log points)."""
    if steps <= 0:
        return 0
    return steps // every + (1 if steps % every else 0)


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
    # steps loops
    warmup_seconds: float = 0.0  # each call's first iteration, as it ran (its sync point too)
    warm_calls: int = 0  # calls that ran at least one iteration
    steady_seconds: float = 0.0  # the later iterations, their sync points left out
    steady_iterations: int = 0
    point_seconds: float = 0.0  # the later iterations' sync points (read, record written)
    points: int = 0
    planned_points: int = 0  # sync points of the full run (summed over calls)
    extra_seconds: float = 0.0  # what the full loop adds besides its iterations (evaluations)
    # steps loops on CUDA: the steps after each call's first run under
    # torch.cuda.set_sync_debug_mode("warn"); every synchronising call they made (where, how often)
    sync_checked: int = 0  # steps run so watched
    step_syncs: dict[str, int] = field(default_factory=dict)
    peak_gpu_bytes: int = 0  # on CUDA: the most memory allocated while one of its calls ran
    # the host's wait for its steps' batches (from the source, a loader), timed apart from the
    # steps: seconds over ``batches`` batches (the first step's included)
    batch_seconds: float = 0.0
    batches: int = 0
    # repeat loops: each repetition's cost (own time + its capped loops' estimates), in order
    costs: list[float | None] = field(default_factory=list)
    children: list[Loop] = field(default_factory=list)

    def add(
        self,
        run: int,
        seconds: float,
        *,
        warmup: float,
        steady: float = 0.0,
        points: int = 0,
        point_seconds: float = 0.0,
    ) -> None:
        """Account one call of a steps loop: ``run`` iterations in ``seconds``, the first of them
        (warm-up, with its sync point) in ``warmup``, the later ones' computation in ``steady``
        and their ``points`` sync points in ``point_seconds``."""
        self.run += run
        self.seconds += seconds
        if run > 0:
            self.warm_calls += 1
            self.warmup_seconds += warmup
        if run > 1:
            self.steady_seconds += steady
            self.steady_iterations += run - 1
            self.points += points
            self.point_seconds += point_seconds

    def per_iteration(self) -> float | None:
        """Estimated seconds of one full iteration after the first (None: nothing ran, so
        nothing measured)."""
        if self.run == 0:
            return None
        if self.kind == "steps":
            if self.steady_iterations > 0:
                return self.steady_seconds / self.steady_iterations
            return self.warmup_seconds / max(self.warm_calls, 1)
        if self.costs:
            later = self.costs[1:] or self.costs[:1]
            if any(c is None for c in later):
                return None
            return sum(c for c in later if c is not None) / len(later)
        own = self.seconds - sum(c.seconds for c in self.children)
        est = [c.estimate() for c in self.children]
        if any(e is None for e in est):
            return None
        return (max(own, 0.0) + sum(e for e in est if e is not None)) / self.run

    def point_cost(self) -> float:
        """Measured seconds of one steady sync point (0 when none was measured)."""
        return self.point_seconds / self.points if self.points else 0.0

    def estimate(self) -> float | None:
        """Estimated seconds of the whole loop as planned."""
        if self.planned == 0:  # nothing to do (e.g. zero attack steps): nothing to measure
            return self.extra_seconds
        per = self.per_iteration()
        if per is None:
            return None
        if self.kind == "steps":
            rest = max(self.planned - self.warm_calls, 0)
            points = self.point_cost() * self.planned_points
            return self.warmup_seconds + per * rest + points + self.extra_seconds
        if self.costs:
            first = self.costs[0]
            if first is None:
                return None
            return first + per * max(self.planned - 1, 0) + self.extra_seconds
        return per * self.planned + self.extra_seconds

    def repeats(self, every_steps: int, every_seconds: float) -> int:
        """How often the full loop does something (a checkpoint) before its end, every
        ``every_steps`` iterations and every ``every_seconds`` of its estimated time (0: not)."""
        n = (self.planned - 1) // every_steps if every_steps else 0
        est = self.estimate()
        if every_seconds and est is not None:
            n += int(est // every_seconds)
        return n

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
        if self.kind == "steps" and self.warm_calls:
            d["warmup_seconds"] = round(self.warmup_seconds, 4)
        if self.planned_points:
            d["sync_points"] = self.planned_points
            d["seconds_per_sync_point"] = round(self.point_cost(), 6)
        if self.kind == "repeat" and self.costs:
            first = self.costs[0]
            d["first_seconds"] = None if first is None else round(first, 4)
        if self.extra_seconds:
            d["extra_seconds"] = round(self.extra_seconds, 3)
        if self.sync_checked:
            d["steps_checked_for_syncs"] = self.sync_checked
            d["step_syncs"] = dict(self.step_syncs)
        if self.peak_gpu_bytes:
            d["peak_gpu_memory_gib"] = round(self.peak_gpu_bytes / 2**30, 3)
        if self.batches:
            d["batch_wait_seconds"] = round(self.batch_seconds / self.batches, 6)
        if self.children:
            d["children"] = [c.to_dict() for c in self.children]
        return d


def _children_state(node: Loop) -> tuple[float, float | None]:
    """(seconds, estimate) of ``node``'s capped loops together (estimate None: one is unknown)."""
    seconds = sum(c.seconds for c in node.children)
    est = [c.estimate() for c in node.children]
    if any(e is None for e in est):
        return seconds, None
    return seconds, sum(e for e in est if e is not None)


class StepClock:
    """Times a steps loop that its caller runs itself (the ``Trainer``) for ``Loop.add``.

    Per iteration the caller calls ``computed()`` at a sync point, after the step's computation
    and before the point's own work (reading the device's results, writing a record), and
    ``done()`` at the end of the iteration; work that the estimate counts in other ways
    (evaluations and checkpoints on the way) runs inside ``apart()``. The first iteration
    counts whole as the warm-up; later ones split into computation and sync point.

    On CUDA (``on_cuda``) the caller runs each step's own work (its batch and its computation,
    not its sync point) inside ``step()``: every step after the first runs under
    ``torch.cuda.set_sync_debug_mode("warn")``, and each call that makes the host wait for the
    device there is recorded in the loop (``Loop.step_syncs``: the code location of the call and
    how often), so that results.json names a sync a step should not make. The loop also records
    the most GPU memory its calls allocated (``torch.cuda.max_memory_allocated`` between the
    clock's start and ``finish``: ``Loop.peak_gpu_bytes``).

    Args:
        node: the loop's record.
        sync: waits for the device (a no-op on the CPU), so that a step's queued device work
            counts as the step's and not as the sync point's.
        on_cuda: the loop runs on the current CUDA device: watch its steps for synchronising
            calls and record its peak memory.
    """

    def __init__(self, node: Loop, sync: Callable[[], None], on_cuda: bool = False) -> None:
        self.node, self._sync, self.on_cuda = node, sync, on_cuda
        if on_cuda:
            torch.cuda.reset_peak_memory_stats()
        sync()
        self.t0 = self._start = time.perf_counter()
        self._computed: float | None = None
        self._apart = 0.0
        self.run = 0
        self.warmup = self.steady = self.point_seconds = 0.0
        self.points = 0

    @contextmanager
    def step(self) -> Iterator[None]:
        """The block is a step's own work: watched for synchronising calls after the first
        step on CUDA (see the class doc), else run as it is."""
        if not self.on_cuda or self.run == 0:
            yield
            return
        before = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                yield
            finally:
                torch.cuda.set_sync_debug_mode(before)
        self.node.sync_checked += 1
        for w in caught:
            if "synchroniz" in str(w.message):
                where = f"{w.filename}:{w.lineno}: {w.message}"
                self.node.step_syncs[where] = self.node.step_syncs.get(where, 0) + 1
            else:  # any other warning: as it would have been shown
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    def next_batch(self, batches: Iterator[Any]) -> Any:
        """``next(batches)``, its wait recorded in the loop (``Loop.batch_seconds``); it stays
        part of the step's time too."""
        start = time.perf_counter()
        batch = next(batches)
        self.node.batch_seconds += time.perf_counter() - start
        self.node.batches += 1
        return batch

    def computed(self) -> None:
        """The step's computation ended; its sync point begins."""
        self._sync()
        self._computed = time.perf_counter()

    @contextmanager
    def apart(self) -> Iterator[None]:
        """Time the block apart from the iteration (it is counted elsewhere); the device's
        queued work of the step is waited for first, so that it counts as the step's."""
        self._sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            self._sync()
            self._apart += time.perf_counter() - start

    def done(self) -> None:
        """The iteration ended."""
        now = time.perf_counter()
        if self.run == 0:
            self._sync()
            now = time.perf_counter()
            self.warmup = now - self.t0
        elif self._computed is not None:
            self.steady += self._computed - self._start
            self.point_seconds += max(now - self._computed - self._apart, 0.0)
            self.points += 1
        else:
            self.steady += max(now - self._start - self._apart, 0.0)
        self.run += 1
        self._start, self._computed, self._apart = now, None, 0.0

    def finish(self, run: int | None = None) -> None:
        """Record the call in the loop: ``run`` iterations (None: those ``done`` counted; more
        when an iteration raised before its end)."""
        self._sync()
        now = time.perf_counter()
        if self.on_cuda:
            self.node.peak_gpu_bytes = max(
                self.node.peak_gpu_bytes, torch.cuda.max_memory_allocated()
            )
        self.node.add(
            self.run if run is None else run,
            now - self.t0,
            warmup=self.warmup if self.run else now - self.t0,
            steady=self.steady,
            points=self.points,
            point_seconds=self.point_seconds,
        )


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

    def sync(self) -> None:
        """Wait for the budget's device (CUDA) before reading the clock."""
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
            self.sync()
            t0 = t1 = start = time.perf_counter()  # t1: end of the first iteration
            state = _children_state(node)
            run, open_ = 0, False  # open_: a repetition began and is not yet recorded
            try:
                for i in range(self.cap(planned)):
                    run = i + 1  # iteration i runs (a ``break`` in its body counts it too)
                    if kind == "steps":
                        with self.stepping():
                            yield i
                    else:
                        open_ = True
                        yield i
                        state, open_ = self._repeated(node, state, start), False
                        start = time.perf_counter()
                    if i == 0:
                        self.sync()
                        t1 = time.perf_counter()
            finally:
                if open_:  # the repetition left with ``break`` (or an exception)
                    self._repeated(node, state, start)
                self.sync()
                now = time.perf_counter()
                warm = (t1 if run > 1 else now) - t0
                node.add(run, now - t0, warmup=warm, steady=now - t1 if run > 1 else 0.0)

    def _repeated(
        self, node: Loop, before: tuple[float, float | None], start: float
    ) -> tuple[float, float | None]:
        """Record the cost of the repetition of ``node`` that began at ``start``: its own time
        plus what its capped loops' estimates grew by. Returns the loops' state now."""
        self.sync()
        wall = time.perf_counter() - start
        after = _children_state(node)
        cost: float | None = None
        if before[1] is not None and after[1] is not None:
            own = wall - (after[0] - before[0])
            cost = max(own, 0.0) + after[1] - before[1]
        node.costs.append(cost)
        return after

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
