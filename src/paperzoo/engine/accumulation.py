"""Gradient accumulation over the chunks of one batch, with one all-reduce per optimiser step.

A batch too large for one forward pass is cut into chunks; each chunk's share of the batch's
mean loss is back-propagated and the gradients add up in ``.grad``. Under
DistributedDataParallel every backward pass would all-reduce the gradients, once per chunk;
``DistributedDataParallel.no_sync()`` turns that off, and the backward pass of the last chunk,
run outside it, reduces the accumulated sum once (PyTorch's documented pattern for
accumulation: forward and backward of the earlier chunks inside ``no_sync``).

The sum of the chunks' gradients is the batch's gradient only for a model whose examples do not
interact: with batch norm each chunk is normalised by its own statistics (a "ghost batch"), so
for such a model the chunk size is a modelling choice, not a memory setting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from torch import Tensor, nn

__all__ = ["backward_in_chunks", "has_batch_norm", "sync_gradients_if"]


def sync_gradients_if(model: nn.Module, sync: bool) -> AbstractContextManager[Any]:
    """``model.no_sync()`` unless ``sync`` (a no-op context for a model without one: a model
    not wrapped in DistributedDataParallel).

    Args:
        model: the model the trainer hands to the step (DDP-wrapped under torchrun).
        sync: True for the backward pass that should all-reduce (the last chunk).

    Returns:
        A context manager to run the chunk's forward and backward in.
    """
    no_sync = getattr(model, "no_sync", None)
    if sync or no_sync is None:
        return nullcontext()
    return no_sync()


def backward_in_chunks(
    model: nn.Module,
    batch: Sequence[Tensor],
    loss_fn: Callable[[nn.Module, tuple[Tensor, ...]], tuple[Tensor, Any]],
    chunk: int | None,
) -> tuple[Tensor, list[Any]]:
    """Back-propagate the batch's mean loss in chunks of ``chunk`` examples (None: one pass),
    all but the last chunk under ``no_sync`` (one gradient all-reduce per call under DDP).

    Args:
        model: the (possibly DDP-wrapped) model; gradients accumulate into its parameters.
        batch: tensors with the examples along dimension 0.
        loss_fn: ``(model, chunk tensors) -> (mean loss over the chunk, anything)``.
        chunk: examples per forward/backward pass.

    Returns:
        The batch's mean loss (detached) and the second outputs of ``loss_fn``, one per chunk.
    """
    n = len(batch[0])
    if n == 0:
        raise ValueError("cannot back-propagate an empty batch")
    if chunk is not None and chunk < 1:
        raise ValueError(f"chunk must be >= 1 or None, got {chunk}")
    size = n if chunk is None else min(chunk, n)
    parts = list(zip(*(t.split(size) for t in batch), strict=True))
    total: Tensor | None = None
    aux: list[Any] = []
    for k, part in enumerate(parts):
        with sync_gradients_if(model, sync=k == len(parts) - 1):
            loss, extra = loss_fn(model, part)
            share = loss * (len(part[0]) / n)  # the chunk's share of the batch mean
            share.backward()
        total = share.detach() if total is None else total + share.detach()
        aux.append(extra)
    assert total is not None
    return total, aux


def has_batch_norm(model: nn.Module) -> bool:
    """Whether ``model`` normalises by batch statistics (any ``nn.modules.batchnorm._BatchNorm``,
    SyncBatchNorm included)."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
