"""Host-to-device copies that do not make the host wait.

A plain ``tensor.to("cuda")`` from ordinary (pageable) host memory is a synchronisation point:
the copy is queued behind every kernel already on the stream and the host waits until it is
done, so a training loop that copies its batch that way waits for the previous step's kernels
each step. ``to_device`` copies from page-locked (pinned) memory with ``non_blocking=True``:
the copy is queued and the host goes on to queue the step's kernels, which run after it on the
same stream. PyTorch's pinned-memory allocator keeps the pinned buffer alive until the copy has
finished, so the source may be dropped at once.

On the CPU nothing changes: a tensor already on the destination is returned as
``tensor.to(device, dtype)`` returns it (the same object when no dtype conversion is asked).
Copies to the host (``.cpu()``) are reads and stay blocking: their caller needs the values.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["PINNED_COPY_DEVICES", "batch_to_device", "to_device"]

# The device types whose copies from the host go through pinned memory (an asynchronous copy
# from the host to CUDA needs page-locked memory; elsewhere pinning is not possible or gains
# nothing).
PINNED_COPY_DEVICES: frozenset[str] = frozenset({"cuda"})


def to_device(x: Tensor, device: str | torch.device, dtype: torch.dtype | None = None) -> Tensor:
    """``x.to(device, dtype)`` without blocking the host when it copies host memory to a GPU.

    Args:
        x: the tensor to move.
        device: where it goes; a copy from the CPU to CUDA (``PINNED_COPY_DEVICES``) goes
            through pinned memory and is asynchronous, a copy between other devices or onto
            the CPU is ``Tensor.to``'s.
        dtype: the dtype to convert to on the way (None: keep ``x``'s).
    """
    dev = torch.device(device)
    if dev.type == "cpu" or x.device.type != "cpu":
        return x.to(dev, dtype)  # onto the host (a read), or between devices: as Tensor.to
    if dev.type in PINNED_COPY_DEVICES and not x.is_pinned():
        x = x.pin_memory()  # page-locked: the copy below can run asynchronously
    return x.to(dev, dtype, non_blocking=True)


def batch_to_device(batch: Any, device: torch.device, channels_last: bool = False) -> Any:
    """``batch`` (a tensor, or tuples, lists and dicts of them) on ``device``, each tensor moved
    by ``to_device``; 4-D tensors in channels-last memory format when ``channels_last``."""
    if isinstance(batch, Tensor):
        batch = to_device(batch, device)
        if channels_last and batch.dim() == 4:
            batch = batch.contiguous(memory_format=torch.channels_last)
        return batch
    if isinstance(batch, list | tuple):
        return type(batch)(batch_to_device(b, device, channels_last) for b in batch)
    if isinstance(batch, dict):
        return {k: batch_to_device(v, device, channels_last) for k, v in batch.items()}
    return batch
