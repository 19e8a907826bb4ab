"""Path-SGD: path-normalized optimization of feed-forward ReLU networks.

Neyshabur, Salakhutdinov and Srebro, "Path-SGD: Path-Normalized Optimization in Deep Neural
Networks", NeurIPS 2015 (arXiv:1506.02617). Official code: github.com/bneyshabur/path-sgd.

A ReLU network computes the same function after a node-wise rescaling (incoming weights of a hidden
unit times c > 0, outgoing weights divided by c), but SGD's trajectory depends on the scaling.
Path-SGD is the approximate steepest descent with respect to the path regulariser

    pi_p(w) = (sum over input->output paths P of prod_{e in P} |w_e|^p)^(1/p)       (path norm)

and its update divides each coordinate of the gradient by

    gamma_p(w, e) = (sum over paths P through e of prod_{e' in P, e' != e} |w_e'|^p)^(2/p)
    w_e <- w_e - lr * (dL/dw_e) / gamma_p(w, e)                          (the Path-SGD update)

For an edge u -> v the inner sum factorises as gamma_in(u) * gamma_out(v): gamma_in(u) is the
value of u in a copy of the network with weights |w|^p fed an all-ones input, and gamma_out(v) is
the derivative of the sum of that copy's outputs with respect to v's pre-activation. One forward
and one backward pass of a single all-ones example therefore give every gamma; the cost does not
depend on the batch size (Section 5 of the paper).

Implementation notes and deviations:

* Biases are edges from a constant-1 input: their |b|^p enter the forward pass and a bias'
  gamma is gamma_out(v) alone. With biases the update stays exactly invariant to node-wise
  rescaling (incoming weights *and* bias of the unit are multiplied by c).
* The backward pass differentiates ``sum(out)`` of the |w|^p network, which is pi_p(w)^p. The
  official code back-propagates ``||out||^2`` instead, which weights each output's paths by that
  output's own path sum; that is not gamma_p.
* The official code also rescales every update by a constant fixed at the first step (ratio of
  gradient norms) and uses momentum 0.9; neither is in the paper. Here the update is exactly
  the Path-SGD update; ``momentum`` and ``weight_decay`` are optional extras (both 0 by default).
* Convolutions share weights across positions, so a convolution weight's gamma is the sum of the
  gammas of its copies (the derivative of pi_p^p with respect to |w|^p), computed as the weight
  gradient of the |w|^p network. Max pooling is applied as is in the |w|^p network (each window
  keeps the path with the largest gamma_in); this keeps the per-channel rescaling invariance but
  makes pi_p a max-path quantity for such nets. Average pooling is linear and exact.
* Only plain chains are supported: the model's leaf modules, applied in registration order, must
  compute the model's forward (checked once on a random probe). Residual additions, functional
  activations in ``forward``, normalisation layers and non-ReLU activations are rejected with an
  error naming the layer (``paperzoo.optim.path_sgd_graph`` reads the chain).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.optim.path_sgd_graph import (
    PARAM_LAYERS,
    PASS_THROUGH,
    Layer,
    check_forward,
    check_is_chain,
    default_input_shape,
    leaf_chain,
    linear_chain,
    unit_count,
    weighted_layers,
)

log = logging.getLogger(__name__)


def _powered(t: Tensor, p: float) -> Tensor:
    t = t.detach()
    return t * t if p == 2 else t.abs().pow(p)


# Rows of a Linear weight processed at once by the chunked kernels below: about 1 MiB of fp32,
# so the |w|^p block and the update's temporary stay in cache and a weight matrix is read
# about as often as plain SGD reads it.
_CHUNK_ELEMS = 1 << 18


def _row_chunks(rows: int, cols: int) -> list[slice]:
    step = max(1, _CHUNK_ELEMS // max(1, cols))
    return [slice(r, min(r + step, rows)) for r in range(0, rows, step)]


def _block(buf: Tensor, shape: Sequence[int]) -> Tensor:
    """A view of the first prod(shape) entries of the flat scratch buffer ``buf``."""
    return buf[: math.prod(shape)].view(*shape)


def _powered_into(t: Tensor, p: float, out: Tensor) -> Tensor:
    """|t|^p written into ``out`` (a scratch block of t's shape)."""
    t = t.detach()
    return torch.mul(t, t, out=out) if p == 2 else torch.abs(t, out=out).pow_(p)


class _PoweredLinear(torch.autograd.Function):
    """y = x @ (|W|^p)^T + b' without storing |W|^p: row blocks are powered on the fly.

    Only the gradient with respect to ``x`` is produced (that is all gamma_out needs).
    """

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias_p: Tensor | None, p: float) -> Tensor:
        ctx.p = p
        ctx.save_for_backward(weight)
        x2 = x.reshape(-1, weight.shape[1])  # (positions, in)
        y = torch.empty((x2.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)
        for rows in _row_chunks(*weight.shape):
            torch.mm(x2, _powered(weight[rows], p).t(), out=y[:, rows])  # (positions, rows)
        if bias_p is not None:
            y.add_(bias_p)
        return y.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None, None]:
        (weight,) = ctx.saved_tensors
        g2 = grad.reshape(-1, weight.shape[0])  # (positions, out)
        gx = torch.zeros((g2.shape[0], weight.shape[1]), dtype=grad.dtype, device=grad.device)
        for rows in _row_chunks(*weight.shape):
            gx.addmm_(g2[:, rows], _powered(weight[rows], ctx.p))  # (positions, in)
        return gx.reshape(*grad.shape[:-1], weight.shape[1]), None, None, None


