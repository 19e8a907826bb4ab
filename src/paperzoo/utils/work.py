"""The work of one piece of a run and its least time on one H100 / H200-class GPU.

A paper's cost counter (``Experiment.full_cost``) builds its full run out of ``Piece``s, each a
number of repetitions of some ``Work`` (a training step, an evaluated example), counted from its
models with ``step`` and ``forward`` and, where the host does work of its own per step, timed on
the CPU with ``host_seconds``. ``paperzoo.cost`` sums the pieces into the price that
``paperzoo list --json`` shows; this module is below the experiments (they import it) and imports
none of them.

A repetition's least time is the longest of three (``Work.seconds``):

* FLOP time: ``flop / (PEAK_BF16_FLOPS * UTILISATION)``. ``PEAK_BF16_FLOPS`` = 989e12, the dense
  BF16 tensor-core peak of an H100 SXM (the H200 has the same compute); ``UTILISATION`` = 0.4,
  the fraction of that peak a tuned training loop sustains.
* Host time of the training process: ``kernels * KERNEL_SECONDS + fixed + host``. Eager
  PyTorch issues one kernel per operation from Python, each costing the host about
  ``KERNEL_SECONDS`` = 8 us (the Python call, the dispatcher, autograd, ``cudaLaunchKernel``);
  a training step also pays a fixed part (``fixed``, ``step_fixed_seconds``: the ``Trainer``'s
  own work, ``TRAINER_STEP_OPS``, and the optimiser's update, ``update_kernels`` launches for
  the ``params`` tensors ``step`` found); and the same thread runs the step's other host work
  (``host``: Python hooks on every module call, puzzles drawn on the CPU), one after the
  other.
* Loader time: ``loader``, the seconds the data loader's worker processes need to supply one
  repetition's examples (they work beside the training process, so only the longer counts).
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.utils.flops import forward_work, step_work

__all__ = [
    "BOUNDS",
    "FOREACH_TENSORS",
    "KERNEL_SECONDS",
    "OPTIMIZER_FOREACH_OPS",
    "PEAK_BF16_FLOPS",
    "TRAINER_STEP_OPS",
    "UTILISATION",
    "Inputs",
    "Piece",
    "Work",
    "forward",
    "gpu_hours",
    "host_seconds",
    "step",
    "step_fixed_seconds",
    "update_kernels",
]

log = logging.getLogger(__name__)

PEAK_BF16_FLOPS = 989e12  # H100 SXM, dense BF16 (datasheet: 1,979 TFLOPS with sparsity)
UTILISATION = 0.4  # sustained fraction of the peak (an assumption, see the module doc)
KERNEL_SECONDS = 8e-6  # the least host time one kernel launch takes in eager PyTorch
# The optimiser's update on CUDA, as PyTorch's default (foreach) Adam issues it: 7 operations
# over the list of parameter tensors (lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_; the step
# counters live on the host), each one kernel per FOREACH_TENSORS tensors (multi_tensor_apply's
# most tensors per launch with 4 lists, ATen/native/cuda/MultiTensorApply.cuh).
OPTIMIZER_FOREACH_OPS = 7
FOREACH_TENSORS = 36
# The Trainer's own host work per step (its loop, the step counter and generator, the metric
# window, the batch's trip to the device, the checks), in eager operations' worth: measured by
# tools/step_overhead.py as its time over one eager operation's on the same CPU (27 to 69 in
# seven runs on this project's shared host, 39 at the median; docs/cost.md), so it is priced at
# KERNEL_SECONDS each.
TRAINER_STEP_OPS = 40

# What decides a repetition's time (``Work.bound``): its FLOP, its kernel launches, the host
# work of the training process beside its launches, or the data loader's workers.
BOUNDS = ("FLOP", "launches", "host", "loader")


@dataclass(frozen=True)
class Work:
    """The work of one repetition (a training step, an evaluated example).

    ``work * k`` is k repetitions of it (gradient accumulation, attack iterations inside a step);
    ``work / k`` a k-th of it (one example of a batch of k: it shares the batch's kernels, module
    calls and host work).
    """

    flop: float
    kernels: float
    modules: float = 0.0  # module forward calls (each runs the module hooks a run installs)
    host: float = 0.0  # seconds of other host work in the training process (not the launches)
    loader: float = 0.0  # seconds the data loader's workers need for its examples
    # a training step's optimiser update: the parameter tensors it updates, and the host
    # seconds of the step's fixed part (``step_fixed_seconds``: the Trainer's work and the
    # update's launches), both set by ``step``; once per step however many passes it makes
    params: float = 0.0
    fixed: float = 0.0

    def __mul__(self, k: float) -> Work:
        """k passes in one repetition (attack iterations, micro-batches): the optimiser's
        update and the step's fixed part stay once."""
        return replace(
            self,
            flop=self.flop * k,
            kernels=self.kernels * k,
            modules=self.modules * k,
            host=self.host * k,
            loader=self.loader * k,
        )

    __rmul__ = __mul__

    def __truediv__(self, k: float) -> Work:
        """One example of a batch of k passes (an attacked example): no optimiser update."""
        return replace(self * (1.0 / k), params=0.0, fixed=0.0)

    def with_host(self, *, host: float = 0.0, loader: float = 0.0) -> Work:
        """This work with ``host`` seconds more host work in the training process and ``loader``
        seconds more of the data loader's."""
        return replace(self, host=self.host + host, loader=self.loader + loader)

    @property
    def flop_seconds(self) -> float:
        """Its FLOP at ``UTILISATION`` of the bf16 peak."""
        return self.flop / (PEAK_BF16_FLOPS * UTILISATION)

    @property
    def launch_seconds(self) -> float:
        """Its kernel launches at ``KERNEL_SECONDS`` each."""
        return self.kernels * KERNEL_SECONDS

    @property
    def host_seconds(self) -> float:
        """The training process's host time: its launches, its fixed part and its other host
        work in turn."""
        return self.launch_seconds + self.fixed + self.host

    @property
    def seconds(self) -> float:
        """Its least time: the longest of its FLOP time, its host time and its loader time."""
        return max(self.flop_seconds, self.host_seconds, self.loader)

    @property
    def bound(self) -> str:
        """What decides ``seconds`` (one of ``BOUNDS``): the FLOP; the host, as ``launches``
        when its launches take longer than its other host work, else as ``host``; or the
        loader."""
        top = self.seconds
        if top == 0.0 or self.flop_seconds >= top:
            return "FLOP"
        if self.host_seconds >= top:
            return "launches" if self.launch_seconds >= self.host + self.fixed else "host"
        return "loader"


