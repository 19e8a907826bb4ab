"""The price of a full run on one H100 / H200-class GPU (``paperzoo list --json``:
``full_cost``): training and evaluation counted from the models, in FLOP and in kernel launches,
and priced as a lower bound on GPU hours.

For each paper, ``full_cost(name)`` takes the full config and ``Experiment.plan`` (the models
and their planned optimisation steps), builds each planned model at the full config, and counts
one training step's forward and backward pass at the full batch on the meta device
(``paperzoo.utils.flops.step_work``; models whose forward needs real tensors are counted on a
batch of two on the CPU, their FLOP scaled to the batch): its FLOP with PyTorch's FLOP counter,
and its kernels as the ATen operations it dispatches below autograd that launch a kernel on a GPU
(``paperzoo.utils.flops.KernelCounter``: views and bare allocations excluded). Steps that run an
attack inside them (adversarial training) count one forward and backward pass per attack
iteration more. Evaluation is added the same way: forward passes (or forward and backward passes,
for attack iterations) per evaluated example, times the examples and evaluations the config asks
for, with a batch's kernels shared among its examples. What each paper's count leaves out or
approximates is in its ``assumptions``.

Each piece of work (a training step, an evaluated example) is priced at the longer of two times,
``max(flop / (PEAK_BF16_FLOPS * UTILISATION), kernels * KERNEL_SECONDS)``:

* FLOP time. ``PEAK_BF16_FLOPS`` = 989e12: the dense BF16 tensor-core peak of an H100 SXM
  (NVIDIA's H100 datasheet gives 1,979 TFLOPS "with sparsity", twice the dense rate; the H200
  has the same compute). ``UTILISATION`` = 0.4: the fraction of that peak a training loop
  sustains (large transformers and ResNet-50 reach 40-50 % in tuned code). A run at
  ``--precision fp32`` on such a GPU is slower (TF32 tensor cores: half the bf16 rate).
* Launch time. ``KERNEL_SECONDS`` = 5 us per kernel: PyTorch's eager mode issues one kernel per
  operation from Python, and each costs the host a few microseconds (the Python call, the
  dispatcher, ``cudaLaunchKernel``), while a small kernel runs for a few microseconds on the
  GPU; a step of many small operations (CIFAR ResNets, DRAW's glimpses, GG-NN's graphs) cannot
  run faster than its operations are issued, however few FLOP they hold.

The sum is a lower bound: it leaves out the optimiser's update (a few kernels per parameter
tensor, or per group with foreach), data loading, host synchronisation (``.item()``), operations
that launch more than one kernel, and the time when neither bound holds alone. The FLOP time
alone (``flop_gpu_hours``) is the earlier price, kept beside it.

Counting takes minutes (both counters dispatch every operation through Python: DRAW's 64
glimpses alone take tens of seconds), so ``paperzoo list --json`` reads the counts from
``full_costs.json`` next to this module, written by ``tools/count_costs.py``; each entry holds a
digest of the config and plan it was counted from (``config_digest``), and the test suite
checks that every digest is current and that a recount of small papers gives the stored numbers.
Nothing here has been checked against a timed GPU run yet: ``reproduce --max-steps N``
on CUDA prints the measured estimate beside this one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.utils.flops import forward_work, step_work

__all__ = [
    "COSTS_FILE",
    "KERNEL_SECONDS",
    "PEAK_BF16_FLOPS",
    "UTILISATION",
    "Piece",
    "Work",
    "cached_costs",
    "config_digest",
    "forward",
    "full_cost",
    "gpu_hours",
    "step",
]

log = logging.getLogger(__name__)

PEAK_BF16_FLOPS = 989e12  # H100 SXM, dense BF16 (datasheet: 1,979 TFLOPS with sparsity)
UTILISATION = 0.4  # sustained fraction of the peak (an assumption, see the module doc)
KERNEL_SECONDS = 5e-6  # the least time one kernel launch takes in eager PyTorch (module doc)
GPU = "one H100 / H200-class GPU"


@dataclass(frozen=True)
class Work:
    """The FLOP and the kernel launches of some work (a training step, a forward pass).
    ``work * k`` is k repetitions of it (gradient accumulation, attack iterations inside a step);
    ``work / k`` a k-th of it (one example of a batch of k: it shares the batch's kernels)."""

    flop: float
    kernels: float

    def __mul__(self, k: float) -> Work:
        return Work(self.flop * k, self.kernels * k)

    __rmul__ = __mul__

    def __truediv__(self, k: float) -> Work:
        return Work(self.flop / k, self.kernels / k)

    @property
    def seconds(self) -> float:
        """Its least time on the GPU: the longer of its FLOP time and its launch time."""
        return max(self.flop / (PEAK_BF16_FLOPS * UTILISATION), self.kernels * KERNEL_SECONDS)


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
    def launch_bound(self) -> bool:
        """Whether its price rests on its kernel launches rather than its FLOP."""
        return self.work.kernels * KERNEL_SECONDS > self.work.flop / (PEAK_BF16_FLOPS * UTILISATION)


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


def _count(model: nn.Module, inputs: Inputs, *, backward: bool) -> Work:
    """FLOP and kernels of a training step (``backward``) or a forward pass of ``model`` on
    ``inputs``: on the meta device at the full batch, else (a forward that needs real tensors) on
    a batch of two on the CPU, its FLOP scaled linearly to the full batch (its kernels do not
    depend on the batch)."""
    fn = step_work if backward else forward_work
    spec = inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Tensor) else inputs
    try:
        flop, kernels = fn(model, spec)  # type: ignore[arg-type]
        return Work(float(flop), float(kernels))
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as err:
        log.debug("meta count of %s failed (%s); counting a batch of two", type(model), err)
    small = 2
    flop, kernels = fn(model, _real(inputs, small), meta=False)
    return Work(float(flop) * _batch_of(inputs) / small, float(kernels))


