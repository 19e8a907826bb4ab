"""The price of a full run on one H100 / H200-class GPU (``paperzoo list --json``:
``full_cost``): training and evaluation counted from the models, in FLOP, kernel launches and
host work, and priced as a lower bound on GPU hours.

This module sits above the experiments: it reads each paper's full config, its plan and its
cost counter (``Experiment.full_cost``, built from ``paperzoo.utils.work``); no experiment and
not the registry imports it.

For each paper, ``full_cost(name)`` takes the full config and ``Experiment.plan`` (the models
and their planned optimisation steps); the paper's counter builds each planned model at the full
config and counts one training step's forward and backward pass at the full batch on the meta
device (``paperzoo.utils.work.step``; models whose forward needs real tensors are counted on a
batch of two on the CPU, their FLOP scaled to the batch): its FLOP with PyTorch's FLOP counter,
its kernels as the ATen operations it dispatches below autograd that launch a kernel on a GPU
(views and bare allocations excluded), and its module calls. Steps that run an attack inside
them count one forward and backward pass per attack iteration more. Evaluation is added the same
way, per evaluated example. Where the host does work of its own per step, the counter times it
on this CPU at one thread (``paperzoo.utils.work.host_seconds``): the disentanglement study's
WReN steps draw their puzzles in the training process, the Perceiver study's loader workers
decode and augment JPEGs. What each paper's count leaves out or approximates is in its
``assumptions``.

Each repetition (a training step, an evaluated example) is priced at the longest of
(``paperzoo.utils.work.Work.seconds``):

* its FLOP time, at ``UTILISATION`` = 40 % of ``PEAK_BF16_FLOPS`` = 989 TFLOP/s (the dense bf16
  peak of an H100 SXM; large transformers and ResNet-50 sustain 40-50 % in tuned code);
* its host time in the training process: ``KERNEL_SECONDS`` = 8 us per kernel launch (the
  Python call, the dispatcher, autograd, ``cudaLaunchKernel``), a training step's fixed part
  (``paperzoo.utils.work.step_fixed_seconds``: the ``Trainer``'s own work and the optimiser's
  foreach update), plus its other host work one after the other: the step's own CPU work, and,
  for a paper whose CUDA precision is bf16, the precision module's Python hooks on every module
  call (``paperzoo.engine.precision.autocast_modules``), ``hook_seconds`` each, measured here;
* its loader time, the seconds the data loader's worker processes need for its examples.

``basis`` names the bound that decides each paper (the one most of its hours rest on) and
``bounds`` gives every bound's share of the hours; ``price_parts`` splits the hours into what
they are spent on (``PRICE_PARTS``: FLOP, launches, the fixed per-step part, other host work,
the loader; a repetition decided by its host time is split in proportion to its launches,
fixed part and other host work), and the parts add up to the price. The sum is a lower bound:
it leaves out host synchronisation (``.item()``, device round trips), operations that launch
more than one kernel, and the time when no bound holds alone; the host times are this
machine's, and a faster host takes less. ``before_gpu_hours`` is the price without host work
(FLOP and launches alone), ``flop_gpu_hours`` the FLOP time alone.

Counting takes minutes (both counters dispatch every operation through Python), so each paper's
count is stored beside it: ``full_cost.json`` in the folder of the module that defines its
``Experiment`` class (``cost_file``; ``src/paperzoo/papers/NAME/full_cost.json`` for the ten, the
same place in a researcher's package), written by ``store_cost`` (``tools/count_costs.py``); it
holds a digest of the config and plan it was counted from (``config_sha256``). A paper without a
current stored count is counted when it is listed (``paper_cost``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import math
from pathlib import Path
from typing import Any

import torch
from torch import nn

from paperzoo.utils.work import (
    BOUNDS,
    KERNEL_SECONDS,
    PEAK_BF16_FLOPS,
    UTILISATION,
    Piece,
    gpu_hours,
    host_seconds,
)

__all__ = [
    "COST_FILE",
    "COST_SCHEMA",
    "GPU_CHECK_STEPS",
    "PRICE_PARTS",
    "cached_costs",
    "config_digest",
    "cost_file",
    "full_cost",
    "gpu_check_limit",
    "hook_seconds",
    "paper_cost",
    "price_parts",
    "store_cost",
    "stored_cost",
]

log = logging.getLogger(__name__)

GPU = "one H100 / H200-class GPU"
# The margin on what a paper's make gpu-check run is derived to take on one GPU: for a host or
# GPU slower than the price assumes (its FLOP at 40% of peak, launches at 8 us), first steps
# slower than steady ones (lazy CUDA module loading, the caching allocator's first allocations)
# and a loader worker slower than this CPU.
GPU_CHECK_MARGIN = 1.5
# The steps per loop of a make gpu-check run (tools/gpu_check.sh's STEPS): a loop's first step
# pays for warm-up, so its estimate's steady step is the mean of the other five.
GPU_CHECK_STEPS = 6


COST_FILE = "full_cost.json"  # a paper's stored count, beside the module defining its class
COST_SCHEMA = "paperzoo.full_cost/1"
# What a price's hours are spent on (``price_parts``): they add up to ``gpu_hours``.
PRICE_PARTS = ("flop", "launches", "fixed_per_step", "host", "loader")


def price_parts(pieces: list[Piece]) -> dict[str, float]:
    """The GPU hours of ``pieces`` by what they are spent on (``PRICE_PARTS``): a repetition
    bound by its FLOP or its loader counts under that; one bound by its host time is split in
    proportion to its launches, its fixed per-step part and its other host work. The parts add
    up to the pieces' hours."""
    parts = dict.fromkeys(PRICE_PARTS, 0.0)
    for p in pieces:
        w, hours = p.work, p.hours
        if hours == 0.0:
            continue
        if w.bound == "FLOP":
            parts["flop"] += hours
        elif w.bound == "loader":
            parts["loader"] += hours
        else:
            total = w.host_seconds
            parts["launches"] += hours * w.launch_seconds / total
            parts["fixed_per_step"] += hours * w.fixed / total
            parts["host"] += hours * w.host / total
    return parts