@dataclass(frozen=True, init=False)
class Piece:
    """One part of a full run: ``count`` repetitions of ``work`` each (a ``Work``, as ``step``
    and ``forward`` return it; a bare number is FLOP without kernels, priced by FLOP alone)."""

    what: str
    work: Work  # per repetition (a training step, an evaluated example, ...)
    count: float  # repetitions (planned steps, examples x evaluations, ...)

    def __init__(self, what: str, work: Work | float, count: float) -> None:
        object.__setattr__(self, "what", what)
        object.__setattr__(self, "work", work if isinstance(work, Work) else Work(work, 0.0))
        object.__setattr__(self, "count", count)

    @property
    def total(self) -> float:
        """FLOP of all repetitions."""
        return self.work.flop * self.count

    @property
    def kernels(self) -> float:
        """Kernel launches of all repetitions."""
        return self.work.kernels * self.count

    @property
    def hours(self) -> float:
        """Least GPU hours of all repetitions (``Work.seconds`` each)."""
        return self.work.seconds * self.count / 3600.0

    @property
    def bound(self) -> str:
        """What decides its hours (``Work.bound``)."""
        return self.work.bound


def gpu_hours(flop: float) -> float:
    """Hours of one H100 / H200-class GPU for ``flop`` at ``UTILISATION`` of the bf16 peak (the
    FLOP time alone)."""
    return flop / (PEAK_BF16_FLOPS * UTILISATION) / 3600.0


