"""DRAW: the Deep Recurrent Attentive Writer, a recurrent VAE that draws on a canvas.

Gregor, Danihelka, Graves, Rezende, Wierstra. "DRAW: A Recurrent Neural Network For Image
Generation", ICML 2015.

One time step t = 1..T (Eqs. 3-8):

    x_hat_t = x - sigmoid(c_{t-1})                                  # Eq. 3
    r_t     = read(x, x_hat_t, h_dec_{t-1})                         # Eq. 4
    h_enc_t = LSTM_enc(h_enc_{t-1}, [r_t, h_dec_{t-1}])             # Eq. 5
    z_t     ~ Q(Z_t | h_enc_t) = N(mu_t, sigma_t),  mu_t = W(h_enc_t), sigma_t = exp(W(h_enc_t))
    h_dec_t = LSTM_dec(h_dec_{t-1}, z_t)                            # Eq. 7
    c_t     = c_{t-1} + write(h_dec_t)                              # Eq. 8

Loss in nats (Eqs. 9-12): ``L = -log D(x | c_T) + sum_t KL(Q(Z_t|h_enc_t) || N(0, I))`` with
``D`` a Bernoulli with means ``sigmoid(c_T)`` and the KL in closed form
``1/2 sum_t (mu_t^2 + sigma_t^2 - log sigma_t^2) - T/2`` (summed over the z dimensions). It is
the negative ELBO, an upper bound on ``-log p(x)``; ``importance_weighted_nll`` tightens it.

Generation (Eqs. 13-16): ``z_t ~ N(0, I)``, decoder and writes only; the image is ``sigmoid(c_T)``.

Choices the paper leaves open (documented, configurable):

* The initial canvas ``c_0`` and the initial LSTM states are learned parameters (zeros at init).
* The attention layers' bias starts with windows that tile the image (``window_init="cover"``,
  see ``paperzoo.nn.gaussian_attention``); ``"zero"`` gives the raw zero bias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.models.registry import MODELS
from paperzoo.nn.gaussian_attention import (
    AttentionParams,
    AttentionReader,
    AttentionWriter,
    PlainReader,
    PlainWriter,
)

LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class DRAWConfig:
    channels: int = 1  # image channels C
    height: int = 28  # image height B (rows)
    width: int = 28  # image width A (columns)
    steps: int = 64  # glimpses / canvas updates T
    enc_size: int = 256  # encoder LSTM units
    dec_size: int = 256  # decoder LSTM units
    z_size: int = 100  # latent units per time step
    read_n: int | None = 2  # read grid N (None: no attention, read the whole image)
    write_n: int | None = 5  # write patch N (None: no attention, write the whole canvas)
    window_init: str = "cover"  # attention bias init: "cover" (tile the image) or "zero"

    def __post_init__(self) -> None:
        for name in ("channels", "height", "width", "steps", "enc_size", "dec_size", "z_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def attention(self) -> bool:
        return self.read_n is not None or self.write_n is not None


@dataclass
class DRAWOutput:
    """What ``DRAW.forward`` returns.

    Shapes:
        logits: (B, C, H, W) the final canvas c_T (Bernoulli logits)
        kl: (B, T) KL of each step, summed over the z dimensions
        log_q, log_prior: (B, T) log Q(z_t | .) and log N(z_t; 0, I) of the sampled z_t
            (only with ``return_log_weights``; empty otherwise)
        canvases: (T, B, C, H, W) c_1..c_T when requested
        read_params / write_params: one ``AttentionParams`` per step (attention models only)
    """

    logits: Tensor
    kl: Tensor
    log_q: Tensor
    log_prior: Tensor
    canvases: Tensor | None = None
    read_params: list[AttentionParams] = field(default_factory=list)
    write_params: list[AttentionParams] = field(default_factory=list)


def bernoulli_nll(logits: Tensor, x: Tensor) -> Tensor:
    """``-log D(x | c_T)`` in nats per example (Eq. 9), for x in [0, 1] (binary in the paper).

    Shapes: logits, x: (B, ...) -> (B,)
    """
    return F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1)


def gaussian_kl(mu: Tensor, log_sigma: Tensor) -> Tensor:
    """``KL(N(mu, sigma^2) || N(0, 1))`` summed over the last axis (Eq. 11, one time step).

    Shapes: mu, log_sigma: (B, Z) -> (B,)
    """
    return 0.5 * (mu**2 + torch.exp(2 * log_sigma) - 2 * log_sigma - 1).sum(-1)


class DRAW(nn.Module):
    """The DRAW network, with or without attention.

    Args:
        config: all sizes (see ``DRAWConfig``); keyword ``overrides`` replace its fields.

    Shapes:
        x: (B, C, H, W) in [0, 1] -> ``DRAWOutput``
    """

    def __init__(self, *, config: DRAWConfig | None = None, **overrides: object) -> None:
        super().__init__()
        cfg = replace(config or DRAWConfig(), **overrides)  # unknown field -> TypeError
        self.config = cfg
        c, h, w = cfg.channels, cfg.height, cfg.width
        if cfg.read_n is None:
            self.reader: nn.Module = PlainReader(channels=c, height=h, width=w)
        else:
            self.reader = AttentionReader(
                hidden_size=cfg.dec_size, channels=c, height=h, width=w, n=cfg.read_n,
                window_init=cfg.window_init,
            )  # fmt: skip
        if cfg.write_n is None:
            self.writer: nn.Module = PlainWriter(
                hidden_size=cfg.dec_size, channels=c, height=h, width=w
            )
        else:
            self.writer = AttentionWriter(
                hidden_size=cfg.dec_size, channels=c, height=h, width=w, n=cfg.write_n,
                window_init=cfg.window_init,
            )  # fmt: skip
        read_size = self.reader.out_features
        self.encoder = nn.LSTMCell(read_size + cfg.dec_size, cfg.enc_size)  # Eq. 5
        self.q_mu = nn.Linear(cfg.enc_size, cfg.z_size)  # Eq. 1: mu_t = W(h_enc_t)
        self.q_log_sigma = nn.Linear(cfg.enc_size, cfg.z_size)  # Eq. 2: sigma_t = exp(W(h_enc_t))
        self.decoder = nn.LSTMCell(cfg.z_size, cfg.dec_size)  # Eq. 7
        # Learned initial states: canvas c_0 and (h, cell) of both LSTMs.
        self.canvas0 = nn.Parameter(torch.zeros(c, h, w))
        self.enc0 = nn.Parameter(torch.zeros(2, cfg.enc_size))
        self.dec0 = nn.Parameter(torch.zeros(2, cfg.dec_size))

    def _init_states(
        self, batch: int
    ) -> tuple[Tensor, tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
        canvas = self.canvas0.expand(batch, *self.canvas0.shape)  # (B, C, H, W)
        enc = (self.enc0[0].expand(batch, -1), self.enc0[1].expand(batch, -1))  # 2 x (B, enc)
        dec = (self.dec0[0].expand(batch, -1), self.dec0[1].expand(batch, -1))  # 2 x (B, dec)
        return canvas, enc, dec

    def _check(self, x: Tensor) -> None:
        cfg = self.config
        if x.dim() != 4 or tuple(x.shape[1:]) != (cfg.channels, cfg.height, cfg.width):
            raise ValueError(
                f"DRAW expects images of shape (B, {cfg.channels}, {cfg.height}, {cfg.width}), "
                f"got {tuple(x.shape)}"
            )

    def forward(
        self,
        x: Tensor,
        *,
        generator: torch.Generator | None = None,
        return_canvases: bool = False,
        return_log_weights: bool = False,
    ) -> DRAWOutput:
        """Encode ``x`` step by step with reparameterised z samples and decode onto the canvas.

        Args:
            x: images in [0, 1].
            generator: draws the reparameterisation noise (torch's global RNG when ``None``).
            return_canvases: also return c_1..c_T (for figures).
            return_log_weights: also return log Q(z_t|.) and log N(z_t; 0, I) (importance weights).
        """
        self._check(x)
        batch = x.shape[0]
        canvas, (h_enc, s_enc), (h_dec, s_dec) = self._init_states(batch)
        mus, log_sigmas, epss, zs, canvases = [], [], [], [], []
        out = DRAWOutput(
            logits=canvas, kl=x.new_zeros(0), log_q=x.new_zeros(0), log_prior=x.new_zeros(0)
        )
        for _ in range(self.config.steps):
            x_hat = x - torch.sigmoid(canvas)  # Eq. 3
            r, rp = self.reader(x, x_hat, h_dec)  # Eq. 4
            h_enc, s_enc = self.encoder(torch.cat([r, h_dec], dim=1), (h_enc, s_enc))  # Eq. 5
            mu, log_sigma = self.q_mu(h_enc), self.q_log_sigma(h_enc)  # Eqs. 1-2
            eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype, device=mu.device)
            z = mu + torch.exp(log_sigma) * eps  # Eq. 6, reparameterised
            h_dec, s_dec = self.decoder(z, (h_dec, s_dec))  # Eq. 7
            update, wp = self.writer(h_dec)
            canvas = canvas + update  # Eq. 8
            mus.append(mu)
            log_sigmas.append(log_sigma)
            if return_log_weights:
                epss.append(eps)
                zs.append(z)
            if return_canvases:
                canvases.append(canvas)
            if rp is not None:
                out.read_params.append(rp)
            if wp is not None:
                out.write_params.append(wp)
        out.logits = canvas
        log_sigma_all = torch.stack(log_sigmas, dim=1)  # (B, T, Z)
        out.kl = gaussian_kl(torch.stack(mus, dim=1), log_sigma_all)  # Eq. 11 per step: (B, T)
        if return_log_weights:
            eps_all, z_all = torch.stack(epss, dim=1), torch.stack(zs, dim=1)  # (B, T, Z)
            out.log_q = (-0.5 * eps_all**2 - log_sigma_all - 0.5 * LOG_2PI).sum(-1)  # (B, T)
            out.log_prior = (-0.5 * z_all**2 - 0.5 * LOG_2PI).sum(-1)  # (B, T)
        if return_canvases:
            out.canvases = torch.stack(canvases)  # (T, B, C, H, W)
        return out

    def loss_terms(
        self, x: Tensor, *, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        """Per-example reconstruction loss and summed KL in nats (Eqs. 9-11).

        Shapes: x: (B, C, H, W) -> ((B,), (B,))
        """
        out = self(x, generator=generator)
        return bernoulli_nll(out.logits, x), out.kl.sum(1)

    def nll_bound(self, x: Tensor, *, generator: torch.Generator | None = None) -> Tensor:
        """The negative ELBO ``L^x + L^z`` per example in nats (Eq. 12, one sample of z).

        Shapes: x: (B, C, H, W) -> (B,)
        """
        rec, kl = self.loss_terms(x, generator=generator)
        return rec + kl

    def log_weights(self, x: Tensor, k: int, *, generator: torch.Generator | None = None) -> Tensor:
        """``log p(x, z) - log q(z | x)`` for ``k`` independent z sequences per image.

        Shapes: x: (B, C, H, W) -> (k, B)
        """
        xk = x.repeat(k, 1, 1, 1)  # (k B, C, H, W)
        out = self(xk, generator=generator, return_log_weights=True)
        lw = -bernoulli_nll(out.logits, xk) + out.log_prior.sum(1) - out.log_q.sum(1)  # (k B,)
        return lw.view(k, x.shape[0])

    @torch.no_grad()
    def sample(
        self,
        n: int,
        *,
        generator: torch.Generator | None = None,
        return_canvases: bool = False,
    ) -> tuple[Tensor, Tensor | None, list[AttentionParams]]:
        """Generate ``n`` images from the prior (Eqs. 13-16).

        Returns:
            (means sigmoid(c_T), canvases sigmoid(c_1..c_T) or None, write windows per step).

        Shapes: means (n, C, H, W); canvases (T, n, C, H, W)
        """
        canvas, _, (h_dec, s_dec) = self._init_states(n)
        device, dtype = canvas.device, canvas.dtype
        frames, windows = [], []
        for _ in range(self.config.steps):
            z = torch.randn(n, self.config.z_size, generator=generator, device=device, dtype=dtype)
            h_dec, s_dec = self.decoder(z, (h_dec, s_dec))  # Eq. 14
            update, wp = self.writer(h_dec)
            canvas = canvas + update  # Eq. 15
            if return_canvases:
                frames.append(torch.sigmoid(canvas))
            if wp is not None:
                windows.append(wp.detach())
        canvases = torch.stack(frames) if return_canvases else None
        return torch.sigmoid(canvas), canvases, windows


@torch.no_grad()
def evaluate_nll(
    model: DRAW,
    x: Tensor,
    *,
    batch_size: int = 500,
    importance_samples: int = 0,
    generator: torch.Generator | None = None,
) -> dict[str, float]:
    """Test-set NLL estimates in nats per image, averaged over ``x``.

    Args:
        model: a trained DRAW network (switched to eval mode; mode restored afterwards).
        x: binarised images (B, C, H, W).
        importance_samples: if ``k > 0`` also the importance-weighted bound
            ``-log 1/k sum_k p(x, z_k)/q(z_k|x)`` (tighter than the ELBO; ``k = 1`` equals it in
            expectation).
        generator: draws the z noise (reproducible evaluation).

    Returns:
        ``{"nll_bound", "recon", "kl"}`` (+ ``"iw_nll"`` when ``importance_samples > 0``).
    """
    was_training = model.training
    model.eval()
    try:
        tot = {"nll_bound": 0.0, "recon": 0.0, "kl": 0.0, "iw_nll": 0.0}
        for i in range(0, len(x), batch_size):
            xb = x[i : i + batch_size]
            rec, kl = model.loss_terms(xb, generator=generator)
            tot["recon"] += float(rec.sum())
            tot["kl"] += float(kl.sum())
            tot["nll_bound"] += float((rec + kl).sum())
            if importance_samples > 0:
                lw = model.log_weights(xb, importance_samples, generator=generator)  # (k, B)
                iw = torch.logsumexp(lw, dim=0) - math.log(importance_samples)
                tot["iw_nll"] += float(-iw.sum())
    finally:
        model.train(was_training)
    res = {k: v / len(x) for k, v in tot.items()}
    if importance_samples <= 0:
        res.pop("iw_nll")
    return res


def binarize(x: Tensor, *, mode: str, generator: torch.Generator | None = None) -> Tensor:
    """Binarise grey-level images in [0, 1].

    Args:
        mode: ``"threshold"`` (pixel > 0.5) or ``"stochastic"`` (one Bernoulli draw per pixel
            with the grey level as probability, drawn once from ``generator``: the fixed binarised
            MNIST of Salakhutdinov & Murray 2008 that the paper evaluates on is made this way).
    """
    if mode == "threshold":
        return (x > 0.5).to(x.dtype)
    if mode == "stochastic":
        return torch.bernoulli(x, generator=generator)
    raise ValueError(f"unknown binarisation {mode!r}; choose threshold or stochastic")


# -- registered variants ----------------------------------------------------------------------

MNIST_ATTENTION = DRAWConfig(steps=64, enc_size=256, dec_size=256, z_size=100, read_n=2, write_n=5)
MNIST_NO_ATTENTION = replace(MNIST_ATTENTION, read_n=None, write_n=None)


@MODELS.register("draw-mnist")
def draw_mnist(**overrides: object) -> DRAW:
    """The paper's MNIST model: T = 64, LSTMs of 256, z of 100, 2x2 read, 5x5 write."""
    return DRAW(config=MNIST_ATTENTION, **overrides)


@MODELS.register("draw-mnist-noattn")
def draw_mnist_noattn(**overrides: object) -> DRAW:
    """The paper's attention-free MNIST model: T = 64, LSTMs of 256, z of 100."""
    return DRAW(config=MNIST_NO_ATTENTION, **overrides)
