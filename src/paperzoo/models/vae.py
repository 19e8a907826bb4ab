"""VAEs of the disentanglement studies (Locatello et al. 2019; van Steenkiste et al. 2019).

One architecture (Higgins et al. 2017, Table 1, row 3, as used by disentanglement_lib):
encoder conv 32-32-64-64 (4x4, stride 2, ReLU) -> FC 256 -> mean and log-variance of 10 latents;
decoder FC 256 -> FC 4x4x64 -> deconv 64-32-32-C (4x4, stride 2) -> Bernoulli logits.
Six objectives share it; each adds a regulariser R to the reconstruction loss (summed Bernoulli
cross-entropy per image, averaged over the batch):

* beta-VAE (Higgins et al. 2017, Eq. 4): R = beta * KL(q(z|x) || N(0, I)).
* AnnealedVAE (Burgess et al. 2018, Eq. 8): R = gamma * |KL - C|, C = min(c_max, c_max * t / T).
* FactorVAE (Kim & Mnih 2018, Eq. 2): R = KL + gamma * TC, TC estimated by a discriminator
  (6 x 1000 LeakyReLU MLP) between q(z) and the product of its marginals (latents shuffled
  across the batch); the discriminator is trained by its own Adam (1e-4, betas 0.5 / 0.9).
* DIP-VAE-I / -II (Kumar et al. 2018, Eq. 6 / 7): R = KL + lambda_od sum_{i!=j} Cov_ij^2
  + lambda_d sum_i (Cov_ii - 1)^2 with Cov = Cov[mu(x)] (I) or E[diag sigma^2(x)] + Cov[mu(x)] (II),
  lambda_d = 10 lambda_od (I) or lambda_od (II).
* beta-TCVAE (Chen et al. 2018, Eq. 5 with alpha = gamma = 1): R = KL + (beta - 1) * TC, TC by
  minibatch-weighted sampling (without its constant, as in disentanglement_lib).

The representation used downstream is the encoder mean.

Deviations: PyTorch's default initialisation (disentanglement_lib used TensorFlow's Glorot
uniform); all four encoder convolutions are 4x4 as in the papers' table (disentanglement_lib's code
uses 2x2 kernels in the third and fourth); ``image_size`` may be 32 for quick runs (the decoder
then starts from 2x2 instead of 4x4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.models.registry import MODELS


@dataclass(frozen=True)
class VAEConfig:
    in_channels: int = 1  # 1 for dSprites, 3 for colour data sets
    image_size: int = 64  # side of the square input (a multiple of 16)
    num_latent: int = 10  # latent dimensions
    hidden: int = 256  # width of the fully connected layer


class ConvEncoder(nn.Module):
    """x (B, C, H, W) -> (mean, log-variance), each (B, num_latent)."""

    def __init__(self, *, config: VAEConfig) -> None:
        super().__init__()
        c, s = config.in_channels, config.image_size
        if s % 16:
            raise ValueError(f"image_size must be a multiple of 16, got {s}")
        self.convs = nn.Sequential(
            nn.Conv2d(c, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 64, 4, 2, 1), nn.ReLU(),
        )  # fmt: skip
        self.fc = nn.Linear(64 * (s // 16) ** 2, config.hidden)
        self.mean = nn.Linear(config.hidden, config.num_latent)
        self.logvar = nn.Linear(config.hidden, config.num_latent)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = F.relu(self.fc(self.convs(x).flatten(1)))  # (B, 64 (H/16)^2) -> (B, 256)
        return self.mean(h), self.logvar(h)


class DeconvDecoder(nn.Module):
    """z (B, num_latent) -> Bernoulli logits (B, C, H, W)."""

    def __init__(self, *, config: VAEConfig) -> None:
        super().__init__()
        self.side = config.image_size // 16
        self.fc = nn.Sequential(
            nn.Linear(config.num_latent, config.hidden), nn.ReLU(),
            nn.Linear(config.hidden, 64 * self.side**2), nn.ReLU(),
        )  # fmt: skip
        self.deconvs = nn.Sequential(
            nn.ConvTranspose2d(64, 64, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(32, 32, 4, 2, 1), nn.ReLU(),
            nn.ConvTranspose2d(32, config.in_channels, 4, 2, 1),
        )  # fmt: skip

    def forward(self, z: Tensor) -> Tensor:
        h = self.fc(z).view(-1, 64, self.side, self.side)  # (B, 64, H/16, W/16)
        return self.deconvs(h)


class FactorDiscriminator(nn.Module):
    """FactorVAE's discriminator: z (B, L) -> logits (B, 2) of (from q(z), from the shuffled codes)."""

    def __init__(self, *, num_latent: int = 10, width: int = 1000, depth: int = 6) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        d = num_latent
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.LeakyReLU(0.2)]
            d = width
        layers.append(nn.Linear(d, 2))
        self.net = nn.Sequential(*layers)

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z)


