"""DRAW's figures: samples of both models (``samples_figure``), the canvas while generating
(``canvas_figure``), the attention windows of a reconstruction and a generation
(``windows_figure``) and the training curves (``curves_figure``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor

from paperzoo.experiments.base import RunContext
from paperzoo.models.draw import DRAW
from paperzoo.nn.gaussian_attention import AttentionParams, grid_centres
from paperzoo.papers.draw.config import VARIANTS


def samples_figure(models: dict[str, DRAW], gen: torch.Generator, ctx: RunContext) -> str:
    """64 generated digits of each model side by side (``samples.png``)."""
    fig = Figure(figsize=(9, 4.8))
    axes = fig.subplots(1, 2)
    for ax, v in zip(axes, VARIANTS, strict=True):
        model = models[v].cpu().eval()
        means, _, _ = model.sample(64, generator=gen)
        ax.imshow(_tile(means, 8), cmap="gray", vmin=0, vmax=1)
        ax.set_title(f"samples, {v.replace('_', ' ')}")
        ax.axis("off")
    return ctx.save_figure(fig, "samples.png")


def canvas_figure(models: dict[str, DRAW], gen: torch.Generator, ctx: RunContext) -> str:
    """Each model's canvas in three generations, at up to ten steps (``canvas_sequence.png``)."""
    rows, max_cols = 3, 10
    fig = Figure(figsize=(max_cols * 0.75 + 0.8, 2 * rows * 0.75 + 0.9))
    axes = fig.subplots(2, 1)
    for ax, v in zip(axes, VARIANTS, strict=True):
        _, canvases, _ = models[v].cpu().eval().sample(rows, generator=gen, return_canvases=True)
        assert canvases is not None  # (T, rows, C, H, W)
        picks = _pick_steps(canvases.shape[0], max_cols)
        frames = canvases[picks].transpose(0, 1).flatten(0, 1)  # (rows * cols, C, H, W)
        ax.imshow(_tile(frames, len(picks)), cmap="gray", vmin=0, vmax=1)
        w = canvases.shape[-1] + 1
        ax.set_xticks([j * w + w / 2 - 1 for j in range(len(picks))])
        ax.set_xticklabels([f"t={t + 1}" for t in picks], fontsize=7)
        ax.set_yticks([])
        ax.set_ylabel(v.replace("_", "\n"), fontsize=8)
    fig.suptitle("canvas sigmoid(c_t) while generating (rows: samples)", fontsize=9)
    return ctx.save_figure(fig, "canvas_sequence.png")


def windows_figure(model: DRAW, x: Tensor, gen: torch.Generator, ctx: RunContext) -> str:
    """The attention model's read and write windows while reconstructing ``x`` and its write
    windows while generating (``attention_windows.png``)."""
    model = model.cpu().eval()
    cfg = model.config
    with torch.no_grad():
        out = model(x, generator=gen, return_canvases=True)
    assert out.canvases is not None
    recon = torch.sigmoid(out.canvases[:, :1])  # (T, 1, C, H, W)
    _, sampled, windows = model.sample(1, generator=gen, return_canvases=True)
    assert sampled is not None
    picks = _pick_steps(recon.shape[0], 8)
    fig = Figure(figsize=(len(picks) * 1.2 + 0.8, 3.4))
    axes = fig.subplots(2, 1)
    h, w = cfg.height, cfg.width
    rows = (
        (
            recon,
            [(out.read_params, cfg.read_n, "red"), (out.write_params, cfg.write_n, "lime")],
        ),
        (sampled, [(windows, cfg.write_n, "lime")]),
    )
    for ax, (frames, marks) in zip(axes, rows, strict=True):
        ax.imshow(_tile(frames[picks, 0], len(picks)), cmap="gray", vmin=0, vmax=1)
        for j, t in enumerate(picks):
            for params, n, color in marks:
                _draw_window(ax, params[t], n or 1, color, frame=(h, w), offset=j * (w + 1))
        ax.set_xticks([j * (w + 1) + w / 2 - 1 for j in range(len(picks))])
        ax.set_xticklabels([f"t={t + 1}" for t in picks], fontsize=7)
        ax.set_yticks([])
        ax.set_xlim(-0.5, len(picks) * (w + 1) - 1.5)
        ax.set_ylim(h - 0.5, -0.5)
    axes[0].set_ylabel("reconstruct\n(red read,\ngreen write)", fontsize=7)
    axes[1].set_ylabel("generate\n(write)", fontsize=7)
    fig.suptitle("attention windows (border width ~ filter sigma)", fontsize=9)
    return ctx.save_figure(fig, "attention_windows.png")


