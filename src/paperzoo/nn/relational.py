"""Relation-network scoring of PGM candidates (Santoro et al. 2017; Barrett et al. 2018, WReN).

For each candidate k, the 8 context embeddings and the candidate's embedding form 9 panels, each
tagged with a one-hot of its position (0-7 context, 8 the candidate). Eq. 1 of the relation
network: s_k = f_phi(sum_{i, j} g_theta([x_i, x_j])) over all 81 ordered pairs (i = j included,
as in disentanglement_lib's OptimizedWildRelNet); the logits of the 6 candidates are then
compared by a softmax.

The 64 context-context pairs are the same for every candidate, so g_theta is evaluated on them
once per puzzle and only on the 17 pairs that involve candidate k per candidate (166 instead of
486 pair evaluations); and the first layer of g_theta is split into its two halves, so
W [x_i; x_j] = W_1 x_i + W_2 x_j is computed per panel, not per pair. Both are exact.
Each candidate's score depends only on the context and that candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn


def _mlp(dims: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


class RelationalScorer(nn.Module):
    """Scores candidates: context (B, 8, D) and answers (B, K, D) -> logits (B, K).

    Args:
        embed_dim: D, the panel embedding size.
        edge_mlp: widths of g_theta (ReLU after each layer).
        graph_mlp: widths of f_phi before its final linear layer to one score.
        dropout: dropout rate before that final layer (one mask shared by the batch and the
            candidates, as in the study's code); 0 disables it.
        num_context: number of context panels (8 for 3 x 3 puzzles).
    """

    def __init__(
        self,
        *,
        embed_dim: int,
        edge_mlp: Sequence[int] = (512, 512, 512, 512),
        graph_mlp: Sequence[int] = (256, 256),
        dropout: float = 0.5,
        num_context: int = 8,
    ) -> None:
        super().__init__()
        self.num_context = num_context
        d = embed_dim + num_context + 1  # embedding + one-hot position
        self.first_i = nn.Linear(d, edge_mlp[0])  # W_1 (with the layer's bias)
        self.first_j = nn.Linear(d, edge_mlp[0], bias=False)  # W_2
        self.edge_rest = _mlp(list(edge_mlp))
        self.graph = _mlp([edge_mlp[-1], *graph_mlp])
        self.dropout = dropout
        self.out = nn.Linear(graph_mlp[-1], 1)

    def _tag(self, x: Tensor, position: int | None) -> Tensor:
        """Append one-hot positions: x (B, N, D) -> (B, N, D + 9)."""
        b, n, _ = x.shape
        p = self.num_context + 1
        if position is None:
            pos = torch.eye(p, device=x.device, dtype=x.dtype)[:n].expand(b, n, p)
        else:
            pos = torch.zeros(b, n, p, device=x.device, dtype=x.dtype)
            pos[..., position] = 1.0
        return torch.cat([x, pos], dim=-1)

    def _edges(self, left: Tensor, right: Tensor) -> Tensor:
        """g_theta of every pair (left_i, right_j), summed over pairs. (..., I, H) x (..., J, H) -> (..., H_out)."""
        h = torch.relu(left.unsqueeze(-2) + right.unsqueeze(-3))  # (..., I, J, H): first layer
        return self.edge_rest(h).sum(dim=(-3, -2))

    def forward(self, context: Tensor, answers: Tensor) -> Tensor:
        ctx = self._tag(context, None)  # (B, 8, D + 9), positions 0..7
        ans = self._tag(answers, self.num_context)  # (B, K, D + 9), position 8
        ci, cj = self.first_i(ctx), self.first_j(ctx)  # (B, 8, H)
        ai, aj = self.first_i(ans), self.first_j(ans)  # (B, K, H)
        shared = self._edges(ci, cj)  # (B, H): the 64 context-context pairs
        k = answers.shape[1]
        ai_, aj_ = ai.unsqueeze(2), aj.unsqueeze(2)  # (B, K, 1, H)
        ci_, cj_ = (
            ci.unsqueeze(1).expand(-1, k, -1, -1),
            cj.unsqueeze(1).expand(-1, k, -1, -1),
        )  # (B, K, 8, H)
        per_answer = (
            self._edges(ci_, aj_) + self._edges(ai_, cj_) + self._edges(ai_, aj_)
        )  # (B, K, H)
        h = self.graph(shared.unsqueeze(1) + per_answer)  # (B, K, G)
        if self.training and self.dropout > 0:
            keep = torch.rand(1, 1, h.shape[-1], device=h.device) >= self.dropout
            h = h * keep / (1.0 - self.dropout)
        return self.out(h).squeeze(-1)  # (B, K)