Inputs = Sequence[int] | tuple[Tensor, ...]


def _real(inputs: Inputs, batch: int) -> tuple[Tensor, ...]:
    """``inputs`` as real CPU tensors with their batch dimension cut to ``batch``."""
    if all(isinstance(v, int) for v in inputs):
        shape = tuple(int(v) for v in inputs)  # type: ignore[arg-type]
        return (torch.rand((batch, *shape[1:])),)
    return tuple(t[:batch].to("cpu") if t.is_floating_point() else t[:batch] for t in inputs)  # type: ignore[union-attr]


def _batch_of(inputs: Inputs) -> int:
    first = inputs[0]
    return int(first.shape[0]) if isinstance(first, Tensor) else int(first)  # type: ignore[arg-type]


@contextmanager
def _module_calls() -> Iterator[list[int]]:
    """Counts every module forward call made inside the block (``calls[0]``)."""
    calls = [0]

    def tick(module: nn.Module, args: Any) -> None:
        calls[0] += 1

    handle = nn.modules.module.register_module_forward_pre_hook(tick)
    try:
        yield calls
    finally:
        handle.remove()


def _count(model: nn.Module, inputs: Inputs, *, backward: bool) -> Work:
    """FLOP, kernels and module calls of a training step (``backward``) or a forward pass of
    ``model`` on ``inputs``: on the meta device at the full batch, else (a forward that needs
    real tensors) on a batch of two on the CPU, its FLOP scaled linearly to the full batch (its
    kernels and module calls do not depend on the batch)."""
    fn = step_work if backward else forward_work
    spec = inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Tensor) else inputs
    try:
        with _module_calls() as calls:
            flop, kernels = fn(model, spec)  # type: ignore[arg-type]
        return Work(float(flop), float(kernels), float(calls[0]))
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as err:
        log.debug("meta count of %s failed (%s); counting a batch of two", type(model), err)
    small = 2
    with _module_calls() as calls:
        flop, kernels = fn(model, _real(inputs, small), meta=False)
    return Work(float(flop) * _batch_of(inputs) / small, float(kernels), float(calls[0]))


def step(model: nn.Module, inputs: Inputs) -> Work:
    """FLOP, kernels and module calls of one training step (forward and backward) of ``model``
    on the batch ``inputs``; ``params``, the parameter tensors its optimiser updates, and
    ``fixed``, the step's fixed part (``step_fixed_seconds``)."""
    params = float(sum(1 for p in model.parameters() if p.requires_grad))
    work = _count(model, inputs, backward=True)
    return replace(work, params=params, fixed=step_fixed_seconds(params))


def update_kernels(params: float) -> float:
    """Kernel launches of one optimiser update of ``params`` parameter tensors on CUDA
    (``OPTIMIZER_FOREACH_OPS`` foreach operations, one launch per ``FOREACH_TENSORS``)."""
    return OPTIMIZER_FOREACH_OPS * math.ceil(params / FOREACH_TENSORS) if params > 0 else 0.0


def step_fixed_seconds(params: float) -> float:
    """The fixed part of a training step whose optimiser updates ``params`` parameter tensors:
    the Trainer's work (``TRAINER_STEP_OPS``) and the update's launches (``update_kernels``), at
    ``KERNEL_SECONDS`` each; 0 for work that updates nothing."""
    return (TRAINER_STEP_OPS + update_kernels(params)) * KERNEL_SECONDS if params > 0 else 0.0


def forward(model: nn.Module, inputs: Inputs) -> Work:
    """FLOP, kernels and module calls of one forward pass of ``model`` on the batch
    ``inputs``."""
    return _count(model, inputs, backward=False)


def host_seconds(fn: Callable[[], object], *, repeats: int = 7) -> float:
    """The median wall seconds of ``fn()`` on this host, at one thread, after one warm-up call:
    host work a step does on the CPU (drawing its data, decoding its images), measured.

    Args:
        fn: the work of one repetition.
        repeats: timed calls (at least 1).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return statistics.median(times)
