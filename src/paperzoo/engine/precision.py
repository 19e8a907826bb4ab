"""Numerical precision of a run (``paperzoo reproduce --precision fp32|tf32|bf16``).

Three settings, recorded in every ``results.json`` (``"precision"``) and part of a run's identity
(a run resumes only at the precision it started with; ``paperzoo merge`` refuses to combine runs
of different precision):

* ``fp32``: IEEE single precision everywhere. On CUDA this switches TF32 *off* for matrix
  products and cuDNN convolutions (PyTorch leaves cuDNN's TF32 on by default), so that "fp32"
  means what it says.
* ``tf32``: float32 tensors, but CUDA matrix products and convolutions may use TensorFloat-32
  (10-bit mantissa inputs, fp32 accumulation): ``torch.backends.cuda.matmul.allow_tf32``,
  ``torch.backends.cudnn.allow_tf32`` and ``torch.set_float32_matmul_precision("high")``. TF32
  is a CUDA (Ampere and later) feature: on the CPU this setting changes nothing and is only
  recorded.
* ``bf16``: the forward passes of the models being trained run under
  ``torch.autocast(dtype=torch.bfloat16)`` (on CPU too, which runs the same code path). Only the
  forward: the outputs of a model are cast back to float32, so the loss, the backward pass's
  reductions into fp32 parameters, the optimiser and every metric are computed in float32 (the
  pattern of PyTorch's AMP recipe, "autocast should wrap only the forward pass(es) ... Backward
  passes under autocast are not recommended"). bf16 needs no loss scaling (it has fp32's
  exponent range), so there is no ``GradScaler``.

Where bf16 applies (``autocast_modules``, entered by ``engine.Trainer`` and
``engine.batched.fit_batched`` around their loops, and ``autocast_forward`` in the shared
evaluation helper ``metrics.classification.predict``):

* every forward call of the trained modules (the model and the ``extra`` modules of a
  ``Trainer``: GAT's generator, FactorVAE's discriminator), including the forwards an attack
  makes *inside* an adversarial-training step (PGD, WRM's inner ascent, GAT's generator): those
  steps train the model, and their update arithmetic (sign, projection, clamping) runs outside
  the model in float32;
* the periodic validation of a ``Trainer`` / ``fit_batched`` (model selection is part of
  training) and the logits of ``predict`` / ``accuracy``.

Where it does not: attacks and certificates *at evaluation* (outside a training loop) call the
model directly and run in float32, because their gradient steps are the measurement (an attack
that stalls on a bf16 gradient reads as robustness; WRM's certificate is a bound from an inner
maximisation solved to a tolerance). Code that must stay float32 inside a training loop uses
``full_precision()``.

Checks of an exact property (an invariance or an equivalence that holds by construction, such as
the Perceiver's logits under a joint permutation of pixels and positions) compare two forwards at
a float32 tolerance. They run inside ``exact_comparison()``: IEEE float32 whatever the setting,
with TF32 off on CUDA too. In bf16 (8 significant bits) a value in [0.25, 0.5) is rounded to a
multiple of 2**-9 (about 2e-3), so a different summation order alone can move a logit by more
than such a tolerance, and the check would measure the rounding, not the property.

The precision in force is process-wide state (a ``ContextVar``), set by the runner around an
experiment's ``run`` with ``using``; library code reads it with ``active()``. Without ``using``
everything here is a no-op and code runs in float32.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

__all__ = [
    "PRECISIONS",
    "Setting",
    "active",
    "autocast_forward",
    "autocast_modules",
    "check",
    "default_precision",
    "exact_comparison",
    "full_precision",
    "to_float32",
    "using",
]

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "tf32", "bf16")


@dataclass(frozen=True)
class Setting:
    """The precision in force and the device type it applies to (``"cpu"`` or ``"cuda"``)."""

    precision: str = "fp32"
    device_type: str = "cpu"

    @property
    def autocast(self) -> bool:
        """Whether model forwards run under bf16 autocast."""
        return self.precision == "bf16"


_FP32 = Setting()
_ACTIVE: ContextVar[Setting | None] = ContextVar("paperzoo_precision", default=None)
# Set by ``full_precision``: the hooks of ``autocast_modules`` enter no autocast.
_SUSPENDED: ContextVar[bool] = ContextVar("paperzoo_precision_suspended", default=False)


def check(precision: str) -> str:
    """``precision`` if it is one of ``PRECISIONS``, else ``ValueError`` (one line)."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    return precision


def default_precision(cuda_precision: str, device: str | torch.device) -> str:
    """The precision of a run that gives no ``--precision``: fp32 on the CPU; on CUDA the
    paper's declared ``cuda_precision`` (``Experiment.cuda_precision``).

    Args:
        cuda_precision: the experiment's CUDA default.
        device: the run's device (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
    """
    return check(cuda_precision) if torch.device(device).type == "cuda" else "fp32"


def active() -> Setting:
    """The setting in force (``fp32`` on the CPU outside ``using``)."""
    return _ACTIVE.get() or _FP32


