"""GAT's figures: every model's accuracy under FGSM against eps (``plot_acc``) and GAT's
generated perturbations of test images (``plot_perturbations``)."""

from __future__ import annotations

import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.adversarial.gat import PerturbationGenerator
from paperzoo.experiments.base import RunContext
from paperzoo.metrics import on_device
from paperzoo.metrics.classification import predict
from paperzoo.papers.gat.config import Config


def plot_acc(acc: dict[str, dict[str, float]], cfg: Config, ctx: RunContext) -> str:
    """Every model's accuracy, clean and under FGSM at each eps (``accuracy_vs_eps.png``)."""
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.subplots()
    xs = [0.0, *cfg.eps]
    for name, row in acc.items():
        ax.plot(xs, [row["clean"]] + [row[f"fgsm{e}"] for e in cfg.eps], marker="o", label=name)
    ax.set_xlabel("FGSM eps (l_inf)")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.set_title("accuracy under FGSM")
    return ctx.save_figure(fig, "accuracy_vs_eps.png")


def plot_perturbations(
    classifier: nn.Module,
    generator: PerturbationGenerator,
    x: Tensor,
    y: Tensor,
    ctx: RunContext,
) -> str:
    """Six images, GAT's generated perturbations of them and the classifier's prediction on the
    perturbed images (``perturbations.png``)."""
    from paperzoo.adversarial.gat import input_gradient

    dev = on_device.model_device(classifier)
    x, y = x[:6], y[:6]
    with torch.no_grad():
        delta = generator(input_gradient(classifier, x.to(dev), y.to(dev))).cpu()
    x_adv = (x + delta).clamp(0, 1)
    pred = predict(classifier, x_adv, device=dev).argmax(1)
    fig = Figure(figsize=(9, 4.5))
    axes = fig.subplots(3, len(x))
    for c in range(len(x)):
        for r, (img, label) in enumerate(((x[c], f"y={int(y[c])}"), (delta[c], "G(grad)"),
                                          (x_adv[c], f"pred={int(pred[c])}"))):  # fmt: skip
            ax = axes[r, c]
            arr = img.permute(1, 2, 0).squeeze(-1).numpy()
            if r == 1:
                ax.imshow(arr if arr.ndim == 2 else arr / (2 * generator.scale) + 0.5,
                          cmap="seismic", vmin=-generator.scale, vmax=generator.scale)  # fmt: skip
            else:
                ax.imshow(arr, cmap="gray", vmin=0, vmax=1)
            ax.set_title(label, fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("clean images, generated perturbations, perturbed images", fontsize=9)
    return ctx.save_figure(fig, "perturbations.png")
