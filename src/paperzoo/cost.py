"""The price of a full run: training FLOP counted from the models, and GPU hours at a stated
utilisation of one H100 / H200-class GPU in bf16 (``paperzoo list --json``: ``full_cost``).

For each paper, ``full_cost(name)`` takes the full config and ``Experiment.plan`` (the models
and their planned optimisation steps), builds each planned model at the full config, and counts
one training step's forward and backward pass at the full batch with PyTorch's FLOP counter on
the meta device (``paperzoo.utils.flops.step_flop``; models whose forward needs real tensors
are counted on a batch of two on the CPU and scaled to the batch). Steps that run an attack
inside them (adversarial training) count one forward and backward pass per attack iteration
more. Evaluation is added the same way: forward passes (or forward and backward passes, for
attack iterations) per evaluated example, times the examples and evaluations the config asks
for. What each paper's count leaves out or approximates is in its ``assumptions``.

GPU hours are ``flop / (PEAK_BF16_FLOPS * UTILISATION) / 3600``:

* ``PEAK_BF16_FLOPS`` = 989e12: the dense BF16 tensor-core peak of an H100 SXM (NVIDIA's H100
  datasheet gives 1,979 TFLOPS "with sparsity", twice the dense rate; the H200 has the same
  compute). A run at ``--precision fp32`` on such a GPU is slower (TF32 tensor cores: half the
  bf16 rate; plain fp32: about 67 TFLOPS).
* ``UTILISATION`` = 0.4: the fraction of that peak a training loop sustains, an assumption (large
  transformers and ResNet-50 reach 40-50 % in tuned code; small nets, GG-NN's graphs of tens of
  nodes or batches of 16, reach far less, so their hours are a lower bound).

Counting takes minutes (PyTorch's FLOP counter dispatches every operation through Python: DRAW's
64 glimpses alone take about a minute), so ``paperzoo list --json`` reads the counts from
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

from paperzoo.utils.flops import forward_flop, step_flop

__all__ = [
    "COSTS_FILE",
    "PEAK_BF16_FLOPS",
    "UTILISATION",
    "Piece",
    "cached_costs",
    "config_digest",
    "full_cost",
    "gpu_hours",
]

log = logging.getLogger(__name__)

PEAK_BF16_FLOPS = 989e12  # H100 SXM, dense BF16 (datasheet: 1,979 TFLOPS with sparsity)
UTILISATION = 0.4  # sustained fraction of the peak (an assumption, see the module doc)
GPU = "one H100 / H200-class GPU"


@dataclass(frozen=True)
class Piece:
    """One part of a full run: ``count`` repetitions of something costing ``flop`` each."""

    what: str
    flop: float  # per repetition (a training step, an evaluated example, ...)
    count: float  # repetitions (planned steps, examples x evaluations, ...)

    @property
    def total(self) -> float:
        return self.flop * self.count


def gpu_hours(flop: float) -> float:
    """Hours of one H100 / H200-class GPU for ``flop`` at ``UTILISATION`` of the bf16 peak."""
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


def _count(model: nn.Module, inputs: Inputs, *, backward: bool) -> float:
    """FLOP of a training step (``backward``) or a forward pass of ``model`` on ``inputs``: on
    the meta device at the full batch, else (a forward that needs real tensors) on a batch of
    two on the CPU, scaled linearly to the full batch."""
    fn = step_flop if backward else forward_flop
    spec = inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Tensor) else inputs
    try:
        return float(fn(model, spec))  # type: ignore[arg-type]
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as err:
        log.debug("meta count of %s failed (%s); counting a batch of two", type(model), err)
    small = 2
    real = _real(inputs, small)
    return float(fn(model, real, meta=False)) * _batch_of(inputs) / small


def step(model: nn.Module, inputs: Inputs) -> float:
    """FLOP of one training step (forward and backward) of ``model`` on the batch ``inputs``."""
    return _count(model, inputs, backward=True)


def forward(model: nn.Module, inputs: Inputs) -> float:
    """FLOP of one forward pass of ``model`` on the batch ``inputs``."""
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
    """``{"flop", "gpu_hours", "assumptions", "parts"}`` of paper ``name``'s full run, counted
    now (slow: see the module doc; ``cached_costs`` reads the stored counts).

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
    assert flop > 0 and math.isfinite(flop), name
    return {
        "flop": flop,
        "gpu_hours": gpu_hours(flop),
        "assumptions": (
            f"Training FLOP of the full config: each planned model's forward and backward pass "
            f"at its batch counted with torch.utils.flop_counter (2 FLOP per multiply-add of "
            f"matrix products and convolutions; element-wise work not counted) times its "
            f"planned steps, plus evaluation. {what}. GPU hours: {GPU} at "
            f"{UTILISATION:.0%} of {PEAK_BF16_FLOPS / 1e12:.0f} TFLOP/s (dense bf16, H100 SXM)."
        ),
        "parts": [{"what": p.what, "flop": p.total} for p in pieces],
    }
