"""Measure, on this CPU at one thread, the host work a training step pays besides its model's
kernels: the figures behind the fixed per-step part of the prices (docs/cost.md).

    OMP_NUM_THREADS=1 .venv/bin/python tools/step_overhead.py [--steps N] [--json]

Prints, each the least of seven timed runs after a warm-up (the least: the figure least
inflated by other processes on a shared host):

* ``op_us``: one eager operation of a training step issued from Python (the call, the
  dispatcher, autograd's recording in the forward pass and its node in the backward pass), per
  counted kernel, on a one-element tensor (so the CPU kernel itself is negligible): a chain of
  multiplications, forward and backward, over the kernels the kernel counter counts for it;
* ``trainer_us``: the ``Trainer``'s own work per step (its loop, the step counter, the metric
  window, the batch's trip through ``batch_to_device``, the learning-rate schedule, the
  checks), the time of a ``Trainer`` step of a one-weight model less a bare loop's step of the
  same model and optimiser;
* ``trainer_ops``: ``trainer_us / op_us``, the Trainer's work in eager operations' worth (the
  ratio of two figures measured one after the other, so it still moves with the host's load:
  run it several times); ``paperzoo.utils.work.TRAINER_STEP_OPS`` states it;
* ``optimizer_us_per_tensor``: ``torch.optim.Adam``'s step per parameter tensor, per tensor
  (``foreach=False``: a loop over the tensors, about 12 operations each) and for the whole
  list at once (``foreach=True``), over 256 one-element tensors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import torch
from torch import nn

CHAIN = 64  # multiplications in the op_us chain
TENSORS = 256  # parameter tensors in the optimizer measurement


def _least_seconds(fn: Callable[[], object], repeats: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def op_seconds(iters: int = 200) -> float:
    """Host seconds per counted kernel of an eager forward and backward pass."""
    from paperzoo.utils.flops import KernelCounter

    w = torch.ones(1, requires_grad=True)

    def chain() -> None:
        x = w
        for _ in range(CHAIN):
            x = x * 1.0001
        x.sum().backward()

    with KernelCounter() as counter:
        chain()
    kernels = counter.total
    w.grad = None
    seconds = _least_seconds(lambda: [chain() for _ in range(iters)]) / iters
    return seconds / kernels


def trainer_seconds(steps: int) -> float:
    """The ``Trainer``'s own host seconds per step (its step less a bare loop's)."""
    from paperzoo.engine import TrainConfig, Trainer

    x, y = torch.ones(1, 1), torch.ones(1, 1)

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return nn.functional.mse_loss(m(batch[0]), batch[1])

    def bare() -> None:
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss_fn(model, (x, y)).backward()
            opt.step()

    def trainer() -> None:
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        cfg = TrainConfig(steps=steps, batch_size=1, log_every=steps, progress=False)
        Trainer(model, opt, loss_fn, config=cfg).fit(lambda step, g: (x, y))

    return max(0.0, (_least_seconds(trainer) - _least_seconds(bare)) / steps)


def optimizer_seconds(foreach: bool) -> float:
    """Adam's host seconds per parameter tensor per step."""
    params = [nn.Parameter(torch.ones(1)) for _ in range(TENSORS)]
    for p in params:
        p.grad = torch.ones(1)
    opt = torch.optim.Adam(params, lr=1e-3, foreach=foreach)
    return _least_seconds(lambda: [opt.step() for _ in range(20)]) / 20 / TENSORS


def measure(steps: int = 2000) -> dict[str, float]:
    """Every figure of the module doc, in microseconds."""
    torch.set_num_threads(1)
    op, trainer = op_seconds(), trainer_seconds(steps)
    return {
        "op_us": op * 1e6,
        "trainer_us": trainer * 1e6,
        "trainer_ops": trainer / op,
        "optimizer_us_per_tensor": optimizer_seconds(foreach=False) * 1e6,
        "optimizer_foreach_us_per_tensor": optimizer_seconds(foreach=True) * 1e6,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="Trainer steps timed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.steps)
    if args.json:
        sys.stdout.write(json.dumps(figures) + "\n")
    else:
        for k, v in figures.items():
            sys.stdout.write(f"{k}: {v:.2f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