def step(model: nn.Module, inputs: Inputs) -> Work:
    """FLOP and kernels of one training step (forward and backward) of ``model`` on the batch
    ``inputs``."""
    return _count(model, inputs, backward=True)


def forward(model: nn.Module, inputs: Inputs) -> Work:
    """FLOP and kernels of one forward pass of ``model`` on the batch ``inputs``."""
    return _count(model, inputs, backward=False)


COSTS_FILE = Path(__file__).with_name("full_costs.json")


def _full_plan(name: str) -> tuple[Any, list[tuple[str, int]]]:
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import get_experiment, resolve_config

    cfg = resolve_config(name, "full")
    return cfg, get_experiment(name).plan(cfg, RunContext(scale="full"))


def config_digest(name: str) -> str:
    """SHA-256 of paper ``name``'s full config and plan: what a stored count was made from."""
    from paperzoo.experiments.overrides import config_to_dict

    cfg, plan = _full_plan(name)
    text = json.dumps({"config": config_to_dict(cfg), "plan": plan}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def cached_costs(path: Path = COSTS_FILE) -> dict[str, dict[str, Any]]:
    """The stored ``full_cost`` of every paper (``tools/count_costs.py``), ``{}`` without the
    file; each entry has ``config_sha256``, the ``config_digest`` it was counted at."""
    try:
        return dict(json.loads(path.read_text())["papers"])
    except FileNotFoundError:
        return {}


def full_cost(name: str) -> dict[str, Any]:
    """Paper ``name``'s full run, counted now (slow: see the module doc; ``cached_costs`` reads
    the stored counts): ``flop``; ``gpu_hours``, the lower bound priced from FLOP and kernels;
    ``flop_gpu_hours``, the FLOP time alone; ``steps``, the plan's optimisation steps;
    ``kernels_per_step``, every piece's kernels over those steps; ``launch_bound``, the share of
    ``gpu_hours`` that rests on kernel launches; ``basis`` and ``assumptions`` in words;
    ``parts``, each piece's ``flop``, ``kernels`` and ``gpu_hours``.

    Raises:
        KeyError: the paper declares no counter (``Experiment.full_cost``).
    """
    from paperzoo.experiments.runner import get_experiment

    cfg, plan = _full_plan(name)
    counted = get_experiment(name).full_cost(cfg, plan)
    if counted is None:
        raise KeyError(f"{name} declares no full-run cost counter (Experiment.full_cost)")
    pieces, what = counted
    flop = float(sum(p.total for p in pieces))
    kernels = float(sum(p.kernels for p in pieces))
    hours = float(sum(p.hours for p in pieces))
    steps = int(sum(s for _, s in plan))
    assert flop > 0 and math.isfinite(flop) and kernels > 0 and steps > 0, name
    launch = sum(p.hours for p in pieces if p.launch_bound) / hours
    return {
        "flop": flop,
        "gpu_hours": hours,
        "flop_gpu_hours": gpu_hours(flop),
        "steps": steps,
        "kernels_per_step": kernels / steps,
        "launch_bound": launch,
        "basis": basis(kernels / steps, launch),
        "assumptions": (
            f"Training FLOP and kernels of the full config: each planned model's forward and "
            f"backward pass at its batch, FLOP counted with torch.utils.flop_counter (2 FLOP per "
            f"multiply-add of matrix products and convolutions; element-wise work not counted) "
            f"and kernels as the ATen operations it dispatches that launch one (views and bare "
            f"allocations not counted), times its planned steps, plus evaluation. {what}."
        ),
        "parts": [
            {"what": p.what, "flop": p.total, "kernels": p.kernels, "gpu_hours": p.hours}
            for p in pieces
        ],
    }


def basis(kernels_per_step: float, launch_bound: float) -> str:
    """What a ``gpu_hours`` figure rests on, in one paragraph (``full_cost``'s ``basis``)."""
    return (
        f"A lower bound on {GPU}: each training step, evaluated example or attack iteration "
        f"costs the longer of its FLOP at {UTILISATION:.0%} of {PEAK_BF16_FLOPS / 1e12:.0f} "
        f"TFLOP/s (dense bf16, H100 SXM) and its kernel launches at "
        f"{KERNEL_SECONDS * 1e6:.0f} us each ({kernels_per_step:,.0f} per training step, "
        f"evaluation included: the ATen operations a step dispatches, counted on the meta "
        f"device as a proxy for CUDA kernels); {launch_bound:.0%} of these hours rest on kernel "
        f"launches. Not counted: the optimiser's update, data loading, host synchronisation "
        f"and operations that launch several kernels."
    )
