"""The T gated steps of a propagation (Li et al., ICLR 2016, Eq. 2-6) as autograd functions with
hand-written backward passes, for one model (``_GatedSteps``) and for K stacked models
(``_StackedGatedSteps``).

* The T steps run inside one autograd function with a hand-written backward pass (the GRU's
  derivatives written out, weight gradients accumulated in place). It saves three tensors per
  step (the state, the sums, the gates) instead of autograd's dozen. That backward pass is used
  for first-order gradients (training); when a gradient is itself to be differentiated
  (``torch.autograd.grad(..., create_graph=True)``: a gradient penalty, a meta-learning step),
  the backward pass instead recomputes the T steps with plain differentiable operations from the
  saved inputs and differentiates those, so gradients of gradients (through the inputs and the
  weights, to any order) are those of the equations.
* tanh is computed as 2 sigmoid(2x) - 1 (the same function up to float round-off, about 2e-7):
  torch's CPU tanh measured 5-7x slower than its sigmoid.
* The stacked steps apply the weights with batched products and the sums over edges, which hold
  no weights, as one sparse product over the block-diagonal union of the K models' graphs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def _spmm(adj: Tensor, x: Tensor) -> Tensor:
    """adj @ x for a sparse CSR adj, into fresh memory (beta=0 skips zeroing it, which
    ``adj @ x`` does, and on CPU that costs more than the product)."""
    return torch.addmm(x.new_empty(adj.shape[0], x.shape[1]), adj, x, beta=0)


def _fp32(*tensors: Tensor | None) -> tuple[Tensor | None, ...]:
    """The inputs of the hand-written propagation steps, bf16 / fp16 ones cast to float32: the
    steps run with autocast off (under ``--precision bf16`` their sparse sums have no bf16 CPU
    kernel, and their backward pass is written for one dtype), so the propagation stays fp32."""
    low = (torch.bfloat16, torch.float16)
    return tuple(t.float() if t is not None and t.dtype in low else t for t in tensors)


class _SparseProduct(torch.autograd.Function):
    """``adj @ x`` for a sparse CSR ``adj`` (given with its transpose), differentiable in ``x`` to
    any order: the backward pass is the same product with the transpose."""

    @staticmethod
    def forward(ctx: Any, adj: Tensor, adj_t: Tensor, x: Tensor) -> Tensor:  # type: ignore[override]
        ctx.adj, ctx.adj_t = adj, adj_t
        return _spmm(adj, x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[None, None, Tensor]:  # type: ignore[override]
        return None, None, _SparseProduct.apply(ctx.adj_t, ctx.adj, grad.contiguous())


def _plain_steps(
    h: Tensor,
    const: Tensor,
    w_pre: Tensor | None,
    w_a: Tensor,
    u_zr: Tensor,
    u_c: Tensor,
    adj: Tensor,
    adj_t: Tensor,
    steps: int,
) -> Tensor:
    """The T steps of ``_GatedSteps`` (single model: h (N, D)) or ``_StackedGatedSteps`` (h
    (K, N, D)) with plain differentiable operations: the same function, differentiable to any
    order (used by their backward passes when a gradient is to be differentiated)."""
    d = h.shape[-1]
    for _ in range(steps):
        m = h if w_pre is None else h @ w_pre
        agg = _SparseProduct.apply(adj, adj_t, m.reshape(-1, d)).view(*h.shape[:-1], -1)
        g = const + agg @ w_a  # lin_a(a)
        zr = torch.sigmoid(g[..., : 2 * d] + h @ u_zr)  # Eq. 3, 4
        cand = torch.tanh(g[..., 2 * d :] + (zr[..., d:] * h) @ u_c)  # Eq. 5
        h = h + zr[..., :d] * (cand - h)  # Eq. 6
    return h


def _differentiable_backward(
    ctx: Any, grad: Tensor, inputs: tuple[Tensor | None, ...]
) -> tuple[Tensor | None, ...]:
    """Gradients of the T steps with respect to ``inputs`` (h, const, w_pre, w_a, u_zr, u_c) as
    differentiable functions of the inputs and of ``grad`` (the steps recomputed with plain
    operations, then ``torch.autograd.grad(..., create_graph=True)``)."""
    adj, adj_t = ctx.adj, ctx.adj_t
    with torch.enable_grad():
        out = _plain_steps(*inputs, adj, adj_t, ctx.steps)  # type: ignore[arg-type]
        wanted = [
            t for t, need in zip(inputs, ctx.needs_input_grad[:6], strict=True)
            if need and t is not None
        ]  # fmt: skip
        found = iter(torch.autograd.grad(out, wanted, grad, create_graph=True, allow_unused=True))
    grads = [
        next(found) if need and t is not None else None
        for t, need in zip(inputs, ctx.needs_input_grad[:6], strict=True)
    ]
    grads = [
        torch.zeros_like(t) if g is None and t is not None and need else g
        for g, t, need in zip(grads, inputs, ctx.needs_input_grad[:6], strict=True)
    ]
    return (*grads, None, None, None)


class _GatedSteps(torch.autograd.Function):
    """T gated steps (Eq. 2-6) with a hand-written backward pass.

    Inputs: h (N, D); const (N, 3D) GRU input biases plus message biases; w_pre (D, slots*D) the
    message weights when they come first, else None; w_a (Q, 3D) the GRU input weights applied
    to the sums (composed with the message weights when those come after); u_zr (D, 2D), u_c
    (D, D) the recurrent weights (transposed, as right factors); the plan's matrices.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        h: Tensor,
        const: Tensor,
        w_pre: Tensor | None,
        w_a: Tensor,
        u_zr: Tensor,
        u_c: Tensor,
        adj: Tensor,
        adj_t: Tensor,
        steps: int,
    ) -> Tensor:
        n, d = h.shape
        saved = []
        for _ in range(steps):
            m = h if w_pre is None else h @ w_pre  # (N, slots*D) when the weights come first
            agg = _spmm(adj, m.reshape(-1, d)).view(n, -1)  # Eq. 2 sums, (N, Q)
            g = torch.addmm(const, agg, w_a)  # lin_a(a), (N, 3D)
            zr = g[:, : 2 * d].addmm_(h, u_zr).sigmoid_()  # Eq. 3, 4
            cand = g[:, 2 * d :].addmm_(zr[:, d:] * h, u_c)  # Eq. 5, then tanh, as
            cand.mul_(2).sigmoid_().mul_(2).sub_(1)  # 2 sigmoid(2x) - 1: torch's CPU tanh is slower
            saved += [h, agg, g]
            h = torch.lerp(h, cand, zr[:, :d])  # Eq. 6: (1 - z) * h + z * h~
        ctx.save_for_backward(const, w_pre, w_a, u_zr, u_c, adj_t, *saved)
        ctx.needs_const = ctx.needs_input_grad[1]
        ctx.adj, ctx.adj_t, ctx.steps = adj, adj_t, steps
        return h

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        const, w_pre, w_a, u_zr, u_c, adj_t, *saved = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: a gradient to be differentiated
            h0 = saved[0] if saved else None
            return _differentiable_backward(ctx, grad, (h0, const, w_pre, w_a, u_zr, u_c))
        d = u_c.shape[0]
        gw_pre = None if w_pre is None else torch.zeros_like(w_pre)
        gw_a, gu_zr, gu_c = torch.zeros_like(w_a), torch.zeros_like(u_zr), torch.zeros_like(u_c)
        gconst = torch.zeros_like(saved[2]) if ctx.needs_const else None
        gh = grad.contiguous()
        for i in range(len(saved) // 3 - 1, -1, -1):
            h, agg, g = saved[3 * i : 3 * i + 3]
            n = h.shape[0]
            z, r, cand = g[:, :d], g[:, d : 2 * d], g[:, 2 * d :]
            dg = torch.empty_like(g)  # d loss / d (pre-activations of z, r, h~)
            dcand = gh * z
            dh = gh - dcand  # Eq. 6, through (1 - z) * h
            torch.ops.aten.sigmoid_backward(gh * (cand - h), z, grad_input=dg[:, :d])  # Eq. 3
            torch.ops.aten.tanh_backward(dcand, cand, grad_input=dg[:, 2 * d :])  # Eq. 5
            gu_c.addmm_((r * h).t(), dg[:, 2 * d :])
            drh = dg[:, 2 * d :] @ u_c.t()  # d loss / d (r * h)
            dh.addcmul_(drh, r)
            torch.ops.aten.sigmoid_backward(drh * h, r, grad_input=dg[:, d : 2 * d])  # Eq. 4
            gu_zr.addmm_(h.t(), dg[:, : 2 * d])
            dh.addmm_(dg[:, : 2 * d], u_zr.t())
            gw_a.addmm_(agg.t(), dg)
            if gconst is not None:
                gconst += dg
            dagg = (dg @ w_a.t()).view(-1, d)  # Eq. 2: back through the sums
            if w_pre is None:
                dh.addmm_(adj_t, dagg)
            else:
                dm = _spmm(adj_t, dagg).view(n, -1)  # (N, slots*D)
                gw_pre.addmm_(h.t(), dm)  # type: ignore[union-attr]
                dh.addmm_(dm, w_pre.t())
            gh = dh
        return gh, gconst, gw_pre, gw_a, gu_zr, gu_c, None, None, None


class _StackedGatedSteps(torch.autograd.Function):
    """``_GatedSteps`` of K independent models at once: every tensor but the plan's matrices has
    a leading model dimension, the weights are applied with batched products (``bmm``), and the
    sums over edges, which hold no weights, are one sparse product over the block-diagonal union
    of the K models' graphs (model k's nodes are rows k*N ... (k+1)*N - 1).

    Inputs: h (K, N, D); const (K, N, 3D); w_pre (K, D, slots*D) or None; w_a (K, Q, 3D);
    u_zr (K, D, 2D); u_c (K, D, D); the union plan's matrices.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        h: Tensor,
        const: Tensor,
        w_pre: Tensor | None,
        w_a: Tensor,
        u_zr: Tensor,
        u_c: Tensor,
        adj: Tensor,
        adj_t: Tensor,
        steps: int,
    ) -> Tensor:
        k, n, d = h.shape
        saved = []
        for _ in range(steps):
            m = h if w_pre is None else torch.bmm(h, w_pre)  # (K, N, slots*D) weights first
            agg = _spmm(adj, m.reshape(-1, d)).view(k, n, -1)  # Eq. 2 sums, (K, N, Q)
            g = torch.baddbmm(const, agg, w_a)  # lin_a(a), (K, N, 3D)
            zr = g[..., : 2 * d].add_(torch.bmm(h, u_zr)).sigmoid_()  # Eq. 3, 4
            cand = g[..., 2 * d :].add_(torch.bmm(zr[..., d:] * h, u_c))  # Eq. 5, then tanh
            cand.mul_(2).sigmoid_().mul_(2).sub_(1)  # as 2 sigmoid(2x) - 1 (see _GatedSteps)
            saved += [h, agg, g]
            h = torch.lerp(h, cand, zr[..., :d])  # Eq. 6: (1 - z) * h + z * h~
        ctx.save_for_backward(const, w_pre, w_a, u_zr, u_c, adj_t, *saved)
        ctx.needs_const = ctx.needs_input_grad[1]
        ctx.adj, ctx.adj_t, ctx.steps = adj, adj_t, steps
        return h

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        const, w_pre, w_a, u_zr, u_c, adj_t, *saved = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: see _GatedSteps.backward
            h0 = saved[0] if saved else None
            return _differentiable_backward(ctx, grad, (h0, const, w_pre, w_a, u_zr, u_c))
        d = u_c.shape[-1]
        gw_pre = None if w_pre is None else torch.zeros_like(w_pre)
        gw_a, gu_zr, gu_c = torch.zeros_like(w_a), torch.zeros_like(u_zr), torch.zeros_like(u_c)
        gconst = torch.zeros_like(saved[2]) if ctx.needs_const else None
        gh = grad.contiguous()
        w_a_t, u_zr_t, u_c_t = w_a.transpose(1, 2), u_zr.transpose(1, 2), u_c.transpose(1, 2)
        for i in range(len(saved) // 3 - 1, -1, -1):
            h, agg, g = saved[3 * i : 3 * i + 3]
            k, n = h.shape[:2]
            z, r, cand = g[..., :d], g[..., d : 2 * d], g[..., 2 * d :]
            dg = torch.empty_like(g)  # d loss / d (pre-activations of z, r, h~)
            dcand = gh * z
            dh = gh - dcand  # Eq. 6, through (1 - z) * h
            torch.ops.aten.sigmoid_backward(gh * (cand - h), z, grad_input=dg[..., :d])  # Eq. 3
            torch.ops.aten.tanh_backward(dcand, cand, grad_input=dg[..., 2 * d :])  # Eq. 5
            gu_c.baddbmm_((r * h).transpose(1, 2), dg[..., 2 * d :])
            drh = torch.bmm(dg[..., 2 * d :], u_c_t)  # d loss / d (r * h)
            dh.addcmul_(drh, r)
            torch.ops.aten.sigmoid_backward(drh * h, r, grad_input=dg[..., d : 2 * d])  # Eq. 4
            gu_zr.baddbmm_(h.transpose(1, 2), dg[..., : 2 * d])
            dh.baddbmm_(dg[..., : 2 * d], u_zr_t)
            gw_a.baddbmm_(agg.transpose(1, 2), dg)
            if gconst is not None:
                gconst += dg
            dagg = torch.bmm(dg, w_a_t).view(-1, d)  # Eq. 2: back through the sums
            if w_pre is None:
                dh.view(k * n, d).addmm_(adj_t, dagg)
            else:
                dm = _spmm(adj_t, dagg).view(k, n, -1)  # (K, N, slots*D)
                gw_pre.baddbmm_(h.transpose(1, 2), dm)  # type: ignore[union-attr]
                dh.baddbmm_(dm, w_pre.transpose(1, 2))
            gh = dh
        return gh, gconst, gw_pre, gw_a, gu_zr, gu_c, None, None, None