def _full_plan(name: str) -> tuple[Any, list[tuple[str, int]]]:
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.runner import resolve_config

    cfg = resolve_config(name, "full")
    return cfg, get_experiment(name).plan(cfg, RunContext(scale="full"))


def config_digest(name: str) -> str:
    """SHA-256 of paper ``name``'s full config and plan: what a stored count was made from."""
    from paperzoo.experiments.overrides import config_to_dict

    cfg, plan = _full_plan(name)
    text = json.dumps({"config": config_to_dict(cfg), "plan": plan}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def cost_file(name: str) -> Path | None:
    """Where paper ``name``'s count is stored: ``full_cost.json`` in the folder of the module
    defining its ``Experiment`` class; None for a class with no source file."""
    from paperzoo.experiments.lookup import get_experiment

    try:
        source = inspect.getfile(type(get_experiment(name)))
    except (TypeError, OSError):
        return None
    return Path(source).with_name(COST_FILE)


def stored_cost(name: str) -> dict[str, Any] | None:
    """Paper ``name``'s stored count (``store_cost``), None without one; it has
    ``config_sha256``, the ``config_digest`` it was counted at. A file there that is not a count
    of this paper (unreadable, another schema, another paper's: a package copied under a new
    name) is not used: one warning line names it, and the paper is counted when listed."""
    path = cost_file(name)
    if path is None or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        problem = (
            None
            if doc.get("schema") == COST_SCHEMA and doc.get("paper") == name
            else f"not a {COST_SCHEMA} count of paper {name!r}"
        )
    except (ValueError, AttributeError, OSError) as err:
        problem = f"unreadable ({' '.join(str(err).split())})"
    if problem is not None:
        log.warning("%s: %s; not used (tools/count_costs.py %s stores one)", path, problem, name)
        return None
    return dict(doc["cost"])


def cached_costs() -> dict[str, dict[str, Any]]:
    """The stored count of every registered paper that has one (``stored_cost``), by name."""
    from paperzoo.experiments.lookup import EXPERIMENTS

    stored = {name: stored_cost(name) for name in EXPERIMENTS.names()}
    return {name: cost for name, cost in stored.items() if cost is not None}


def store_cost(name: str) -> dict[str, Any]:
    """Count paper ``name``'s full run (``full_cost``) and store it beside the paper
    (``cost_file``), written atomically with the digest of the config and plan it was counted
    at; returns the stored count. ``KeyError`` when the paper declares no counter."""
    from paperzoo.utils.io import atomic_write_text

    path = cost_file(name)
    if path is None:
        raise ValueError(f"paper {name!r} has no source file to store its cost beside")
    counted = full_cost(name) | {"config_sha256": config_digest(name)}
    doc = {"schema": COST_SCHEMA, "paper": name, "cost": counted}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    return counted


def hook_seconds(calls: int = 256) -> float:
    """The host seconds the precision module's bf16 hooks add to one module call
    (``autocast_modules``: a pre- and a post-hook on every module), measured on this CPU: a chain
    of ``calls`` identity modules called with and without the hooks."""
    from paperzoo.engine import precision

    chain = nn.Sequential(*(nn.Identity() for _ in range(calls)))
    x = torch.zeros(1)
    bare = host_seconds(lambda: chain(x))
    with precision.using("bf16", "cpu"), precision.autocast_modules([chain]):
        hooked = host_seconds(lambda: chain(x))
    return max(0.0, hooked - bare) / (calls + 1)  # the chain's own call is hooked too


def full_cost(name: str) -> dict[str, Any]:
    """Paper ``name``'s full run, counted now (slow: see the module doc; ``paper_cost`` reads
    the stored count when it is current).

    Returns:
        ``flop``; ``gpu_hours``, the lower bound (FLOP, launches, host work and loader, the
        longest of them per repetition); ``before_gpu_hours``, the same without host work;
        ``flop_gpu_hours``, the FLOP time alone; ``steps``, the plan's optimisation steps;
        ``kernels_per_step``, every piece's kernels over those steps; ``host_seconds_per_step``,
        the other host work (hooks, the step's CPU work) over those steps;
        ``fixed_seconds_per_step``, the training steps' fixed part (the Trainer's work and the
        optimiser's update) over those steps; ``price_parts``, the hours by what they are
        spent on (``price_parts``; they add up to ``gpu_hours``); ``kernel_seconds``, the
        price of one launch;
        ``hook_seconds``, the hooks' time per module call (0 when the paper's CUDA precision
        sets none); ``bound``, the bound most of ``gpu_hours`` rests on, and ``bounds``, each
        bound's share; ``launch_bound``, the share resting on launches; ``basis`` and
        ``assumptions`` in words; ``parts``, each piece's ``flop``, ``kernels``,
        ``host_seconds``, ``fixed_seconds``, ``loader_seconds``, ``gpu_hours`` and ``bound``.

    Raises:
        KeyError: the paper declares no counter (``Experiment.full_cost``).
    """
    from paperzoo.experiments.lookup import get_experiment

    exp = get_experiment(name)
    cfg, plan = _full_plan(name)
    counted = exp.full_cost(cfg, plan)
    if counted is None:
        raise KeyError(f"{name} declares no full-run cost counter (Experiment.full_cost)")
    pieces, what = counted
    per_call = hook_seconds() if exp.cuda_precision == "bf16" else 0.0
    if per_call:
        pieces = [
            Piece(p.what, p.work.with_host(host=p.work.modules * per_call), p.count) for p in pieces
        ]
    flop = float(sum(p.total for p in pieces))
    kernels = float(sum(p.kernels for p in pieces))
    hours = float(sum(p.hours for p in pieces))
    before = float(
        sum(max(p.work.flop_seconds, p.work.launch_seconds) * p.count for p in pieces) / 3600
    )
    host = float(sum(p.work.host * p.count for p in pieces))
    fixed = float(sum(p.work.fixed * p.count for p in pieces))
    steps = int(sum(s for _, s in plan))
    assert flop > 0 and math.isfinite(flop) and kernels > 0 and steps > 0, name
    shares = {b: sum(p.hours for p in pieces if p.bound == b) / hours for b in BOUNDS}
    bound = max(BOUNDS, key=lambda b: shares[b])
    return {
        "flop": flop,
        "gpu_hours": hours,
        "before_gpu_hours": before,
        "flop_gpu_hours": gpu_hours(flop),
        "steps": steps,
        "kernels_per_step": kernels / steps,
        "host_seconds_per_step": host / steps,
        "fixed_seconds_per_step": fixed / steps,
        "kernel_seconds": KERNEL_SECONDS,
        "price_parts": price_parts(pieces),
        "hook_seconds": per_call,
        "bound": bound,
        "bounds": shares,
        "launch_bound": shares["launches"],
        "basis": basis(bound, shares, kernels / steps, host / steps, per_call, fixed / steps),
        "assumptions": (
            f"Training FLOP and kernels of the full config: each planned model's forward and "
            f"backward pass at its batch, FLOP counted with torch.utils.flop_counter (2 FLOP per "
            f"multiply-add of matrix products and convolutions; element-wise work not counted) "
            f"and kernels as the ATen operations it dispatches that launch one (views and bare "
            f"allocations not counted), times its planned steps, plus evaluation. {what}."
        ),
        "parts": [
            {
                "what": p.what,
                "flop": p.total,
                "kernels": p.kernels,
                "host_seconds": p.work.host * p.count,
                "fixed_seconds": p.work.fixed * p.count,
                "loader_seconds": p.work.loader * p.count,
                "gpu_hours": p.hours,
                "bound": p.bound,
            }
            for p in pieces
        ],
    }


_BOUND_WORDS = {
    "FLOP": "its FLOP",
    "launches": "its kernel launches",
    "host": "its host work beside the launches (a step's fixed part included)",
    "loader": "its data loader's workers",
}


def basis(
    bound: str,
    shares: dict[str, float],
    kernels_per_step: float,
    host_per_step: float,
    per_call: float,
    fixed_per_step: float = 0.0,
) -> str:
    """What a ``gpu_hours`` figure rests on, in one paragraph (``full_cost``'s ``basis``),
    opening with the bound that decides it."""
    split = ", ".join(f"{b} {shares[b]:.0%}" for b in BOUNDS if shares[b] > 0)
    hooks = (
        f", the precision hooks' {per_call * 1e6:.1f} us per module call included"
        if per_call
        else ""
    )
    return (
        f"Bound by {_BOUND_WORDS[bound]} ({split} of the hours). A lower bound on {GPU}: each "
        f"training step, evaluated example or attack iteration costs the longest of its FLOP at "
        f"{UTILISATION:.0%} of {PEAK_BF16_FLOPS / 1e12:.0f} TFLOP/s (dense bf16, H100 SXM), its "
        f"host time (kernel launches at {KERNEL_SECONDS * 1e6:.0f} us each, "
        f"{kernels_per_step:,.0f} per training step, evaluation included; a fixed "
        f"{fixed_per_step * 1e3:.2f} ms per step for the Trainer's work and the optimiser's "
        f"update; then {host_per_step * 1e3:.2f} ms of other host work per step{hooks}, timed "
        f"on the CPU) and its data loader's time. Not counted: host synchronisation and "
        f"operations that launch several kernels."
    )


def paper_cost(name: str) -> dict[str, Any] | None:
    """Paper ``name``'s price as the catalogue shows it: its stored count when that was made at
    the current full config and plan (``stored`` true), else counted now (``stored`` false:
    ``tools/count_costs.py NAME`` stores it); None when the paper declares no counter."""
    entry = stored_cost(name)
    if entry is not None and entry.get("config_sha256") == config_digest(name):
        return entry | {"stored": True}
    try:
        return full_cost(name) | {"stored": False}
    except KeyError:
        return None


def gpu_check_limit(name: str, steps: int = GPU_CHECK_STEPS) -> dict[str, Any]:
    """Paper ``name``'s limit in ``make gpu-check`` (its full config, ``steps`` steps per loop,
    on one GPU), derived from its ``Experiment.gpu_check`` and its stored count:

    ``seconds = ceil(plumbing_s + GPU_CHECK_MARGIN * (setup_s + steps_s + loader_s))``, where

    * ``plumbing_s`` (measured) and ``setup_s`` (stated) are the paper's ``gpu_check``;
    * ``steps_s`` is ``steps`` steps of every planned loop (a capped run trains at most all of
      them) at the priced seconds of one of the full run's steps: ``gpu_hours * 3600 / steps``
      of its count, the longest of its FLOP, launch, host and loader time per step, averaged
      over the run (evaluation included, so slightly over);
    * ``loader_s`` is the loader's warm-up, once: its first batch comes from one worker that
      decodes all of it, ``Experiment.loader_workers`` times the count's loader seconds per step
      (which the workers share); the loops of a capped run share one start of the loader (the
      Perceiver's models train on the same kept batches).

    Args:
        name: a registered paper.
        steps: the check's steps per loop (tools/gpu_check.sh's STEPS).

    A paper without a stored count (``stored_cost``) gets ``steps_s = loader_s = 0`` and says so
    in ``basis``.

    Returns:
        ``seconds`` (the limit), ``plumbing_s``, ``setup_s``, ``steps_s``, ``loader_s``,
        ``margin``, ``loops`` (the planned loops) and ``basis``, the derivation in words.
    """
    from paperzoo.experiments.lookup import get_experiment

    exp = get_experiment(name)
    check = exp.gpu_check
    cfg, plan = _full_plan(name)
    loops = len(plan)
    entry = stored_cost(name)
    if entry is not None and entry["steps"] > 0:
        per_step = entry["gpu_hours"] * 3600 / entry["steps"]
        loader_per_step = sum(p["loader_seconds"] for p in entry["parts"]) / entry["steps"]
        counted = f"{per_step * 1e3:,.1f} ms a step"
    else:
        per_step = loader_per_step = 0.0
        counted = "no stored count (steps and loader not counted)"
    steps_s = steps * loops * per_step
    loader_s = exp.loader_workers(cfg) * loader_per_step
    work = check.setup_s + steps_s + loader_s
    seconds = math.ceil(check.plumbing_s + GPU_CHECK_MARGIN * work)
    return {
        "seconds": seconds,
        "plumbing_s": check.plumbing_s,
        "setup_s": check.setup_s,
        "steps_s": steps_s,
        "loader_s": loader_s,
        "margin": GPU_CHECK_MARGIN,
        "loops": loops,
        "basis": (
            f"{check.plumbing_s} s plumbing + {GPU_CHECK_MARGIN:g} x (setup {check.setup_s} s: "
            f"{check.reason}; {steps} steps of {loops} loop(s) at {counted}: {steps_s:.1f} s; "
            f"loader warm-up {loader_s:.1f} s)"
        ),
    }
