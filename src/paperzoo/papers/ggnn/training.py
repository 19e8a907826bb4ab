"""Training and evaluation of GG-NN's models: a question type's GG-NN / GGS-NN runs trained as
one batched model with the restart rule (``run_graph_model``, ``train_restarts``), the RNN / LSTM
baselines of every fold as one batched model (``run_baselines``), their minibatches, losses,
checkpoint keepers and whole-output accuracy (``graph_eval``, ``sequence_eval``).

Each run of a batched model keeps what it has alone (initialisation, batch order, Adam state,
gradient clamping, validation-based selection); tests/papers/ggnn_reference.py trains the
runs one at a time to check it. Protocol: docs/ggnn.md.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.data import babi
from paperzoo.engine import budget, derive_seed, seeded
from paperzoo.engine.batched import BatchedKeeper, fit_batched, model_samplers
from paperzoo.engine.transfer import to_device
from paperzoo.experiments.base import RunContext
from paperzoo.models.ggnn import (
    GatedGraphNet,
    GatedGraphSequenceNet,
    SequenceBaseline,
    StackedGatedGraphNet,
    StackedGatedGraphSequenceNet,
    StackedSequenceBaseline,
    node_selection_logits,
)
from paperzoo.nn.graph import PropagationPlan
from paperzoo.papers.ggnn.config import (
    BASELINE,
    Config,
    TaskSetting,
    _baseline_train,
    _baseline_updates,
    _fold_key,
    _seed_key,
    task_setting,
)
from paperzoo.papers.ggnn.torch7 import Torch7Adam, torch7_randperm
from paperzoo.utils import count_params

log = logging.getLogger(__name__)


class _EpochBatches:
    """Minibatches that walk through shuffled epochs of the examples (the authors' DataLoader).

    A batch may straddle two epochs; batch ``step`` depends only on (seed, step), so training
    resumes exactly.
    """

    def __init__(self, items: list[babi.GraphExample], batch_size: int, seed: int) -> None:
        self.items, self.batch_size, self.seed = items, batch_size, seed
        self._perms: dict[int, Tensor] = {}

    def _perm(self, epoch: int) -> Tensor:
        if epoch not in self._perms:
            g = torch.Generator().manual_seed(derive_seed(self.seed, epoch))
            self._perms = {e: p for e, p in self._perms.items() if e >= epoch - 1}
            self._perms[epoch] = torch.randperm(len(self.items), generator=g)
        return self._perms[epoch]

    def indices(self, step: int) -> Tensor:
        """(B,) the positions in ``items`` of batch ``step``'s examples."""
        n, start = len(self.items), step * self.batch_size
        first, last = start // n, (start + self.batch_size - 1) // n  # the epochs it spans
        perms = torch.cat([self._perm(e) for e in range(first, last + 1)])
        return perms[start - first * n : start - first * n + self.batch_size]

    def __call__(self, step: int, generator: torch.Generator) -> dict[str, Tensor]:
        return babi.collate([self.items[i] for i in self.indices(step).tolist()])


class _GraphBank:
    """Examples with equally many nodes (every graph of a bAbI task), stacked once, so that a
    batch of them is gathered by index arithmetic instead of collated in Python: ``batch(idx)``
    is ``babi.collate([items[i] for i in idx])``. The K runs' minibatches of a step are one such
    batch (model k's graphs the k-th block of the union).
    """

    def __init__(self, items: list[babi.GraphExample]) -> None:
        sizes = {ex.x.shape[0] for ex in items}
        if len(sizes) != 1:
            raise ValueError(f"a graph bank needs equally many nodes per example, got {sizes}")
        (self.nodes,) = sizes
        self.x = torch.stack([ex.x for ex in items])  # (M, n, A)
        counts = torch.tensor([ex.edge_index.shape[1] for ex in items])  # (M,) edges
        self.edge_count, self.edge_start = counts, torch.cumsum(counts, 0) - counts
        self.edge_index = torch.cat([ex.edge_index for ex in items], 1)  # (2, E) local ids
        self.edge_type = torch.cat([ex.edge_type for ex in items])  # (E,)
        self.y_len = torch.tensor([ex.y.numel() for ex in items])  # (M,)
        self.y = torch.full((len(items), int(self.y_len.max())), babi.IGNORE, dtype=torch.long)
        for i, ex in enumerate(items):
            self.y[i, : ex.y.numel()] = ex.y

    @staticmethod
    def fits(items: list[babi.GraphExample]) -> bool:
        return bool(items) and len({ex.x.shape[0] for ex in items}) == 1

    def batch(self, idx: Tensor) -> dict[str, Tensor]:
        """``babi.collate`` of the examples at ``idx`` (B,): x (B*n, A), edge_index (2, E) with
        node ids offset per graph, edge_type (E,), batch (B*n,), y (B, L), num_nodes (B,)."""
        b, n = len(idx), self.nodes
        counts = self.edge_count[idx]  # (B,) edges of each picked graph
        first = torch.cumsum(counts, 0) - counts  # where each graph's edges go in the batch
        # The picked graphs' edge ids in the bank: edge_start[g] + 0 .. counts[g] - 1.
        edges = torch.repeat_interleave(self.edge_start[idx] - first, counts)
        edges += torch.arange(len(edges))
        shift = torch.repeat_interleave(torch.arange(b) * n, counts)  # node id offsets
        return {
            "x": self.x[idx].reshape(b * n, -1),
            "edge_index": self.edge_index[:, edges] + shift,
            "edge_type": self.edge_type[edges],
            "batch": torch.arange(b).repeat_interleave(n),
            "y": self.y[idx, : int(self.y_len[idx].max())],
            "num_nodes": torch.full((b,), n, dtype=torch.long),
        }


def best_of_batched_restarts(
    runs: list[tuple[nn.Module, tuple[float, float]]],
) -> tuple[nn.Module, list[tuple[nn.Module, tuple[float, float]]]]:
    """The restart rule over runs that were all trained (at once, ``train_restarts``).

    The rule trains runs 0, 1, ... one after another until one reaches 100 % validation accuracy
    and keeps the run best on validation. Over runs already trained: the runs in order up to and
    including the first with 100 % validation accuracy (all of them when none reaches it), and
    the best of those on validation (highest accuracy, then lowest loss, the earlier of equals),
    exactly what the sequential rule selects and reports.

    Returns:
        (the selected run's model, the runs the sequential rule would have trained)
    """
    if not runs:
        raise ValueError("no runs to select from")
    n = next((i + 1 for i, (_, score) in enumerate(runs) if score[0] >= 1.0), len(runs))
    kept = runs[:n]
    return max(kept, key=lambda r: r[1])[0], kept  # max keeps the first of equal scores


def best_of_restart_waves(
    train_wave: Callable[[range], list[tuple[nn.Module, tuple[float, float]]]],
    max_runs: int,
    wave: int,
) -> tuple[nn.Module, list[tuple[nn.Module, tuple[float, float]]], int]:
    """The restart rule over runs trained ``wave`` at a time (``train_restarts``): runs
    0 .. wave-1 at once, then the next ``wave`` runs only if none reached 100 % validation
    accuracy, and so on up to ``max_runs``. ``best_of_batched_restarts`` of the runs trained
    selects, and reports, what the sequential rule does for any ``wave``; ``wave >= max_runs``
    trains every run at once (cost known in advance), ``wave = 1`` one after another (fewest
    runs).

    Returns:
        (the selected run's model, the runs the sequential rule would have trained, the number
        of runs trained)
    """
    if max_runs < 1 or wave < 1:
        raise ValueError(f"need max_runs >= 1 and wave >= 1, got {max_runs} and {wave}")
    runs: list[tuple[nn.Module, tuple[float, float]]] = []
    waves = math.ceil(max_runs / wave)
    for w in budget.loop(waves, "restart waves", kind="repeat"):  # (--max-steps: capped)
        runs += train_wave(range(w * wave, min((w + 1) * wave, max_runs)))
        if any(score[0] >= 1.0 for _, score in runs):
            break
    best, kept = best_of_batched_restarts(runs)
    return best, kept, len(runs)


def _better(acc: float, loss: float, best: tuple[float, float], ties_by_loss: bool) -> bool:
    """Whether a checkpoint at (validation accuracy, loss) replaces ``best`` (accuracy, -loss):
    higher accuracy, or equal accuracy and lower loss when ``ties_by_loss``. Without it this is
    the authors' ``val_err < best_val_err`` (babi_train.lua:269): the earliest of equals stays."""
    if ties_by_loss:
        return (acc, -loss) > best
    return acc > best[0]


class _EarliestKeeper(BatchedKeeper):
    """``BatchedKeeper`` with the authors' selection: model k's checkpoint replaces its best only
    if its validation accuracy is strictly higher (babi_train.lua:269, seq_train.lua:264), so
    the earliest of equally accurate checkpoints is kept; ``best`` still records its loss."""

    def update(self, model: nn.Module, acc: Sequence[float], loss: Sequence[float]) -> None:
        params = model.state_dict()
        for k, (a, lo) in enumerate(zip(acc, loss, strict=True)):
            if _better(a, lo, self.best[k], ties_by_loss=False):
                self.best[k] = (float(a), -float(lo))
                self.state[k] = {n: t[k].detach().clone() for n, t in params.items()}


def batch_on_device(
    b: dict[str, Tensor], device: str | torch.device, dtype: torch.dtype
) -> dict[str, Tensor]:
    """A collated batch on ``device``, its floating tensors as ``dtype``, copied without
    blocking the host (``engine.transfer.to_device``); the graphs' sizes ``num_nodes`` stay on
    the host, where a step reads them (``_max_nodes``)."""
    return {
        n: t if n == "num_nodes" else to_device(t, device, dtype if t.is_floating_point() else None)
        for n, t in b.items()
    }


def _max_nodes(b: dict[str, Tensor]) -> int:
    """The nodes of the batch's largest graph, from its sizes (host memory: ``batch_on_device``
    leaves them there)."""
    return int(b["num_nodes"].max())


def plan_on_device(plan: PropagationPlan, device: str | torch.device) -> PropagationPlan:
    """``plan`` (built on the host) with its tensors on ``device``, copied without blocking the
    host; on the CPU ``plan`` itself."""
    if torch.device(device).type == "cpu":
        return plan

    def csr(m: Tensor) -> Tensor:
        with warnings.catch_warnings():  # torch warns once that sparse CSR support is in beta
            warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
            return torch.sparse_csr_tensor(
                to_device(m.crow_indices(), device),
                to_device(m.col_indices(), device),
                to_device(m.values(), device),
                m.shape,
                check_invariants=False,  # built by ``_csr``; a check would read the device
            )

    adj = csr(plan.adj)
    adj_t = adj if plan.adj_t is plan.adj else csr(plan.adj_t)
    return replace(plan, adj=adj, adj_t=adj_t, degree=to_device(plan.degree, device))


def _graph_logits(model: nn.Module, kind: str, b: dict[str, Tensor]) -> Tensor:
    """(B, L, classes) log-probabilities / logits for a collated batch of ``kind``."""
    n_graphs = b["y"].shape[0]
    args = (b["x"], b["edge_index"], b["edge_type"], b["batch"])
    if kind == "node":
        return node_selection_logits(model(*args), b["batch"], n_graphs, _max_nodes(b)).unsqueeze(1)
    if kind == "graph":
        return F.log_softmax(model(*args, num_graphs=n_graphs), -1).unsqueeze(1)
    out = model(*args, num_outputs=b["y"].shape[1], num_graphs=n_graphs)
    if kind == "node_seq":
        return node_selection_logits(out, b["batch"], n_graphs, _max_nodes(b))  # (B, L, M)
    return F.log_softmax(out, -1)  # graph_seq: (B, L, C)


def _stacked_graph_logits(
    model: StackedGatedGraphNet | StackedGatedGraphSequenceNet,
    kind: str,
    b: dict[str, Tensor],
    plan: PropagationPlan | None,
) -> Tensor:
    """``_graph_logits`` of K stacked models, each on its block of the union ``b`` (K blocks of
    equally many graphs and nodes, collated as one batch): (K, B, L, classes). Sequence models
    make ``b["y"].shape[1]`` outputs, the longest target of the union (a model's later outputs
    are ``IGNORE`` where its targets are shorter; earlier outputs do not depend on them).

    Shapes:
        b["x"]: (K*N, A); b["y"]: (K*B, L) -> (K, B, L, C)
    """
    k = model.num_models
    n_graphs = b["y"].shape[0] // k  # B, graphs per model
    x = b["x"].view(k, -1, b["x"].shape[1])  # (K, N, A)
    args = (x, b["edge_index"], b["edge_type"], b["batch"])
    if kind in ("node", "graph"):
        out = model(*args, num_graphs=n_graphs, plan=plan)  # (K, N) or (K, B, C)
        out = out.unsqueeze(-1) if kind == "node" else out.unsqueeze(2)  # (K, N, 1), (K, B, 1, C)
    else:
        out = model(*args, num_outputs=b["y"].shape[1], num_graphs=n_graphs, plan=plan)
    if kind in ("node", "node_seq"):  # (K, N, L) scores: softmax over each graph's nodes
        logp = node_selection_logits(out.flatten(0, 1), b["batch"], k * n_graphs, _max_nodes(b))
        return logp.view(k, n_graphs, *logp.shape[1:])
    return F.log_softmax(out, -1)  # (K, B, L, C)


def _sequence_loss(logp: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy averaged over each example's output steps, then over examples (official)."""
    b, steps = y.shape
    nll = F.nll_loss(
        logp.flatten(0, 1), y.flatten(), ignore_index=babi.IGNORE, reduction="none"
    ).view(b, steps)
    lengths = (y != babi.IGNORE).sum(1).clamp(min=1)
    return (nll.sum(1) / lengths).mean()


def _stacked_sequence_loss(logp: Tensor, y: Tensor, mask: Tensor, *, reduce: bool = True) -> Tensor:
    """``_sequence_loss`` of K models at once: (K,) each model's mean over its real examples
    (``mask``), or with ``reduce=False`` (K, B) per example.

    Shapes:
        logp: (K, B, T, C); y: (K, B, T); mask: (K, B)
    """
    k, b, steps = y.shape
    nll = F.nll_loss(
        logp.flatten(0, 2), y.flatten(), ignore_index=babi.IGNORE, reduction="none"
    ).view(k, b, steps)
    per = nll.sum(2) / (y != babi.IGNORE).sum(2).clamp(min=1)  # (K, B)
    if not reduce:
        return per
    return (per * mask).sum(1) / mask.sum(1).clamp(min=1)


def _stack_sequences(
    seqs: list[tuple[Tensor, Tensor, Tensor]],
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """K models' (tokens, lengths, targets) padded to common sizes (PAD tokens, length 1 and
    IGNORE targets in padding rows) and stacked, with the mask of real rows.

    Shapes:
        -> tokens (K, M, L), lengths (K, M), targets (K, M, T), mask (K, M)
    """
    k = len(seqs)
    m = max(len(s[2]) for s in seqs)
    length = max(s[0].shape[1] for s in seqs)
    steps = max(s[2].shape[1] for s in seqs)
    tok = torch.full((k, m, length), babi.PAD, dtype=torch.long)
    ln = torch.ones(k, m, dtype=torch.long)
    y = torch.full((k, m, steps), babi.IGNORE, dtype=torch.long)
    mask = torch.zeros(k, m, dtype=torch.bool)
    for i, (t, n, yy) in enumerate(seqs):
        tok[i, : len(t), : t.shape[1]], ln[i, : len(n)] = t, n
        y[i, : len(yy), : yy.shape[1]], mask[i, : len(yy)] = yy, True
    return tok, ln, y, mask


def _all_correct(logp: Tensor, y: Tensor) -> Tensor:
    """(B,) whether every (non-padding) output of each example is right."""
    return ((logp.argmax(-1) == y) | (y == babi.IGNORE)).all(1)


@torch.no_grad()
def graph_eval(
    model: nn.Module, kind: str, examples: list[babi.GraphExample], *, chunk: int = 500
) -> tuple[float, float]:
    """(accuracy, mean loss); an example is right only if its whole output is (eval mode)."""
    was = model.training
    model.eval()
    try:
        right, loss = 0, 0.0
        dtype = next(model.parameters()).dtype  # float64 models read float64 annotations
        for i in range(0, len(examples), chunk):
            b = babi.collate(examples[i : i + chunk])
            b["x"] = b["x"].to(dtype)
            logp = _graph_logits(model, kind, b)
            right += int(_all_correct(logp, b["y"]).sum())
            loss += float(_sequence_loss(logp, b["y"])) * len(b["y"])
    finally:
        model.train(was)
    n = max(len(examples), 1)
    return right / n, loss / n


@torch.no_grad()
def sequence_eval(
    model: SequenceBaseline, tokens: Tensor, lengths: Tensor, y: Tensor, *, chunk: int = 1000
) -> tuple[float, float]:
    """(accuracy, mean loss) of a sequence baseline (eval mode; caller's mode restored)."""
    was = model.training
    model.eval()
    try:
        right, loss = 0, 0.0
        for i in range(0, len(y), chunk):
            yy = y[i : i + chunk]
            out = model(tokens[i : i + chunk], lengths[i : i + chunk], num_outputs=y.shape[1])
            logp = F.log_softmax(out, -1)
            right += int(_all_correct(logp, yy).sum())
            loss += float(_sequence_loss(logp, yy)) * len(yy)
    finally:
        model.train(was)
    n = max(len(y), 1)
    return right / n, loss / n


def _split_train(
    graphs: tuple[babi.SymbolicGraph, ...],
    n_train: int,
    n_val: int,
    seed: int,
    method: str = "seeded",
) -> tuple[list[babi.SymbolicGraph], list[babi.SymbolicGraph]]:
    """A random n_train / n_val split of the training graphs (the authors' split_set).

    ``method="seeded"``: a permutation seeded by ``seed``; ``"torch7"``: the authors' own,
    Torch7's randperm under their fixed seed 1023 (``seed`` unused), the graphs in its order.
    A training split smaller than n_train + n_val (tiny test fixtures) keeps a third for
    validation and trains on the rest, with a warning.
    """
    if n_train + n_val > len(graphs):
        n_val = min(n_val, len(graphs) // 3)
        log.warning(
            "only %d training graphs: using %d for training and %d for validation",
            len(graphs),
            len(graphs) - n_val,
            n_val,
        )
        n_train = len(graphs) - n_val
    if method == "torch7":
        perm = torch7_randperm(len(graphs), 1023)
    else:
        perm = np.random.default_rng(seed).permutation(len(graphs))
    return [graphs[i] for i in perm[:n_train]], [graphs[i] for i in perm[n_train : n_train + n_val]]


# ------------------------------------------------------------------------ GG-NN / GGS-NN
def make_model(task: babi.BabiTask, s: TaskSetting, cfg: Config) -> nn.Module:
    """The GG-NN (node selection, graph classification) or GGS-NN (sequence tasks) of ``task``
    at setting ``s``."""
    common = dict(
        state_dim=s.state_dim,
        annotation_dim=s.annotation_dim,
        num_edge_types=task.num_edge_types,
        num_steps=cfg.num_prop_steps,
    )
    if task.kind == "node":
        return GatedGraphNet(output="node", **common)  # type: ignore[arg-type]
    if task.kind == "graph":
        return GatedGraphNet(output="graph", num_classes=task.num_labels, **common)  # type: ignore[arg-type]
    output = "node" if task.kind == "node_seq" else "graph"
    classes = task.num_labels + 1 if task.kind == "graph_seq" else None
    return GatedGraphSequenceNet(output=output, num_classes=classes, **common)  # type: ignore[arg-type]


def train_restarts(
    name: str,
    task: babi.BabiTask,
    cfg: Config,
    ctx: RunContext,
    train: list[babi.GraphExample],
    val: list[babi.GraphExample],
    key: tuple[str, ...],
    attempts: range,
) -> list[tuple[nn.Module, tuple[float, float]]]:
    """Runs ``attempts`` under ``key`` (run ``a`` is key + ``a{a}``) trained as one batched model
    (``StackedGatedGraphNet`` or, for sequence outputs, ``StackedGatedGraphSequenceNet``;
    ``engine.batched.fit_batched``).

    Each run keeps what it has alone: its initialisation (built from the seed
    of its own run key, then copied into the stacked weights), its batch order
    (its own ``_EpochBatches``), its Adam state and gradient clamping (element-wise on the
    stacked tensors; the loss is the sum of the runs' losses) and its validation-based
    selection (``BatchedKeeper``: best accuracy, ties by lower loss, the earlier of equals).
    Its trajectory equals that of the run trained alone (with ``Trainer``) up to float
    round-off. Every step collates the runs' minibatches as one batch (``_GraphBank``), model
    k's graphs the k-th block.

    Returns:
        ``[(model, (val accuracy, -val loss))]`` per run, in order.
    """
    s = task_setting(name, cfg)
    kind, runs = task.kind, len(attempts)
    models, batches = [], []
    for attempt in attempts:
        run_key = (*key, f"a{attempt}")
        with seeded(derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "init")):
            models.append(make_model(task, s, cfg))
        seed = derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "batches")
        batches.append(_EpochBatches(train, cfg.batch_size, seed))
    stacked: StackedGatedGraphNet | StackedGatedGraphSequenceNet
    if kind in ("node", "graph"):
        stacked = StackedGatedGraphNet(models=models)  # type: ignore[arg-type]
    else:
        stacked = StackedGatedGraphSequenceNet(models=models)  # type: ignore[arg-type]
    dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
    stacked.to(ctx.device, dtype)  # float64: the float32 draws, converted
    models = [m.to(dtype) for m in models]  # (receive the selected weights at the end)

    bank = _GraphBank(train) if _GraphBank.fits(train) else None

    def loss_fn(m: nn.Module, step: int) -> Tensor:
        idx = torch.cat([bt.indices(step) for bt in batches])  # (K*B,): run k's, k-th block
        union = bank.batch(idx) if bank else babi.collate([train[i] for i in idx.tolist()])
        # the plan from the host batch (its index arithmetic runs on the host; built from a
        # device batch it would read the edges back every step), then both to the device
        plan = stacked.plan(union["edge_index"], union["edge_type"], len(union["x"]))
        b = batch_on_device(union, ctx.device, dtype)
        logp = _stacked_graph_logits(m, kind, b, plan_on_device(plan, ctx.device))  # type: ignore[arg-type]
        y = b["y"].view(runs, -1, b["y"].shape[1])  # (K, B, L)
        return _stacked_sequence_loss(logp, y, torch.ones_like(y[..., 0], dtype=torch.bool))

    # Validation: every run reads the same questions; the union of K copies of each chunk
    # and its plan are built once (graph_eval's chunks of 500, its accuracy and loss).
    chunks = []
    for i in range(0, len(val), 500):
        part = val[i : i + 500]
        b = batch_on_device(babi.collate(part * runs), ctx.device, dtype)
        chunks.append((len(part), b, stacked.plan(b["edge_index"], b["edge_type"], len(b["x"]))))

    def evaluate(m: nn.Module) -> tuple[list[float], list[float]]:
        right = torch.zeros(runs, dtype=torch.long)
        loss = torch.zeros(runs, dtype=torch.float64)
        for size, b, plan in chunks:
            logp = _stacked_graph_logits(m, kind, b, plan)  # (K, B, 1, C)
            y = b["y"].view(runs, size, -1)
            ok = _all_correct(logp.flatten(0, 1), y.flatten(0, 1)).view(runs, size)
            right += ok.sum(1).cpu()
            mask = torch.ones_like(ok)
            loss += _stacked_sequence_loss(logp, y, mask).double().cpu() * size
        n = max(len(val), 1)
        return [r / n for r in right.tolist()], [lo / n for lo in loss.tolist()]

    keeper = BatchedKeeper(runs) if cfg.ties_by_loss else _EarliestKeeper(runs)
    tag = "-".join(map(str, (name, *key)))
    adam = Torch7Adam if cfg.adam == "torch7" else torch.optim.Adam
    fit_batched(
        stacked,
        loss_fn,
        adam(stacked.parameters(), lr=s.lr),
        steps=max(1, math.ceil(s.steps * cfg.step_scale)),
        evaluate=evaluate if val else None,  # no validation data: keep the last parameters
        eval_every=cfg.eval_every,
        keeper=keeper,
        clamp=cfg.grad_clamp,  # official: every gradient entry clamped to [-5, 5]
        desc=f"{name} {'-'.join(key)} runs {attempts[0]}-{attempts[-1]} batched",
        out_dir=ctx.out_dir / "runs" / f"{tag}-a{attempts[0]}-{attempts[-1]}",
    )
    stacked.to("cpu")
    return [
        (stacked.unstacked(i, m), keeper.best[i])  # type: ignore[arg-type]
        for i, m in enumerate(models)
    ]


def run_graph_model(
    name: str, cfg: Config, ctx: RunContext, fold: int, task: babi.BabiTask
) -> dict[str, Any]:
    """Train (per question type) on one fold; test accuracy over all its questions."""
    s = task_setting(name, cfg)
    train_g, val_g = _split_train(
        task.train,
        s.n_train,
        cfg.n_val,
        derive_seed(ctx.seed, name, *_fold_key(cfg, fold), "split"),
        cfg.split,
    )
    right = right_first = total = 0
    per_qtype: dict[int, dict[str, Any]] = {}
    params = 0
    for qt in range(task.num_question_types):
        tr = babi.examples(task, train_g, annotation_dim=s.annotation_dim, question_type=qt)
        va = babi.examples(task, val_g, annotation_dim=s.annotation_dim, question_type=qt)
        best: nn.Module | None = None
        runs: list[tuple[nn.Module, tuple[float, float]]] = []
        max_runs = cfg.restarts if va else 1
        trained = 0
        if tr:  # runs restart_batch at a time, then the restart rule
            key = (f"fold{fold}", f"q{qt + 1}")
            train_wave = functools.partial(train_restarts, name, task, cfg, ctx, tr, va, key)
            best, runs, trained = best_of_restart_waves(train_wave, max_runs, cfg.restart_batch)
        with ctx.final_evaluation():  # this question type's models are final
            te = babi.examples(task, task.test, annotation_dim=s.annotation_dim, question_type=qt)
            if not te:
                continue
            total += len(te)
            if not tr:  # only possible with tiny data: such test questions count as wrong
                log.warning("%s: no training question of type %d", name, qt + 1)
                per_qtype[qt + 1] = {"test_acc": 0.0, "n_train": 0, "n_test": len(te)}
                continue
            attempts = [
                {"val_acc": score[0], "test_acc": graph_eval(m, task.kind, te)[0]}
                for m, score in runs
            ]
            assert best is not None
            acc = graph_eval(best, task.kind, te)[0]
        params = count_params(best)
        per_qtype[qt + 1] = {
            "test_acc": acc,
            "n_train": len(tr),
            "n_test": len(te),
            "attempts": attempts,  # the runs the restart rule takes (up to the first at 100 %)
            "runs_trained": trained,  # whole waves of restart_batch runs
        }
        right += round(acc * len(te))
        right_first += round(attempts[0]["test_acc"] * len(te))
    return {
        "test_acc": right / total,
        "first_attempt_test_acc": right_first / total,
        "attempts": sum(len(v.get("attempts", [])) for v in per_qtype.values()),
        "n_test_questions": total,
        "per_question_type": per_qtype,
        "params": params,
    }


# -------------------------------------------------------------------- RNN / LSTM baselines
def run_baselines(
    name: str,
    cell: str,
    cfg: Config,
    ctx: RunContext,
    folds: list[tuple[int, babi.BabiTask]],
) -> list[float]:
    """The baseline ``cell`` on task ``name``, one model per fold, trained as one batched
    model (``engine.batched``): each fold's model has the initialisation, data, batch order,
    Adam state, clamping and validation-based selection it has alone (trained with ``Trainer``),
    and the same trajectory up to float round-off. Returns the test accuracy per fold."""
    bs_cfg = BASELINE[name]
    steps = _baseline_updates(cfg, name, cell)
    models, train, val, batch_sizes, seeds = [], [], [], [], []
    for fold, task in folds:
        train_g, val_g = _split_train(
            task.train,
            _baseline_train(cfg, name),
            cfg.n_val,
            derive_seed(ctx.seed, name, *_fold_key(cfg, fold), "rnn"),
        )
        train.append(babi.sequences(task, train_g))
        val.append(babi.sequences(task, val_g))
        with seeded(derive_seed(ctx.seed, name, *_fold_key(cfg, fold), cell, "init")):
            models.append(
                SequenceBaseline(
                    vocab_size=len(babi.vocabulary(task)),
                    num_classes=task.num_classes,
                    cell=cell,  # type: ignore[arg-type]
                )
            )
        batch_sizes.append(min(bs_cfg.batch_size, len(train[-1][2])))
        seeds.append(derive_seed(ctx.seed, name, *_fold_key(cfg, fold), cell, "batches"))
    stacked = StackedSequenceBaseline(models=models).to(ctx.device)
    tok, ln, y, _ = _stack_sequences(train)  # (K, M, L), (K, M), (K, M, T)
    held_out = _stack_sequences(val)
    vtok, vln, vy, vmask = (t.to(ctx.device) for t in held_out)
    samplers = model_samplers([len(t[2]) for t in train], batch_sizes, seeds)
    width = max(batch_sizes)

    def loss_fn(m: nn.Module, step: int) -> Tensor:
        idx = torch.zeros(len(samplers), width, dtype=torch.long)
        mask = torch.zeros(len(samplers), width, dtype=torch.bool)
        for k, sampler in enumerate(samplers):  # model k's own batch of step ``step``
            i = sampler.indices(step)
            idx[k, : len(i)], mask[k, : len(i)] = i, True
        rows = torch.arange(len(samplers)).unsqueeze(1)
        t, n, yy = tok[rows, idx], ln[rows, idx].clamp(min=1), y[rows, idx]
        yy = yy.masked_fill(~mask.unsqueeze(-1), babi.IGNORE)  # padding rows: no loss
        td, nd, yy, mask = (to_device(v, ctx.device) for v in (t, n, yy, mask))
        out = F.log_softmax(m(td, nd, num_outputs=yy.shape[2], host_lengths=n), -1)
        return _stacked_sequence_loss(out, yy, mask)

    def evaluate(m: nn.Module) -> tuple[list[float], list[float]]:
        logp = F.log_softmax(m(vtok, vln, num_outputs=vy.shape[2], host_lengths=held_out[1]), -1)
        right = _all_correct(logp.flatten(0, 1), vy.flatten(0, 1)).view(vmask.shape) & vmask
        n = vmask.sum(1).clamp(min=1)
        losses = _stacked_sequence_loss(logp, vy, vmask, reduce=False)
        acc = [r / c for r, c in zip(right.sum(1).tolist(), n.tolist(), strict=True)]
        return acc, ((losses * vmask).sum(1) / n).tolist()

    keeper = BatchedKeeper(len(models)) if cfg.ties_by_loss else _EarliestKeeper(len(models))
    fit_batched(
        stacked,
        loss_fn,
        torch.optim.Adam(stacked.parameters(), lr=bs_cfg.lr),
        steps=steps,
        evaluate=evaluate,
        eval_every=cfg.baseline_eval_every,
        keeper=keeper,
        clamp=5.0,
        desc=f"{cell} {name} folds {','.join(str(f) for f, _ in folds)}",
        out_dir=ctx.out_dir / "runs" / f"{cell}-{name}-folds{'-'.join(str(f) for f, _ in folds)}",
    )
    stacked.to("cpu")
    accs = []
    with ctx.final_evaluation():  # the selected models are final
        for k, (_, task) in enumerate(folds):
            model = stacked.unstacked(k, models[k])
            accs.append(sequence_eval(model, *babi.sequences(task, task.test))[0])
    return accs
