"""paperzoo's Perceiver against perceiver-pytorch (lucidrains, PyPI) at equal parameter counts.

Both models, on two input sizes: 28 x 28 x 1 (MNIST-sized, M = 784) and
64 x 64 x 3 (M = 4096) images with 16-band Fourier features per axis (mu = the image side) ->
1 + 66 = 67 or 3 + 66 = 69 input channels; 128 x 256 latents; 2 cross-attends (1 head, 64 q/k/v
channels) each followed by 2 latent self-attention blocks (8 heads x 32 channels); no weight
sharing; MLPs of equal size (ours: GELU with widening 6; theirs: GEGLU with mult 4, the same
12 D^2 weights); latent average -> 10 classes. The latent part (the same for both input sizes)
is most of the work, and it is the same dense work in both libraries.

Reported, in one run, for each input size:
  1. the median forward + backward time over interleaved steps, and the FLOPs of a step as
     torch's FlopCounterMode counts them (attention in its explicit form for both), so the
     GFLOP/s each library reaches can be compared with the time ratio;
  2. memory: the activations autograd saves for the backward pass (any device; storages counted
     once) and, on CUDA, the allocator's peak during a step above the model's own footprint;
and once: how our cost grows with the number of inputs M (FLOPs counted, and time): linear.

    python benchmarks/perceiver.py [--steps N] [--batch B] [--threads T] [--device cpu|cuda]
        [--quick]
Needs ``pip install perceiver-pytorch`` (the ``bench`` extra).

Rows for ``paperzoo bench --json``, per input size: the median step time (with ``params``,
``gflops`` and ``gflop_per_s`` per library) and the training step's memory, ratio
perceiver-pytorch / paperzoo. The two are not the same function (GELU MLPs against GEGLU ones, of
equal size; their q/k/v projections have no bias), so their outputs are not compared; the check is
that the parameter counts agree (relative difference, tolerance 0.01: "at equal parameters").
The scaling table goes to the JSON's ``extra``.
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

# The two input sizes: (side, channels) of square images.
SIZES = ((28, 1), (64, 3))  # MNIST-sized, 64 x 64 RGB
BANDS, LATENTS, DIM, REPEATS, SELF_PER, CROSS_DIM, HEADS = 16, 128, 256, 2, 2, 64, 8


def ours(channels: int = 3, index_dims: tuple[int, ...] = (64, 64), mu: float = 64.0) -> nn.Module:
    """Our Perceiver at the matched configuration; ``mu``: the Fourier features' max resolution."""
    cfg = PerceiverConfig(
        input_channels=channels,
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
        max_resolution=(mu,) * len(index_dims),
        share_weights=False,
    )
    return Perceiver(config=cfg)


