"""Perceiver (Jaegle, Gimeno, Brock, Zisserman, Vinyals, Carreira, 2021, "Perceiver: General
Perception with Iterative Attention", arXiv:2103.03206).

A learned latent array (N x D) cross-attends to the input byte array (M x C, M large; every input
element carries its position features), then a latent Transformer refines the latents; this is
repeated ``num_cross_attends`` times (Fig. 1). Cost per repeat: O(M N) for the cross-attend and
O(L N^2) for an L-block latent Transformer, instead of O(M^2) for a Transformer on the inputs.
Classification: average the latents over the index dimension, then a linear layer (Sec. 2.2).

Weight sharing (Sec. 2.2): with ``share_weights=True`` the first cross-attend has its own weights,
cross-attends 2..R share one set, and one latent Transformer is shared by all R repeats, as in the
paper's ImageNet model. With that sharing the ImageNet configuration below has 44.9M parameters;
unshared it has 326M: the paper's two numbers (Tab. 7 / Sec. 4.1), matched exactly, which is how we
checked that the cross-attention's query/key/value width equals the input width (261 channels,
one head) and that both MLPs have widening factor 1, as in the official code's defaults.

Inputs of any modality: ``(B, M, C)`` (a set or a flattened array) or ``(B, *index_dims, C)`` (an
image (B, H, W, C), a video (B, T, H, W, C), ...). Positions: fixed Fourier features of the grid
coordinates (``position="fourier"``), a learned embedding per input index (``"learned"``) or
none; callers may pass their own coordinates (``coords=``, e.g. xyz of a point cloud) or position
features (``pos=``, e.g. jointly permuted with the inputs). Fourier positions follow the input's
shape, so one model takes grids of different sizes (the same bands; coordinates spaced over
[-1, 1] along each axis, as perceiver-pytorch does), computed once per shape; ``input_axis=1``
makes (B, N, C) a 1-D sequence of N positions. ``mask=`` (B, M) removes padded inputs from the
cross-attention.

Build from a config (``Perceiver(config=IMAGENET)``) or from its fields as keywords
(``Perceiver(input_channels=3, num_classes=10, num_latents=64, ...)``; the other fields keep the
``PerceiverConfig`` defaults, the ImageNet model's). As in perceiver-pytorch, naming
``input_axis`` without ``index_dims`` builds a model without a grid: every input
(B, *input_axis axes, C) gets the positions of its own shape, so one model takes sequences of any
length (``input_axis=1``) or images of any size (``input_axis=2``).

Image wrappers: ``PerceiverOnImages`` (image batches as pixel sets, optionally under a fixed
permutation that moves the position features with the pixels), ``PerceiverWithPositions`` (a
Perceiver with fixed position features) and ``ConvNetWithPositions`` (a ConvNet fed the same
Fourier features as image channels, "ResNet-50 (FF)").

Initialisation as in the official code: latent array (and learned positions) truncated normal with
std 0.02, linear layers variance scaling (``paperzoo.nn.attention.variance_scaling_``).
Deviation from the paper: a LayerNorm before the classifier (standard for pre-LN stacks; 2D
parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor, nn

from paperzoo.models.registry import MODELS
from paperzoo.nn.attention import CrossAttentionBlock, LatentTransformer, variance_scaling_
from paperzoo.nn.fourier import (
    FourierPositionEncoding,
    fourier_channels,
    fourier_features,
    grid_features,
)

POSITIONS = ("fourier", "learned", "none")


@dataclass(frozen=True)
class PerceiverConfig:
    input_channels: int = 3  # C, channels of each input element before position features
    index_dims: tuple[int, ...] | None = (224, 224)  # input grid (None: an unstructured set)
    num_classes: int = 1000  # classifier outputs
    num_latents: int = 512  # N, rows of the latent array
    latent_dim: int = 1024  # D, channels of the latent array
    num_cross_attends: int = 8  # R, repeats of (cross-attend, latent Transformer)
    self_attends_per_block: int = 6  # L, self-attention blocks per latent Transformer
    cross_heads: int = 1  # heads of the cross-attention (paper: 1)
    self_heads: int = 8  # heads of the latent self-attention (paper: 8)
    cross_qk_channels: int | None = None  # cross-attention q/k/v width (None: input width)
    cross_widening: int = 1  # MLP widening factor after the cross-attention
    self_widening: int = 1  # MLP widening factor in the latent Transformer
    dropout: float = 0.0  # dropout after attention and MLPs
    attn_dropout: float = 0.0  # dropout on attention probabilities
    position: str = "fourier"  # "fourier" | "learned" | "none"
    num_bands: int = 64  # K, Fourier bands per axis (ImageNet: 64)
    max_resolution: tuple[float, ...] | None = None  # mu per axis (None: index_dims; ImageNet 224)
    learned_pos_dim: int = 256  # channels of a learned position embedding
    share_weights: bool = True  # the paper's sharing (see the module docstring); False: none
    # index axes of an input (B, *axes, C): 2 for images, 1 for a sequence (B, N, C); None:
    # those of index_dims / max_resolution
    input_axis: int | None = None

    def __post_init__(self) -> None:
        if self.position not in POSITIONS:
            raise ValueError(f"position must be one of {POSITIONS}, got {self.position!r}")
        if self.num_cross_attends < 1:
            raise ValueError(f"num_cross_attends must be >= 1, got {self.num_cross_attends}")
        if self.position == "learned" and self.index_dims is None:
            raise ValueError("learned positions need index_dims (one embedding per input index)")
        if self.input_axis is not None:
            if self.input_axis < 1:
                raise ValueError(f"input_axis must be >= 1, got {self.input_axis}")
            for name in ("index_dims", "max_resolution"):
                value = getattr(self, name)
                if value is not None and len(value) != self.input_axis:
                    raise ValueError(
                        f"{name} {value} has {len(value)} axes, not input_axis="
                        f"{self.input_axis}: give {name}=None for inputs of any size"
                    )
        elif self.position == "fourier" and self.index_dims is None and self.max_resolution is None:
            raise ValueError(
                "Fourier positions of a set need max_resolution (one mu per axis) or input_axis"
            )

    @property
    def num_axes(self) -> int:
        if self.input_axis is not None:
            return self.input_axis
        res = self.max_resolution if self.max_resolution is not None else self.index_dims
        return len(res or ())

    @property
    def pos_channels(self) -> int:
        if self.position == "fourier":
            return fourier_channels(self.num_axes, self.num_bands)
        return self.learned_pos_dim if self.position == "learned" else 0

    @property
    def input_dim(self) -> int:
        """Channels of the byte array the latents attend to: inputs plus position features."""
        return self.input_channels + self.pos_channels


class Perceiver(nn.Module):
    """The Perceiver classifier.

    Args:
        config: the architecture (see ``PerceiverConfig``); default ``PerceiverConfig()``.
        **fields: ``PerceiverConfig`` fields as keywords, overriding ``config``'s, e.g.
            ``Perceiver(input_channels=3, num_classes=10, index_dims=(32, 32), num_latents=64)``.
            ``input_axis`` named without ``index_dims`` drops the config's grid (positions come
            from each input's own shape) and its ``max_resolution`` when that has another
            number of axes, e.g. ``Perceiver(input_channels=3, num_classes=5, input_axis=1)``
            for sequences of any length.

    Shapes:
        x: (B, M, C) or (B, *axes, C) -> logits (B, num_classes); Fourier positions are those of
            the grid ``axes`` (any sizes), or of ``index_dims`` for a flattened (B, M, C)
        coords: optional coordinates in [-1, 1] for Fourier features, (M, d) or (B, M, d)
        pos: optional position features replacing the model's own, (M, P) or (B, M, P)
        mask: optional (B, M) or (B, *axes) bool, True for real inputs, False for padding
    """

    def __init__(self, *, config: PerceiverConfig | None = None, **fields: Any) -> None:
        super().__init__()
        base = config or PerceiverConfig()
        for name in ("index_dims", "max_resolution"):
            if fields.get(name) is not None:
                fields[name] = tuple(fields[name])
        axes = fields.get("input_axis")
        if axes is not None:  # no grid named: positions from each input's shape
            fields.setdefault("index_dims", None)
            res = base.max_resolution
            if "max_resolution" not in fields and res is not None and len(res) != axes:
                fields["max_resolution"] = None
        cfg = self.config = replace(base, **fields)
        self._pos_cache: dict[tuple[tuple[int, ...], torch.device], Tensor] = {}
        self.fourier: FourierPositionEncoding | None = None
        self.pos_embedding: nn.Parameter | None = None
        if cfg.position == "fourier" and cfg.index_dims is not None:
            self.fourier = FourierPositionEncoding(
                index_dims=cfg.index_dims,
                num_bands=cfg.num_bands,
                max_resolution=cfg.max_resolution,
            )
        elif cfg.position == "learned":
            assert cfg.index_dims is not None
            m = 1
            for n in cfg.index_dims:
                m *= n
            self.pos_embedding = nn.Parameter(torch.empty(m, cfg.learned_pos_dim))
            nn.init.trunc_normal_(self.pos_embedding, std=0.02, a=-0.04, b=0.04)

        # The latent array, truncated normal with std 0.02 (official code).
        self.latents = nn.Parameter(torch.empty(cfg.num_latents, cfg.latent_dim))
        nn.init.trunc_normal_(self.latents, std=0.02, a=-0.04, b=0.04)

        r = cfg.num_cross_attends
        # Repeat i uses cross_attends[cross_index[i]] and latent_transformers[latent_index[i]].
        if cfg.share_weights:
            self.cross_index = [0] + [1] * (r - 1)
            self.latent_index = [0] * r
        else:
            self.cross_index = list(range(r))
            self.latent_index = list(range(r))
        self.cross_attends = nn.ModuleList(
            CrossAttentionBlock(
                latent_dim=cfg.latent_dim,
                input_dim=cfg.input_dim,
                num_heads=cfg.cross_heads,
                qk_channels=cfg.cross_qk_channels,
                widening_factor=cfg.cross_widening,
                dropout=cfg.dropout,
                attn_dropout=cfg.attn_dropout,
            )
            for _ in range(max(self.cross_index) + 1)
        )
        self.latent_transformers = nn.ModuleList(
            LatentTransformer(
                dim=cfg.latent_dim,
                depth=cfg.self_attends_per_block,
                num_heads=cfg.self_heads,
                widening_factor=cfg.self_widening,
                dropout=cfg.dropout,
                attn_dropout=cfg.attn_dropout,
            )
            for _ in range(max(self.latent_index) + 1)
        )
        self.norm = nn.LayerNorm(cfg.latent_dim)
        self.head = variance_scaling_(nn.Linear(cfg.latent_dim, cfg.num_classes))

    def repeats(self) -> list[tuple[CrossAttentionBlock, LatentTransformer]]:
        """The (cross-attend, latent Transformer) modules applied at each repeat, in order."""
        return [
            (self.cross_attends[c], self.latent_transformers[t])  # type: ignore[misc]
            for c, t in zip(self.cross_index, self.latent_index, strict=True)
        ]

    def position_features(
        self, coords: Tensor | None = None, *, index_dims: tuple[int, ...] | None = None
    ) -> Tensor | None:
        """The position features of every cell of a grid, or of the given coordinates.

        ``index_dims``: the grid (default: the config's); Fourier features of another grid are
        computed once per shape (float32 on the CPU, as the config's grid is) and cached.

        Shapes:
            coords: (..., M, d) -> (..., M, pos_channels);
            None -> (prod(index_dims), pos_channels)
        """
        cfg = self.config
        if coords is not None:
            if cfg.position != "fourier":
                raise ValueError("coords are turned into Fourier features: need position='fourier'")
            res = cfg.max_resolution or cfg.index_dims
            if res is None:
                raise ValueError("coords of a Perceiver without max_resolution or index_dims")
            return fourier_features(coords, num_bands=cfg.num_bands, max_resolution=res)
        dims = index_dims if index_dims is not None else cfg.index_dims
        if cfg.position == "none":
            return None
        if cfg.position == "learned":
            if dims != cfg.index_dims:
                raise ValueError(
                    f"learned positions exist for the grid {cfg.index_dims}, not {dims}"
                )
            return self.pos_embedding
        if dims is None:
            raise ValueError("this Perceiver has no input grid: pass coords= (B, M, d)")
        if self.fourier is not None:
            return self.fourier.for_grid(dims)
        key = (tuple(dims), self.latents.device)  # a Perceiver without index_dims (input_axis)
        feats = self._pos_cache.get(key)
        if feats is None:
            res = cfg.max_resolution or dims  # mu: the input's own sizes
            feats = grid_features(dims, num_bands=cfg.num_bands, max_resolution=res)
            feats = self._pos_cache.setdefault(key, feats.to(self.latents.device))
        return feats

    def grid_of(self, x: Tensor) -> tuple[int, ...] | None:
        """The grid whose positions the input ``x`` gets: its own axes ``x.shape[1:-1]`` when it
        has ``num_axes`` of them, else (a flattened (B, M, C)) the config's ``index_dims``."""
        n = self.config.num_axes
        if n and x.dim() == n + 2:
            return tuple(x.shape[1:-1])
        return self.config.index_dims

    def byte_array(
        self, x: Tensor, *, coords: Tensor | None = None, pos: Tensor | None = None
    ) -> Tensor:
        """Inputs flattened to (B, M, C) with their position features concatenated.

        Shapes:
            x: (B, M, C) or (B, *index_dims, C) -> (B, M, input_dim)
        """
        x, pos = self.inputs_and_positions(x, coords=coords, pos=pos)
        if pos is None:
            return x
        return torch.cat([x, pos.expand(x.shape[0], *pos.shape[-2:])], dim=-1)  # (B, M, C + P)

    def inputs_and_positions(
        self, x: Tensor, *, coords: Tensor | None = None, pos: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """The two parts of the byte array: the inputs flattened to (B, M, C) and their position
        features, (M, P) when the batch shares them, (B, M, P) when it does not, or None.

        Shapes:
            x: (B, M, C) or (B, *index_dims, C) -> (B, M, C), (M, P) | (B, M, P) | None
        """
        cfg = self.config
        if x.dim() < 3:
            raise ValueError(f"Perceiver expects (B, M, C) or (B, *axes, C), got {tuple(x.shape)}")
        if x.shape[-1] != cfg.input_channels:
            raise ValueError(
                f"Perceiver expects {cfg.input_channels} input channels (last axis), "
                f"got shape {tuple(x.shape)}"
            )
        grid = self.grid_of(x) if pos is None and coords is None else None
        x = x.flatten(1, -2)  # (B, M, C)
        b, m, _ = x.shape
        if pos is None:
            pos = self.position_features(coords, index_dims=grid)
        if pos is None:
            return x, None
        if pos.shape[-2] != m:
            raise ValueError(f"{m} inputs but {pos.shape[-2]} position rows")
        if pos.dim() == 3 and pos.shape[0] != b:
            raise ValueError(f"{b} inputs but position features for {pos.shape[0]}")
        return x, pos.to(x.dtype)

    def encode(
        self,
        x: Tensor,
        *,
        coords: Tensor | None = None,
        pos: Tensor | None = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        """The final latent array.

        Shapes:
            x: (B, M, C) or (B, *axes, C); mask: (B, M) or (B, *axes) -> (B, N, D)
        """
        # The byte array is [x, pos]; the cross-attends take its two parts (positions shared by
        # the batch are projected once per step, not once per input: CrossAttentionBlock).
        x, pos = self.inputs_and_positions(x, coords=coords, pos=pos)  # (B, M, C), (M, P)
        if mask is not None:
            mask = mask.flatten(1) if mask.dim() > 2 else mask
            if mask.shape != x.shape[:2]:
                raise ValueError(f"mask must be (B, M) = {tuple(x.shape[:2])}, got {mask.shape}")
        z = self.latents.expand(x.shape[0], -1, -1)  # (B, N, D)
        for cross, latent in self.repeats():
            z = latent(cross(z, x, pos, mask=mask))
        return z

    def forward(
        self,
        x: Tensor,
        *,
        coords: Tensor | None = None,
        pos: Tensor | None = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        z = self.encode(x, coords=coords, pos=pos, mask=mask)
        return self.head(self.norm(z.mean(dim=1)))  # average over latents -> (B, num_classes)

    @torch.no_grad()
    def first_cross_attention(
        self, x: Tensor, *, coords: Tensor | None = None, pos: Tensor | None = None
    ) -> Tensor:
        """Attention of each latent over the inputs in the first cross-attend.

        Shapes:
            x: (B, M, C) or (B, *index_dims, C) -> (B, cross_heads, N, M)
        """
        inputs = self.byte_array(x, coords=coords, pos=pos)
        z = self.latents.expand(inputs.shape[0], -1, -1)
        return self.cross_attends[0].attention_weights(z, inputs)  # type: ignore[operator]


# -- the Perceiver on images, with position features moved with the pixels ----------------------


class PerceiverWithPositions(nn.Module):
    """A Perceiver fed fixed position features ``pos`` instead of its own (e.g. permuted with the
    pixels, or left in raster order while the pixels are permuted); None: its own.

    Shapes:
        x: (B, M, C) -> logits (B, num_classes); ``pos``: (M, P)
    """

    def __init__(self, model: Perceiver, pos: Tensor | None) -> None:
        super().__init__()
        self.model = model
        self.pos: Tensor | None
        self.register_buffer("pos", pos, persistent=False)  # moves with .to(device), not saved

    def forward(self, x: Tensor) -> Tensor:
        return self.model(x, pos=self.pos)


class PerceiverOnImages(nn.Module):
    """A Perceiver fed image batches: pixels as a set in raster order, or under ``perm``, with
    the Fourier position features built for the raster grid and permuted with the pixels (the
    paper permutes "after position features are generated", Sec. 4.1).

    Shapes:
        x: (B, C, H, W) -> logits (B, num_classes)
    """

    def __init__(self, model: Perceiver, perm: Tensor | None = None) -> None:
        super().__init__()
        self.model = model
        with torch.no_grad():
            pos = model.position_features()  # (H * W, P), raster order
        assert pos is not None
        self.pos: Tensor
        self.perm: Tensor | None
        self.register_buffer("pos", pos if perm is None else pos[perm], persistent=False)
        self.register_buffer("perm", perm, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        xs = rearrange(x, "b c h w -> b (h w) c")  # (B, H * W, C), raster order
        if self.perm is not None:
            xs = xs[:, self.perm]  # input j is raster pixel perm[j], with its position row
        return self.model(xs, pos=self.pos)


class ConvNetWithPositions(nn.Module):
    """ "ResNet-50 (FF)" (Tab. 1-2): the image's channels concatenated with the same Fourier
    position features as extra image channels, then (optionally) every channel's pixels permuted
    by ``perm``, so the positions travel with the pixels as they do for the Perceiver.

    When the convnet has a ``stem`` whose first layer is a ``Conv2d`` over the C + P channels and
    a ``forward_from_stem_conv`` (``ResNet``, ``CifarResNet``), the stem's convolution is split
    by linearity: ``conv([x, pos]) = conv_x(x) + conv_pos(pos)`` with the weight's first C input
    channels for the image and the rest for the positions. The positions are the same for every
    image, so ``conv_pos`` runs once per forward at batch 1 (with the current weights, so
    gradients reach them) and is broadcast over the batch: for ResNet-50 on 224 x 224 images
    with 258 position channels this removes most of the multiply-adds (the concatenated
    version's function, up to float rounding). Other convnets get the concatenated array.

    Shapes:
        x: (B, C, H, W) -> logits (B, num_classes); ``pos``: (P, H, W)
    """

    def __init__(self, convnet: nn.Module, pos: Tensor, perm: Tensor | None = None) -> None:
        super().__init__()
        self.convnet = convnet
        self.pos: Tensor
        self.perm: Tensor | None
        self.register_buffer("pos", pos, persistent=False)
        self.register_buffer("perm", perm, persistent=False)

    def stem_conv(self) -> nn.Conv2d | None:
        """The stem convolution the positions are split off, or None (concatenated path)."""
        stem = getattr(self.convnet, "stem", None)
        if not hasattr(self.convnet, "forward_from_stem_conv") or not isinstance(
            stem, nn.Sequential
        ):
            return None
        conv = stem[0]
        if (
            not isinstance(conv, nn.Conv2d)
            or conv.groups != 1
            or conv.padding_mode != "zeros"
            or conv.in_channels <= self.pos.shape[0]
        ):
            return None
        return conv

    def _shuffle(self, x: Tensor) -> Tensor:
        if self.perm is None:
            return x
        return x.flatten(-2)[..., self.perm].reshape(x.shape)  # pixels shuffled, channels kept

    def forward(self, x: Tensor) -> Tensor:
        conv = self.stem_conv()
        if conv is None:
            return self.forward_concatenated(x)
        c = conv.in_channels - self.pos.shape[0]
        if x.shape[1] != c:
            raise ValueError(f"expected {c} image channels, got shape {tuple(x.shape)}")
        pos = self._shuffle(self.pos.to(x.dtype)).unsqueeze(0)  # (1, P, H, W)
        args = (conv.stride, conv.padding, conv.dilation)
        y = F.conv2d(self._shuffle(x), conv.weight[:, :c], None, *args)  # (B, O, H', W')
        y = y + F.conv2d(pos, conv.weight[:, c:], conv.bias, *args)  # + (1, O, H', W')
        return self.convnet.forward_from_stem_conv(y)  # type: ignore[operator]

    def forward_concatenated(self, x: Tensor) -> Tensor:
        """The same function on the concatenated (B, C + P, H, W) array (any convnet)."""
        b = x.shape[0]
        x = torch.cat([x, self.pos.expand(b, -1, -1, -1).to(x.dtype)], dim=1)  # (B, C + P, H, W)
        return self.convnet(self._shuffle(x))


# The ImageNet model (Sec. 4.1 / Appendix): 224x224 RGB pixels with 64-band Fourier features
# (mu = 224) -> 261 input channels; 512 x 1024 latents; 8 cross-attends (1 head); a 6-block latent
# Transformer (8 heads); 44.9M parameters with the paper's weight sharing, 326M without.
IMAGENET = PerceiverConfig()

# A CPU-sized model for 28x28 digits (the quick reproduction; 51,894 parameters): 32 x 64 latents
# attend iteratively, 2 cross-attends as in Fig. 1 with the paper's sharing (the second
# cross-attend has its own weights and would serve every later repeat; one single-block latent
# Transformer serves both repeats). As in the paper: one cross-attention head, MLP widening 1.
# Deviations, chosen on validation digits carved from the training set: 16 cross-attention q/k/v
# channels (paper: the input width, 35 here), and Fourier features with mu = 14 (bands 1..7
# cycles, not up to the 28-pixel Nyquist frequency 14: smoother position features generalised
# better), 8 bands.
MNIST_SMALL = PerceiverConfig(
    input_channels=1,
    index_dims=(28, 28),
    num_classes=10,
    num_latents=32,
    latent_dim=64,
    num_cross_attends=2,
    self_attends_per_block=1,
    cross_heads=1,
    self_heads=4,
    cross_qk_channels=16,
    cross_widening=1,
    self_widening=1,
    num_bands=8,
    max_resolution=(14.0, 14.0),
)


def _build(base: PerceiverConfig, kw: dict[str, object]) -> Perceiver:
    return Perceiver(config=base, **kw)


@MODELS.register("perceiver_imagenet")
def perceiver_imagenet(**kw: object) -> Perceiver:
    """The paper's ImageNet Perceiver (44.9M parameters); keywords override config fields."""
    return _build(IMAGENET, kw)


@MODELS.register("perceiver_imagenet_unshared")
def perceiver_imagenet_unshared(**kw: object) -> Perceiver:
    """The ImageNet Perceiver without weight sharing (326M parameters)."""
    return _build(replace(IMAGENET, share_weights=False), kw)


@MODELS.register("perceiver_mnist")
def perceiver_mnist(**kw: object) -> Perceiver:
    """A small Perceiver for 28x28 one-channel digits; keywords override config fields."""
    return _build(MNIST_SMALL, kw)
