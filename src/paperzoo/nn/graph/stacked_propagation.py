"""K independent gated graph propagations evaluated as one (Li et al., ICLR 2016, Sec. 3):
``StackedGatedPropagation``, weights stacked along a leading model dimension and applied with
batched products, the sums over edges one sparse product over the block-diagonal union of the K
models' graphs, the same hand-written backward pass with a model dimension
(``paperzoo.nn.graph._steps._StackedGatedSteps``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.nn.graph._steps import _fp32, _StackedGatedSteps
from paperzoo.nn.graph.gated_propagation import GatedGraphPropagation
from paperzoo.nn.graph.plan import PropagationPlan, build_plan


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