def theirs(channels: int = 3, mu: float = 64.0) -> nn.Module:
    """perceiver-pytorch's Perceiver at the matched configuration (2-D inputs)."""
    from perceiver_pytorch import Perceiver as LucidPerceiver

    return LucidPerceiver(
        input_channels=channels,
        input_axis=2,
        num_freq_bands=BANDS,
        max_freq=mu,
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


def makers(side: int, channels: int) -> dict[str, Callable[[], nn.Module]]:
    """The two contenders for ``side`` x ``side`` x ``channels`` images (Fourier mu = side)."""
    return {
        "paperzoo": lambda: ours(channels, (side, side), float(side)),
        "perceiver-pytorch": lambda: theirs(channels, float(side)),
    }


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


def _inputs(
    batch: int, device: str, side: int = 64, channels: int = 3
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, side, side, channels, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    return x.to(device), y.to(device)


def step_gflops(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """GFLOPs of one forward + backward as torch's FlopCounterMode counts them (matmuls, and
    attention in its explicit form, so both contenders' attention is counted alike)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        nn.functional.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return fc.get_total_flops() / 1e9


def throughput(
    steps: int, batch: int, device: str, side: int = 64, channels: int = 3
) -> list[dict[str, object]]:
    x, y = _inputs(batch, device, side, channels)
    models = {}
    for name, make in makers(side, channels).items():
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
        gflops = step_gflops(m, x, y)
        rows.append(
            {
                "library": k,
                "params": sum(p.numel() for p in m.parameters()),
                "ms_per_step": 1e3 * med,
                "examples_per_s": batch / med,
                "gflops": gflops,
                "gflop_per_s": gflops / med,
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


def memory(
    batch: int, device: str, side: int = 64, channels: int = 3
) -> dict[str, dict[str, float]]:
    x, y = _inputs(batch, device, side, channels)
    out: dict[str, dict[str, float]] = {}
    for name, make in makers(side, channels).items():
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
        x = torch.rand(batch, m, 3, generator=g).to(device)
        y = torch.randint(0, 10, (batch,), generator=g).to(device)
        gflops = step_gflops(model, x, y)
        step = _step_fn(model, x, y)
        step()
        t = statistics.median(step() for _ in range(3))
        rows.append({"M": m, "gflops": gflops, "ms": 1e3 * t})
    return rows


def compare(side: int, channels: int, args: argparse.Namespace) -> list[dict[str, object]]:
    """Time, memory and FLOPs of both contenders on side x side x channels images: two rows."""
    rows = throughput(args.steps, args.batch, args.device, side, channels)
    mem = memory(args.batch, args.device, side, channels)
    cuda = args.device.startswith("cuda")
    shape = f"{side}x{side}x{channels}"
    print(f"\n{shape} inputs (M={side * side}), batch {args.batch}")
    head = f"{'library':<20}{'params':>10}{'ms/step':>10}{'ex/s':>9}{'GFLOP':>8}{'GFLOP/s':>9}"
    print(head + f"{'saved act. MiB':>16}" + (f"{'CUDA peak MiB':>15}" if cuda else ""))
    for r in rows:
        m = mem[str(r["library"])]
        line = (
            f"{r['library']:<20}{r['params'] / 1e6:>9.3f}M{r['ms_per_step']:>10.1f}"
            f"{r['examples_per_s']:>9.1f}{r['gflops']:>8.1f}{r['gflop_per_s']:>9.1f}"
            f"{m['saved_mib']:>16.1f}"
        )
        print(line + (f"{m['cuda_peak_mib']:>15.1f}" if cuda else ""))
    ours_r, theirs_r = rows
    key = "cuda_peak_mib" if cuda else "saved_mib"
    print(
        f"speed ratio perceiver-pytorch / paperzoo: "
        f"{theirs_r['ms_per_step'] / ours_r['ms_per_step']:.2f} (goal >= 1.5); "
        f"FLOP ratio: {theirs_r['gflops'] / ours_r['gflops']:.2f}; memory ratio ({key}): "
        f"{mem['perceiver-pytorch'][key] / mem['paperzoo'][key]:.2f}"
    )
    names = ("paperzoo", "perceiver-pytorch")
    p_ours, p_theirs = (float(r["params"]) for r in (ours_r, theirs_r))
    agreed = agreement("parameter counts, relative difference", abs(p_ours / p_theirs - 1), 0.01)
    work = f"Perceiver train step, {shape} inputs, batch {args.batch}, {args.device}"
    return [
        row(
            work,
            {str(r["library"]): float(r["ms_per_step"]) / 1e3 for r in rows},
            ours=names[0],
            anchor=names[1],
            unit="median s per forward + backward",
            agreed=agreed,
            params={str(r["library"]): r["params"] for r in rows},
            gflops={str(r["library"]): r["gflops"] for r in rows},
            gflop_per_s={str(r["library"]): r["gflop_per_s"] for r in rows},
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
        f"device {args.device}, {torch.get_num_threads()} thread(s), {LATENTS}x{DIM} latents, "
        f"{REPEATS} cross-attends x {SELF_PER} self-attends, {BANDS} Fourier bands per axis"
    )
    out = [r for side, ch in SIZES for r in compare(side, ch, args)]

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
    return result("perceiver", args, out, extra={"scaling": srows})


if __name__ == "__main__":
    main()
