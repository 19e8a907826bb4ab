"""Gated graph propagation: paperzoo against PyG's GatedGraphConv and a dense-adjacency GG-NN.

Forward + backward of T = 5 propagation steps (state 32, or the bAbI task-15 setting), on
(a) bAbI-sized graphs: minibatches of task-15 graphs (8 nodes, 8 edges, 2 edge types),
(b) single random graphs with 1k, 10k and 100k nodes, 4 edges per node, 4 edge types.

Contenders, timed interleaved in one run:
* ``ours``: ``paperzoo.nn.graph.GatedGraphPropagation`` with the task's edge types and a weight
  per (type, direction): the paper's model. Given the edge list, it builds its sparse matrices
  inside the timed call;
* ``ours-tied``: the same with one edge type and ``tie_directions=True`` (one message weight for
  both directions, messages summed): the information flow and the message weights of ``pyg-bi``;
* ``ours-plan``, ``ours-tied-plan``: the same, with the graph's plan (``.plan(...)``) built once
  before the timings, as PyG's CSR input is;
* ``pyg-bi``: ``torch_geometric.nn.GatedGraphConv`` on the edge list plus its reverse, so that
  information flows both ways as in a GG-NN;
* ``pyg-bi-csr``: the same on a ``torch.sparse_csr_tensor`` adjacency (PyG's ``adj_t``), built
  before the timings; PyG then aggregates with one sparse-dense product per step. PyG's
  ``SparseTensor`` path needs ``torch_sparse``, which is not installed here (noted in the rows);
* ``pyg-typed``: the paper's model as a PyG user would assemble it, since GatedGraphConv has no
  edge types: two ``RGCNConv`` layers (``aggr="add"``, no root weight), one on the edge list and
  one on its reverse, give the sums of typed messages per direction (Eq. 2), concatenated into
  torch's ``GRUCell``; the same modules at every step. A message weight per (edge type,
  direction) as in ``ours``: the same multiply-adds (17 D^2 per node and step with 4 types) and
  about the same parameter count. RGCNConv's ``segment_matmul`` path needs ``pyg_lib`` (not
  installed), so it loops over the edge types, masking the edge list on every call;
* ``pyg-typed-fast``: the same with ``FastRGCNConv`` (a D x D weight gathered per edge, no loop
  over the types), timed where those E D^2 floats stay under ``MAX_GATHERED``; the pyg-typed
  rows take the faster of the two;
* ``dense``: a naive GG-NN holding one dense N x N adjacency matrix per edge type (both
  directions), only where it fits in memory.

    python benchmarks/ggnn.py [--reps N] [--threads T] [--max-nodes N] [--quick]

Timing: the median over ``--reps`` interleaved repetitions of one forward + backward. At one
thread it is the CPU time of the thread (all of every contender's work runs in it; on a shared
machine wall time also counts the waits for a core, which made single runs swing by 2x here),
otherwise wall time; the rows' ``unit`` says which.

Rows for ``paperzoo bench --json`` (ratio anchor / ours):
ours-tied against pyg-bi (both given edge lists), ours-tied-plan against PyG's faster path
(edge list or CSR, whichever measured faster in this run; the values hold both), the same two
for ours, ours against pyg-typed (both given edge lists: equal work), ours against dense; and
the memory of ours-tied and ours against pyg-bi and pyg-bi-csr, and of ours against pyg-typed:
MiB of the tensors autograd keeps for the backward pass (storages counted once, parameters
excluded, sparse matrices included), the activation memory of a training step. The time rows
carry the same number as ``saved_mib``.

Agreement: ``dense`` is the same function as ``ours`` but for ours' edge biases, so after the
timings ours is run with its edge biases zeroed and dense with ours' weights, on the same graph,
and the largest difference of the final states is recorded (tolerance 1e-4, float32 over T
steps). PyG's GatedGraphConv is a different function (a weight per step instead of one tied over
the steps, torch's GRUCell with the reset gate applied after the recurrent matrix; and, against
``ours``, one message weight for every edge type and both directions), and so is pyg-typed (the
GRUCell's reset gate; a bias per direction instead of one per edge type and direction), so the
PyG rows carry no agreement check (``agreed`` is None, with a note). The multiply-adds per node and step differ
too: pyg-bi does 7 D^2 (message, GRUCell's two 3D x D matrices); ours-tied 6 D^2 (message weight
folded into the GRU input matrix, then 2 D^2 + D^2 recurrent); ours with K types and two
directions min(6K, 2K + 6) D^2 + 3 D^2, 17 D^2 for K = 4 (the paper's model has 2K message
matrices), as pyg-typed (2K D^2 for the messages, 9 D^2 for the GRUCell on 2D inputs).
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


class PygTypedGGNN(nn.Module):
    """The paper's model (a message weight per edge type and direction, Eq. 2; a GRU update,
    Eq. 3-6; weights tied over the steps) from PyG's building blocks: RGCNConv on the edges and on
    their reverse, torch's GRUCell."""

    def __init__(
        self, *, state_dim: int, annotation_dim: int, num_edge_types: int, fast: bool = False
    ) -> None:
        from torch_geometric.nn import FastRGCNConv, RGCNConv

        super().__init__()
        d, k = state_dim, num_edge_types
        self.d, self.a = d, annotation_dim
        conv = FastRGCNConv if fast else RGCNConv  # fast: a weight matrix gathered per edge
        self.incoming = conv(d, d, num_relations=k, aggr="add", root_weight=False)
        self.outgoing = conv(d, d, num_relations=k, aggr="add", root_weight=False)
        self.gru = nn.GRUCell(2 * d, d)

    def forward(self, x: Tensor, edge_index: Tensor, edge_type: Tensor) -> Tensor:
        h = torch.cat([x, x.new_zeros(x.shape[0], self.d - self.a)], 1)
        reverse = edge_index.flip(0)
        for _ in range(STEPS):
            a = torch.cat(
                [self.incoming(h, edge_index, edge_type), self.outgoing(h, reverse, edge_type)], 1
            )
            h = self.gru(a, h)
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
    "PyG's GatedGraphConv is not the same function (a weight per step instead of one tied over "
    "the steps, GRUCell's reset gate after the recurrent matrix): outputs not compared"
)
PAPER_NOTE = (
    "ours has a message weight per (edge type, direction), PyG one for all; same information "
    "flow, more multiply-adds for ours (17 D^2 against 7 D^2 per node and step with 4 types)"
)
TYPED_NOTE = (
    "pyg-typed is the paper's model from PyG's parts (RGCNConv per direction, a weight per edge "
    "type; torch's GRUCell): equal work, not the same function (GRUCell's reset gate after the "
    "recurrent matrix, one message bias per direction): outputs not compared; RGCNConv loops over "
    "the edge types (its segment_matmul path needs pyg_lib, not installed)"
)
# FastRGCNConv gathers a D x D weight matrix per edge: timed only while those stay small (floats)
MAX_GATHERED = 10_000_000
CSR_NOTE = (
    "both sides' graph preparation (ours' plan, PyG's CSR adj_t) is outside the timing; "
    "PyG's SparseTensor path needs torch_sparse (not installed)"
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


def _clock() -> tuple[Callable[[], float], str]:
    """The timer and the unit of the rows. At one thread every contender runs all its work in
    this thread, so its CPU time measures the work and, unlike wall time, does not count the
    time the thread waited for a core on a shared machine; with more threads, wall time."""
    if torch.get_num_threads() == 1:
        return time.thread_time, "median CPU s of the one thread per forward + backward"
    return time.perf_counter, "median wall s per forward + backward"


def _fwd_bwd(model: nn.Module, call: Callable[[], Tensor]) -> Callable[[], float]:
    clock = _clock()[0]

    def run() -> float:
        model.zero_grad(set_to_none=True)
        t0 = clock()
        call().square().mean().backward()
        return clock() - t0

    return run


def saved_mib(model: nn.Module, call: Callable[[], Tensor]) -> float:
    """MiB of the tensors autograd keeps for the backward pass of ``call()`` (storages counted
    once, the model's parameters excluded; a sparse matrix counts its index and value arrays)."""
    seen: dict[int, int] = {}

    def pack(t: Tensor) -> Tensor:
        if t.layout == torch.sparse_csr:
            parts = [t.crow_indices(), t.col_indices(), t.values()]
        elif t.layout == torch.sparse_coo:
            parts = [t._indices(), t._values()]
        else:
            parts = [t]
        for part in parts:
            st = part.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = call()
    out.sum().backward()
    model.zero_grad(set_to_none=True)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    return sum(n for ptr, n in seen.items() if ptr not in params) / 2**20


def _csr_adjacency(edge_index: Tensor, n: int) -> Tensor:
    """PyG's ``adj_t`` as a torch sparse CSR matrix: row = destination, column = source."""
    return torch.sparse_coo_tensor(
        edge_index.flip(0), torch.ones(edge_index.shape[1]), (n, n), check_invariants=False
    ).to_sparse_csr()


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
    tied = GatedGraphPropagation(
        state_dim=state_dim,
        annotation_dim=a,
        num_edge_types=1,
        num_steps=STEPS,
        tie_directions=True,
    )
    pyg = GatedGraphConv(state_dim, num_layers=STEPS, aggr="add")
    typed = PygTypedGGNN(state_dim=state_dim, annotation_dim=a, num_edge_types=k)
    ei_bi = torch.cat([ei, ei.flip(0)], dim=1)
    adj_t = _csr_adjacency(ei_bi, n)  # prepared before the timings, as a PyG user would
    plan, plan_tied = ours.plan(ei, et, n), tied.plan(ei, None, n)
    calls: dict[str, tuple[nn.Module, Callable[[], Tensor]]] = {
        "ours": (ours, lambda: ours(x, ei, et)),
        "ours-plan": (ours, lambda: ours(x, ei, et, plan=plan)),
        "ours-tied": (tied, lambda: tied(x, ei)),
        "ours-tied-plan": (tied, lambda: tied(x, ei, plan=plan_tied)),
        "pyg-bi": (pyg, lambda: pyg(x, ei_bi)),
        "pyg-bi-csr": (pyg, lambda: pyg(x, adj_t)),
        "pyg-typed": (typed, lambda: typed(x, ei, et)),
    }
    if ei.shape[1] * state_dim**2 <= MAX_GATHERED:
        typed_fast = PygTypedGGNN(
            state_dim=state_dim, annotation_dim=a, num_edge_types=k, fast=True
        )
        calls["pyg-typed-fast"] = (typed_fast, lambda: typed_fast(x, ei, et))
    if n <= max_dense:
        dense = DenseGGNN(state_dim=state_dim, annotation_dim=a, num_edge_types=k)
        calls["dense"] = (dense, lambda: dense(x, ei, et))
    runs = {name: _fwd_bwd(m, c) for name, (m, c) in calls.items()}
    for r in runs.values():  # warm-up
        r()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):  # interleaved, so load changes hit every contender alike
        for name, r in runs.items():
            times[name].append(r())
    med = {name: statistics.median(v) for name, v in times.items()}
    mem = {name: saved_mib(m, c) for name, (m, c) in calls.items() if name != "dense"}
    fastest = min(("pyg-bi", "pyg-bi-csr"), key=med.__getitem__)
    typed_best = min((c for c in ("pyg-typed", "pyg-typed-fast") if c in med), key=med.__getitem__)
    row: dict[str, object] = {"workload": label, "nodes": n, "edges": ei.shape[1]}
    for name, t in med.items():
        row[f"{name} graphs/s"] = n_graphs / t
    for ours_name in ("ours-tied", "ours"):
        row[f"pyg-bi/{ours_name}"] = med["pyg-bi"] / med[ours_name]
        row[f"pyg-best/{ours_name}-plan"] = med[fastest] / med[f"{ours_name}-plan"]
        row[f"MiB {ours_name}"] = mem[ours_name]
    row["MiB pyg-bi"], row["MiB pyg-bi-csr"] = mem["pyg-bi"], mem["pyg-bi-csr"]
    row["pyg-typed/ours"] = med[typed_best] / med["ours"]
    row["MiB pyg-typed"] = mem[typed_best]
    row["_typed"] = typed_best
    row["_params"] = {
        name: sum(p.numel() for p in m.parameters())
        for name, m in (("ours", ours), ("pyg-typed", typed))
    }
    if "dense" in med:
        row["dense/ours"] = med["dense"] / med["ours"]
    row["_seconds"] = med  # for the JSON rows (not printed)
    row["_mib"] = mem
    row["_fastest"] = fastest
    row["_state_dim"] = state_dim
    if "dense" in med:
        row["_dense_agreed"] = _dense_agreement(ours, dense, x, ei, et)
    return row