def _path_forward(
    chain: Sequence[Layer], input_shape: Sequence[int], p: float, *, bias: bool, track: bool
) -> tuple[Tensor, list[tuple[nn.Module, Tensor, Tensor]]]:
    """Feed a single all-ones example through the network with weights |w|^p.

    ReLUs and dropout are the identity on the non-negative signals of this network.

    Returns:
        the output (1, ...) and, per weighted layer, (module, gamma_in, z) where gamma_in is the
        layer's input and z its output in the |w|^p network; with ``track`` the graph from the
        first layer's output onwards is kept so that d sum(out) / dz gives gamma_out.
    """
    first = next(c.module for c in chain if isinstance(c.module, PARAM_LAYERS))
    w = first.weight
    x = torch.ones((1, *input_shape), device=w.device, dtype=w.dtype)
    records: list[tuple[nn.Module, Tensor, Tensor]] = []
    for layer in chain:
        m = layer.module
        if isinstance(m, PASS_THROUGH):
            continue
        if not isinstance(m, PARAM_LAYERS):
            x = m(x)
            continue
        bp = _powered(m.bias, p) if (bias and m.bias is not None) else None
        if isinstance(m, nn.Linear):
            z = _PoweredLinear.apply(x, m.weight.detach(), bp, p)
        else:
            wp = _powered(m.weight, p)
            z = F.conv2d(x, wp, bp, m.stride, m.padding, m.dilation, m.groups)  # type: ignore[arg-type]
        if track and not records:
            z = z.detach().requires_grad_(True)  # the graph starts at the first layer's output
        records.append((m, x.detach(), z))
        x = z
    return x, records


def _layer_gammas(m: nn.Module, gin: Tensor, gout: Tensor) -> tuple[Tensor, Tensor | None]:
    """sum over paths through each weight (bias) of the product of the other |w|^p.

    Shapes:
        Linear: gin (1, ..., in), gout (1, ..., out) -> weight (out, in), bias (out,)
        Conv2d: gin (1, C, H, W), gout (1, O, H', W') -> weight (O, C/groups, kh, kw), bias (O,)
    """
    if isinstance(m, nn.Linear):
        go = gout.reshape(-1, m.out_features)  # (positions, out)
        gi = gin.reshape(-1, m.in_features)  # (positions, in)
        # gamma(u -> v) = sum over positions of gamma_out(v) * gamma_in(u): an outer product.
        gw = go.t() @ gi  # (out, in)
        gb = go.sum(0) if m.bias is not None else None
        return gw, gb
    assert isinstance(m, nn.Conv2d)
    gw = torch.nn.grad.conv2d_weight(
        gin, m.weight.shape, gout, m.stride, m.padding, m.dilation, m.groups
    )
    gb = gout.sum((0, 2, 3)) if m.bias is not None else None
    return gw, gb