def _set_tf32(enabled: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    torch.set_float32_matmul_precision("high" if enabled else "highest")


@contextmanager
def using(precision: str, device: str | torch.device) -> Iterator[Setting]:
    """Run the block at ``precision`` on ``device``; the CUDA backend flags (TF32, and
    ``cudnn.benchmark``: the papers' convolutions see a few fixed shapes, so cuDNN's choice of
    the fastest algorithm per shape pays for itself) are set on entry and restored on exit. On the CPU only the setting is recorded (bf16 autocast is
    applied by the hooks of ``autocast_modules``; TF32 does not exist there).

    Raises:
        ValueError: an unknown precision.
    """
    setting = Setting(check(precision), torch.device(device).type)
    cuda = setting.device_type == "cuda"
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
        torch.backends.cudnn.benchmark,
    )
    if cuda:
        # tf32: TF32 matmuls and convolutions; fp32 and bf16: true fp32 outside autocast.
        _set_tf32(setting.precision == "tf32")
        torch.backends.cudnn.benchmark = True
    token = _ACTIVE.set(setting)
    try:
        yield setting
    finally:
        _ACTIVE.reset(token)
        if cuda:
            torch.backends.cuda.matmul.allow_tf32 = saved[0]
            torch.backends.cudnn.allow_tf32 = saved[1]
            torch.set_float32_matmul_precision(saved[2])
            torch.backends.cudnn.benchmark = saved[3]


@contextmanager
def full_precision() -> Iterator[None]:
    """A block that runs in float32 whatever the setting: autocast is disabled inside, and the
    hooks of ``autocast_modules`` do not enter it (for a certificate or an attack's step that
    runs inside a training loop)."""
    token = _SUSPENDED.set(True)
    device_type = active().device_type
    try:
        with torch.autocast(device_type=device_type, enabled=False):
            yield
    finally:
        _SUSPENDED.reset(token)


@contextmanager
def exact_comparison() -> Iterator[None]:
    """A block that measures an exact property (an invariance, an equivalence) in IEEE float32
    whatever the setting: no bf16 autocast (as ``full_precision``) and no TF32 in CUDA matrix
    products and convolutions. The caller's TF32 flags are restored on exit. Under ``fp32`` on
    the CPU the block changes nothing: the same operations, the same numbers."""
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    _set_tf32(False)
    try:
        with full_precision():
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved[0]
        torch.backends.cudnn.allow_tf32 = saved[1]
        torch.set_float32_matmul_precision(saved[2])


def to_float32(value: Any) -> Any:
    """``value`` with every bfloat16 / float16 tensor in it (tensors, tuples, named tuples,
    lists, dicts, dataclasses) cast to float32; everything else unchanged."""
    if isinstance(value, Tensor):
        return value.float() if value.dtype in (torch.bfloat16, torch.float16) else value
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(to_float32(v) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(to_float32(v) for v in value)
    if isinstance(value, dict):
        return type(value)((k, to_float32(v)) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value) if f.init]
        return dataclasses.replace(value, **{k: to_float32(getattr(value, k)) for k in fields})
    return value


@contextmanager
def autocast_forward() -> Iterator[bool]:
    """Autocast for a block of forward code (evaluation) when the setting is bf16; a no-op
    otherwise. Yields whether autocast is on: the caller casts what it keeps with
    ``to_float32``."""
    setting = active()
    if not setting.autocast or _SUSPENDED.get():
        yield False
        return
    with torch.autocast(device_type=setting.device_type, dtype=torch.bfloat16):
        yield True


# Modules that carry hooks of an ``autocast_modules`` block (by id), so nested blocks over the
# same modules do not hook them twice.
_HOOKED: set[int] = set()


@contextmanager
def autocast_modules(modules: Iterable[nn.Module]) -> Iterator[bool]:
    """While the block runs, every forward call of ``modules`` (and of their submodules) runs
    under bf16 autocast when the setting is bf16, and its floating outputs come back in
    float32; a no-op otherwise. Yields whether the hooks are on.

    A call made while autocast is already on (a submodule inside its parent's forward) is left
    alone: only the outermost call enters autocast and casts its outputs, so inside a model the
    activations stay bf16 as autocast makes them, and whatever code reads a model's output (a
    loss, a metric, an attack's update) reads float32. Submodules a loss function calls
    directly (``model.encoder(x)``) are covered too, each call as an outermost one.

    Args:
        modules: the modules to hook (duplicates and shared submodules are hooked once).
    """
    setting = active()
    if not setting.autocast:
        yield False
        return
    device_type = setting.device_type
    stack: list[Any] = []  # per call: the autocast context it entered, or None

    def pre_hook(module: nn.Module, args: Any) -> None:
        if _SUSPENDED.get() or torch.is_autocast_enabled(device_type):
            stack.append(None)
            return
        ctx = torch.autocast(device_type=device_type, dtype=torch.bfloat16)
        ctx.__enter__()
        stack.append(ctx)

    def post_hook(module: nn.Module, args: Any, output: Any) -> Any:
        ctx = stack.pop()
        if ctx is None:
            return None
        ctx.__exit__(None, None, None)
        return to_float32(output)

    handles = []
    seen: set[int] = set()
    for top in modules:
        for m in top.modules():
            if id(m) in seen or id(m) in _HOOKED:
                continue
            seen.add(id(m))
            handles.append(m.register_forward_pre_hook(pre_hook))
            # always_call: the autocast context is left even when the forward raises
            handles.append(m.register_forward_hook(post_hook, always_call=True))
    mine = list(seen)
    _HOOKED.update(mine)
    try:
        yield True
    finally:
        for h in handles:
            h.remove()
        _HOOKED.difference_update(mine)
        while stack:  # an exception left a call open (its post-hook then ran first): close it
            ctx = stack.pop()
            if ctx is not None:
                ctx.__exit__(None, None, None)
