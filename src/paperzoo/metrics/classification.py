"""Classification helpers shared by the experiments."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from paperzoo.metrics.on_device import logits_on_device


@torch.no_grad()
def predict(
    model: nn.Module | Callable[[Tensor], Tensor],
    x: Tensor,
    *,
    batch_size: int = 500,
    device: str | torch.device = "cpu",
) -> Tensor:
    """Logits of ``model`` on ``x`` in batches, in eval mode (the caller's mode is restored).

    Under ``--precision bf16`` the forward runs under bf16 autocast and the logits come back in
    float32 (``paperzoo.engine.precision``); otherwise in float32.

    Shapes:
        x: (N, ...) -> (N, num_classes) on the CPU.
    """
    return logits_on_device(model, x, batch_size=batch_size, device=device).cpu()


def accuracy(
    model: nn.Module | Callable[[Tensor], Tensor],
    x: Tensor,
    y: Tensor,
    *,
    batch_size: int = 500,
    device: str | torch.device = "cpu",
) -> float:
    """Top-1 accuracy of ``model`` on ``(x, y)``."""
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} vs {len(y)}")
    if len(x) == 0:
        raise ValueError("accuracy of an empty set is undefined")
    logits = predict(model, x, batch_size=batch_size, device=device)
    return (logits.argmax(1) == y.cpu()).float().mean().item()
