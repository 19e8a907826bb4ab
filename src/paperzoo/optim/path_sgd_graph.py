"""The layer structure Path-SGD works on: a plain chain of Linear / Conv2d layers with ReLU,
dropout, flatten and pooling in between (``paperzoo.optim.path_sgd``).

``leaf_chain`` lists a model's leaf modules in registration order and rejects what Path-SGD
cannot handle (normalisation, non-ReLU activations, parameters outside Linear / Conv2d) with an
``UnsupportedLayerError`` naming the layer; ``check_forward`` reads the model's forward with
``torch.fx`` when the optimizer is built and refuses functional operations (``F.relu``, a
residual ``+``, ...), reused or skipped layers, naming the model and the operation;
``check_is_chain`` checks once, on a random probe, that applying those leaves in order computes
the model's forward (for a forward ``torch.fx`` cannot trace, the only check); ``linear_chain`` recognises the MLPs that take Path-SGD's fast
path; ``weighted_layers`` and ``unit_count`` serve the node-wise rescaling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

PARAM_LAYERS: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv2d)
# Identity on the non-negative signals of the |w|^p network (ReLU(x) = x for x >= 0; dropout is
# off when computing gamma, as in evaluation).
PASS_THROUGH: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Identity,
)
# Applied as they are: they commute with positive per-channel scaling.
_STRUCTURAL: tuple[type[nn.Module], ...] = (
    nn.Flatten,
    nn.Unflatten,
    nn.MaxPool2d,
    nn.AvgPool2d,
    nn.AdaptiveAvgPool2d,
    nn.AdaptiveMaxPool2d,
)
_NORMS: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._BatchNorm,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.modules.instancenorm._InstanceNorm,
    nn.LocalResponseNorm,
)
_NON_RELU: tuple[type[nn.Module], ...] = (
    nn.ELU,
    nn.SELU,
    nn.CELU,
    nn.GELU,
    nn.SiLU,
    nn.Mish,
    nn.Tanh,
    nn.Sigmoid,
    nn.Softplus,
    nn.LeakyReLU,
    nn.PReLU,
    nn.RReLU,
    nn.ReLU6,
    nn.Hardtanh,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.Softmax,
    nn.LogSoftmax,
)


class UnsupportedLayerError(TypeError):
    """The network contains a layer Path-SGD cannot handle; the message names it."""


@dataclass(frozen=True)
class Layer:
    name: str  # qualified module name in the model ("" for the model itself)
    module: nn.Module


def _display(name: str, module: nn.Module) -> str:
    return f"'{name}' ({type(module).__name__})" if name else f"({type(module).__name__})"


def leaf_chain(model: nn.Module) -> list[Layer]:
    """The leaf modules of ``model`` in registration order, each checked to be supported."""
    leaves = [
        Layer(name, m) for name, m in model.named_modules() if next(m.children(), None) is None
    ]
    for layer in leaves:
        m, where = layer.module, _display(layer.name, layer.module)
        if isinstance(m, PARAM_LAYERS + PASS_THROUGH + _STRUCTURAL):
            if isinstance(m, nn.Conv2d) and m.padding_mode != "zeros":
                raise UnsupportedLayerError(
                    f"Path-SGD: layer {where} uses padding_mode={m.padding_mode!r}; "
                    "only zero padding is supported"
                )
            continue
        if isinstance(m, _NORMS):
            raise UnsupportedLayerError(
                f"Path-SGD: layer {where} is a normalisation layer; path-normalisation is defined "
                "for plain ReLU networks of Linear/Conv2d layers (remove the normalisation)"
            )
        if isinstance(m, _NON_RELU):
            raise UnsupportedLayerError(
                f"Path-SGD: layer {where} is not a ReLU; the rescaling invariance Path-SGD relies "
                "on needs positively homogeneous ReLU activations"
            )
        raise UnsupportedLayerError(
            f"Path-SGD: layer {where} is not supported; supported layers are Linear, Conv2d, ReLU, "
            "Dropout, Identity, Flatten and 2-D max/average pooling in a plain feed-forward chain"
        )
    if not any(isinstance(layer.module, PARAM_LAYERS) for layer in leaves):
        raise UnsupportedLayerError("Path-SGD: the model has no Linear or Conv2d layer")
    own = {id(p) for layer in leaves for p in layer.module.parameters(recurse=False)}
    stray = [n for n, p in model.named_parameters() if id(p) not in own]
    if stray:
        raise UnsupportedLayerError(
            f"Path-SGD: parameters {stray} do not belong to a Linear or Conv2d layer"
        )
    return leaves


def _op_name(target: object) -> str:
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or str(target)
    return f"{module}.{name}" if module else name


def check_forward(model: nn.Module, chain: Sequence[Layer]) -> bool:
    """Refuse a forward that is not the plain chain of ``chain``'s layers, read with torch.fx.

    Raises ``UnsupportedLayerError`` naming the model and the first functional operation
    (``F.relu``, ``torch.tanh``, a residual ``+``) or the layer called out of order, twice or
    not at all. Returns False when the forward cannot be traced (data-dependent control flow):
    the probe of ``check_is_chain`` then decides at the first step.
    """
    try:
        graph = torch.fx.symbolic_trace(model).graph
    except Exception:  # noqa: BLE001 (any tracing failure: fall back to the probe)
        return False
    owner = type(model).__name__
    called: list[str] = []
    for node in graph.nodes:
        if node.op == "call_module":
            called.append(str(node.target))
        elif node.op in ("call_function", "call_method"):
            # Path-SGD replays the layers in order: any operation between them (an activation,
            # a residual +, even a reshape) would be lost.
            what = _op_name(node.target) if node.op == "call_function" else f".{node.target}()"
            after = f" (after layer '{called[-1]}')" if called else ""
            raise UnsupportedLayerError(
                f"Path-SGD: {owner}.forward calls {what}{after}; only a plain chain of modules "
                "is supported: use nn.ReLU / nn.Flatten modules instead of functional calls or "
                "tensor methods, and no residual connections"
            )
    expected = [c.name for c in chain]
    if called != expected:
        reused = sorted({n for n in called if called.count(n) > 1})
        missing = [n for n in expected if n not in called]
        detail = (
            f"layer(s) {reused} are called more than once"
            if reused
            else f"layer(s) {missing} are never called"
            if missing
            else f"the layers run in the order {called}, not as registered {expected}"
        )
        raise UnsupportedLayerError(f"Path-SGD: {owner}.forward is not a plain chain: {detail}")
    return True


def _run_chain(chain: Sequence[Layer], x: Tensor) -> Tensor:
    for layer in chain:
        x = layer.module(x)
    return x


def default_input_shape(chain: Sequence[Layer]) -> tuple[int, ...] | None:
    """(in_features,) when the first weighted layer is a Linear preceded only by shape-free ops."""
    for layer in chain:
        m = layer.module
        if isinstance(m, nn.Linear):
            return (m.in_features,)
        if not isinstance(m, PASS_THROUGH + (nn.Flatten,)):
            return None
    return None


def check_is_chain(model: nn.Module, chain: Sequence[Layer], input_shape: Sequence[int]) -> None:
    """Raise if ``model``'s forward differs from applying its leaves in order (e.g. residuals)."""
    p = next(model.parameters())
    g = torch.Generator().manual_seed(0)
    x = torch.rand((2, *input_shape), generator=g).to(device=p.device, dtype=p.dtype)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            ref = model(x)
            got = _run_chain(chain, x)
    finally:
        model.train(was_training)
    if (
        not isinstance(ref, Tensor)
        or ref.shape != got.shape
        or not torch.allclose(ref, got, rtol=1e-4, atol=1e-5 * float(ref.abs().max()) + 1e-12)
    ):
        raise UnsupportedLayerError(
            f"Path-SGD: {type(model).__name__}.forward is not the plain chain of its layers "
            f"({', '.join(_display(c.name, c.module) for c in chain)}); residual connections, "
            "functional activations or reused layers are not supported"
        )


def linear_chain(chain: Sequence[Layer], input_shape: Sequence[int]) -> list[nn.Linear] | None:
    """The Linear layers if the chain is an MLP on vectors (Linear, ReLU, dropout, Flatten)."""
    linears: list[nn.Linear] = []
    flattened = len(input_shape) == 1
    for c in chain:
        m = c.module
        if isinstance(m, nn.Linear):
            if not flattened:
                return None
            linears.append(m)
        elif isinstance(m, nn.Flatten):
            flattened = flattened or not linears
        elif not isinstance(m, PASS_THROUGH):
            return None
    if not linears or math.prod(input_shape) != linears[0].in_features:
        return None
    return linears


def weighted_layers(model: nn.Module) -> list[nn.Module]:
    """The Linear/Conv2d layers of a supported chain, in order."""
    return [c.module for c in leaf_chain(model) if isinstance(c.module, PARAM_LAYERS)]


def unit_count(m: nn.Module) -> int:
    return m.out_features if isinstance(m, nn.Linear) else m.out_channels  # type: ignore[return-value]


__all__ = [
    "Layer",
    "UnsupportedLayerError",
    "check_forward",
    "check_is_chain",
    "leaf_chain",
    "linear_chain",
]
