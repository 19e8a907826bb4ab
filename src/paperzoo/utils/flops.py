"""Counting the arithmetic of models: multiply-accumulates of a forward pass, and the FLOP of a
training step.

``count_macs`` runs one forward pass and adds up the multiply-adds of every convolution,
transposed convolution and linear layer it sees, the convention behind the "FLOPs" of ResNet's
Table 1 and torchvision's model table (normalisation, activations, pooling and additions are not
counted). Layers called several times are counted every time; other modules can be added through
``extra``.

``step_flop`` and ``forward_flop`` count floating-point operations with PyTorch's own counter
(``torch.utils.flop_counter.FlopCounterMode``), which counts 2 FLOP per multiply-accumulate of the
matrix products, convolutions and attention kernels it knows (forward and backward) and nothing
for element-wise operations, normalisation or reductions. They run on the ``meta`` device: only
shapes propagate, so a full-size model at its full batch is counted in milliseconds and no memory.

``step_work`` and ``forward_work`` count the same pass's FLOP and its kernels together: the ATen
operations it dispatches below autograd (``KernelCounter``, a ``TorchDispatchMode``), less those
that launch no kernel on a GPU (views and aliases, which only make new tensor metadata, and
allocations without a fill). Each counted operation stands for at least one CUDA kernel launch
on a GPU (a few launch more: a reduction in two passes, cuBLAS's split-K); the count does not
depend on the batch and is the same on the meta device as on the CPU for the operations these
models use. Where CUDA runs an operation another way than the CPU, the count follows CUDA: an
LSTM cell (``nn.LSTMCell``) is two matrix products and one fused kernel forward, one fused
kernel backward (``_thnn_fused_lstm_cell``), not the dozen element-wise gate operations the CPU
dispatches; ``scaled_dot_product_attention`` is one fused attention kernel forward and one
backward, not the matrix products and softmax the meta device decomposes it into.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from math import prod
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

MacFn = Callable[[nn.Module, tuple[object, ...], object], int]


def _conv_macs(m: nn.Module, inputs: tuple[object, ...], out: object) -> int:
    assert isinstance(m, nn.modules.conv._ConvNd) and isinstance(out, Tensor)
    # each output element of a (grouped) conv is a dot product over (C_in / groups) * prod(k)
    per_output = (m.in_channels // m.groups) * prod(m.kernel_size)
    return out.numel() * per_output


def _conv_transpose_macs(m: nn.Module, inputs: tuple[object, ...], out: object) -> int:
    assert isinstance(m, nn.modules.conv._ConvTransposeNd)
    x = inputs[0]
    assert isinstance(x, Tensor)
    # each input element is scattered to (C_out / groups) * prod(k) outputs
    return x.numel() * (m.out_channels // m.groups) * prod(m.kernel_size)


def _linear_macs(m: nn.Module, inputs: tuple[object, ...], out: object) -> int:
    assert isinstance(m, nn.Linear) and isinstance(out, Tensor)
    return out.numel() * m.in_features


def _bilinear_macs(m: nn.Module, inputs: tuple[object, ...], out: object) -> int:
    assert isinstance(m, nn.Bilinear) and isinstance(out, Tensor)
    return out.numel() * m.in1_features * (m.in2_features + 1)


DEFAULT_MAC_FNS: dict[type[nn.Module], MacFn] = {
    nn.Conv1d: _conv_macs,
    nn.Conv2d: _conv_macs,
    nn.Conv3d: _conv_macs,
    nn.ConvTranspose1d: _conv_transpose_macs,
    nn.ConvTranspose2d: _conv_transpose_macs,
    nn.ConvTranspose3d: _conv_transpose_macs,
    nn.Linear: _linear_macs,
    nn.Bilinear: _bilinear_macs,
}


def _rule(module: nn.Module, table: Mapping[type[nn.Module], MacFn]) -> MacFn | None:
    for cls in type(module).__mro__:  # subclasses (e.g. CoordConv2d's conv) inherit the rule
        if cls in table:
            return table[cls]  # type: ignore[index]
    return None


@torch.no_grad()
def count_macs(
    model: nn.Module,
    inputs: Tensor | Sequence[int] | tuple[Tensor, ...],
    *,
    extra: Mapping[type[nn.Module], MacFn] | None = None,
    per_module: dict[str, int] | None = None,
) -> int:
    """Multiply-accumulates of one forward pass of ``model`` on ``inputs``.

    The count covers the whole batch passed in; use a batch of one for the per-example figure
    (e.g. ``count_macs(resnet50(), (1, 3, 224, 224))`` is about 4.1e9). The model's train/eval
    mode is left as it was; it runs in eval mode under ``no_grad`` so BN statistics do not move.
    Models built on the ``meta`` device work too (nothing is computed, only shapes propagate).

    Args:
        model: the network.
        inputs: an input tensor, a tuple of input tensors, or the shape of a zero input
            (created on the device of the model's first parameter).
        extra: further ``{module class: fn(module, inputs, output) -> macs}`` rules; they take
            precedence over the defaults.
        per_module: if given, filled with ``{qualified module name: macs}``.

    Returns:
        The total number of multiply-accumulates.
    """
    table: dict[type[nn.Module], MacFn] = {**DEFAULT_MAC_FNS, **(extra or {})}
    if isinstance(inputs, Tensor):
        args: tuple[Tensor, ...] = (inputs,)
    elif len(inputs) > 0 and all(isinstance(v, Tensor) for v in inputs):
        args = tuple(inputs)  # type: ignore[arg-type]
    else:
        p = next(model.parameters(), None)
        device = p.device if p is not None else torch.device("cpu")
        args = (torch.zeros(tuple(int(v) for v in inputs), device=device),)  # type: ignore[union-attr]
    totals: dict[str, int] = {}
    handles = []
    for name, module in model.named_modules():
        fn = _rule(module, table)
        if fn is None:
            continue

        def hook(
            m: nn.Module, inp: tuple[object, ...], out: object, *, _n: str = name, _f: MacFn = fn
        ) -> None:
            totals[_n] = totals.get(_n, 0) + int(_f(m, inp, out))

        handles.append(module.register_forward_hook(hook))
    was_training = model.training
    model.eval()
    try:
        model(*args)
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    if per_module is not None:
        per_module.update(totals)
    return sum(totals.values())


InputSpec = Sequence[int] | Tensor | tuple[Tensor, ...]


def count_flop(fn: Callable[[], object]) -> int:
    """FLOP that ``fn()`` performs, as ``FlopCounterMode`` counts them (see the module doc)."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


# Operations that allocate without writing or only change metadata: no kernel on a GPU (views
# and aliases are recognised from their schemas: ``OpOverload.is_view``).
_NO_KERNEL = frozenset(
    {
        "aten.empty",
        "aten.empty_like",
        "aten.empty_strided",
        "aten.new_empty",
        "aten.new_empty_strided",
        "aten._unsafe_view",
        "aten.resize_",
        "aten.set_",
    }
)


def launches_kernel(func: Any) -> bool:
    """Whether the ATen operation ``func`` (an ``OpOverload``) launches a kernel on a GPU: not
    a view or alias (``t``, ``view``, ``expand``, ``detach``, ...) nor an allocation alone."""
    return not func.is_view and str(func.overloadpacket) not in _NO_KERNEL


class KernelCounter(TorchDispatchMode):
    """Counts the ATen operations dispatched inside it that launch a GPU kernel
    (``launches_kernel``), by name (``ops``, e.g. ``{"aten.addmm.default": 1}``) and in all
    (``total``). Operations are seen below autograd, after composite operations are decomposed,
    so the backward pass's operations are counted too; an operation's own internals are not.
    LSTM cells are counted as CUDA runs them (the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()
        self._paused = 0
        self._cells = _CudaCells(self)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if not self._paused and launches_kernel(func):
            self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))

    def __enter__(self) -> KernelCounter:
        self._cells.__enter__()
        return super().__enter__()  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self._cells.__exit__(*exc)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Operations inside are not counted."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    @property
    def total(self) -> int:
        return sum(self.ops.values())


class _CudaCells(TorchFunctionMode):
    """Runs ``torch.lstm_cell`` (``nn.LSTMCell``) the way CUDA does: the gates of the input and
    of the hidden state as two matrix products without bias, then ``_FusedLSTMCell``; and
    ``scaled_dot_product_attention`` as ``_FusedAttention``."""

    def __init__(self, counter: KernelCounter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        if name == "scaled_dot_product_attention" and len(args) == 3:
            return _FusedAttention.apply(self.counter, func, kwargs, *args)
        if name != "lstm_cell" or kwargs or len(args) != 6:
            return func(*args, **kwargs)
        x, (hx, cx), w_ih, w_hh, b_ih, b_hh = args
        igates = torch.mm(x, w_ih.t())  # (B, 4H)
        hgates = torch.mm(hx, w_hh.t())  # (B, 4H)
        return _FusedLSTMCell.apply(self.counter, igates, hgates, cx, b_ih, b_hh)


class _FusedLSTMCell(torch.autograd.Function):
    """CUDA's ``_thnn_fused_lstm_cell`` as ``KernelCounter`` sees it: one operation forward
    (the gates' element-wise arithmetic, computed here uncounted), one backward
    (``_thnn_fused_lstm_cell_backward_impl``; its gradients, only counted, are zeros)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, counter: KernelCounter, igates: Tensor, hgates: Tensor, cx: Tensor,
        b_ih: Tensor | None, b_hh: Tensor | None,
    ) -> tuple[Tensor, Tensor]:  # fmt: skip
        with counter.paused():
            gates = igates + hgates
            if b_ih is not None and b_hh is not None:
                gates = gates + b_ih + b_hh
            i, f, g, o = gates.chunk(4, 1)  # (B, H) each
            cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
            hy = torch.sigmoid(o) * torch.tanh(cy)
        counter.ops["aten._thnn_fused_lstm_cell.default"] += 1
        ctx.counter, ctx.bias = counter, b_ih is not None and b_hh is not None
        ctx.save_for_backward(igates, cx)
        return hy, cy

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor | None, ...]:
        counter: KernelCounter = ctx.counter
        igates, cx = ctx.saved_tensors
        with counter.paused():
            g_gates, g_cx = torch.zeros_like(igates), torch.zeros_like(cx)
            g_bias = g_gates.sum(0) if ctx.bias else None
        counter.ops["aten._thnn_fused_lstm_cell_backward_impl.default"] += 1
        return None, g_gates, g_gates, g_cx, g_bias, g_bias