def _gamma_factors(
    chain: Sequence[Layer], input_shape: Sequence[int], p: float
) -> list[tuple[nn.Module, Tensor, Tensor]]:
    """(module, gamma_in, gamma_out) of every weighted layer (before the 2/p power)."""
    with torch.enable_grad():
        out, records = _path_forward(chain, input_shape, p, bias=True, track=True)
        zs = [z for _, _, z in records]
        gouts = torch.autograd.grad(out.sum(), zs)  # d pi_p^p / dz: the gamma_out's
    return [(m, gin, go.detach()) for (m, gin, _), go in zip(records, gouts, strict=True)]


def _resolve_input_shape(
    model: nn.Module, chain: Sequence[Layer], input_shape: Sequence[int] | None
) -> tuple[int, ...]:
    shape = tuple(input_shape) if input_shape is not None else default_input_shape(chain)
    if shape is None:
        raise ValueError(
            f"the input shape of {type(model).__name__} cannot be inferred (its first weighted "
            "layer is a convolution); pass input_shape=(C, H, W)"
        )
    return tuple(int(s) for s in shape)


def path_scaling(
    model: nn.Module, *, p: float = 2.0, input_shape: Sequence[int] | None = None
) -> dict[str, Tensor]:
    """gamma_p(w, e) (module docstring) for every parameter of a feed-forward ReLU network.

    Args:
        model: a plain chain of Linear/Conv2d layers with ReLU, dropout, flatten and pooling.
        p: the path-norm exponent (the paper's experiments use 2).
        input_shape: shape of one input example without the batch dimension; inferred when the
            first weighted layer is a Linear.

    Returns:
        parameter name -> tensor of the parameter's shape (biases: gamma_out alone).
    """
    chain = leaf_chain(model)
    shape = _resolve_input_shape(model, chain, input_shape)
    names = {id(prm): n for n, prm in model.named_parameters()}
    result: dict[str, Tensor] = {}
    for m, gin, gout in _gamma_factors(chain, shape, p):
        gw, gb = _layer_gammas(m, gin, gout)
        result[names[id(m.weight)]] = gw.pow(2.0 / p) if p != 2 else gw
        if gb is not None:
            result[names[id(m.bias)]] = gb.pow(2.0 / p) if p != 2 else gb
    return result


@torch.no_grad()
def path_norm(
    model: nn.Module,
    p: float = 2.0,
    *,
    input_shape: Sequence[int] | None = None,
    bias: bool = True,
) -> float:
    """The path norm pi_p(w) = (sum over input->output paths of prod |w_e|^p)^(1/p) (module docstring).

    Computed as (sum of the outputs of the |w|^p network on an all-ones input)^(1/p).

    Args:
        model: a plain chain of Linear/Conv2d layers with ReLU, dropout, flatten and pooling.
        p: the exponent (>= 1 for a norm; any p > 0 is accepted).
        input_shape: one example's shape; inferred when the first weighted layer is a Linear.
        bias: count paths that start at a bias (an edge from a constant-1 unit).
    """
    if not p > 0:
        raise ValueError(f"p must be positive, got {p}")
    chain = leaf_chain(model)
    shape = _resolve_input_shape(model, chain, input_shape)
    out, _ = _path_forward(chain, shape, p, bias=bias, track=False)
    return float(out.sum()) ** (1.0 / p)


