"""Multiply-accumulate counting with forward hooks (no extra dependency).

``count_macs`` runs one forward pass and adds up the multiply-adds of every convolution,
transposed convolution and linear layer it sees, the convention behind the "FLOPs" of ResNet's
Table 1 and torchvision's model table (normalisation, activations, pooling and additions are not
counted). Layers called several times are counted every time; other modules can be added through
``extra``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import prod

import torch
from torch import Tensor, nn

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
