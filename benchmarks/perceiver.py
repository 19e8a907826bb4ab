"""paperzoo's Perceiver against perceiver-pytorch (lucidrains, PyPI) at a matched configuration.

Both models: 64 x 64 RGB inputs (M = 4096) with 16-band Fourier features (mu = 64) -> 69 input
channels; 128 x 256 latents; 2 cross-attends (1 head, 64 q/k/v channels) each followed by 2 latent
self-attention blocks (8 heads x 32 channels); no weight sharing; MLPs of equal size (ours: GELU
with widening 6; theirs: GEGLU with mult 4, the same 12 D^2 weights); latent average -> 10 classes.

Reported, in one run:
  1. forward + backward throughput (examples/s, median over interleaved steps), ratio ours/theirs;
  2. memory: the activations autograd saves for the backward pass (any device; storages counted
     once) and, on CUDA, the allocator's peak during a step above the model's own footprint;
  3. how our cost grows with the number of inputs M (FLOPs counted, and time): linear, O(M N).

    python benchmarks/perceiver.py [--steps N] [--batch B] [--threads T] [--device cpu|cuda]
        [--quick]
Needs ``pip install perceiver-pytorch`` (the ``bench`` extra).

Rows for ``paperzoo bench --json``: the median step time and the training step's memory, ratio
perceiver-pytorch / paperzoo. The two are not the same function (GELU MLPs against GEGLU ones, of
equal size), so their outputs are not compared; the check is that the parameter counts agree
(relative difference, tolerance 0.01: "at equal parameters"). The scaling table goes to the
JSON's ``extra``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from _common import add_common_args, agreement, apply_quick, apply_threads, result, row
from paperzoo.models.perceiver import Perceiver, PerceiverConfig

SIZE, CH, BANDS, LATENTS, DIM, REPEATS, SELF_PER, CROSS_DIM, HEADS = (
    64,
    3,
    16,
    128,
    256,
    2,
    2,
    64,
    8,
)


def ours(index_dims: tuple[int, ...] = (SIZE, SIZE)) -> nn.Module:
    cfg = PerceiverConfig(
        input_channels=CH,
        index_dims=index_dims,
        num_classes=10,
        num_latents=LATENTS,
        latent_dim=DIM,
        num_cross_attends=REPEATS,
        self_attends_per_block=SELF_PER,
        cross_heads=1,
        self_heads=HEADS,
        cross_qk_channels=CROSS_DIM,
        cross_widening=6,
        self_widening=6,
        num_bands=BANDS,
        max_resolution=(float(SIZE),) * len(index_dims),
        share_weights=False,
    )
    return Perceiver(config=cfg)


def theirs() -> nn.Module:
    from perceiver_pytorch import Perceiver as LucidPerceiver

    return LucidPerceiver(
        input_channels=CH,
        input_axis=2,
        num_freq_bands=BANDS,
        max_freq=float(SIZE),
        depth=REPEATS,
        num_latents=LATENTS,
        latent_dim=DIM,
        cross_heads=1,
        latent_heads=HEADS,
        cross_dim_head=CROSS_DIM,
        latent_dim_head=DIM // HEADS,
        num_classes=10,
        self_per_cross_attn=SELF_PER,
        weight_tie_layers=False,
    )


MAKERS: dict[str, Callable[[], nn.Module]] = {"paperzoo": ours, "perceiver-pytorch": theirs}


def _step_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], float]:
    def step() -> float:
        if x.is_cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        if x.is_cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    return step


def _inputs(batch: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, SIZE, SIZE, CH, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    return x.to(device), y.to(device)


def throughput(steps: int, batch: int, device: str) -> list[dict[str, object]]:
    x, y = _inputs(batch, device)
    models = {}
    for name, make in MAKERS.items():
        torch.manual_seed(0)
        models[name] = make().to(device)
    steppers = {k: _step_fn(m, x, y) for k, m in models.items()}
    for s in steppers.values():  # warm-up
        s()
    times: dict[str, list[float]] = {k: [] for k in steppers}
    for _ in range(steps):  # interleaved, so load changes on the machine hit both alike
        for k, s in steppers.items():
            times[k].append(s())
    rows = []
    for k, m in models.items():
        med = statistics.median(times[k])
        rows.append(
            {
                "library": k,
                "params": sum(p.numel() for p in m.parameters()),
                "ms_per_step": 1e3 * med,
                "examples_per_s": batch / med,
            }
        )
    return rows


def saved_activation_bytes(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    """Bytes of the tensors autograd keeps for the backward pass (storages counted once).

    This is the activation memory of a training step, deterministic on any device.
    """
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    return sum(n for ptr, n in seen.items() if ptr not in params)


def memory(batch: int, device: str) -> dict[str, dict[str, float]]:
    x, y = _inputs(batch, device)
    out: dict[str, dict[str, float]] = {}
    for name, make in MAKERS.items():
        torch.manual_seed(0)
        model = make().to(device)
        row = {"saved_mib": saved_activation_bytes(model, x, y) / 2**20}
        if device.startswith("cuda"):
            model.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            _step_fn(model, x, y)()
            row["cuda_peak_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
        out[name] = row
    return out


def scaling(batch: int, device: str) -> list[dict[str, float]]:
    """FLOPs and time of our forward + backward as the input length M grows (1-D inputs)."""
    rows = []
    for m in (1024, 2048, 4096, 8192):
        torch.manual_seed(0)
        model = ours(index_dims=(m,)).to(device)
        g = torch.Generator().manual_seed(0)
        x = torch.rand(batch, m, CH, generator=g).to(device)
        y = torch.randint(0, 10, (batch,), generator=g).to(device)
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
            nn.functional.cross_entropy(model(x), y).backward()
        step = _step_fn(model, x, y)
        step()
        t = statistics.median(step() for _ in range(3))
        rows.append({"M": m, "gflops": fc.get_total_flops() / 1e9, "ms": 1e3 * t})
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    add_common_args(ap)
    args = ap.parse_args(argv)
    apply_quick(args, steps=1, batch=1)
    apply_threads(args)
    try:
        import perceiver_pytorch  # noqa: F401
    except ImportError:
        msg = "perceiver-pytorch is not installed: pip install perceiver-pytorch (or .[bench])"
        print(msg)
        return result("perceiver", args, [], skipped=msg)

    print(
        f"device {args.device}, {torch.get_num_threads()} thread(s), batch {args.batch}, "
        f"{SIZE}x{SIZE}x{CH} inputs (M={SIZE * SIZE}), {LATENTS}x{DIM} latents, "
        f"{REPEATS} cross-attends x {SELF_PER} self-attends"
    )
    rows = throughput(args.steps, args.batch, args.device)
    mem = memory(args.batch, args.device)
    cuda = args.device.startswith("cuda")
    head = f"{'library':<20}{'params':>10}{'ms/step':>10}{'ex/s':>9}{'saved act. MiB':>16}"
    print(head + (f"{'CUDA peak MiB':>15}" if cuda else ""))
    for r in rows:
        m = mem[str(r["library"])]
        line = (
            f"{r['library']:<20}{r['params'] / 1e6:>9.2f}M{r['ms_per_step']:>10.1f}"
            f"{r['examples_per_s']:>9.1f}{m['saved_mib']:>16.1f}"
        )
        print(line + (f"{m['cuda_peak_mib']:>15.1f}" if cuda else ""))
    ours_r, theirs_r = rows
    key = "cuda_peak_mib" if cuda else "saved_mib"
    print(
        f"throughput ratio paperzoo / perceiver-pytorch: "
        f"{ours_r['examples_per_s'] / theirs_r['examples_per_s']:.2f}  (goal >= 1.0); "
        f"memory ratio ({key}): {mem['paperzoo'][key] / mem['perceiver-pytorch'][key]:.2f}  "
        "(lower is better)"
    )

    print("\npaperzoo cost vs input length M (forward + backward, 1-D inputs):")
    srows = scaling(max(1, args.batch // 4), args.device)
    print(f"{'M':>6}{'GFLOPs':>10}{'GFLOPs per extra 1024 inputs':>30}{'ms':>9}{'time ratio':>12}")
    first = srows[0]
    for r in srows:
        slope = (
            (r["gflops"] - first["gflops"]) / (r["M"] - first["M"]) * 1024
            if r is not first
            else 0.0
        )
        slope_s = f"{slope:.3f}" if r is not first else "-"
        print(
            f"{r['M']:>6}{r['gflops']:>10.2f}{slope_s:>30}{r['ms']:>9.1f}{r['ms'] / first['ms']:>12.2f}"
        )
    print(
        "FLOPs = constant (latent Transformer) + a constant amount per input: linear in M "
        "(a Transformer on the inputs would grow as M^2)"
    )
    names = ("paperzoo", "perceiver-pytorch")
    p_ours, p_theirs = (float(r["params"]) for r in (ours_r, theirs_r))
    agreed = agreement("parameter counts, relative difference", abs(p_ours / p_theirs - 1), 0.01)
    work = f"Perceiver train step, {SIZE}x{SIZE}x{CH} inputs, batch {args.batch}, {args.device}"
    out = [
        row(
            work,
            {str(r["library"]): float(r["ms_per_step"]) / 1e3 for r in rows},
            ours=names[0],
            anchor=names[1],
            unit="median s per forward + backward",
            agreed=agreed,
            params={str(r["library"]): r["params"] for r in rows},
        ),
        row(
            f"{work}, memory ({key})",
            {n: mem[n][key] for n in names},
            ours=names[0],
            anchor=names[1],
            measure="MiB",
            unit="MiB saved for the backward pass"
            if key == "saved_mib"
            else "MiB CUDA peak above the model",
            agreed=agreed,
        ),
    ]
    return result("perceiver", args, out, extra={"scaling": srows})


if __name__ == "__main__":
    main()
