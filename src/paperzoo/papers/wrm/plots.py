"""The figures: the spheres models' decision boundaries (Fig. 1), the certificate against the
test worst case (Fig. 2) and the MNIST error under PGM attacks (Fig. 3)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data.spheres import RADIUS
from paperzoo.experiments.base import RunContext
from paperzoo.metrics import on_device
from paperzoo.metrics.classification import predict
from paperzoo.papers.wrm.config import SPHERES_METHODS

if TYPE_CHECKING:
    from paperzoo.adversarial.certificate import CertificateCheck


def plot_boundaries(
    models: dict[str, nn.Module], x: Tensor, y: Tensor, lim: float, ctx: RunContext
) -> str:
    fig = Figure(figsize=(12, 3.4))
    axes = fig.subplots(1, len(SPHERES_METHODS))
    g = torch.linspace(-lim, lim, 300)
    yy, xx = torch.meshgrid(g, g, indexing="ij")
    show = torch.randperm(len(x), generator=ctx.generator("figure"))[:2000]
    circle = torch.linspace(0, 2 * math.pi, 200)
    for ax, method in zip(axes, SPHERES_METHODS, strict=True):
        grid_xy = torch.stack([xx.flatten(), yy.flatten()], 1)
        logits = predict(models[method], grid_xy, device=on_device.model_device(models[method]))
        f = (logits[:, 1] - logits[:, 0]).view(300, 300)
        ax.scatter(x[show, 0], x[show, 1], c=y[show], s=2, cmap="coolwarm", alpha=0.5)
        ax.contour(xx.numpy(), yy.numpy(), f.numpy(), levels=[0.0], colors="k")
        ax.plot(RADIUS * circle.cos(), RADIUS * circle.sin(), "g--", linewidth=0.8)
        ax.set(title=method.upper(), aspect="equal", xlim=(-3, 3), ylim=(-3, 3))
    fig.suptitle("decision boundaries (black) and the true boundary ||x|| = sqrt 2 (green)")
    return ctx.save_figure(fig, "spheres_boundaries.png")


def plot_certificate(check: CertificateCheck, ctx: RunContext) -> str:
    fig = Figure(figsize=(5, 3.6))
    ax = fig.subplots()
    rho = torch.tensor(check.curve.rho)
    grid = torch.linspace(0, float(rho.max()), 100)
    ax.plot(grid, check.gamma * grid + check.train.phi + check.error, label="certificate")
    ax.plot(check.curve.rho, check.curve.worst_loss, "o-", label="test worst case")
    ax.axvline(check.rho_hat, color="grey", linestyle="--", label="rho_hat_n (train)")
    ax.set(xlabel="rho (Wasserstein radius, squared l2 cost)", ylabel="worst-case loss")
    ax.legend(fontsize=8)
    return ctx.save_figure(fig, "spheres_certificate.png")


def plot_errors(errors: dict[str, list[float]], budgets: tuple[float, ...], ctx: RunContext) -> str:
    fig = Figure(figsize=(5, 3.6))
    ax = fig.subplots()
    for k, v in errors.items():
        ax.plot(budgets, v, "o-", label=k.upper())
    ax.set(xlabel="eps / C2 (l2 PGM attack)", ylabel="test error", yscale="log")
    ax.legend(fontsize=8)
    return ctx.save_figure(fig, "mnist_pgm_error.png")
