"""Gated graph propagation: paperzoo against PyG's GatedGraphConv and a dense-adjacency GG-NN.

Forward + backward of T = 5 propagation steps (state 32, or the bAbI task-15 setting), in graphs
per second, on
(a) bAbI-sized graphs: minibatches of task-15 graphs (8 nodes, 8 edges, 2 edge types),
(b) single random graphs with 1k, 10k and 100k nodes, 4 edges per node, 4 edge types.

Contenders, timed interleaved in one run:
* ``ours``: ``paperzoo.nn.graph.GatedGraphPropagation`` with the task's edge types, both
  directions (the paper's model);
* ``ours-1``: the same with one edge type (types ignored), for the comparison with PyG;
* ``pyg``: ``torch_geometric.nn.GatedGraphConv`` (one edge type, messages along edges only);
* ``pyg-bi``: the same on the edge list plus its reverse, so that information flows both ways
  as in a GG-NN;
* ``dense``: a naive GG-NN holding one dense N x N adjacency matrix per edge type (both
  directions), only where it fits in memory.

Ratios are contender time / ours-1 time (> 1: ours is faster). The goal is >= 1.0x PyG on the
shared single-type case.

    python benchmarks/ggnn.py [--reps N] [--threads T] [--max-nodes N] [--quick]

Rows for ``paperzoo bench --json`` (median seconds per forward + backward, ratio contender /
ours): ours-1 against pyg and pyg-bi, ours against pyg-bi and against dense. Agreement: ``dense``
is the same function as ``ours`` but for ours' edge biases, so after the timings ours is run with
its edge biases zeroed and dense with ours' weights, on the same graph, and the largest difference
of the final states is recorded (tolerance 1e-4, float32 over T steps). PyG's GatedGraphConv is a
different function (a weight per step instead of one tied over the steps, one message weight for
both directions, torch's GRUCell with the reset gate applied after the recurrent matrix), so the
PyG rows carry no agreement check (``agreed`` is None, with a note).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from _common import add_common_args, agreement, apply_quick, apply_threads, result, row
from paperzoo.data import babi
from paperzoo.nn.graph import GatedGraphPropagation

STEPS = 5


class DenseGGNN(nn.Module):
    """The paper's equations with one dense adjacency matrix per edge type (the naive way)."""

    def __init__(self, *, state_dim: int, annotation_dim: int, num_edge_types: int) -> None:
        super().__init__()
        d, k = state_dim, num_edge_types
        self.d, self.a, self.k = d, annotation_dim, k
        self.w = nn.Parameter(torch.randn(2, k, d, d) / d**0.5)
        self.gates = nn.Linear(3 * d, 2 * d)
        self.cand = nn.Linear(3 * d, d)

    def forward(self, x: Tensor, edge_index: Tensor, edge_type: Tensor) -> Tensor:
        n = x.shape[0]
        adj = torch.zeros(self.k, n, n)  # adj[t, v, u] = edges u -> v of type t
        adj.index_put_((edge_type, edge_index[1], edge_index[0]), torch.ones(len(edge_type)), True)
        h = torch.cat([x, x.new_zeros(n, self.d - self.a)], 1)
        for _ in range(STEPS):
            a_in = sum(adj[t] @ (h @ self.w[0, t]) for t in range(self.k))
            a_out = sum(adj[t].t() @ (h @ self.w[1, t]) for t in range(self.k))
            z, r = torch.sigmoid(self.gates(torch.cat([a_in, a_out, h], 1))).chunk(2, 1)
            c = torch.tanh(self.cand(torch.cat([a_in, a_out, r * h], 1)))
            h = h + z * (c - h)
        return h


def _dense_agreement(ours: GatedGraphPropagation, dense: DenseGGNN, x, ei, et) -> dict:
    """ours with its edge biases zeroed against dense holding ours' weights: max |h difference|."""
    d = ours.state_dim
    with torch.no_grad():
        dense.w.copy_(ours.weight)
        wa, wz_r, wc = ours.lin_a.weight, ours.lin_h_zr.weight, ours.lin_h_c.weight
        dense.gates.weight.copy_(torch.cat([wa[: 2 * d], wz_r], 1))
        dense.gates.bias.copy_(ours.lin_a.bias[: 2 * d])
        dense.cand.weight.copy_(torch.cat([wa[2 * d :], wc], 1))
        dense.cand.bias.copy_(ours.lin_a.bias[2 * d :])
        saved = None if ours.bias is None else ours.bias.detach().clone()
        if ours.bias is not None:
            ours.bias.zero_()
        try:
            diff = (ours(x, ei, et) - dense(x, ei, et)).abs().max().item()
        finally:
            if saved is not None:
                ours.bias.copy_(saved)
    return agreement(
        "final states, ours (edge biases zeroed) vs dense with ours' weights", diff, 1e-4
    )


PYG_NOTE = (
    "PyG's GatedGraphConv is not the same function (a weight per step, one message weight for "
    "both directions, GRUCell's reset gate after the recurrent matrix): outputs not compared"
)


def _babi_batch(n_graphs: int) -> tuple[Tensor, Tensor, Tensor, int]:
    task = babi.generate_task("babi15", n_train=n_graphs, n_test=0, seed=0)
    exs = [babi.encode(task, g, g.questions[0], 1) for g in task.train]
    b = babi.collate(exs)
    return b["x"], b["edge_index"], b["edge_type"], task.num_edge_types


def _random_graph(n: int, degree: int = 4, k: int = 4) -> tuple[Tensor, Tensor, Tensor, int]:
    g = torch.Generator().manual_seed(n)
    e = degree * n
    x = torch.rand(n, 4, generator=g)
    return x, torch.randint(n, (2, e), generator=g), torch.randint(k, (e,), generator=g), k


