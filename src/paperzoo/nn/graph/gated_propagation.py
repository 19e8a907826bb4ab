"""Gated graph propagation (Li, Tarlow, Brockschmidt & Zemel, ICLR 2016, "Gated Graph Sequence
Neural Networks", arXiv:1511.05493, Sec. 3): ``GatedGraphPropagation``.

How it is computed (the function is that of the equations; only the order of operations differs):

* The graph becomes one sparse CSR matrix and its transpose (``plan``), built once per graph; each
  step's sums over edges are one sparse-dense product (``paperzoo.nn.graph.plan``). There is no
  Python loop over graphs, edges or edge types, and no re-indexing per step.
* The per-type, per-direction message weights are applied in one matrix product, either after
  the sums with the weights composed with the GRU's input matrices (lin_a(A h W) = A h (W lin_a),
  the cheaper order when there are few edge types), or before them (h W for every slot at once,
  then the sums per direction), whichever needs fewer multiply-adds.
* The T steps run inside one autograd function with a hand-written backward pass; gradients of
  gradients take a plain-autograd path (``paperzoo.nn.graph._steps``).
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
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.nn.graph._steps import _fp32, _GatedSteps
from paperzoo.nn.graph.plan import PropagationPlan, build_plan
from paperzoo.nn.graph.utils import graph_inputs


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
