"""Training throughput of the CIFAR ResNets: contiguous vs channels-last vs torch.compile.

A training step is forward + backward + SGD(momentum) step at batch 128 on 3 x 32 x 32 inputs,
for resnet20 and resnet56. Achieved GFLOP/s = images/s x 6 x multiply-adds per image (2 FLOPs
per multiply-add; backward ~ 2 x forward), compared with a dense fp32 matmul measured in the same
run (the machine's practical peak). The modes are timed interleaved, so load changes on a shared
machine hit them alike. (torchvision, the usual alternative, does not provide the CIFAR 6n+2
nets; the comparison is between execution modes of the same model.)

    python benchmarks/resnet.py [--steps N] [--threads T] [--batch B] [--no-compile] [--quick]

Rows for ``paperzoo bench --json``: for every model and mode, the median step time against the
time the step's FLOPs would take at the matmul peak, so the ratio (peak time / step time) is the
fraction of peak reached; and channels-last / compiled against contiguous. These are execution
modes of one model, so there is no agreement check (``agreed`` is None).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from _common import apply_quick, matmul_peak, result, row
from paperzoo.models import create_model
from paperzoo.utils import count_macs


def make_step(name: str, mode: str, batch: int) -> tuple[Callable[[], None], float]:
    """A training-step closure for ``name`` in ``mode``, and the compile/warm-up seconds."""
    model = create_model(name)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    if mode in ("channels_last", "compiled"):
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    fwd: nn.Module = torch.compile(model) if mode == "compiled" else model  # type: ignore[assignment]
    model.train()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(fwd(x), y).backward()
        opt.step()

    t = time.perf_counter()
    for _ in range(2):  # warm-up (and compilation)
        step()
    return step, time.perf_counter() - t


def bench(name: str, modes: list[str], steps: int, batch: int) -> list[dict[str, float | str]]:
    macs = count_macs(create_model(name), (1, 3, 32, 32))
    steppers, warm = {}, {}
    for mode in modes:
        try:
            steppers[mode], warm[mode] = make_step(name, mode, batch)
        except Exception as err:  # noqa: BLE001 - e.g. no C++ compiler for inductor
            print(f"  {name} {mode}: unavailable ({type(err).__name__}: {err})"[:200])
    times: dict[str, list[float]] = {m: [] for m in steppers}
    for _ in range(steps):
        for mode, step in steppers.items():
            t = time.perf_counter()
            step()
            times[mode].append(time.perf_counter() - t)
    rows = []
    for mode, ts in times.items():
        ips = batch / statistics.median(ts)
        rows.append(
            {
                "model": name,
                "mode": mode,
                "img_s": ips,
                "step_s": statistics.median(ts),
                "gflops": ips * 6 * macs / 1e9,
                "warmup_s": warm[mode],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5, help="timed steps per mode")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, help="torch intra-op threads")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile mode")
    p.add_argument("--models", default="resnet20,resnet56")
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, to test the plumbing (not for timing)"
    )
    args = p.parse_args(argv)
    apply_quick(args, steps=1, batch=2, no_compile=True, models="resnet20")
    if args.threads:
        torch.set_num_threads(args.threads)
    modes = ["contiguous", "channels_last"] + ([] if args.no_compile else ["compiled"])
    peak = matmul_peak()
    print(f"threads={torch.get_num_threads()}  fp32 matmul peak: {peak:.1f} GFLOP/s")
    rows = []
    for name in args.models.split(","):
        rows += bench(name, modes, args.steps, args.batch)
    print(
        f"{'model':<10} {'mode':<14} {'img/s':>8} {'vs contig':>9} {'GFLOP/s':>8} "
        f"{'% peak':>7} {'warm-up s':>9}"
    )
    for r in rows:
        base = next(b for b in rows if b["model"] == r["model"] and b["mode"] == "contiguous")
        print(
            f"{r['model']:<10} {r['mode']:<14} {r['img_s']:>8.1f} "
            f"{r['img_s'] / base['img_s']:>8.2f}x {r['gflops']:>8.1f} "
            f"{100 * r['gflops'] / peak:>6.1f}% {r['warmup_s']:>9.1f}"
        )
    note = "execution modes of one model: no second implementation to compare"
    out = []
    for r in rows:
        work = f"{r['model']} training step, batch {args.batch}"
        step_s, flops = float(r["step_s"]), float(r["gflops"]) * float(r["step_s"])
        out.append(
            row(
                work,
                {str(r["mode"]): step_s, "fp32 matmul peak": flops / peak},
                ours=str(r["mode"]),
                anchor="fp32 matmul peak",
                unit="s per step; the peak's: the step's FLOPs at the matmul's GFLOP/s",
                note=note,
                gflops=r["gflops"],
                warmup_s=r["warmup_s"],
            )
        )
        if r["mode"] != "contiguous":
            base = next(b for b in rows if b["model"] == r["model"] and b["mode"] == "contiguous")
            out.append(
                row(
                    work,
                    {str(r["mode"]): step_s, "contiguous": float(base["step_s"])},
                    ours=str(r["mode"]),
                    anchor="contiguous",
                    unit="median s per step",
                    note=note,
                )
            )
    return result("resnet", args, out, extra={"matmul_peak_gflops": peak})


if __name__ == "__main__":
    main()