class _FusedAttention(torch.autograd.Function):
    """CUDA's fused attention (flash or memory-efficient) as ``KernelCounter`` sees it: one
    operation forward and one backward. The attention is computed as the device computes it
    (on the meta device: matrix products and a softmax, whose FLOP the FLOP counter sees),
    uncounted by ``KernelCounter``."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, counter: KernelCounter, fn: Callable[..., Tensor], kwargs: dict[str, Any],
        *qkv: Tensor,
    ) -> Tensor:  # fmt: skip
        needs = ctx.needs_input_grad[3:]
        with torch.enable_grad(), counter.paused():
            inputs = [t.detach().requires_grad_(n) for t, n in zip(qkv, needs, strict=True)]
            out = fn(*inputs, **kwargs)
        counter.ops["aten._scaled_dot_product_fused_attention"] += 1
        ctx.counter, ctx.graph = counter, (inputs, out)
        return out.detach()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        counter: KernelCounter = ctx.counter
        inputs, out = ctx.graph
        need = [t for t in inputs if t.requires_grad]
        with counter.paused():
            found = iter(torch.autograd.grad(out, need, grad))
        counter.ops["aten._scaled_dot_product_fused_attention_backward"] += 1
        return None, None, None, *(next(found) if t.requires_grad else None for t in inputs)


def count_work(fn: Callable[[], object]) -> tuple[int, int]:
    """``(FLOP, kernels)`` of ``fn()``: ``count_flop``'s FLOP and ``KernelCounter``'s total."""
    with FlopCounterMode(display=False) as flop, KernelCounter() as kernels:
        fn()
    return int(flop.get_total_flops()), kernels.total


def _prepare(
    model: nn.Module, inputs: InputSpec, meta: bool
) -> tuple[nn.Module, tuple[Tensor, ...]]:
    """A copy of ``model`` and ``inputs``, on the meta device (shapes only) if ``meta``."""
    copied = copy.deepcopy(model)
    device = "meta" if meta else next((p.device for p in model.parameters()), torch.device("cpu"))
    copied = copied.to(device)
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    if len(inputs) > 0 and all(isinstance(v, Tensor) for v in inputs):
        args = tuple(t.to(device) for t in inputs)  # type: ignore[union-attr]
    else:
        args = (torch.zeros(tuple(int(v) for v in inputs), device=device),)  # type: ignore[arg-type]
    return copied, args


def _leaves(out: object) -> list[Tensor]:
    """The floating tensors in a model output (tensors, sequences, mappings, dataclasses)."""
    if isinstance(out, Tensor):
        return [out] if out.is_floating_point() else []
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        out = [getattr(out, f.name) for f in dataclasses.fields(out)]
    if isinstance(out, Mapping):
        out = list(out.values())
    if isinstance(out, list | tuple):
        return [t for o in out for t in _leaves(o)]
    return []


def _scalar(out: object) -> Tensor:
    """A scalar that depends on every floating output (the loss stand-in of ``step_flop``)."""
    leaves = [t for t in _leaves(out) if t.requires_grad]
    if not leaves:
        raise TypeError(f"no differentiable output in a {type(out).__name__}")
    if len(leaves) == 1:
        return leaves[0].float().sum()
    return torch.stack([t.float().sum() for t in leaves]).sum()


def forward_flop(model: nn.Module, inputs: InputSpec, *, meta: bool = True) -> int:
    """FLOP of one forward pass of ``model`` on ``inputs`` (a shape, a tensor or a tuple of
    tensors: the whole batch), in eval mode, counted on the meta device (``meta=False``: on a
    copy where the model is, for forwards that read their tensors' values).

    Args:
        model: the network (not modified: a copy is counted).
        inputs: the batch, or its shape for one input tensor.
        meta: count on the meta device.

    Returns:
        The FLOP count (2 per multiply-accumulate).
    """
    return forward_work(model, inputs, meta=meta)[0]


def forward_work(model: nn.Module, inputs: InputSpec, *, meta: bool = True) -> tuple[int, int]:
    """``(FLOP, kernels)`` of one forward pass of ``model`` on ``inputs`` (as ``forward_flop``;
    kernels: ``KernelCounter``)."""
    copied, args = _prepare(model, inputs, meta)
    copied.eval()
    # (with gradients enabled: the same FLOP, and FlopCounterMode's module tracking trips
    # over some models under no_grad)
    return count_work(lambda: copied(*args))


def step_flop(model: nn.Module, inputs: InputSpec, *, meta: bool = True) -> int:
    """FLOP of one training step's forward and backward pass of ``model`` on ``inputs`` (the
    whole batch), in train mode, counted on the meta device. The loss is the sum of the outputs
    (its own cost is negligible), and the backward pass computes the gradients of every parameter
    (and of nothing that does not need one: the inputs get none). The optimiser's update is
    element-wise and not counted.

    Args:
        model: the network (not modified: a copy is counted).
        inputs: the batch, or its shape for one input tensor.
        meta: count on the meta device (else on a copy where the model is, for forwards that
            read their tensors' values).

    Returns:
        The FLOP count of forward plus backward (about 3x the forward for most nets).
    """
    return step_work(model, inputs, meta=meta)[0]


def step_work(model: nn.Module, inputs: InputSpec, *, meta: bool = True) -> tuple[int, int]:
    """``(FLOP, kernels)`` of one training step's forward and backward pass of ``model`` on
    ``inputs`` (as ``step_flop``; kernels: ``KernelCounter``, the loss stand-in's included, the
    optimiser's update not).

    Args:
        model: the network (not modified: a copy is counted).
        inputs: the batch, or its shape for one input tensor.
        meta: count on the meta device (else on a copy where the model is).

    Returns:
        The FLOP count of forward plus backward, and the kernels they launch.
    """
    copied, args = _prepare(model, inputs, meta)
    copied.train()
    return count_work(lambda: _scalar(copied(*args)).backward())