class PathSGD(torch.optim.Optimizer):
    """Path-SGD: SGD with each gradient coordinate divided by gamma_p(w, e).

    Args:
        params_or_model: the model (all its trainable parameters are optimised), or an iterable
            of parameters / param groups, in which case ``model`` must be given.
        lr: the step size.
        model: the network the parameters belong to (needed to compute gamma).
        p: path-norm exponent (2 in the paper's experiments).
        momentum: heavy-ball momentum on the path-normalised gradient (0: the paper's update).
        weight_decay: L2 coefficient added to the gradient before normalisation.
        input_shape: one example's shape (C, H, W) or (features,); inferred when the first
            weighted layer is a Linear, otherwise recorded from the model's first forward call.
        eps: lower bound on gamma_in, gamma_out and the conv gammas (default: the square root
            of the smallest normal float; only reached by units whose weights are all zero).

    The model must be a plain chain of Linear/Conv2d layers with ReLU, dropout, flatten and
    pooling in between; anything else raises ``UnsupportedLayerError`` naming the layer, when
    the optimizer is built: its layers are checked, its forward is read with ``torch.fx``
    (functional activations such as ``F.relu``, residual connections and reused layers are
    refused, naming the model and the operation) and, when the input shape is known then, run on
    a random probe (otherwise at the first step). Parameters of another model, at construction
    or through ``add_param_group``, raise ``ValueError``.
    """

    def __init__(
        self,
        params_or_model: nn.Module | Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float,
        *,
        model: nn.Module | None = None,
        p: float = 2.0,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        input_shape: Sequence[int] | None = None,
        eps: float | None = None,
    ) -> None:
        if isinstance(params_or_model, nn.Module):
            if model is not None and model is not params_or_model:
                raise ValueError("pass the model either positionally or as model=, not both")
            model = params_or_model
            params: Any = [q for q in model.parameters() if q.requires_grad]
        else:
            if model is None:
                raise TypeError(
                    "PathSGD needs the network's structure: pass the model itself, "
                    "or model=... together with its parameters"
                )
            params = params_or_model
        if not lr >= 0:
            raise ValueError(f"invalid learning rate {lr}")
        if not p > 0:
            raise ValueError(f"p must be positive, got {p}")
        if momentum < 0 or weight_decay < 0:
            raise ValueError("momentum and weight_decay must be non-negative")
        self._model = model
        self._chain = leaf_chain(model)
        self._owners = {id(q) for c in self._chain for q in c.module.parameters(recurse=False)}
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})
        self._p = float(p)
        self._eps = eps
        check_forward(model, self._chain)
        self._input_shape: tuple[int, ...] | None = None
        self._verified = False
        # Reused row-block buffers of the MLP path (fresh block-sized allocations each step
        # cost page faults comparable to the arithmetic).
        self._scratch_bufs: dict[tuple[int, torch.dtype, torch.device], Tensor] = {}
        self._hook: Any = None
        shape = tuple(input_shape) if input_shape is not None else default_input_shape(self._chain)
        if shape is not None:
            self._set_input_shape(shape)
            self._ensure_ready()  # the probe now, so that an unsupported forward fails here
        else:
            self._hook = model.register_forward_pre_hook(self._record_input_shape)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """``torch.optim.Optimizer.add_param_group``, refusing parameters of another model."""
        owners = getattr(self, "_owners", None)
        if owners is not None and not isinstance(param_group["params"], set):
            params = param_group["params"]
            params = [params] if isinstance(params, Tensor) else list(params)
            for q in params:
                if id(q) not in owners:
                    raise ValueError(
                        f"PathSGD got a parameter of shape {tuple(q.shape)} that does not belong "
                        f"to its model ({type(self._model).__name__}'s Linear/Conv2d layers)"
                    )
            param_group = {**param_group, "params": params}
        super().add_param_group(param_group)

    # -- structure ----------------------------------------------------------------------------
    def _set_input_shape(self, shape: Sequence[int]) -> None:
        self._input_shape = tuple(int(s) for s in shape)

    def _record_input_shape(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        if args and isinstance(args[0], Tensor) and args[0].dim() >= 2:
            self._set_input_shape(args[0].shape[1:])
            if self._hook is not None:
                self._hook.remove()
                self._hook = None

    def _ensure_ready(self) -> tuple[int, ...]:
        if self._input_shape is None:
            raise RuntimeError(
                "PathSGD does not know the input shape yet: run a forward pass before step() "
                "or pass input_shape=(C, H, W)"
            )
        if not self._verified:
            check_is_chain(self._model, self._chain, self._input_shape)
            self._verified = True
        return self._input_shape

    def scaling(self) -> dict[Tensor, Tensor]:
        """gamma_p(w, e) for every parameter of the model at the current weights."""
        shape = self._ensure_ready()
        out: dict[Tensor, Tensor] = {}
        for m, gin, gout in _gamma_factors(self._chain, shape, self._p):
            gw, gb = _layer_gammas(m, gin, gout)
            out[m.weight] = self._finish(gw)
            if gb is not None:
                out[m.bias] = self._finish(gb)
        return out

    def _finish(self, gamma: Tensor) -> Tensor:
        """The 2/p power of a path sum, clamped at eps (in place)."""
        if self._p != 2:
            gamma = gamma.pow_(2.0 / self._p)
        eps = self._eps if self._eps is not None else torch.finfo(gamma.dtype).tiny ** 0.5
        return gamma.clamp_min_(eps)

    # -- the update ---------------------------------------------------------------------------
    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        shape = self._ensure_ready()
        groups = {id(q): g for g in self.param_groups for q in g["params"]}
        linears = linear_chain(self._chain, shape)
        if linears is not None:
            self._step_linear_chain(linears, groups)
        else:
            self._step_general(shape, groups)
        return loss

    def _step_general(self, shape: tuple[int, ...], groups: dict[int, dict[str, Any]]) -> None:
        # One all-ones example through the |w|^p network: gamma_in / gamma_out of every layer.
        for m, gin, gout in _gamma_factors(self._chain, shape, self._p):
            w, b = m.weight, m.bias
            w_group = groups.get(id(w)) if w.grad is not None else None
            b_group = groups.get(id(b)) if b is not None and b.grad is not None else None
            if w_group is None and b_group is None:
                continue
            if isinstance(m, nn.Linear) and gin.numel() == m.in_features:
                # gamma(u -> v) = gamma_out(v) * gamma_in(u) is never materialised: the weight is
                # updated block by block with 1 / gamma_out and 1 / gamma_in.
                factors = self._inverse_factors(gout, gin)
                if w_group is not None:
                    self._update(w, w_group, factors=factors)
                if b_group is not None:  # a bias is an edge from a constant-1 unit
                    self._update(b, b_group, gamma=self._finish(gout.reshape(-1).clone()))
                continue
            gw, gb = _layer_gammas(m, gin, gout)  # conv: a tensor of the layer's own shape
            if w_group is not None:
                self._update(w, w_group, gamma=self._finish(gw))
            if b_group is not None:
                self._update(b, b_group, gamma=self._finish(gb))  # type: ignore[arg-type]

    def _step_linear_chain(
        self, linears: list[nn.Linear], groups: dict[int, dict[str, Any]]
    ) -> None:
        """MLP fast path: the largest weight matrix is read once, every other one twice.

        gamma_in(l) needs the layers below l, gamma_out(l) the layers above. With k the layer
        with the most weights ("pivot"):

        1. forward, layers 0 .. k-1: gamma_in of layers 1 .. k (all-ones input, |w|^p);
        2. backward, layers n-1 .. k+1: gamma_out of layers k .. n-2;
        3. one pass over row blocks of W_k: its block's share of gamma_in(k+1) and of
           gamma_out(k-1), both from the weights *before* the update, then the block's update;
        4. layers k-1 .. 0, one pass each: the share of the previous layer's gamma_out (old
           weights), then the update; layers k+1 .. n-1 likewise with the next gamma_in.

        Gamma is therefore exactly that of the current weights, as in the general path.
        """
        p = self._p
        n = len(linears)
        k = max(range(n), key=lambda i: linears[i].weight.numel())
        w0 = linears[0].weight
        gins: list[Tensor | None] = [None] * n  # gamma_in of each layer's input units
        gouts: list[Tensor | None] = [None] * n  # gamma_out of each layer's output units
        gins[0] = torch.ones(linears[0].in_features, dtype=w0.dtype, device=w0.device)
        for i in range(k):  # gamma_in(l+1) = |W_l|^p gamma_in(l) + |b_l|^p
            gins[i + 1] = self._next_gamma_in(linears[i], gins[i])  # type: ignore[arg-type]
        wl = linears[-1].weight
        gouts[-1] = torch.ones(linears[-1].out_features, dtype=wl.dtype, device=wl.device)
        for i in range(n - 1, k, -1):  # gamma_out(l-1) = (|W_l|^p)^T gamma_out(l)
            wd, g = linears[i].weight.detach(), gouts[i]
            assert g is not None
            buf = self._scratch(0, wd)
            prev = torch.zeros(wd.shape[1], dtype=wd.dtype, device=wd.device)
            for rows in _row_chunks(*wd.shape):
                wr = wd[rows]
                prev.addmv_(_powered_into(wr, p, _block(buf, wr.shape)).t(), g[rows])
            gouts[i - 1] = prev
        # The pivot, then outwards in both directions: one pass over each remaining layer.
        self._fused_pass(linears, k, gins, gouts, groups, down=k > 0, up=k < n - 1)
        for i in range(k - 1, -1, -1):
            self._fused_pass(linears, i, gins, gouts, groups, down=i > 0, up=False)
        for i in range(k + 1, n):
            self._fused_pass(linears, i, gins, gouts, groups, down=False, up=i < n - 1)

    def _scratch(self, slot: int, ref: Tensor) -> Tensor:
        """Flat buffer ``slot`` large enough for one row block of ``ref`` (2-D)."""
        need = max(_CHUNK_ELEMS, ref.shape[-1])
        key = (slot, ref.dtype, ref.device)
        buf = self._scratch_bufs.get(key)
        if buf is None or buf.numel() < need:
            buf = self._scratch_bufs[key] = torch.empty(need, dtype=ref.dtype, device=ref.device)
        return buf

    def _next_gamma_in(self, m: nn.Linear, gin: Tensor) -> Tensor:
        wd = m.weight.detach()
        buf = self._scratch(0, wd)
        v = torch.empty(wd.shape[0], dtype=wd.dtype, device=wd.device)
        for rows in _row_chunks(*wd.shape):
            wr = wd[rows]
            torch.mv(_powered_into(wr, self._p, _block(buf, wr.shape)), gin, out=v[rows])
        return v + _powered(m.bias, self._p) if m.bias is not None else v

    def _fused_pass(
        self,
        linears: list[nn.Linear],
        i: int,
        gins: list[Tensor | None],
        gouts: list[Tensor | None],
        groups: dict[int, dict[str, Any]],
        *,
        down: bool,
        up: bool,
    ) -> None:
        """One pass over row blocks of layer ``i``: with its old weights, accumulate
        gamma_out(i-1) (``down``) and gamma_in(i+1) (``up``); then update the block."""
        p = self._p
        m = linears[i]
        w, b = m.weight, m.bias
        gin, gout = gins[i], gouts[i]
        assert gin is not None and gout is not None
        prev = torch.zeros_like(gin) if down else None
        nxt = torch.empty_like(gout) if up else None
        w_group = groups.get(id(w)) if w.grad is not None else None
        inv_out, inv_in = self._inverse_factors(gout, gin)
        buf = self._momentum_buffer(w, w_group) if w_group is not None else None
        wd = w.detach()
        pbuf, ubuf = self._scratch(0, wd), self._scratch(1, wd)
        for rows in _row_chunks(*w.shape):
            if prev is not None or nxt is not None:
                wr = wd[rows]
                wp = _powered_into(wr, p, _block(pbuf, wr.shape))  # (rows, in), cache-sized
                if prev is not None:  # gamma_out(i-1) += (|W_i|^p)^T gamma_out(i)
                    prev.addmv_(wp.t(), gout[rows])
                if nxt is not None:  # gamma_in(i+1) = |W_i|^p gamma_in(i) (+ |b|^p below)
                    torch.mv(wp, gin, out=nxt[rows])
            if w_group is not None:
                self._update_rows(w, rows, w_group, buf, factors=(inv_out, inv_in), scratch=ubuf)
        if nxt is not None:
            if b is not None:
                nxt.add_(_powered(b, p))  # the old bias, before its update below
            gins[i + 1] = nxt
        if prev is not None:
            gouts[i - 1] = prev
        if b is not None and b.grad is not None and id(b) in groups:
            self._update(b, groups[id(b)], gamma=self._finish(gout.clone()))

    def _inverse_factors(self, gout: Tensor, gin: Tensor) -> tuple[Tensor, Tensor]:
        """(1 / gamma_out, 1 / gamma_in) of a Linear weight, each to the power 2/p."""
        inv_out = self._finish(gout.reshape(-1).clone()).reciprocal_()  # (out,)
        inv_in = self._finish(gin.reshape(-1).clone()).reciprocal_()  # (in,)
        return inv_out, inv_in

    def _momentum_buffer(self, q: Tensor, group: dict[str, Any]) -> Tensor | None:
        if not group["momentum"]:
            return None
        state = self.state[q]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(q)
        return state["momentum_buffer"]

    def _update(
        self,
        q: Tensor,
        group: dict[str, Any],
        *,
        gamma: Tensor | None = None,
        factors: tuple[Tensor, Tensor] | None = None,
    ) -> None:
        buf = self._momentum_buffer(q, group)
        chunks = _row_chunks(*q.shape) if factors is not None else [slice(None)]
        for rows in chunks:
            self._update_rows(q, rows, group, buf, gamma=gamma, factors=factors)

    @staticmethod
    def _update_rows(
        q: Tensor,
        rows: slice,
        group: dict[str, Any],
        buf: Tensor | None,
        *,
        gamma: Tensor | None = None,
        factors: tuple[Tensor, Tensor] | None = None,
        scratch: Tensor | None = None,
    ) -> None:
        """Path-SGD update of ``q[rows]``: w <- w - lr * grad / gamma_p(w, e), with gamma given
        in full or as the reciprocal factors (1 / gamma_out, 1 / gamma_in) of a Linear weight
        (``scratch``: a flat buffer for the block's temporary)."""
        grad = q.grad
        assert grad is not None
        if grad.is_sparse:
            raise RuntimeError("PathSGD does not support sparse gradients")
        lr, mom, wd = group["lr"], group["momentum"], group["weight_decay"]
        qr, d = q[rows], grad[rows]
        if wd:
            d = d.add(qr, alpha=wd)
        if factors is not None:
            inv_out, inv_in = factors
            col = inv_out[rows].unsqueeze(1)
            if scratch is not None:  # (rows, in): a block small enough for the cache
                d = torch.mul(d, col, out=_block(scratch, d.shape))
            else:
                d = d * col
            if buf is None:
                qr.addcmul_(d, inv_in, value=-lr)  # w -= lr * grad / (gamma_out gamma_in)
                return
            d.mul_(inv_in)
        else:
            assert gamma is not None
            if buf is None:
                qr.addcdiv_(d, gamma, value=-lr)  # w -= lr * grad / gamma
                return
            d = d / gamma
        br = buf[rows]
        br.mul_(mom).add_(d)
        qr.add_(br, alpha=-lr)


# -- initialisation ---------------------------------------------------------------------------


@torch.no_grad()
def rescale_units_(model: nn.Module, layer: int, scale: Tensor) -> None:
    """Node-wise rescaling: unit j of weighted layer ``layer`` gets its incoming weights and bias
    multiplied by ``scale[j]`` and its outgoing weights divided by it. A ReLU network computes
    the same function afterwards.

    Args:
        model: a plain ReLU chain (see ``PathSGD``).
        layer: index of a hidden weighted layer (0-based, not the last one).
        scale: (units,) positive factors; units are a Linear's outputs or a Conv2d's channels.
    """
    layers = weighted_layers(model)
    if not 0 <= layer < len(layers) - 1:
        raise ValueError(f"layer must index a hidden weighted layer in [0, {len(layers) - 1})")
    m, nxt = layers[layer], layers[layer + 1]
    units = unit_count(m)
    if scale.shape != (units,) or not bool((scale > 0).all()):
        raise ValueError(f"scale must be ({units},) positive factors, got {tuple(scale.shape)}")
    if isinstance(nxt, nn.Conv2d) and nxt.groups != 1:
        raise ValueError("rescale_units_ supports only groups=1 convolutions after the layer")
    s = scale.to(m.weight)
    m.weight.mul_(s.view(-1, *([1] * (m.weight.dim() - 1))))  # incoming x c
    if m.bias is not None:
        m.bias.mul_(s)
    w = nxt.weight
    if w.shape[1] == units:  # Linear -> Linear, Conv2d -> Conv2d: outgoing / c
        w.div_(s.view(1, -1, *([1] * (w.dim() - 2))))
    elif isinstance(m, nn.Conv2d) and isinstance(nxt, nn.Linear) and w.shape[1] % units == 0:
        # Conv2d -> (pooling) -> Flatten -> Linear: each channel owns a block of features.
        w.view(w.shape[0], units, -1).div_(s.view(1, -1, 1))  # (out, C, HW) / c
    else:
        raise ValueError(f"cannot map the {units} units of layer {layer} onto the next layer")


@torch.no_grad()
def balanced_init_(model: nn.Module, *, generator: torch.Generator | None = None) -> None:
    """Weights ~ N(0, 1/fan_in), biases 0 (every unit's incoming weights have similar norms)."""
    for m in weighted_layers(model):
        fan_in = m.weight[0].numel()
        w = torch.randn(m.weight.shape, generator=generator) / fan_in**0.5
        m.weight.copy_(w)
        if m.bias is not None:
            m.bias.zero_()


@torch.no_grad()
def unbalanced_init_(
    model: nn.Module,
    *,
    draws_per_layer: int | Sequence[int] | None = None,
    base: float = 10.0,
    sigma: float = 1.0,
    generator: torch.Generator | None = None,
) -> dict[int, Tensor]:
    """The unbalanced initialisation of the paper's experiments (Section 6); apply after
    ``balanced_init_``.

    Section 6 of the paper, recalled, not checked (its text is not in the sources searched):
    2000 hidden units of the 2 x 4000 are picked at random with replacement, and
    each one's incoming edges are multiplied and its outgoing edges divided by 10c, c drawn from
    a log-normal distribution. A MATLAB Path-SGD implementation in a public code index
    (``initialize.m``, function ``makeUnbalanced``; its repository and authors could not be
    identified, so it corroborates rather than settles) states the rule per layer: in each hidden
    layer of h units, h/4 units are drawn with replacement, and each draw multiplies the unit's
    incoming weights and bias by 10 * exp(z), z ~ N(0, 1), and divides its outgoing weights by
    the same factor (a unit drawn twice is rescaled twice). That is what is done here: in
    hidden layer i, ``draws_per_layer[i]`` units (default ``units // 4``: 1000 per 4000-unit
    layer, the paper's 2000 in all) are drawn uniformly with replacement from that layer, and
    each draw rescales its unit by ``base * c``, c ~ LogNormal(0, sigma).

    Where this may differ from the paper: the draws are made per hidden layer, a quarter of each
    (the paper's sentence, as recalled, could also mean 2000 draws pooled over both layers);
    the log-normal's parameters (0, 1) and "10c" = 10 * c come from the implementation, not
    from the paper's text; and that implementation's loop actually runs fan_in / 4 times per
    layer (784 / 4 = 196 draws for the first hidden layer on MNIST), unlike its own comment and
    the paper's 2000; we follow the comment and the count.

    Returns:
        hidden layer index -> (units,) float64 factor of every unit (1 for units not drawn).
    """
    if not base > 0 or not sigma >= 0:
        raise ValueError(f"need base > 0 and sigma >= 0, got base={base}, sigma={sigma}")
    layers = weighted_layers(model)
    sizes = [unit_count(m) for m in layers[:-1]]
    if draws_per_layer is None:
        counts = [units // 4 for units in sizes]
    elif isinstance(draws_per_layer, int):
        counts = [draws_per_layer] * len(sizes)
    else:
        counts = [int(n) for n in draws_per_layer]
    if len(counts) != len(sizes) or any(n < 0 for n in counts):
        raise ValueError(
            f"draws_per_layer must give {len(sizes)} non-negative counts, got {draws_per_layer}"
        )
    scales: dict[int, Tensor] = {}
    for i, (units, n) in enumerate(zip(sizes, counts, strict=True)):
        picks = torch.randint(units, (n,), generator=generator)  # with replacement, this layer
        # c ~ LogNormal(0, sigma): exp of a standard normal times sigma.
        c = torch.exp(sigma * torch.randn(n, generator=generator, dtype=torch.float64))
        factor = torch.ones(units, dtype=torch.float64)
        factor.scatter_reduce_(0, picks, base * c, reduce="prod")  # drawn twice: rescaled twice
        scales[i] = factor
        rescale_units_(model, i, factor)
    return scales


__all__ = [
    "PathSGD",
    "balanced_init_",
    "path_norm",
    "path_scaling",
    "rescale_units_",
    "unbalanced_init_",
]
