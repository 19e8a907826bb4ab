"""Gated graph propagation (Li, Tarlow, Brockschmidt & Zemel, ICLR 2016, "Gated Graph Sequence
Neural Networks", arXiv:1511.05493, Sec. 3).

Graph convention (PyG's): node features ``x`` (N, F); ``edge_index`` (2, E) with row 0 the
source and row 1 the destination of each directed edge; ``edge_type`` (E,) in
``[0, num_edge_types)``; many graphs are batched into one by offsetting node ids, and ``batch``
(N,) says which graph each node belongs to.

How it is computed (the function is that of the equations; only the order of operations differs):

* The graph becomes one sparse CSR matrix, built once per graph (``GatedGraphPropagation.plan``,
  reusable across forward passes and optimizer steps), together with its transpose. Each step
  sums the neighbour states of every (node, direction, edge type) slot with one sparse-dense
  matrix product; the backward pass uses the transpose. There is no Python loop over graphs,
  edges or edge types, and no re-indexing per step.
* The per-type, per-direction message weights are applied in one matrix product, either after
  the sums with the weights composed with the GRU's input matrices (lin_a(A h W) = A h (W lin_a),
  the cheaper order when there are few edge types), or before them (h W for every slot at once,
  then the sums per direction), whichever needs fewer multiply-adds.
* The T steps run inside one autograd function with a hand-written backward pass (the GRU's
  derivatives written out, weight gradients accumulated in place). It saves three tensors per
  step (the state, the sums, the gates) instead of autograd's dozen. That backward pass is used
  for first-order gradients (training); when a gradient is itself to be differentiated
  (``torch.autograd.grad(..., create_graph=True)``: a gradient penalty, a meta-learning step),
  the backward pass instead recomputes the T steps with plain differentiable operations from the
  saved inputs and differentiates those, so gradients of gradients (through the inputs and the
  weights, to any order) are those of the equations.
* tanh is computed as 2 sigmoid(2x) - 1 (the same function up to float round-off, about 2e-7):
  torch's CPU tanh measured 5-7x slower than its sigmoid.
* ``StackedGatedPropagation`` runs K independent propagation modules as one: weights stacked
  along a leading model dimension and applied with batched products, the sums over edges one
  sparse product over the block-diagonal union of the K models' graphs, the same hand-written
  backward pass with a model dimension (``_StackedGatedSteps``).
* Tested on CPU only (sparse CSR products exist on CUDA too, but no GPU was at hand).

Deviations and details (all following the authors' Lua code, github.com/yujiali/ggnn):

* Each (edge type, direction) has its own weight matrix *and bias*; the bias is added once per
  edge, so it is weighted by the node's typed degree. The paper's single bias ``b`` of Eq. 2 would
  be absorbed by the GRU biases.
* ``tie_directions=True`` is an ablation that is not in the paper: one weight per edge type for
  both directions and the two sums added (the graph is treated as undirected), which makes the
  output invariant to reversing every edge.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class PropagationPlan:
    """A graph prepared for ``GatedGraphPropagation`` (see ``GatedGraphPropagation.plan``).

    It holds index data only (no weights), so it stays valid across optimizer steps.
    """

    num_nodes: int
    slots: int  # (direction, type) slots per node
    tied: bool  # built for tied directions (with ``slots``, this fixes the layout)
    transform_first: bool  # messages h W before the sums (else the sums first)
    adj: Tensor  # CSR: sums per slot (N*slots, N), or per direction (N*dirs, N*slots)
    adj_t: Tensor  # CSR: its transpose, for the backward pass
    degree: Tensor  # (N, slots): edges per (node, slot), duplicates counted


def _csr(rows: Tensor, cols: Tensor, shape: tuple[int, int], dtype: torch.dtype) -> Tensor:
    """Sparse (rows x cols) matrix counting each (row, col) pair, in CSR form (32-bit indices
    where they fit, which the CPU kernels use without a conversion per product).

    The index arithmetic runs in numpy (on the host, for any device): its sort and its 64-bit
    integer division measured 4-8x faster than torch's on CPU, and they dominate a plan.
    """
    n_rows, n_cols = shape
    r, c = (t.cpu().numpy().astype(np.int64, copy=False) for t in (rows, cols))
    key, count = np.unique(r * n_cols + c, return_counts=True)
    row = key // n_cols  # sorted, as CSR needs
    crow = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n_rows), out=crow[1:])
    index_dtype = torch.int32 if max(n_rows + 1, n_cols, key.size) < 2**31 else torch.long

    def tensor(a: np.ndarray, dt: torch.dtype) -> Tensor:
        return torch.from_numpy(a).to(device=rows.device, dtype=dt)

    with warnings.catch_warnings():  # torch warns once that sparse CSR support is in beta
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            tensor(crow, index_dtype),
            tensor(key - row * n_cols, index_dtype),
            tensor(count, dtype),
            shape,
            check_invariants=False,
        )


def _spmm(adj: Tensor, x: Tensor) -> Tensor:
    """adj @ x for a sparse CSR adj, into fresh memory (beta=0 skips zeroing it, which
    ``adj @ x`` does, and on CPU that costs more than the product)."""
    return torch.addmm(x.new_empty(adj.shape[0], x.shape[1]), adj, x, beta=0)


def _fp32(*tensors: Tensor | None) -> tuple[Tensor | None, ...]:
    """The inputs of the hand-written propagation steps, bf16 / fp16 ones cast to float32: the
    steps run with autocast off (under ``--precision bf16`` their sparse sums have no bf16 CPU
    kernel, and their backward pass is written for one dtype), so the propagation stays fp32."""
    low = (torch.bfloat16, torch.float16)
    return tuple(t.float() if t is not None and t.dtype in low else t for t in tensors)


def _check_graph(edge_index: Tensor, edge_type: Tensor | None, num_types: int) -> None:
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be (2, E), got shape {tuple(edge_index.shape)}")
    for name, t in (("edge_index", edge_index), ("edge_type", edge_type)):
        if t is not None and (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool):
            raise TypeError(
                f"{name} must be an integer tensor (torch.long), got dtype {t.dtype}"
                + (
                    ": pass edge types as class indices, not one-hot or float"
                    if t is edge_type
                    else ""
                )
            )
    if edge_type is not None and edge_type.shape != edge_index.shape[1:]:
        raise ValueError(
            f"edge_type must be (E,) = ({edge_index.shape[1]},), got {tuple(edge_type.shape)}"
        )
    if edge_type is None and num_types != 1:
        raise ValueError(f"edge_type is required with num_edge_types={num_types}")


def build_plan(
    edge_index: Tensor,
    edge_type: Tensor | None,
    num_nodes: int,
    *,
    num_edge_types: int,
    tie_directions: bool,
    transform_first: bool,
    dtype: torch.dtype,
) -> PropagationPlan:
    """The sparse matrices of a graph for a propagation of this layout (see
    ``GatedGraphPropagation.plan``; ``StackedGatedPropagation.plan`` builds the same for the
    block-diagonal union of K models' graphs)."""
    _check_graph(edge_index, edge_type, num_edge_types)
    k, n = num_edge_types, num_nodes
    dirs = 1 if tie_directions else 2
    slots = dirs * k
    if edge_index.numel() and not 0 <= int(edge_index.min()) <= int(edge_index.max()) < n:
        raise ValueError(f"edge_index has node ids outside [0, {n})")
    if edge_type is not None and edge_type.numel():
        if not 0 <= int(edge_type.min()) <= int(edge_type.max()) < k:
            raise ValueError(f"edge_type has values outside [0, {k})")
    src, dst = edge_index[0], edge_index[1]
    etype = torch.zeros_like(src) if edge_type is None else edge_type
    # An edge u -> v of type t sends h_u to slot (v, in, t) and h_v to slot (u, out, t).
    # Tied directions share the slot (node, t).
    out_off = 0 if tie_directions else k
    receiver = torch.cat([dst, src])  # (2E,)
    sender = torch.cat([src, dst])  # (2E,): whose state each message carries
    slot = torch.cat([etype, etype + out_off])
    degree = torch.bincount(receiver * slots + slot, minlength=n * slots).to(dtype)
    if transform_first:  # rows (node, direction), columns (sender, slot) of h W
        rows, cols = receiver * dirs + slot // k, sender * slots + slot
        shape = (n * dirs, n * slots)
    else:  # rows (node, slot), columns sender
        rows, cols, shape = receiver * slots + slot, sender, (n * slots, n)
    adj = _csr(rows, cols, shape, dtype)
    # One tied edge type: adj is the symmetric (N, N) matrix A + A^T, its own transpose.
    symmetric = tie_directions and k == 1 and not transform_first
    adj_t = adj if symmetric else _csr(cols, rows, (shape[1], shape[0]), dtype)
    return PropagationPlan(
        n, slots, tie_directions, transform_first, adj, adj_t, degree.view(n, slots)
    )


class _SparseProduct(torch.autograd.Function):
    """``adj @ x`` for a sparse CSR ``adj`` (given with its transpose), differentiable in ``x`` to
    any order: the backward pass is the same product with the transpose."""

    @staticmethod
    def forward(ctx: Any, adj: Tensor, adj_t: Tensor, x: Tensor) -> Tensor:  # type: ignore[override]
        ctx.adj, ctx.adj_t = adj, adj_t
        return _spmm(adj, x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, None, Tensor]:  # type: ignore[override]
        return None, None, _SparseProduct.apply(ctx.adj_t, ctx.adj, grad.contiguous())


def _plain_steps(
    h: Tensor,
    const: Tensor,
    w_pre: Tensor | None,
    w_a: Tensor,
    u_zr: Tensor,
    u_c: Tensor,
    adj: Tensor,
    adj_t: Tensor,
    steps: int,
) -> Tensor:
    """The T steps of ``_GatedSteps`` (single model: h (N, D)) or ``_StackedGatedSteps`` (h
    (K, N, D)) with plain differentiable operations: the same function, differentiable to any
    order (used by their backward passes when a gradient is to be differentiated)."""
    d = h.shape[-1]
    for _ in range(steps):
        m = h if w_pre is None else h @ w_pre
        agg = _SparseProduct.apply(adj, adj_t, m.reshape(-1, d)).view(*h.shape[:-1], -1)
        g = const + agg @ w_a  # lin_a(a)
        zr = torch.sigmoid(g[..., : 2 * d] + h @ u_zr)  # Eq. 3, 4
        cand = torch.tanh(g[..., 2 * d :] + (zr[..., d:] * h) @ u_c)  # Eq. 5
        h = h + zr[..., :d] * (cand - h)  # Eq. 6
    return h


def _differentiable_backward(
    ctx: Any, grad: Tensor, inputs: tuple[Tensor | None, ...]
) -> tuple[Tensor | None, ...]:
    """Gradients of the T steps with respect to ``inputs`` (h, const, w_pre, w_a, u_zr, u_c) as
    differentiable functions of the inputs and of ``grad`` (the steps recomputed with plain
    operations, then ``torch.autograd.grad(..., create_graph=True)``)."""
    adj, adj_t = ctx.adj, ctx.adj_t
    with torch.enable_grad():
        out = _plain_steps(*inputs, adj, adj_t, ctx.steps)  # type: ignore[arg-type]
        wanted = [
            t for t, need in zip(inputs, ctx.needs_input_grad[:6], strict=True)
            if need and t is not None
        ]  # fmt: skip
        found = iter(torch.autograd.grad(out, wanted, grad, create_graph=True, allow_unused=True))
    grads = [
        next(found) if need and t is not None else None
        for t, need in zip(inputs, ctx.needs_input_grad[:6], strict=True)
    ]
    grads = [
        torch.zeros_like(t) if g is None and t is not None and need else g
        for g, t, need in zip(grads, inputs, ctx.needs_input_grad[:6], strict=True)
    ]
    return (*grads, None, None, None)


class _GatedSteps(torch.autograd.Function):
    """T gated steps (Eq. 2-6) with a hand-written backward pass.

    Inputs: h (N, D); const (N, 3D) GRU input biases plus message biases; w_pre (D, slots*D) the
    message weights when they come first, else None; w_a (Q, 3D) the GRU input weights applied
    to the sums (composed with the message weights when those come after); u_zr (D, 2D), u_c
    (D, D) the recurrent weights (transposed, as right factors); the plan's matrices.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        h: Tensor,
        const: Tensor,
        w_pre: Tensor | None,
        w_a: Tensor,
        u_zr: Tensor,
        u_c: Tensor,
        adj: Tensor,
        adj_t: Tensor,
        steps: int,
    ) -> Tensor:
        n, d = h.shape
        saved = []
        for _ in range(steps):
            m = h if w_pre is None else h @ w_pre  # (N, slots*D) when the weights come first
            agg = _spmm(adj, m.reshape(-1, d)).view(n, -1)  # Eq. 2 sums, (N, Q)
            g = torch.addmm(const, agg, w_a)  # lin_a(a), (N, 3D)
            zr = g[:, : 2 * d].addmm_(h, u_zr).sigmoid_()  # Eq. 3, 4
            cand = g[:, 2 * d :].addmm_(zr[:, d:] * h, u_c)  # Eq. 5, then tanh, as
            cand.mul_(2).sigmoid_().mul_(2).sub_(1)  # 2 sigmoid(2x) - 1: torch's CPU tanh is slower
            saved += [h, agg, g]
            h = torch.lerp(h, cand, zr[:, :d])  # Eq. 6: (1 - z) * h + z * h~
        ctx.save_for_backward(const, w_pre, w_a, u_zr, u_c, adj_t, *saved)
        ctx.needs_const = ctx.needs_input_grad[1]
        ctx.adj, ctx.adj_t, ctx.steps = adj, adj_t, steps
        return h

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        const, w_pre, w_a, u_zr, u_c, adj_t, *saved = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient to be differentiated
            h0 = saved[0] if saved else None
            return _differentiable_backward(ctx, grad, (h0, const, w_pre, w_a, u_zr, u_c))
        d = u_c.shape[0]
        gw_pre = None if w_pre is None else torch.zeros_like(w_pre)
        gw_a, gu_zr, gu_c = torch.zeros_like(w_a), torch.zeros_like(u_zr), torch.zeros_like(u_c)
        gconst = torch.zeros_like(saved[2]) if ctx.needs_const else None
        gh = grad.contiguous()
        for i in range(len(saved) // 3 - 1, -1, -1):
            h, agg, g = saved[3 * i : 3 * i + 3]
            n = h.shape[0]
            z, r, cand = g[:, :d], g[:, d : 2 * d], g[:, 2 * d :]
            dg = torch.empty_like(g)  # d loss / d (pre-activations of z, r, h~)
            dcand = gh * z
            dh = gh - dcand  # Eq. 6, through (1 - z) * h
            torch.ops.aten.sigmoid_backward(gh * (cand - h), z, grad_input=dg[:, :d])  # Eq. 3
            torch.ops.aten.tanh_backward(dcand, cand, grad_input=dg[:, 2 * d :])  # Eq. 5
            gu_c.addmm_((r * h).t(), dg[:, 2 * d :])
            drh = dg[:, 2 * d :] @ u_c.t()  # d loss / d (r * h)
            dh.addcmul_(drh, r)
            torch.ops.aten.sigmoid_backward(drh * h, r, grad_input=dg[:, d : 2 * d])  # Eq. 4
            gu_zr.addmm_(h.t(), dg[:, : 2 * d])
            dh.addmm_(dg[:, : 2 * d], u_zr.t())
            gw_a.addmm_(agg.t(), dg)
            if gconst is not None:
                gconst += dg
            dagg = (dg @ w_a.t()).view(-1, d)  # Eq. 2: back through the sums
            if w_pre is None:
                dh.addmm_(adj_t, dagg)
            else:
                dm = _spmm(adj_t, dagg).view(n, -1)  # (N, slots*D)
                gw_pre.addmm_(h.t(), dm)  # type: ignore[union-attr]
                dh.addmm_(dm, w_pre.t())
            gh = dh
        return gh, gconst, gw_pre, gw_a, gu_zr, gu_c, None, None, None


class GatedGraphPropagation(nn.Module):
    """The GG-NN propagation model: ``num_steps`` gated updates with weights tied across steps.

    Eq. 1: h_v(0) = [x_v ; 0]  (annotations zero-padded to ``state_dim``)
    Eq. 2: a_v = [sum_{(u->v) of type k} W_k h_u + b_k ; sum_{(v->u) of type k} W'_k h_u + b'_k]
    Eq. 3-6 (GRU): z = sigma(W_z a + U_z h), r = sigma(W_r a + U_r h),
                   h~ = tanh(W a + U (r * h)), h <- (1 - z) * h + z * h~

    Args:
        state_dim: D, size of the node states.
        annotation_dim: A <= D, size of the node annotations ``x``.
        num_edge_types: K.
        num_steps: T, propagation steps (default of ``forward``).
        tie_directions: share W_k between incoming and outgoing messages and add them (ablation).
        edge_bias: per (type, direction) message bias, weighted by degree (the official code).

    Shapes:
        x: (N, A); edge_index: (2, E); edge_type: (E,) -> (N, D)

    ``forward(..., plan=self.plan(edge_index, edge_type, N))`` skips building the graph's sparse
    matrices (edge_index and edge_type are then not read). ``forward(data)`` takes a PyG-style
    graph object instead (attributes ``x``, ``edge_index`` and ``edge_type`` or ``edge_attr``;
    see ``graph_inputs``). The backward pass is written by hand for first-order gradients;
    gradients of gradients take a plain-autograd path (see the module docstring).
    """

    def __init__(
        self,
        *,
        state_dim: int,
        annotation_dim: int,
        num_edge_types: int,
        num_steps: int = 5,
        tie_directions: bool = False,
        edge_bias: bool = True,
    ) -> None:
        super().__init__()
        if annotation_dim > state_dim:
            raise ValueError(f"annotation_dim {annotation_dim} exceeds state_dim {state_dim}")
        if num_edge_types < 1 or num_steps < 0:
            raise ValueError("need num_edge_types >= 1 and num_steps >= 0")
        self.state_dim = state_dim
        self.annotation_dim = annotation_dim
        self.num_edge_types = num_edge_types
        self.num_steps = num_steps
        self.tie_directions = tie_directions
        d, k = state_dim, num_edge_types
        n_dir = 1 if tie_directions else 2
        # weight[dir, type] maps a neighbour's state to a message: (D_in, D_out).
        self.weight = nn.Parameter(torch.empty(n_dir, k, d, d))
        self.bias = nn.Parameter(torch.empty(n_dir, k, d)) if edge_bias else None
        a_dim = d if tie_directions else 2 * d
        self.lin_a = nn.Linear(a_dim, 3 * d)  # W_z, W_r, W applied to a (with the GRU biases)
        self.lin_h_zr = nn.Linear(d, 2 * d, bias=False)  # U_z, U_r
        self.lin_h_c = nn.Linear(d, d, bias=False)  # U
        # Messages before the sums when that needs fewer multiply-adds per node: slots*D*D for
        # h W plus |a|*3D for lin_a, against slots*D*3D for the sums through W composed with lin_a.
        slots = n_dir * k
        self.transform_first = slots * d + a_dim * 3 < slots * 3 * d
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform(+-1/sqrt(fan_in)) as torch's nn.Linear, with the fan-ins of the authors' code.

        Messages: fan-in D. GRU: the authors apply one linear layer to the concatenation
        [a_in, a_out, h], so every GRU matrix and bias gets fan-in 3D (2D with tied directions).
        """
        d = self.state_dim
        bound = 1.0 / math.sqrt(d)
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)
        gru_bound = 1.0 / math.sqrt(self.lin_a.in_features + d)
        for p in (self.lin_a.weight, self.lin_a.bias, self.lin_h_zr.weight, self.lin_h_c.weight):
            nn.init.uniform_(p, -gru_bound, gru_bound)

    @property
    def slots(self) -> int:
        """(direction, type) slots a node's messages are summed in."""
        return self.weight.shape[0] * self.num_edge_types

    def plan(self, edge_index: Tensor, edge_type: Tensor | None, num_nodes: int) -> PropagationPlan:
        """The sparse matrices of a graph, for ``forward(..., plan=...)``.

        They depend on the graph and on this module's layout (edge types, tied directions), not
        on the weights: a plan may be built once per graph and reused for every step of training
        (a GGS-NN also reuses it for each of its outputs).
        """
        return build_plan(
            edge_index,
            edge_type,
            num_nodes,
            num_edge_types=self.num_edge_types,
            tie_directions=self.tie_directions,
            transform_first=self.transform_first,
            dtype=self.weight.dtype,
        )

    def _weights(self, plan: PropagationPlan) -> tuple[Tensor | None, Tensor, Tensor]:
        """w_pre (D, slots*D) or None, w_a (Q, 3D) and const (N, 3D) for ``_GatedSteps``."""
        d, slots = self.state_dim, self.slots
        wa = self.lin_a.weight  # (3D, D) tied, (3D, 2D) otherwise: columns [a_in | a_out]
        # Message weights mapped through the GRU input weights, stacked by slot: (slots, D, 3D)
        # and the same for the biases: (slots, 3D). Slot = direction * K + type.
        wa_dir = wa.t().reshape(-1, d, 3 * d)  # (dirs, D, 3D)
        if self.transform_first:
            w_pre = self.weight.reshape(slots, d, d).permute(1, 0, 2).reshape(d, slots * d)
            w_a = wa.t()  # (dirs*D, 3D)
        else:
            w_pre = None
            w_a = (self.weight @ wa_dir.unsqueeze(1)).reshape(slots * d, 3 * d)
        const = self.lin_a.bias.expand(plan.num_nodes, 3 * d)  # GRU input biases
        if self.bias is not None:  # degree-weighted message biases, fixed across steps
            bias_a = (self.bias.unsqueeze(2) @ wa_dir.unsqueeze(1)).reshape(slots, 3 * d)
            const = torch.addmm(const, plan.degree, bias_a)  # (N, 3D)
        return w_pre, w_a, const.contiguous()

    def forward(
        self,
        x: Tensor | Any,
        edge_index: Tensor | None = None,
        edge_type: Tensor | None = None,
        *,
        num_steps: int | None = None,
        plan: PropagationPlan | None = None,
    ) -> Tensor:
        if not isinstance(x, Tensor):  # a PyG-style Data / Batch
            x, edge_index, edge_type, _, _ = graph_inputs(x, edge_index, edge_type)
        if x.dim() != 2:
            raise ValueError(f"x must be (num_nodes, features), got shape {tuple(x.shape)}")
        if x.shape[1] != self.annotation_dim:
            raise ValueError(f"x has {x.shape[1]} features, expected {self.annotation_dim}")
        n, steps = x.shape[0], self.num_steps if num_steps is None else num_steps
        if plan is None:
            if edge_index is None:
                raise ValueError("edge_index is required (or a plan)")
            plan = self.plan(edge_index, edge_type, n)
        elif (plan.num_nodes, plan.slots, plan.tied) != (n, self.slots, self.tie_directions):
            raise ValueError(
                f"the plan is for {plan.num_nodes} nodes, {plan.slots} slots, tied={plan.tied}; "
                f"x has {n} nodes, this module {self.slots} slots, tied={self.tie_directions}"
            )
        h = F.pad(x, (0, self.state_dim - self.annotation_dim))  # Eq. 1, (N, D)
        if steps == 0:
            return h
        w_pre, w_a, const = self._weights(plan)
        u_zr, u_c = self.lin_h_zr.weight.t(), self.lin_h_c.weight.t()
        args = _fp32(h, const, w_pre, w_a, u_zr, u_c)
        with torch.autocast(h.device.type, enabled=False):  # see _fp32
            out = _GatedSteps.apply(*args, plan.adj, plan.adj_t, steps)
        return out  # type: ignore[no-any-return]

    def extra_repr(self) -> str:
        return (
            f"state_dim={self.state_dim}, annotation_dim={self.annotation_dim}, "
            f"num_edge_types={self.num_edge_types}, num_steps={self.num_steps}, "
            f"tie_directions={self.tie_directions}, edge_bias={self.bias is not None}"
        )


