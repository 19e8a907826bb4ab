"""Evaluation that stays on the model's device.

``metrics.classification.predict`` / ``accuracy`` return the logits on the CPU (``predict`` is
``logits_on_device`` followed by one copy). The helpers here move the batches to the device the
model is on, compare the predictions there and add the counts up in a device tensor; the caller
reads what it needs once, after the last batch (``fractions`` reads many counts in one
transfer).

The numbers are those of ``accuracy``: the same batches through the same forward (eval mode,
under the run's precision: ``engine.precision.autocast_forward``), and a count divided by the
number of examples in float32, which is the value of the float32 mean of the 0/1 correctness
``accuracy`` takes (the count is exact in float32 up to 2**24, the division rounds once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from torch import Tensor, nn

from paperzoo.engine import precision

__all__ = [
    "accuracies",
    "accuracy_on_device",
    "count_correct",
    "fractions",
    "logits_on_device",
    "model_device",
]

Model = nn.Module | Callable[[Tensor], Tensor]


def model_device(model: Model) -> torch.device:
    """The device of ``model``'s first parameter (else first buffer); the CPU for a module with
    neither and for a plain callable."""
    if isinstance(model, nn.Module):
        for t in (*model.parameters(), *model.buffers()):
            return t.device
    return torch.device("cpu")


@torch.no_grad()
def logits_on_device(
    model: Model, x: Tensor, *, batch_size: int = 500, device: str | torch.device | None = None
) -> Tensor:
    """``predict`` without the copies to the host: the logits of ``model`` on ``x``, in batches
    moved to ``device`` (None: the model's), in eval mode (the caller's mode is restored),
    forward under the run's precision, float32, concatenated on ``device``.

    Shapes:
        x: (N, ...) -> (N, ...) the model's output per example
    """
    dev = model_device(model) if device is None else torch.device(device)
    was_training = getattr(model, "training", None)
    if isinstance(model, nn.Module):
        model.eval()
    try:
        with precision.autocast_forward():
            outs = [
                precision.to_float32(model(x[i : i + batch_size].to(dev)))
                for i in range(0, len(x), batch_size)
            ]
    finally:
        if isinstance(model, nn.Module) and was_training is not None:
            model.train(was_training)
    return torch.cat(outs) if outs else torch.empty(0, device=dev)


def count_correct(
    model: Model,
    x: Tensor,
    y: Tensor,
    *,
    batch_size: int = 500,
    device: str | torch.device | None = None,
) -> Tensor:
    """How many examples of ``(x, y)`` ``model`` classifies correctly (top-1), as a 0-dim int64
    tensor on ``device`` (None: the model's); nothing is read back to the host.

    Shapes:
        x: (N, ...); y: (N,) -> ()
    """
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} vs {len(y)}")
    dev = model_device(model) if device is None else torch.device(device)
    total = torch.zeros((), dtype=torch.int64, device=dev)
    for i in range(0, len(x), batch_size):
        logits = logits_on_device(model, x[i : i + batch_size], batch_size=batch_size, device=dev)
        total += (logits.argmax(1) == y[i : i + batch_size].to(dev)).sum()
    return total


def fractions(counts: Sequence[Tensor], n: int) -> list[float]:
    """Each count over ``n`` in float32 (see the module doc), read to the host in one transfer.

    Args:
        counts: 0-dim tensors on one device.
        n: the number of examples each count is out of.
    """
    if not counts:
        return []
    return (torch.stack(list(counts)).float() / n).tolist()


def accuracy_on_device(
    model: Model,
    x: Tensor,
    y: Tensor,
    *,
    batch_size: int = 500,
    device: str | torch.device | None = None,
) -> float:
    """Top-1 accuracy of ``model`` on ``(x, y)``, computed on ``device`` (None: the model's) and
    read once; the value ``metrics.classification.accuracy`` gives."""
    if len(x) == 0:
        raise ValueError("accuracy of an empty set is undefined")
    correct = count_correct(model, x, y, batch_size=batch_size, device=device)
    return fractions([correct], len(x))[0]


def accuracies(models: Mapping[str, Model], x: Tensor, y: Tensor) -> dict[str, float]:
    """Top-1 accuracy of each of ``models`` on ``(x, y)``, each on its device; all of them read
    in one transfer (the models share a device)."""
    if len(x) == 0:
        raise ValueError("accuracy of an empty set is undefined")
    counts = [count_correct(m, x, y) for m in models.values()]
    return dict(zip(models, fractions(counts, len(x)), strict=True))
