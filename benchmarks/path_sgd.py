"""Step time of paperzoo's PathSGD against torch.optim.SGD, in one run.

A training step is forward + backward + optimizer step at batch 100 on
(a) the paper's network, a 2 x 4000 ReLU MLP on CIFAR-10-sized inputs (3072 -> 4000 -> 4000 -> 10),
(b) a small CNN (paperzoo's SmallCNN on 1 x 28 x 28 inputs).
Path-SGD's extra work (one all-ones example through the |w|^2 network and back, then the
divided update) does not depend on the batch size; the goal is a ratio <= 1.1.

    python benchmarks/path_sgd.py [--steps N] [--batch B] [--threads T] [--quick]

Rows for ``paperzoo bench --json``: the step time of each model under both optimizers, ratio
SGD / PathSGD (the goal, PathSGD <= 1.1 x SGD, is a ratio >= 0.91). The two optimizers compute
different updates by design, so there is no output to compare (``agreed`` is None).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from _common import add_common_args, apply_quick, apply_threads, result, row
from paperzoo.models.small import MLP, SmallCNN
from paperzoo.optim import PathSGD


def _timer(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor):
    def step() -> tuple[float, float]:
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        t1 = time.perf_counter()
        opt.step()
        t2 = time.perf_counter()
        return t2 - t0, t2 - t1

    return step


def bench(
    name: str, make: Callable[[], nn.Module], xshape: tuple[int, ...], steps: int, batch: int
) -> dict[str, float | str]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, *xshape, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    torch.manual_seed(0)
    m_sgd, m_path = make(), make()
    steppers = {
        "sgd": _timer(m_sgd, torch.optim.SGD(m_sgd.parameters(), lr=1e-3), x, y),
        "path": _timer(m_path, PathSGD(m_path, lr=1e-3, input_shape=xshape), x, y),
    }
    for s in steppers.values():  # warm-up (allocations, the one-off chain check)
        s()
        s()
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in steppers}
    for _ in range(steps):  # interleaved, so load changes on the machine hit both alike
        for k, s in steppers.items():
            times[k].append(s())
    med = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
    opt_med = {k: statistics.median(t[1] for t in v) for k, v in times.items()}
    params = sum(p.numel() for p in m_sgd.parameters())
    return {
        "model": name,
        "params": f"{params / 1e6:.1f}M",
        "sgd_ms": 1e3 * med["sgd"],
        "path_ms": 1e3 * med["path"],
        "ratio": med["path"] / med["sgd"],
        "sgd_opt_ms": 1e3 * opt_med["sgd"],
        "path_opt_ms": 1e3 * opt_med["path"],
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--batch", type=int, default=100)
    add_common_args(ap)
    args = ap.parse_args(argv)
    apply_quick(args, steps=1, batch=2)
    apply_threads(args)
    rows = [
        bench(
            "MLP 3072-4000-4000-10",
            lambda: MLP(in_features=3072, hidden=(4000, 4000), num_classes=10),
            (3072,),
            args.steps,
            args.batch,
        ),
        bench(
            "SmallCNN 1x28x28",
            lambda: SmallCNN(in_chans=1, num_classes=10, image_size=28),
            (1, 28, 28),
            args.steps * 4,
            args.batch,
        ),
    ]
    print(
        f"PathSGD vs torch.optim.SGD, batch {args.batch}, {torch.get_num_threads()} thread(s), "
        "median step time (forward + backward + optimizer step)"
    )
    head = f"{'model':<24}{'params':>8}{'SGD ms':>10}{'PathSGD ms':>12}{'ratio':>8}"
    print(head + f"{'SGD opt.step ms':>17}{'PathSGD opt.step ms':>21}")
    for r in rows:
        print(
            f"{r['model']:<24}{r['params']:>8}{r['sgd_ms']:>10.1f}{r['path_ms']:>12.1f}"
            f"{r['ratio']:>8.2f}{r['sgd_opt_ms']:>17.1f}{r['path_opt_ms']:>21.1f}"
        )
    note = "different optimizers by design (PathSGD's overhead is measured): no output to compare"
    return result(
        "path_sgd",
        args,
        [
            row(
                f"{r['model']} training step, batch {args.batch}",
                {"PathSGD": r["path_ms"] / 1e3, "torch.optim.SGD": r["sgd_ms"] / 1e3},
                ours="PathSGD",
                anchor="torch.optim.SGD",
                unit="median s per forward + backward + optimizer step",
                note=note,
                params=r["params"],
                optimizer_step_s={
                    "PathSGD": r["path_opt_ms"] / 1e3,
                    "torch.optim.SGD": r["sgd_opt_ms"] / 1e3,
                },
            )
            for r in rows
        ],
    )


if __name__ == "__main__":
    main()
