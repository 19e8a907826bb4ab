"""Gated graph propagation (Li, Tarlow, Brockschmidt & Zemel, ICLR 2016, "Gated Graph Sequence
Neural Networks", arXiv:1511.05493, Sec. 3).

Graph convention (PyG's): node features ``x`` (N, F); ``edge_index`` (2, E) with row 0 the
source and row 1 the destination of each directed edge; ``edge_type`` (E,) in
``[0, num_edge_types)``; many graphs are batched into one by offsetting node ids, and ``batch``
(N,) says which graph each node belongs to.

Message passing is fully batched: each step gathers the state of every edge end point with one
``index_select`` and sums them per (node, direction, edge type) slot with one ``index_add_``; one
matrix multiplication then applies every type's and direction's weight at once (composed with the
GRU's input matrices, which is algebraically the same as forming ``a`` first). There is no Python
loop over graphs, edges or edge types.

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
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class PropagationPlan:
    """What ``GatedGraphPropagation`` precomputes for a graph (see ``GatedGraphPropagation.plan``)."""

    num_nodes: int
    slots: int  # (direction, type) slots per node
    index: Tensor  # (2E,) slot receiving each message
    gather: Tensor  # (2E,) node whose state each message carries
    w: Tensor  # message weights (fused with the GRU input weights when ``wa`` is None)
    wa: Tensor | None  # GRU input weights per direction, when not fused
    const: Tensor  # (N, 3D) GRU input biases plus degree-weighted message biases


def _check_graph(x: Tensor, edge_index: Tensor, edge_type: Tensor | None, num_types: int) -> None:
    if x.dim() != 2:
        raise ValueError(f"x must be (num_nodes, features), got shape {tuple(x.shape)}")
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be (2, E), got shape {tuple(edge_index.shape)}")
    if edge_type is not None and edge_type.shape != edge_index.shape[1:]:
        raise ValueError(
            f"edge_type must be (E,) = ({edge_index.shape[1]},), got {tuple(edge_type.shape)}"
        )
    if edge_type is None and num_types != 1:
        raise ValueError(f"edge_type is required with num_edge_types={num_types}")


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

    def _fused_input(self) -> Tensor:
        """The message weights composed with the GRU's input matrices: (slots*D, 3D)."""
        d, k = self.state_dim, self.num_edge_types
        wa = self.lin_a.weight  # (3D, D) tied, (3D, 2D) otherwise: columns [a_in | a_out]
        if self.tie_directions:
            return self.weight[0].reshape(k * d, d) @ wa.t()  # (K*D, 3D)
        w_in = self.weight[0].reshape(k * d, d) @ wa[:, :d].t()  # types stacked along rows
        w_out = self.weight[1].reshape(k * d, d) @ wa[:, d:].t()
        return torch.cat([w_in, w_out])  # (2*K*D, 3D)

    def plan(self, edge_index: Tensor, edge_type: Tensor | None, num_nodes: int) -> PropagationPlan:
        """Index tensors of a graph and the weights derived from the parameters.

        A GGS-NN propagates over the same graph once per output; building the plan once per
        forward pass saves that work. The plan is part of the autograd graph of the forward pass
        that built it: do not reuse it after an optimizer step.
        """
        k, d, n = self.num_edge_types, self.state_dim, num_nodes
        src, dst = edge_index[0], edge_index[1]
        etype = torch.zeros_like(src) if edge_type is None else edge_type
        # Every message lands in a slot (node, direction, type): an edge u -> v of type t sends
        # h_u to (v, in, t) and h_v to (u, out, t). Tied directions share the slot (node, t).
        slots = k if self.tie_directions else 2 * k
        out_off = 0 if self.tie_directions else k
        index = torch.cat([dst * slots + etype, src * slots + out_off + etype])  # (2E,)
        gather = torch.cat([src, dst])  # (2E,): whose state each message carries
        # a reaches the GRU only through lin_a(a); with one edge type it is cheaper to fold the
        # message weights into lin_a (lin_a(A h W) = A h (W lin_a)), otherwise to apply them
        # first (fewer multiply-adds: slots*D*3D against slots*D*D + |a|*3D).
        fused = slots * 3 * d <= slots * d + self.lin_a.in_features * 3
        if fused:
            w, wa = self._fused_input(), None  # (slots*D, 3D)
        else:
            w = self.weight.reshape(-1, k * d, d)  # (dirs, K*D, D)
            wa = self.lin_a.weight.t().reshape(-1, d, 3 * d)  # (dirs, D, 3D)
        const = self.lin_a.bias.expand(n, 3 * d)  # GRU input biases
        if self.bias is not None:  # degree-weighted message biases, fixed across steps
            ones = self.weight.new_ones(index.shape[0])
            deg = self.weight.new_zeros(n * slots).index_add_(0, index, ones)
            const = const + deg.view(n, slots) @ self._bias_input()  # (N, 3D)
        return PropagationPlan(n, slots, index, gather, w, wa, const)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_type: Tensor | None = None,
        *,
        num_steps: int | None = None,
        plan: PropagationPlan | None = None,
    ) -> Tensor:
        k, d = self.num_edge_types, self.state_dim
        _check_graph(x, edge_index, edge_type, k)
        if x.shape[1] != self.annotation_dim:
            raise ValueError(f"x has {x.shape[1]} features, expected {self.annotation_dim}")
        n, steps = x.shape[0], self.num_steps if num_steps is None else num_steps
        if plan is None:
            plan = self.plan(edge_index, edge_type, n)
        elif plan.num_nodes != n:
            raise ValueError(f"the plan is for {plan.num_nodes} nodes, x has {n}")
        h = F.pad(x, (0, d - self.annotation_dim))  # Eq. 1, (N, D)
        for _ in range(steps):  # weights tied over the T steps
            # Eq. 2: sums of neighbour states per (node, direction, type) slot, then the weights.
            agg = h.new_zeros(n * plan.slots, d)
            agg = agg.index_add_(0, plan.index, h.index_select(0, plan.gather))
            if plan.wa is None:
                pa = torch.addmm(plan.const, agg.view(n, plan.slots * d), plan.w)  # lin_a(a)
            else:
                agg = agg.view(n, -1, k * d).transpose(0, 1)  # (dirs, N, K*D)
                a = torch.bmm(agg, plan.w)  # (dirs, N, D): [a_in, a_out]
                pa = plan.const + torch.bmm(a, plan.wa).sum(0)  # (N, 3D) = lin_a(a)
            zr = torch.sigmoid(pa[:, : 2 * d] + self.lin_h_zr(h))  # Eq. 3, 4
            z, r = zr[:, :d], zr[:, d:]
            cand = torch.tanh(pa[:, 2 * d :] + self.lin_h_c(r * h))  # Eq. 5
            h = h + z * (cand - h)  # Eq. 6: (1 - z) * h + z * h~
        return h

    def _bias_input(self) -> Tensor:
        """Message biases mapped through the GRU input weights: (slots, 3D)."""
        d = self.state_dim
        wa = self.lin_a.weight
        assert self.bias is not None
        if self.tie_directions:
            return self.bias[0] @ wa.t()  # (K, 3D)
        return torch.cat([self.bias[0] @ wa[:, :d].t(), self.bias[1] @ wa[:, d:].t()])

    def extra_repr(self) -> str:
        return (
            f"state_dim={self.state_dim}, annotation_dim={self.annotation_dim}, "
            f"num_edge_types={self.num_edge_types}, num_steps={self.num_steps}, "
            f"tie_directions={self.tie_directions}, edge_bias={self.bias is not None}"
        )


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
