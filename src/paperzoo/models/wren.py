"""The Wild Relation Network (Barrett et al. 2018) as used by van Steenkiste et al. (2019).

Two stages: an embedder maps every panel to a vector -- a frozen representation (the encoder mean
of a trained VAE), the ground-truth factors, or a CNN learned from scratch -- and the relational
scorer (``paperzoo.nn.relational.RelationalScorer``) scores each of the 6 candidates from the 8
context panels; training minimises the softmax cross-entropy over candidates.

Study settings (disentanglement_lib, abstract_reasoning_study_v1/stage2): edge MLP 4 x 512, graph
MLP 2 x 256, dropout 0.5 before the last layer, Adam, batch 32. Deviation: PyTorch's default
initialisation instead of LeCun normal.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from paperzoo.models.registry import MODELS
from paperzoo.nn.relational import RelationalScorer


class CNNEmbedder(nn.Module):
    """The study's baseline panel embedder: conv 32-32-64-64 (4x4, stride 2, ReLU), flattened.

    Shapes:
        (..., C, H, W) -> (..., 64 * (H / 16) * (W / 16))
    """

    def __init__(self, *, in_channels: int = 3) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 64, 4, 2, 1), nn.ReLU(),
            nn.Flatten(),
        )  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        lead = x.shape[:-3]
        out = self.net(x.reshape(-1, *x.shape[-3:]))  # (N, C, H, W) -> (N, E)
        return out.view(*lead, -1)


class WReN(nn.Module):
    """Embed panels (optional), then score candidates.

    Args:
        embed_dim: size of the panel embeddings fed to the scorer.
        embedder: maps (B, N, ...) panels to (B, N, embed_dim); ``None`` if the inputs already are
            embeddings (a frozen representation or factor values).
        edge_mlp, graph_mlp, dropout: see ``RelationalScorer``.

    Shapes:
        context (B, 8, ...), answers (B, 6, ...) -> logits (B, 6)
    """

    def __init__(
        self,
        *,
        embed_dim: int,
        embedder: nn.Module | None = None,
        edge_mlp: Sequence[int] = (512, 512, 512, 512),
        graph_mlp: Sequence[int] = (256, 256),
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.embedder = embedder
        self.scorer = RelationalScorer(
            embed_dim=embed_dim, edge_mlp=edge_mlp, graph_mlp=graph_mlp, dropout=dropout
        )

    def forward(self, context: Tensor, answers: Tensor) -> Tensor:
        if self.embedder is not None:
            context, answers = self.embedder(context), self.embedder(answers)
        return self.scorer(context, answers)


@MODELS.register("wren")
def wren(
    *,
    embed_dim: int = 10,
    edge_mlp: Sequence[int] = (512, 512, 512, 512),
    graph_mlp: Sequence[int] = (256, 256),
    dropout: float = 0.5,
) -> WReN:
    """WReN on precomputed panel embeddings (a frozen representation), the study's sizes."""
    return WReN(embed_dim=embed_dim, edge_mlp=edge_mlp, graph_mlp=graph_mlp, dropout=dropout)


@MODELS.register("wren-cnn")
def wren_cnn(
    *,
    in_channels: int = 3,
    image_size: int = 64,
    edge_mlp: Sequence[int] = (512, 512, 512, 512),
    graph_mlp: Sequence[int] = (256, 256),
    dropout: float = 0.5,
) -> WReN:
    """WReN with the baseline CNN embedder learned from pixels."""
    dim = 64 * (image_size // 16) ** 2
    return WReN(
        embed_dim=dim, embedder=CNNEmbedder(in_channels=in_channels),
        edge_mlp=edge_mlp, graph_mlp=graph_mlp, dropout=dropout,
    )  # fmt: skip
