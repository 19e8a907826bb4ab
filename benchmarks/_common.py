"""What every benchmark returns besides its printed table (``paperzoo bench --json`` collects it).

A benchmark's ``main(argv)`` returns ``result(...)``: its name, the arguments it ran with, the
threads that were in effect while it measured, and a list of ``row(...)``s. A row is one
comparison on one workload: the measured value of every contender (``measure``: "seconds" or
"MiB", always lower-is-better, of the same unit of work), which contender is paperzoo's
(``ours``) and which is the anchor it is compared with, and ``agreed``: the check that the two
computed the same thing (``agreement(...)``), or None with a ``note`` saying why there is none
(e.g. execution modes of one model). Rows carry no ratio: ``paperzoo bench`` computes it from
the values (anchor / ours, so > 1 means paperzoo is faster or smaller).

Files whose name starts with ``_`` are not run by ``paperzoo bench``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

MEASURES = ("seconds", "MiB")


def agreement(check: str, max_diff: float, tol: float) -> dict[str, Any]:
    """The check that the contenders' outputs matched: what was compared, the largest absolute
    difference, the tolerance fixed in advance, and whether the difference is within it."""
    max_diff = float(max_diff)
    return {"check": check, "max_diff": max_diff, "tol": float(tol), "ok": bool(max_diff <= tol)}


def row(
    workload: str,
    values: Mapping[str, float],
    *,
    ours: str,
    anchor: str,
    unit: str,
    measure: str = "seconds",
    agreed: dict[str, Any] | None = None,
    note: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One comparison (see the module docstring); ``extra`` holds descriptive fields."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    if ours not in values or anchor not in values:
        raise ValueError(f"values {sorted(values)} lack {ours!r} or {anchor!r}")
    if agreed is None and not note:
        raise ValueError("a row without an agreement check needs a note saying why")
    out: dict[str, Any] = {
        "workload": workload,
        "measure": measure,
        "unit": unit,
        "values": {k: float(v) for k, v in values.items()},
        "ours": ours,
        "anchor": anchor,
        "agreed": agreed,
    }
    if note:
        out["note"] = note
    out.update(extra)
    return out


def threads_in_use() -> dict[str, int]:
    """The threads each library would use now: torch's intra-op pool and, through threadpoolctl,
    every BLAS / OpenMP runtime loaded in the process."""
    out = {"torch": torch.get_num_threads()}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # threadpoolctl comes with scikit-learn; report torch alone without it
        return out
    for lib in threadpool_info():
        key = f"{lib.get('user_api')}:{lib.get('internal_api')}"
        out[key] = max(out.get(key, 0), int(lib.get("num_threads", 0)))
    return out


def result(
    name: str,
    args: argparse.Namespace | None,
    rows: Sequence[Mapping[str, Any]],
    *,
    skipped: str | None = None,
    extra: Mapping[str, Any] | None = None,
    threads: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A benchmark's structured outcome. ``threads``: as measured while it ran (default: now)."""
    return {
        "benchmark": name,
        "args": {k: v for k, v in vars(args).items()} if args is not None else {},
        "threads": dict(threads) if threads is not None else threads_in_use(),
        "skipped": skipped,
        "rows": [dict(r) for r in rows],
        **({"extra": dict(extra)} if extra else {}),
    }


def apply_threads(args: argparse.Namespace) -> None:
    """``--threads T``: torch's intra-op threads (``paperzoo bench --threads T`` passes it on)."""
    if args.threads:
        torch.set_num_threads(args.threads)


def apply_quick(args: argparse.Namespace, **tiny: Any) -> None:
    """``--quick``: replace the sizes by tiny ones, for tests of the plumbing (the numbers then
    mean nothing about speed)."""
    if getattr(args, "quick", False):
        for k, v in tiny.items():
            setattr(args, k, v)


def add_common_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    ap.add_argument(
        "--quick", action="store_true", help="tiny sizes, to test the plumbing (not for timing)"
    )


def matmul_peak(n: int = 1024, reps: int = 10) -> float:
    """GFLOP/s of a dense fp32 n x n matmul (median of ``reps``): the machine's practical peak at
    the threads in effect, against which convolutional benchmarks report their fraction."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(2):
        a @ b
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * n**3 / statistics.median(times) / 1e9


def time_interleaved(
    steppers: Mapping[str, Callable[[], object]], rounds: int, reps: int | Mapping[str, int] = 1
) -> dict[str, list[float]]:
    """Seconds per call of every contender, ``rounds`` times, interleaved: each round calls every
    contender ``reps`` times (or ``reps[name]``) in turn, so load changes on a shared machine hit
    them alike, and records its mean time per call in that round."""
    times: dict[str, list[float]] = {k: [] for k in steppers}
    for _ in range(rounds):
        for name, step in steppers.items():
            n = reps if isinstance(reps, int) else reps[name]
            t = time.perf_counter()
            for _ in range(n):
                step()
            times[name].append((time.perf_counter() - t) / n)
    return times