def _json_rows(rows: list[dict[str, object]]) -> list[dict]:
    unit = _clock()[1]
    out = []
    for r in rows:
        med: dict[str, float] = r["_seconds"]  # type: ignore[assignment]
        mem: dict[str, float] = r["_mib"]  # type: ignore[assignment]
        fastest = str(r["_fastest"])
        work = (
            f"GG-NN T={STEPS} fwd+bwd, {r['workload']} ({r['nodes']} nodes, {r['edges']} edges), "
            f"state {r['_state_dim']}"
        )
        common = {"nodes": r["nodes"], "edges": r["edges"]}
        for ours in ("ours-tied", "ours"):
            note = PYG_NOTE if ours == "ours-tied" else PYG_NOTE + "; " + PAPER_NOTE
            out.append(
                row(
                    f"{work}, edge lists",
                    {ours: med[ours], "pyg-bi": med["pyg-bi"]},
                    ours=ours,
                    anchor="pyg-bi",
                    unit=unit,
                    note=note,
                    saved_mib={ours: mem[ours], "pyg-bi": mem["pyg-bi"]},
                    **common,
                )
            )
            planned = f"{ours}-plan"
            out.append(
                row(
                    f"{work}, graph prepared (plan / CSR), against PyG's faster path ({fastest})",
                    {
                        planned: med[planned],
                        "pyg-bi": med["pyg-bi"],
                        "pyg-bi-csr": med["pyg-bi-csr"],
                    },
                    ours=planned,
                    anchor=fastest,
                    unit=unit,
                    note=note + "; " + CSR_NOTE,
                    saved_mib={planned: mem[planned], fastest: mem[fastest]},
                    **common,
                )
            )
            out.append(
                row(
                    f"{work}, memory",
                    {ours: mem[ours], "pyg-bi": mem["pyg-bi"], "pyg-bi-csr": mem["pyg-bi-csr"]},
                    ours=ours,
                    anchor="pyg-bi",
                    measure="MiB",
                    unit="MiB saved for the backward pass (parameters excluded)",
                    note=note,
                    **common,
                )
            )
        params = r["_params"]  # type: ignore[index]
        typed_note = (
            f"{TYPED_NOTE}; parameters: ours {params['ours']}, pyg-typed {params['pyg-typed']}"  # type: ignore[index]
        )
        typed = str(r["_typed"])
        typed_values = {k: med[k] for k in ("pyg-typed", "pyg-typed-fast") if k in med}
        out.append(
            row(
                f"{work}, edge lists, the paper's model against PyG's RGCNConv + GRUCell "
                f"(faster of RGCNConv / FastRGCNConv where run: {typed})",
                {"ours": med["ours"], **typed_values},
                ours="ours",
                anchor=typed,
                unit=unit,
                note=typed_note,
                saved_mib={"ours": mem["ours"], typed: mem[typed]},
                **common,
            )
        )
        out.append(
            row(
                f"{work}, memory, the paper's model against PyG's RGCNConv + GRUCell ({typed})",
                {"ours": mem["ours"], typed: mem[typed]},
                ours="ours",
                anchor=typed,
                measure="MiB",
                unit="MiB saved for the backward pass (parameters excluded)",
                note=typed_note,
                **common,
            )
        )
        if "dense" in med:
            out.append(
                row(
                    work,
                    {"ours": med["ours"], "dense": med["dense"]},
                    ours="ours",
                    anchor="dense",
                    unit=unit,
                    agreed=r["_dense_agreed"],  # type: ignore[arg-type]
                    **common,
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
        "pyg-bi/ours-tied",
        "pyg-best/ours-tied-plan",
        "pyg-bi/ours",
        "pyg-best/ours-plan",
        "pyg-typed/ours",
        "dense/ours",
        "MiB ours-tied",
        "MiB ours",
        "MiB pyg-bi",
        "MiB pyg-bi-csr",
        "MiB pyg-typed",
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), T = {STEPS}")
    print(" | ".join(f"{c:>14}" for c in cols))
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "n/a")
            cells.append(f"{v:>14.3g}" if isinstance(v, float) else f"{v!s:>14}")
        print(" | ".join(cells))
    print("pyg-best: PyG's faster path in this run (edge list or CSR):")
    print(", ".join(f"{r['workload']}: {r['_fastest']}" for r in rows))
    print(
        "ratios: contender time / paperzoo time (> 1 means paperzoo is faster); MiB saved for backward"
    )
    for r in rows:
        if "_dense_agreed" in r:
            a = r["_dense_agreed"]
            print(f"{r['workload']}: agreement with dense: max |diff| {a['max_diff']:.1e}")  # type: ignore[index]
    return result("ggnn", args, _json_rows(rows))


if __name__ == "__main__":
    main()