def curves_figure(curves: dict[str, dict[str, list[float]]], ctx: RunContext) -> str:
    """Training bound, validation bound and KL of both models over the steps (``curves.png``)."""
    fig = Figure(figsize=(9, 3.5))
    ax1, ax2 = fig.subplots(1, 2)
    for v, color in zip(VARIANTS, ("tab:blue", "tab:orange"), strict=True):
        cv = curves[v]
        ax1.plot(cv["train_steps"], cv["train_loss"], color=color, alpha=0.5, label=f"{v} train")
        if cv["monitor_steps"]:
            ax1.plot(cv["monitor_steps"], cv["monitor_val"], "o-", color=color, label=f"{v} val")
        ax2.plot(cv["train_steps"], cv["train_kl"], color=color, label=v)
    ax1.set_xlabel("step")
    ax1.set_ylabel("NLL bound (nats)")
    ax1.set_ylim(top=min(300.0, max(max(c["train_loss"]) for c in curves.values())))
    ax1.legend(fontsize=7)
    ax2.set_xlabel("step")
    ax2.set_ylabel("KL summed over steps (nats, train)")
    ax2.legend(fontsize=7)
    return ctx.save_figure(fig, "curves.png")


def _tile(images: Tensor, cols: int) -> np.ndarray:
    """(N, 1, H, W) -> one (rows*H, cols*W) mosaic with 1-pixel gaps."""
    n, _, h, w = images.shape
    rows = math.ceil(n / cols)
    out = np.ones((rows * (h + 1) - 1, cols * (w + 1) - 1), dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, cols)
        out[r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w] = (
            images[i, 0].cpu().numpy()
        )
    return out


def _pick_steps(total: int, k: int) -> list[int]:
    """Up to ``k`` evenly spaced time-step indices including the first and the last."""
    return sorted({int(round(v)) for v in np.linspace(0, total - 1, min(total, k))})


def _draw_window(
    ax: Any, p: AttentionParams, n: int, color: str, *, frame: tuple[int, int], offset: float = 0.0
) -> None:
    """Outline the filter-centre grid of one window on a mosaic frame.

    Pixel coordinates are 1-based (pixel a is imshow column a - 1); the frame of size
    ``frame = (H, W)`` starts ``offset`` columns to the right; the outline is clipped to it.
    """
    mux = grid_centres(p.gx[:1], p.delta[:1], n)[0]
    muy = grid_centres(p.gy[:1], p.delta[:1], n)[0]
    x0, y0 = float(mux[0]) - 1 + offset, float(muy[0]) - 1
    width, height = float(mux[-1] - mux[0]), float(muy[-1] - muy[0])
    if n == 1:  # a single filter: outline its pixel
        x0, y0, width, height = x0 - 0.5, y0 - 0.5, 1.0, 1.0
    sigma = float(p.sigma2[0].sqrt())
    patch = Rectangle(
        (x0, y0),
        width,
        height,
        fill=False,
        edgecolor=color,
        linewidth=min(4.0, 0.5 + sigma / 2),
    )
    ax.add_patch(patch)
    fh, fw = frame
    clip = Rectangle((offset - 0.5, -0.5), fw, fh, transform=ax.transData)
    patch.set_clip_path(clip)