class VAEOutput(NamedTuple):
    mean: Tensor  # (B, L) encoder mean (the representation)
    logvar: Tensor  # (B, L) encoder log-variance
    z: Tensor  # (B, L) reparameterised sample
    logits: Tensor  # (B, C, H, W) decoder Bernoulli logits


def gaussian_kl(mean: Tensor, logvar: Tensor) -> Tensor:
    """KL(N(mean, exp(logvar)) || N(0, I)) summed over latents, averaged over the batch."""
    return (0.5 * (mean.square() + logvar.exp() - logvar - 1).sum(dim=1)).mean()


def bernoulli_reconstruction(logits: Tensor, x: Tensor) -> Tensor:
    """Summed Bernoulli cross-entropy per image, averaged over the batch. (B, C, H, W) x 2 -> ()."""
    return F.binary_cross_entropy_with_logits(logits, x, reduction="none").flatten(1).sum(1).mean()


def shuffle_codes(z: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """Permute every latent independently across the batch (samples of prod_j q(z_j)). (B, L) -> (B, L)."""
    b, latent = z.shape
    perm = torch.argsort(torch.rand(b, latent, generator=generator, device=z.device), dim=0)
    return torch.gather(z, 0, perm)


def gaussian_log_density(samples: Tensor, mean: Tensor, logvar: Tensor) -> Tensor:
    """Elementwise log N(samples; mean, exp(logvar))."""
    return -0.5 * ((samples - mean).square() * torch.exp(-logvar) + logvar + math.log(2 * math.pi))


def total_correlation(z: Tensor, mean: Tensor, logvar: Tensor) -> Tensor:
    """Minibatch-weighted-sampling estimate of TC(z) on a batch, without its constant.

    E_j[log q(z_j) - sum_l log q(z_jl)] with q(z_j) ~ sum_i q(z_j | x_i) (Chen et al. 2018, Sec. 4.1).
    """
    log_qz_prob = gaussian_log_density(
        z.unsqueeze(1), mean.unsqueeze(0), logvar.unsqueeze(0)
    )  # (B_j, B_i, L)
    log_qz_product = torch.logsumexp(log_qz_prob, dim=1).sum(dim=1)  # (B_j,)
    log_qz = torch.logsumexp(log_qz_prob.sum(dim=2), dim=1)  # (B_j,)
    return (log_qz - log_qz_product).mean()


def covariance(x: Tensor) -> Tensor:
    """Biased covariance E[x x^T] - E[x] E[x]^T over the batch. (B, L) -> (L, L)."""
    m = x.mean(dim=0)
    return (x.unsqueeze(2) * x.unsqueeze(1)).mean(dim=0) - m.unsqueeze(1) * m.unsqueeze(0)


def dip_regularizer(cov: Tensor, lambda_od: float, lambda_d: float) -> Tensor:
    """lambda_od * sum of squared off-diagonal entries + lambda_d * sum (diag - 1)^2."""
    diag = torch.diagonal(cov)
    off = cov - torch.diag(diag)
    return lambda_od * off.square().sum() + lambda_d * (diag - 1).square().sum()


class VAE(nn.Module):
    """A Gaussian-encoder VAE with one of the study's regularisers.

    Args:
        config: architecture.
        method: "beta_vae", "annealed_vae", "factor_vae", "dip_vae_i", "dip_vae_ii", "beta_tc_vae".
        beta: beta-VAE / beta-TCVAE weight.
        gamma: AnnealedVAE / FactorVAE weight.
        c_max: AnnealedVAE target capacity (nats).
        iteration_threshold: AnnealedVAE steps to reach ``c_max``.
        lambda_od: DIP-VAE off-diagonal weight.
        lambda_d_factor: DIP-VAE lambda_d = lambda_d_factor * lambda_od (10 for I, 1 for II).
        disc_width: FactorVAE discriminator width (1000 in the paper).
    """

    METHODS = ("beta_vae", "annealed_vae", "factor_vae", "dip_vae_i", "dip_vae_ii", "beta_tc_vae")

    def __init__(
        self,
        *,
        config: VAEConfig = VAEConfig(),
        method: str = "beta_vae",
        beta: float = 1.0,
        gamma: float = 1.0,
        c_max: float = 25.0,
        iteration_threshold: int = 100000,
        lambda_od: float = 1.0,
        lambda_d_factor: float | None = None,
        disc_width: int = 1000,
    ) -> None:
        super().__init__()
        if method not in self.METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {', '.join(self.METHODS)}")
        self.config, self.method = config, method
        self.beta, self.gamma, self.c_max, self.iteration_threshold = (
            beta,
            gamma,
            c_max,
            iteration_threshold,
        )
        self.lambda_od = lambda_od
        if lambda_d_factor is None:
            lambda_d_factor = 10.0 if method == "dip_vae_i" else 1.0
        self.lambda_d_factor = lambda_d_factor
        self.encoder = ConvEncoder(config=config)
        self.decoder = DeconvDecoder(config=config)
        self.discriminator = (
            FactorDiscriminator(num_latent=config.num_latent, width=disc_width)
            if method == "factor_vae"
            else None
        )
        self.register_buffer("step", torch.zeros((), dtype=torch.long))  # training steps taken

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> VAEOutput:
        mean, logvar = self.encoder(x)
        eps = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        z = mean + torch.exp(0.5 * logvar) * eps  # reparameterisation
        return VAEOutput(mean, logvar, z, self.decoder(z))

    @torch.no_grad()
    def represent(self, x: Tensor) -> Tensor:
        """The representation: the encoder mean. (B, C, H, W) -> (B, L)."""
        return self.encoder(x)[0]

    def regularizer(self, out: VAEOutput, kl: Tensor) -> Tensor:
        """R of the chosen method (FactorVAE's TC term is added by ``losses``)."""
        if self.method == "beta_vae":
            return self.beta * kl  # Eq. 4 (beta-VAE)
        if self.method == "annealed_vae":
            # The capacity C grows linearly to c_max over iteration_threshold steps, computed
            # from the step buffer where it lives (no read of the device per step): float64 as
            # Python's arithmetic, rounded once to kl's dtype.
            c = (self.step.double() * self.c_max / self.iteration_threshold).clamp(max=self.c_max)
            return self.gamma * (kl - c.to(kl.dtype)).abs()  # Eq. 8 (Burgess et al.)
        if self.method == "factor_vae":
            return kl
        if self.method in ("dip_vae_i", "dip_vae_ii"):
            cov = covariance(out.mean)  # Eq. 6: Cov_p(x)[mu(x)]
            if self.method == "dip_vae_ii":
                cov = cov + torch.diag(out.logvar.exp().mean(dim=0))  # Eq. 7: + E[diag sigma^2(x)]
            return kl + dip_regularizer(cov, self.lambda_od, self.lambda_d_factor * self.lambda_od)
        tc = total_correlation(out.z, out.mean, out.logvar)
        return kl + (self.beta - 1.0) * tc  # Eq. 5 (beta-TCVAE), alpha = gamma = 1

    def losses(self, x: Tensor, generator: torch.Generator | None = None) -> dict[str, Tensor]:
        """All terms of one training step: "loss" (the VAE objective), "recon", "kl", "elbo" and,
        for FactorVAE, "tc" and "disc_loss" (the discriminator's objective)."""
        out = self(x, generator)
        recon = bernoulli_reconstruction(out.logits, x)
        kl = gaussian_kl(out.mean, out.logvar)
        terms = {"recon": recon, "kl": kl, "elbo": -(recon + kl)}
        reg = self.regularizer(out, kl)
        if self.discriminator is not None:
            logits = self.discriminator(out.z)
            tc = (logits[:, 0] - logits[:, 1]).mean()  # E[log D(z) / (1 - D(z))] (Eq. 2)
            reg = reg + self.gamma * tc
            z = out.z.detach()
            p_real = F.softmax(self.discriminator(z), dim=1).clamp(1e-6, 1 - 1e-6)
            p_perm = F.softmax(self.discriminator(shuffle_codes(z, generator)), dim=1).clamp(
                1e-6, 1 - 1e-6
            )
            terms["tc"] = tc
            terms["disc_loss"] = -(
                0.5 * p_real[:, 0].log().mean() + 0.5 * p_perm[:, 1].log().mean()
            )
        terms["loss"] = recon + reg
        return terms

    def vae_parameters(self) -> list[nn.Parameter]:
        return list(self.encoder.parameters()) + list(self.decoder.parameters())


def train_step(
    model: VAE,
    x: Tensor,
    vae_opt: torch.optim.Optimizer,
    disc_opt: torch.optim.Optimizer | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, Tensor]:
    """One simultaneous update of the VAE and (FactorVAE) its discriminator, as disentanglement_lib."""
    terms = model.losses(x, generator)
    vae_opt.zero_grad(set_to_none=True)
    if disc_opt is not None:
        disc_opt.zero_grad(set_to_none=True)
    terms["loss"].backward()
    if model.discriminator is not None:
        assert disc_opt is not None
        for p in model.discriminator.parameters():
            p.grad = None  # the VAE objective does not update the discriminator
        terms["disc_loss"].backward()
        disc_opt.step()
    vae_opt.step()
    model.step += 1
    return {k: v.detach() for k, v in terms.items()}


def make_optimizers(
    model: VAE, *, lr: float = 1e-4
) -> tuple[torch.optim.Optimizer, torch.optim.Optimizer | None]:
    """Adam(1e-4, 0.9 / 0.999) for the VAE; Adam(1e-4, 0.5 / 0.9) for a FactorVAE discriminator."""
    vae_opt = torch.optim.Adam(model.vae_parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    disc_opt = None
    if model.discriminator is not None:
        disc_opt = torch.optim.Adam(
            model.discriminator.parameters(), lr=1e-4, betas=(0.5, 0.9), eps=1e-8
        )
    return vae_opt, disc_opt


def _factory(method: str):
    def build(*, config: VAEConfig = VAEConfig(), **kw: float) -> VAE:
        return VAE(config=config, method=method, **kw)

    build.__name__ = method
    build.__doc__ = f"A {method.replace('_', '-')} with the study's convolutional architecture."
    return build


for _name, _method in (
    ("beta-vae", "beta_vae"),
    ("annealed-vae", "annealed_vae"),
    ("factor-vae", "factor_vae"),
    ("dip-vae-i", "dip_vae_i"),
    ("dip-vae-ii", "dip_vae_ii"),
    ("beta-tcvae", "beta_tc_vae"),
):
    MODELS.register(_name)(_factory(_method))