def _fwd_bwd(model: nn.Module, call: Callable[[], Tensor]) -> Callable[[], float]:
    def run() -> float:
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        call().square().mean().backward()
        return time.perf_counter() - t0

    return run


def bench(
    label: str,
    data: tuple[Tensor, Tensor, Tensor, int],
    n_graphs: int,
    state_dim: int,
    reps: int,
    max_dense: int,
) -> dict[str, object]:
    from torch_geometric.nn import GatedGraphConv

    x, ei, et, k = data
    a, n = x.shape[1], x.shape[0]
    torch.manual_seed(0)
    ours = GatedGraphPropagation(
        state_dim=state_dim, annotation_dim=a, num_edge_types=k, num_steps=STEPS
    )
    ours1 = GatedGraphPropagation(
        state_dim=state_dim, annotation_dim=a, num_edge_types=1, num_steps=STEPS
    )
    pyg = GatedGraphConv(state_dim, num_layers=STEPS, aggr="add")
    ei_bi = torch.cat([ei, ei.flip(0)], dim=1)
    runs = {
        "ours": _fwd_bwd(ours, lambda: ours(x, ei, et)),
        "ours-1": _fwd_bwd(ours1, lambda: ours1(x, ei)),
        "pyg": _fwd_bwd(pyg, lambda: pyg(x, ei)),
        "pyg-bi": _fwd_bwd(pyg, lambda: pyg(x, ei_bi)),
    }
    if n <= max_dense:
        dense = DenseGGNN(state_dim=state_dim, annotation_dim=a, num_edge_types=k)
        runs["dense"] = _fwd_bwd(dense, lambda: dense(x, ei, et))
    for r in runs.values():  # warm-up
        r()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):  # interleaved, so load changes hit every contender alike
        for name, r in runs.items():
            times[name].append(r())
    med = {name: statistics.median(v) for name, v in times.items()}
    row: dict[str, object] = {"workload": label, "nodes": n, "edges": ei.shape[1]}
    for name, t in med.items():
        row[f"{name} graphs/s"] = n_graphs / t
    for name in ("pyg", "pyg-bi", "dense"):
        if name in med:
            row[f"{name}/ours-1" if name != "dense" else "dense/ours"] = (
                med[name] / med["ours-1"] if name != "dense" else med[name] / med["ours"]
            )
    row["_seconds"] = med  # for the JSON rows (not printed)
    row["_state_dim"] = state_dim
    if "dense" in med:
        row["_dense_agreed"] = _dense_agreement(ours, dense, x, ei, et)
    return row


def _json_rows(rows: list[dict[str, object]]) -> list[dict]:
    pairs = [("ours-1", "pyg"), ("ours-1", "pyg-bi"), ("ours", "pyg-bi"), ("ours", "dense")]
    out = []
    for r in rows:
        med: dict[str, float] = r["_seconds"]  # type: ignore[assignment]
        for ours, anchor in pairs:
            if anchor not in med:
                continue
            dense = anchor == "dense"
            out.append(
                row(
                    f"GG-NN T={STEPS} fwd+bwd, {r['workload']} ({r['nodes']} nodes, "
                    f"{r['edges']} edges), state {r['_state_dim']}",
                    {ours: med[ours], anchor: med[anchor]},
                    ours=ours,
                    anchor=anchor,
                    unit="median s per forward + backward",
                    agreed=r["_dense_agreed"] if dense else None,  # type: ignore[arg-type]
                    note=None if dense else PYG_NOTE,
                    nodes=r["nodes"],
                    edges=r["edges"],
                )
            )
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--max-nodes", type=int, default=100_000, help="largest random graph")
    ap.add_argument("--max-dense", type=int, default=2_000, help="largest graph for dense")
    add_common_args(ap)
    args = ap.parse_args(argv)
    apply_quick(args, reps=1, max_nodes=1_000, max_dense=1_000)
    apply_threads(args)
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        msg = "torch_geometric is not installed: pip install torch_geometric (or .[bench])"
        print(msg)
        return result("ggnn", args, [], skipped=msg)
    rows = [
        bench("bAbI-15 x100", _babi_batch(100), 100, 5, args.reps, args.max_dense),
        bench("bAbI-15 x1000", _babi_batch(1000), 1000, 5, args.reps, args.max_dense),
    ]
    for n in (1_000, 10_000, 100_000):
        if n <= args.max_nodes:
            reps = args.reps if n < 100_000 else max(3, args.reps // 2)
            rows.append(bench(f"random {n}", _random_graph(n), 1, 32, reps, args.max_dense))
    cols = [
        "workload",
        "nodes",
        "edges",
        "ours graphs/s",
        "ours-1 graphs/s",
        "pyg graphs/s",
        "pyg-bi graphs/s",
        "dense graphs/s",
        "pyg/ours-1",
        "pyg-bi/ours-1",
        "dense/ours",
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), T = {STEPS}")
    print(" | ".join(f"{c:>15}" for c in cols))
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "n/a")
            cells.append(f"{v:>15.3g}" if isinstance(v, float) else f"{v!s:>15}")
        print(" | ".join(cells))
    print("ratios: contender time / paperzoo time (> 1 means paperzoo is faster)")
    for r in rows:
        if "_dense_agreed" in r:
            a = r["_dense_agreed"]
            print(f"{r['workload']}: agreement with dense: max |diff| {a['max_diff']:.1e}")  # type: ignore[index]
    return result("ggnn", args, _json_rows(rows))


if __name__ == "__main__":
    main()
