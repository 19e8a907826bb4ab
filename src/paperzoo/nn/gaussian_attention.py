"""DRAW's differentiable Gaussian read/write attention, plus the attention-free read/write.

Gregor, Danihelka, Graves, Rezende, Wierstra. "DRAW: A Recurrent Neural Network For Image
Generation", ICML 2015, Section 3 (Eqs. 21-29).

An N x N grid of 2-D Gaussian filters is laid over an A x B image (A = width, B = height):

* Eq. 21: ``(g~X, g~Y, log sigma^2, log delta~, log gamma) = W(h_dec)``
* Eq. 22-24: ``gX = (A+1)/2 (g~X + 1)``, ``gY = (B+1)/2 (g~Y + 1)``,
  ``delta = (max(A, B) - 1)/(N - 1) delta~``
* Eq. 19-20: filter centres ``mu_X^i = gX + (i - N/2 - 0.5) delta`` for ``i = 1..N``, i.e.
  ``mu^i = g + (i - (N-1)/2) delta`` for ``i = 0..N-1``: the grid is centred on ``g``. (Popular
  ports use ``range(N)`` with ``i - N/2 - 0.5``, which shifts every grid by one stride.)
* Eq. 25-26: ``F_X[i, a] = exp(-(a - mu_X^i)^2 / (2 sigma^2)) / Z_X``, rows normalised.
* Eq. 27: ``read(x, x_hat, h_dec) = gamma [F_Y x F_X^T, F_Y x_hat F_X^T]``
* Eq. 29: ``write(h_dec) = (1/gamma) F_Y^T w F_X`` with the patch ``w = W(h_dec)``.

Coordinates: pixel ``a`` (1-based, as in the paper) sits at coordinate ``a``, so ``g~ = 0`` is the
exact image centre ``(A+1)/2`` and ``g~ = -1 / +1`` are symmetric just outside the two borders.

Deviations / choices, all documented:

* The row normalisation ``Z`` is computed as a softmax over pixel positions: mathematically the
  paper's ``Z_X = sum_a exp(...)``, but it never divides 0 by 0 (ports add an epsilon, which turns
  rows that fall off the image into zeros).
* ``N = 1`` uses ``delta = (max(A, B) - 1) delta~`` (the stride is irrelevant for one filter).
* ``window_init="cover"`` (default) sets the bias of the attention layer so that the first
  windows tile the whole image (stride ``max(A, B)/N``, ``sigma = stride/2``, centred) at unit
  gain: ``gamma = 1`` for a read (a glimpse of a constant image is that constant) and
  ``gamma = N^2/(A B)`` for a write (a constant patch adds that constant to the canvas on
  average; with ``gamma = 1`` the normalised filters spread each patch value over ~stride^2
  pixels, so the write is ~30x too weak for a 5x5 patch on MNIST). The paper gives no
  initialisation. A zero bias (``window_init="zero"``) means ``delta~ = 1``, ``sigma = 1``,
  ``gamma = 1``: the 2x2 read sits on the four blank corner pixels and the writes are ~30x
  weaker than the attention-free model's; training then sits for hundreds of steps at the
  bound of the mean image with KL ~ 0 (see docs/draw.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

WINDOW_INITS = ("cover", "zero")


@dataclass(frozen=True)
class AttentionParams:
    """Attention parameters in pixel coordinates, one value per batch element.

    Shapes: every field is (B,).
    """

    gx: Tensor  # grid centre, x (column) coordinate, 1-based pixels
    gy: Tensor  # grid centre, y (row) coordinate
    delta: Tensor  # stride between neighbouring filter centres, pixels
    sigma2: Tensor  # isotropic variance of every filter, pixels^2
    gamma: Tensor  # scalar intensity

    def detach(self) -> AttentionParams:
        return AttentionParams(
            *(t.detach() for t in (self.gx, self.gy, self.delta, self.sigma2, self.gamma))
        )


def attention_params(raw: Tensor, *, height: int, width: int, n: int) -> AttentionParams:
    """Map the 5 raw outputs of ``W(h_dec)`` to attention parameters (Eqs. 21-24).

    Args:
        raw: (B, 5) as ``(g~X, g~Y, log sigma^2, log delta~, log gamma)``.
        height: image height B (rows); width: image width A (columns); n: grid size N.
    """
    if raw.dim() != 2 or raw.shape[1] != 5:
        raise ValueError(f"raw attention parameters must be (B, 5), got {tuple(raw.shape)}")
    gx_t, gy_t, log_sigma2, log_delta_t, log_gamma = raw.unbind(dim=1)
    gx = (width + 1) / 2 * (gx_t + 1)  # Eq. 22
    gy = (height + 1) / 2 * (gy_t + 1)  # Eq. 23
    delta = (max(width, height) - 1) / max(n - 1, 1) * torch.exp(log_delta_t)  # Eq. 24
    return AttentionParams(gx, gy, delta, torch.exp(log_sigma2), torch.exp(log_gamma))


def grid_centres(g: Tensor, delta: Tensor, n: int) -> Tensor:
    """Filter centres along one axis (Eqs. 19-20): ``mu^i = g + (i - (N-1)/2) delta``, i=0..N-1.

    Shapes: g, delta: (B,) -> (B, N)
    """
    offsets = torch.arange(n, dtype=g.dtype, device=g.device) - (n - 1) / 2  # (N,)
    return g[:, None] + offsets[None, :] * delta[:, None]


def filterbank(
    params: AttentionParams, *, height: int, width: int, n: int
) -> tuple[Tensor, Tensor]:
    """The horizontal and vertical filterbanks (Eqs. 25-26), rows summing to one.

    Returns:
        (F_X, F_Y).

    Shapes:
        F_X: (B, N, width); F_Y: (B, N, height)
    """

    if height == width:  # both axes in one batched computation
        g = torch.stack([params.gx, params.gy], dim=1)  # (B, 2)
        mu = grid_centres(g.flatten(), params.delta.repeat_interleave(2), n)  # (2B, N)
        banks = _bank(mu.view(-1, 2, n), params.sigma2[:, None, None], width)  # (B, 2, N, W)
        return banks[:, 0], banks[:, 1]
    fx = _bank(grid_centres(params.gx, params.delta, n), params.sigma2[:, None], width)
    fy = _bank(grid_centres(params.gy, params.delta, n), params.sigma2[:, None], height)
    return fx, fy


def _bank(mu: Tensor, sigma2: Tensor, size: int) -> Tensor:
    """Eq. 25: ``exp(-(a - mu)^2 / (2 sigma^2)) / Z`` over pixels a = 1..size (last axis)."""
    pos = torch.arange(1, size + 1, dtype=mu.dtype, device=mu.device)  # 1-based pixel coordinates
    logits = -((pos - mu.unsqueeze(-1)) ** 2) / (2 * sigma2.unsqueeze(-1))  # (..., N, size)
    return torch.softmax(logits, dim=-1)  # softmax == exp(.) / Z exactly, without 0/0


def read_glimpse(x: Tensor, fx: Tensor, fy: Tensor, gamma: Tensor) -> Tensor:
    """One glimpse ``gamma F_Y x F_X^T`` (Eq. 27) for every channel.

    Shapes:
        x: (B, C, H, W), fx: (B, N, W), fy: (B, N, H), gamma: (B,) -> (B, C, N, N)
    """
    glimpse = fy.unsqueeze(1) @ x @ fx.transpose(1, 2).unsqueeze(1)  # (B, C, N, N)
    return gamma[:, None, None, None] * glimpse


def write_patch(w: Tensor, fx: Tensor, fy: Tensor, gamma: Tensor) -> Tensor:
    """Place a patch on the canvas: ``(1/gamma) F_Y^T w F_X`` (Eq. 29) for every channel.

    Shapes:
        w: (B, C, N, N), fx: (B, N, W), fy: (B, N, H), gamma: (B,) -> (B, C, H, W)
    """
    img = fy.transpose(1, 2).unsqueeze(1) @ w @ fx.unsqueeze(1)  # (B, C, H, W)
    return img / gamma[:, None, None, None]


def _init_window_bias(
    layer: nn.Linear, *, n: int, height: int, width: int, mode: str, write: bool
) -> None:
    """Initialise the bias of the 5-output attention layer (see the module docstring)."""
    if mode not in WINDOW_INITS:
        raise ValueError(f"window_init must be one of {WINDOW_INITS}, got {mode!r}")
    with torch.no_grad():
        layer.bias.zero_()
        if mode == "cover":
            size = max(height, width)
            stride = size / n  # the N filters tile the image
            delta_t = stride * max(n - 1, 1) / (size - 1)  # invert Eq. 24
            sigma = stride / 2
            layer.bias[2] = math.log(sigma**2)  # log sigma^2
            layer.bias[3] = math.log(delta_t)  # log delta~
            # g~X = g~Y = 0 (centred); unit gain: read gamma = 1, write 1/gamma = A B / N^2.
            layer.bias[4] = math.log(n * n / (height * width)) if write else 0.0


class _AttentionHead(nn.Module):
    """``W(h_dec)`` -> attention parameters and filterbanks for an N x N grid."""

    def __init__(
        self, *, hidden_size: int, height: int, width: int, n: int, window_init: str, write: bool
    ):
        super().__init__()
        if n < 1:
            raise ValueError(f"attention grid size must be >= 1, got {n}")
        self.height, self.width, self.n = height, width, n
        self.params_layer = nn.Linear(hidden_size, 5)  # Eq. 21
        _init_window_bias(
            self.params_layer, n=n, height=height, width=width, mode=window_init, write=write
        )

    def windows(self, h_dec: Tensor) -> tuple[AttentionParams, Tensor, Tensor]:
        p = attention_params(
            self.params_layer(h_dec), height=self.height, width=self.width, n=self.n
        )
        fx, fy = filterbank(p, height=self.height, width=self.width, n=self.n)
        return p, fx, fy


class AttentionReader(_AttentionHead):
    """Read with attention: two N x N glimpses (of ``x`` and of the error image ``x_hat``).

    Args:
        hidden_size: size of ``h_dec``.
        channels, height, width: image shape.
        n: read grid size N.
        window_init: "cover" (first glimpse tiles the image) or "zero" (zero bias).

    Shapes:
        x, x_hat: (B, C, H, W), h_dec: (B, hidden_size) -> r: (B, 2 C N N)
    """

    def __init__(
        self,
        *,
        hidden_size: int,
        channels: int,
        height: int,
        width: int,
        n: int,
        window_init: str = "cover",
    ) -> None:
        super().__init__(
            hidden_size=hidden_size,
            height=height,
            width=width,
            n=n,
            window_init=window_init,
            write=False,
        )
        self.channels = channels
        self.out_features = 2 * channels * n * n

    def forward(self, x: Tensor, x_hat: Tensor, h_dec: Tensor) -> tuple[Tensor, AttentionParams]:
        p, fx, fy = self.windows(h_dec)
        both = torch.cat([x, x_hat], dim=1)  # (B, 2C, H, W): one pass for the two glimpses
        r = read_glimpse(both, fx, fy, p.gamma)  # (B, 2C, N, N)
        return r.flatten(1), p  # Eq. 27: [glimpse of x, glimpse of x_hat], (B, 2 C N N)


class AttentionWriter(_AttentionHead):
    """Write with attention: an N x N patch ``w = W(h_dec)`` placed by its own window (Eq. 29).

    Shapes:
        h_dec: (B, hidden_size) -> canvas update (B, C, H, W)
    """

    def __init__(
        self,
        *,
        hidden_size: int,
        channels: int,
        height: int,
        width: int,
        n: int,
        window_init: str = "cover",
    ) -> None:
        super().__init__(
            hidden_size=hidden_size,
            height=height,
            width=width,
            n=n,
            window_init=window_init,
            write=True,
        )
        self.channels = channels
        self.patch = nn.Linear(hidden_size, channels * n * n)  # Eq. 28: w_t = W(h_dec)

    def forward(self, h_dec: Tensor) -> tuple[Tensor, AttentionParams]:
        p, fx, fy = self.windows(h_dec)
        w = self.patch(h_dec).view(-1, self.channels, self.n, self.n)  # (B, C, N, N)
        return write_patch(w, fx, fy, p.gamma), p


class PlainReader(nn.Module):
    """Read without attention (Eq. 17): ``r = [x, x_hat]``, the whole image and error image.

    Shapes:
        x, x_hat: (B, C, H, W) -> (B, 2 C H W)
    """

    def __init__(self, *, channels: int, height: int, width: int) -> None:
        super().__init__()
        self.out_features = 2 * channels * height * width

    def forward(self, x: Tensor, x_hat: Tensor, h_dec: Tensor | None = None) -> tuple[Tensor, None]:
        return torch.cat([x.flatten(1), x_hat.flatten(1)], dim=1), None


class PlainWriter(nn.Module):
    """Write without attention (Eq. 18): ``write(h_dec) = W(h_dec)``, the whole canvas at once.

    Shapes:
        h_dec: (B, hidden_size) -> (B, C, H, W)
    """

    def __init__(self, *, hidden_size: int, channels: int, height: int, width: int) -> None:
        super().__init__()
        self.shape = (channels, height, width)
        self.linear = nn.Linear(hidden_size, channels * height * width)

    def forward(self, h_dec: Tensor) -> tuple[Tensor, None]:
        return self.linear(h_dec).view(-1, *self.shape), None
