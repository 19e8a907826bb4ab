"""Training metrics kept where they are computed until the host reads them.

A ``MetricWindow`` sums each metric over the steps since the last logged record. A tensor value
stays a detached float64 tensor on its device (``Tensor.float().mean()``, then added to the
running sum); a Python number stays a Python float. Adding a step therefore launches a few small
kernels and never waits for the device: an ``.item()`` per step would make the host wait for
the whole step to finish before it can queue the next one, which leaves a GPU idle for the
small, launch-bound models.

The window also remembers the first step whose loss was not finite: on the device for a tensor
loss (a long tensor, -1 until then, updated with ``torch.where``), on the host for a Python
float. ``read`` copies the sums and that step to the host in one transfer per device; the
``Trainer`` calls it only at its sync points (every ``log_every`` steps, the last step, before a
checkpoint and before an evaluation). The sums add in step order from 0.0 (a read does not reset
them), so a logged mean is the same number whichever sync points a run had, and a resumed run's
window continues from the sums its checkpoint saved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

__all__ = ["MetricWindow", "WindowRead"]


@dataclass(frozen=True)
class WindowRead:
    """The window as the host saw it at one sync point."""

    sums: dict[str, float]  # each metric summed over the window's steps
    counts: dict[str, int]  # the number of steps that gave each metric
    bad_step: int | None  # the first step whose loss was not finite (None: every loss was)
    bad_value: float  # that loss (NaN or +-inf; NaN when bad_step is None)

    def means(self) -> dict[str, float]:
        """Each metric's mean over the steps that gave it."""
        return {k: s / self.counts[k] for k, s in self.sums.items()}


def _on_device(value: Tensor) -> Tensor:
    """A metric tensor as one detached float64 number on its device (the float32 mean of its
    elements, as a logged float has always been)."""
    v = value.detach().float()
    v = v.mean() if v.numel() != 1 else v.reshape(())
    return v.double()


class MetricWindow:
    """Sums of the metrics of the steps since the last record, and the first non-finite loss.

    ``add`` takes a step's metrics (tensors or numbers, with a ``"loss"``) without reading any
    tensor; ``read`` is the one host read; ``reset`` starts the next record's window (the
    first-non-finite marker is kept: it is never cleared while training goes on).
    """

    def __init__(self) -> None:
        self._sums: dict[str, float | Tensor] = {}
        self._counts: dict[str, int] = {}
        self._bad: tuple[Tensor, Tensor] | None = None  # on the device: (step, value)
        self._host_bad: tuple[int, float] | None = None  # a Python-float loss
        self._read: WindowRead | None = None  # the last read, while nothing was added since

    def add(self, step: int, metrics: Mapping[str, Any]) -> None:
        """Add the metrics of ``step`` (``"loss"`` among them) to the window."""
        self._read = None
        for k, v in metrics.items():
            value = _on_device(v) if isinstance(v, Tensor) else float(v)
            self._sums[k] = self._sums.get(k, 0.0) + value
            self._counts[k] = self._counts.get(k, 0) + 1
        loss = metrics["loss"]
        if isinstance(loss, Tensor):
            loss = _on_device(loss)
            if self._bad is None:
                first = torch.full((), -1, dtype=torch.long, device=loss.device)
                self._bad = first, torch.full_like(loss, math.nan)
            first, value = self._bad
            keep = torch.isfinite(loss) | (first >= 0)
            self._bad = torch.where(keep, first, step), torch.where(keep, value, loss)
        elif self._host_bad is None and not math.isfinite(float(loss)):
            self._host_bad = step, float(loss)

    def read(self) -> WindowRead:
        """Copy the window to the host: one transfer per device that holds a sum (usually one);
        nothing is transferred when nothing was added since the last read."""
        if self._read is not None:
            return self._read
        sums = {k: v for k, v in self._sums.items() if not isinstance(v, Tensor)}
        groups: dict[torch.device, tuple[list[str], list[Tensor]]] = {}
        for k, v in self._sums.items():
            if isinstance(v, Tensor):
                keys, tensors = groups.setdefault(v.device, ([], []))
                keys.append(k)
                tensors.append(v)
        marker = None if self._bad is None else self._bad[0].device
        if marker is not None:
            groups.setdefault(marker, ([], []))
        bad = [self._host_bad] if self._host_bad is not None else []
        for device, (keys, tensors) in groups.items():
            if device == marker and self._bad is not None:
                tensors = [*tensors, self._bad[0].double(), self._bad[1]]
            values = torch.stack(tensors).tolist()  # the host read
            sums.update(zip(keys, values, strict=False))
            if device == marker and values[len(keys)] >= 0:
                bad.append((int(values[len(keys)]), values[len(keys) + 1]))
        first_bad = min(bad, default=None)
        self._read = WindowRead(
            sums={k: sums[k] for k in self._sums},
            counts=dict(self._counts),
            bad_step=None if first_bad is None else first_bad[0],
            bad_value=math.nan if first_bad is None else first_bad[1],
        )
        return self._read

    def reset(self) -> None:
        """Start an empty window (after its record was logged); the marker of a non-finite loss
        stays."""
        seen = self.read()
        self._sums, self._counts = {}, {}
        self._read = WindowRead({}, {}, seen.bad_step, seen.bad_value)

    def replace_sums(self, sums: Mapping[str, float]) -> None:
        """Continue from these sums (e.g. their means over the ranks), the counts unchanged."""
        seen = self.read()
        if set(sums) != set(self._counts):
            raise ValueError(f"sums of {sorted(sums)} for a window of {sorted(self._counts)}")
        self._sums = {k: float(v) for k, v in sums.items()}
        self._read = WindowRead(dict(self._sums), seen.counts, seen.bad_step, seen.bad_value)

    def state_dict(self) -> dict[str, Any]:
        """The sums and counts as plain numbers (for a checkpoint; reads the window)."""
        seen = self.read()
        return {"sums": dict(seen.sums), "counts": dict(seen.counts)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a ``state_dict`` (the marker of a non-finite loss starts unset)."""
        sums, counts = dict(state["sums"]), {k: int(n) for k, n in state["counts"].items()}
        if set(sums) != set(counts):
            raise ValueError(f"window sums of {sorted(sums)} but counts of {sorted(counts)}")
        self._sums = {k: float(v) for k, v in sums.items()}
        self._counts = counts
        self._bad, self._host_bad = None, None
        self._read = WindowRead(dict(self._sums), dict(counts), None, math.nan)

    @classmethod
    def from_values(cls, values: Mapping[str, list[float]]) -> MetricWindow:
        """A window that holds these per-step values (the form checkpoints had before sums)."""
        window = cls()
        sums = {k: sum((float(x) for x in v), 0.0) for k, v in values.items()}
        window.load_state_dict({"sums": sums, "counts": {k: len(v) for k, v in values.items()}})
        return window