class _StackedGatedSteps(torch.autograd.Function):
    """``_GatedSteps`` of K independent models at once: every tensor but the plan's matrices has
    a leading model dimension, the weights are applied with batched products (``bmm``), and the
    sums over edges, which hold no weights, are one sparse product over the block-diagonal union
    of the K models' graphs (model k's nodes are rows k*N ... (k+1)*N - 1).

    Inputs: h (K, N, D); const (K, N, 3D); w_pre (K, D, slots*D) or None; w_a (K, Q, 3D);
    u_zr (K, D, 2D); u_c (K, D, D); the union plan's matrices.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        h: Tensor,
        const: Tensor,
        w_pre: Tensor | None,
        w_a: Tensor,
        u_zr: Tensor,
        u_c: Tensor,
        adj: Tensor,
        adj_t: Tensor,
        steps: int,
    ) -> Tensor:
        k, n, d = h.shape
        saved = []
        for _ in range(steps):
            m = h if w_pre is None else torch.bmm(h, w_pre)  # (K, N, slots*D) weights first
            agg = _spmm(adj, m.reshape(-1, d)).view(k, n, -1)  # Eq. 2 sums, (K, N, Q)
            g = torch.baddbmm(const, agg, w_a)  # lin_a(a), (K, N, 3D)
            zr = g[..., : 2 * d].add_(torch.bmm(h, u_zr)).sigmoid_()  # Eq. 3, 4
            cand = g[..., 2 * d :].add_(torch.bmm(zr[..., d:] * h, u_c))  # Eq. 5, then tanh
            cand.mul_(2).sigmoid_().mul_(2).sub_(1)  # as 2 sigmoid(2x) - 1 (see _GatedSteps)
            saved += [h, agg, g]
            h = torch.lerp(h, cand, zr[..., :d])  # Eq. 6: (1 - z) * h + z * h~
        ctx.save_for_backward(const, w_pre, w_a, u_zr, u_c, adj_t, *saved)
        ctx.needs_const = ctx.needs_input_grad[1]
        ctx.adj, ctx.adj_t, ctx.steps = adj, adj_t, steps
        return h

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        const, w_pre, w_a, u_zr, u_c, adj_t, *saved = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: see _GatedSteps.backward
            h0 = saved[0] if saved else None
            return _differentiable_backward(ctx, grad, (h0, const, w_pre, w_a, u_zr, u_c))
        d = u_c.shape[-1]
        gw_pre = None if w_pre is None else torch.zeros_like(w_pre)
        gw_a, gu_zr, gu_c = torch.zeros_like(w_a), torch.zeros_like(u_zr), torch.zeros_like(u_c)
        gconst = torch.zeros_like(saved[2]) if ctx.needs_const else None
        gh = grad.contiguous()
        w_a_t, u_zr_t, u_c_t = w_a.transpose(1, 2), u_zr.transpose(1, 2), u_c.transpose(1, 2)
        for i in range(len(saved) // 3 - 1, -1, -1):
            h, agg, g = saved[3 * i : 3 * i + 3]
            k, n = h.shape[:2]
            z, r, cand = g[..., :d], g[..., d : 2 * d], g[..., 2 * d :]
            dg = torch.empty_like(g)  # d loss / d (pre-activations of z, r, h~)
            dcand = gh * z
            dh = gh - dcand  # Eq. 6, through (1 - z) * h
            torch.ops.aten.sigmoid_backward(gh * (cand - h), z, grad_input=dg[..., :d])  # Eq. 3
            torch.ops.aten.tanh_backward(dcand, cand, grad_input=dg[..., 2 * d :])  # Eq. 5
            gu_c.baddbmm_((r * h).transpose(1, 2), dg[..., 2 * d :])
            drh = torch.bmm(dg[..., 2 * d :], u_c_t)  # d loss / d (r * h)
            dh.addcmul_(drh, r)
            torch.ops.aten.sigmoid_backward(drh * h, r, grad_input=dg[..., d : 2 * d])  # Eq. 4
            gu_zr.baddbmm_(h.transpose(1, 2), dg[..., : 2 * d])
            dh.baddbmm_(dg[..., : 2 * d], u_zr_t)
            gw_a.baddbmm_(agg.transpose(1, 2), dg)
            if gconst is not None:
                gconst += dg
            dagg = torch.bmm(dg, w_a_t).view(-1, d)  # Eq. 2: back through the sums
            if w_pre is None:
                dh.view(k * n, d).addmm_(adj_t, dagg)
            else:
                dm = _spmm(adj_t, dagg).view(k, n, -1)  # (K, N, slots*D)
                gw_pre.baddbmm_(h.transpose(1, 2), dm)  # type: ignore[union-attr]
                dh.baddbmm_(dm, w_pre.transpose(1, 2))
            gh = dh
        return gh, gconst, gw_pre, gw_a, gu_zr, gu_c, None, None, None


class StackedGatedPropagation(nn.Module):
    """K independent ``GatedGraphPropagation`` modules evaluated as one (stacked weights,
    batched products), so that training K small models costs about one model's per-operation
    overhead (the GG-NN's restarts, ``paperzoo.models.ggnn.StackedGatedGraphNet``).

    Every parameter is the K modules' parameter of the same name stacked along a new leading
    dimension (``lin_a.weight`` becomes ``lin_a_weight``, (K, 3D, Q)), so an element-wise
    optimiser or gradient clamping on them is K independent ones. The K models' graphs are laid
    out as one block per model: model k's nodes are rows k*N ... (k+1)*N - 1 of the union, whose
    sums over edges are one sparse product (``plan``); model k computes what ``modules[k]``
    computes on its block, up to float round-off.

    Args:
        modules: the K propagation modules (same sizes, edge types, steps and layout); their
            current weights are copied (their own initialisations).

    Shapes:
        x: (K, N, A); plan: of the union graph, K*N nodes -> (K, N, D)
    """

    def __init__(self, *, modules: Sequence[GatedGraphPropagation]) -> None:
        super().__init__()
        if not modules:
            raise ValueError("modules must not be empty")
        first = modules[0]
        for m in modules:
            if m.extra_repr() != first.extra_repr() or m.transform_first != first.transform_first:
                raise ValueError("stacked propagation modules must share sizes and layout")
        self.state_dim = first.state_dim
        self.annotation_dim = first.annotation_dim
        self.num_edge_types = first.num_edge_types
        self.num_steps = first.num_steps
        self.tie_directions = first.tie_directions
        self.transform_first = first.transform_first

        def stack(get: Callable[[GatedGraphPropagation], Tensor]) -> nn.Parameter:
            return nn.Parameter(torch.stack([get(m).detach().clone() for m in modules]))

        self.weight = stack(lambda m: m.weight)  # (K, dirs, types, D, D)
        self.bias = None if first.bias is None else stack(lambda m: m.bias)  # (K, dirs, types, D)
        self.lin_a_weight = stack(lambda m: m.lin_a.weight)  # (K, 3D, Q)
        self.lin_a_bias = stack(lambda m: m.lin_a.bias)  # (K, 3D)
        self.lin_h_zr_weight = stack(lambda m: m.lin_h_zr.weight)  # (K, 2D, D)
        self.lin_h_c_weight = stack(lambda m: m.lin_h_c.weight)  # (K, D, D)

    @property
    def num_models(self) -> int:
        return self.weight.shape[0]

    @property
    def slots(self) -> int:
        return self.weight.shape[1] * self.num_edge_types

    def plan(self, edge_index: Tensor, edge_type: Tensor | None, num_nodes: int) -> PropagationPlan:
        """The sparse matrices of the union graph (all K blocks, ``num_nodes`` = K*N nodes)."""
        return build_plan(
            edge_index,
            edge_type,
            num_nodes,
            num_edge_types=self.num_edge_types,
            tie_directions=self.tie_directions,
            transform_first=self.transform_first,
            dtype=self.weight.dtype,
        )

    def _weights(self, plan: PropagationPlan, n: int) -> tuple[Tensor | None, Tensor, Tensor]:
        """``GatedGraphPropagation._weights`` per model: w_pre (K, D, slots*D) or None,
        w_a (K, Q, 3D) and const (K, N, 3D)."""
        k, d, slots = self.num_models, self.state_dim, self.slots
        wa_t = self.lin_a_weight.transpose(1, 2)  # (K, Q, 3D): rows [a_in | a_out]
        wa_dir = wa_t.reshape(k, -1, d, 3 * d)  # (K, dirs, D, 3D)
        if self.transform_first:
            w_pre = self.weight.reshape(k, slots, d, d).permute(0, 2, 1, 3).reshape(k, d, -1)
            w_a = wa_t
        else:
            w_pre = None
            w_a = (self.weight @ wa_dir.unsqueeze(2)).reshape(k, slots * d, 3 * d)
        const = self.lin_a_bias.unsqueeze(1).expand(k, n, 3 * d)  # GRU input biases
        if self.bias is not None:  # degree-weighted message biases, fixed across steps
            bias_a = (self.bias.unsqueeze(3) @ wa_dir.unsqueeze(2)).reshape(k, slots, 3 * d)
            const = torch.baddbmm(const, plan.degree.view(k, n, slots), bias_a)  # (K, N, 3D)
        return w_pre, w_a, const.contiguous()

    def forward(self, x: Tensor, plan: PropagationPlan, *, num_steps: int | None = None) -> Tensor:
        if x.dim() != 3 or x.shape[0] != self.num_models or x.shape[2] != self.annotation_dim:
            raise ValueError(
                f"x must be (K={self.num_models}, N, {self.annotation_dim}), "
                f"got shape {tuple(x.shape)}"
            )
        k, n = x.shape[:2]
        if (plan.num_nodes, plan.slots, plan.tied) != (k * n, self.slots, self.tie_directions):
            raise ValueError(
                f"the plan is for {plan.num_nodes} nodes, {plan.slots} slots, tied={plan.tied}; "
                f"x has {k} x {n} nodes, this module {self.slots} slots, "
                f"tied={self.tie_directions}"
            )
        steps = self.num_steps if num_steps is None else num_steps
        h = F.pad(x, (0, self.state_dim - self.annotation_dim))  # Eq. 1, (K, N, D)
        if steps == 0:
            return h
        w_pre, w_a, const = self._weights(plan, n)
        u_zr, u_c = self.lin_h_zr_weight.transpose(1, 2), self.lin_h_c_weight.transpose(1, 2)
        args = _fp32(h, const, w_pre, w_a, u_zr, u_c)
        with torch.autocast(h.device.type, enabled=False):  # see _fp32
            out = _StackedGatedSteps.apply(*args, plan.adj, plan.adj_t, steps)
        return out  # type: ignore[no-any-return]

    def unstacked(self, index: int, into: GatedGraphPropagation) -> GatedGraphPropagation:
        """Copy model ``index``'s weights into ``into`` (a module of the same sizes); returns it."""
        with torch.no_grad():
            into.weight.copy_(self.weight[index])
            if self.bias is not None and into.bias is not None:
                into.bias.copy_(self.bias[index])
            into.lin_a.weight.copy_(self.lin_a_weight[index])
            into.lin_a.bias.copy_(self.lin_a_bias[index])
            into.lin_h_zr.weight.copy_(self.lin_h_zr_weight[index])
            into.lin_h_c.weight.copy_(self.lin_h_c_weight[index])
        return into


def graph_inputs(
    data: Any, edge_index: Tensor | None = None, edge_type: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, int | None]:
    """``(x, edge_index, edge_type, batch, num_graphs)`` of a PyG-style ``Data`` / ``Batch``.

    Read by duck typing (no PyG dependency): ``data.x`` and ``data.edge_index`` are required;
    the edge types come from ``data.edge_type`` or else ``data.edge_attr``, either as (E,)
    integer types or as (E, K) one-hot rows (converted to indices; anything else is refused
    naming ``edge_attr``); ``batch`` and ``num_graphs`` when present (a ``Batch``). An argument
    passed explicitly alongside ``data`` is refused rather than silently ignored.
    """
    if edge_index is not None or edge_type is not None:
        raise TypeError("pass either a graph object or tensors (x, edge_index, edge_type)")
    x = getattr(data, "x", None)
    ei = getattr(data, "edge_index", None)
    if not isinstance(x, Tensor) or not isinstance(ei, Tensor):
        raise TypeError(
            f"expected node features x (a Tensor) or a graph object with tensors .x and "
            f".edge_index, got {type(data).__name__}"
        )
    et = getattr(data, "edge_type", None)
    if et is None:
        attr = getattr(data, "edge_attr", None)
        if attr is not None:
            if attr.dim() == 2 and attr.shape[0] == ei.shape[1]:
                ones = (attr == 1).sum(1) == 1
                if not bool(((attr == 0) | (attr == 1)).all() and ones.all()):
                    raise ValueError(
                        "edge_attr (E, K) must be one-hot edge types (one 1 per row) to be read "
                        "as edge types; pass edge_type (E,) integers instead"
                    )
                et = attr.argmax(1)
            elif attr.dim() == 1 and not attr.is_floating_point():
                et = attr
            else:
                raise ValueError(
                    f"edge_attr of shape {tuple(attr.shape)} and dtype {attr.dtype} is not edge "
                    "types: give (E,) integer types or (E, K) one-hot rows, or set edge_type"
                )
    batch = getattr(data, "batch", None)
    num_graphs = getattr(data, "num_graphs", None)
    return x, ei, et, batch, None if num_graphs is None else int(num_graphs)


class GatedReadout(nn.Module):
    """Graph-level representation by soft attention (Eq. 7).

    h_G = tanh( sum_v sigmoid(i([h_v, x_v])) * tanh(j([h_v, x_v])) )

    Args:
        in_dim: size of [h_v, x_v].
        out_dim: size of h_G.

    Shapes:
        hx: (N, in_dim); batch: (N,) -> (num_graphs, out_dim)
    """

    def __init__(self, *, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.out_dim = out_dim
        self.lin = nn.Linear(in_dim, 2 * out_dim)  # i and j in one matrix

    def forward(self, hx: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        act = self.lin(hx)
        gated = torch.sigmoid(act[:, : self.out_dim]) * torch.tanh(act[:, self.out_dim :])
        return torch.tanh(global_add_pool(gated, batch, num_graphs))


def global_add_pool(values: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
    """Sum node values per graph.

    Shapes:
        values: (N, F); batch: (N,) -> (num_graphs, F)
    """
    return values.new_zeros(num_graphs, *values.shape[1:]).index_add_(0, batch, values)


def to_dense_batch(
    values: Tensor, batch: Tensor, num_graphs: int, *, fill: float = 0.0
) -> tuple[Tensor, Tensor]:
    """Scatter per-node values into a padded (graph, position) array.

    ``batch`` must be sorted (nodes of a graph contiguous), as batching produces it.

    Returns:
        (dense, mask): ``dense[g, i]`` is the value of the i-th node of graph g, ``mask`` marks
        real nodes.

    Shapes:
        values: (N, ...); batch: (N,) -> (num_graphs, max_nodes, ...), (num_graphs, max_nodes)
    """
    counts = torch.bincount(batch, minlength=num_graphs)  # (B,)
    max_nodes = int(counts.max()) if counts.numel() else 0
    starts = torch.cumsum(counts, 0) - counts  # first node of each graph
    pos = torch.arange(batch.shape[0], device=batch.device) - starts[batch]
    dense = values.new_full((num_graphs, max_nodes, *values.shape[1:]), fill)
    dense[batch, pos] = values
    mask = torch.zeros(num_graphs, max_nodes, dtype=torch.bool, device=batch.device)
    mask[batch, pos] = True
    return dense, mask


def reverse_edges(edge_index: Tensor) -> Tensor:
    """Swap source and destination of every edge. Shapes: (2, E) -> (2, E)."""
    return edge_index.flip(0)
