"""Gated Graph Neural Networks and Gated Graph Sequence Neural Networks (Li, Tarlow, Brockschmidt
& Zemel, ICLR 2016, arXiv:1511.05493), plus the RNN/LSTM baselines that read serialized graphs.

* ``GatedGraphNet``: propagation (``paperzoo.nn.graph.GatedGraphPropagation``) and one output:
  node selection (Sec. 3.3: a score per node, softmax over each graph's nodes) or a graph-level
  classification through the gated readout of Eq. 7.
* ``GatedGraphSequenceNet`` (GGS-NN, Sec. 4): a sequence of outputs o(1..K); after each output
  the node annotations are re-predicted, X(k+1) = sigmoid(j([h, X(k)])), and propagated again.
  ``share_propagation=True`` is the variant the authors ran for bAbI 19 and the sequence tasks
  (one propagation net feeds both the output and the annotation heads); ``False`` uses separate
  nets F_o and F_x as in Fig. 2 of the paper. Annotations after the first step are latent: they
  are trained only through the outputs (as in the authors' code). Sequences end with an END
  output: an extra node (node outputs) or an extra class (graph outputs).
* ``SequenceBaseline``: an RNN or LSTM over the token sequence of a serialized graph (Sec. 5.1's
  baselines); after the question it is fed GO tokens, one per further output.
* ``StackedGatedGraphNet``, ``StackedGatedGraphSequenceNet``, ``StackedSequenceBaseline``: K
  independent models of one kind evaluated as one module (weights stacked along a leading model
  dimension, batched products), to train K of them (restarts, folds) at about one's overhead.

Output heads follow the authors' Lua code (github.com/yujiali/ggnn): node scores are
g([h, x]) * sigmoid(gate([h, x])) with g a one-hidden-layer tanh MLP; the graph classifier puts a
tanh layer of width ``state_dim`` after the readout; annotation heads are one-hidden-layer MLPs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.autograd.function import once_differentiable
from torch.nn.utils.rnn import pack_padded_sequence

from paperzoo.models.registry import MODELS
from paperzoo.nn.graph import (
    GatedGraphPropagation,
    GatedReadout,
    PropagationPlan,
    StackedGatedPropagation,
    global_add_pool,
    graph_inputs,
    to_dense_batch,
)

Output = Literal["node", "graph"]


class NodeSelectionHead(nn.Module):
    """score_v = g([h_v, x_v]) * sigmoid(gate([h_v, x_v])). Shapes: (N, D + A) -> (N,)."""

    def __init__(self, *, in_dim: int, hidden: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.gate = nn.Linear(in_dim, 1)

    def forward(self, hx: Tensor) -> Tensor:
        return (self.mlp(hx) * torch.sigmoid(self.gate(hx))).squeeze(-1)


class GraphClassifierHead(nn.Module):
    """Eq. 7 readout followed by a tanh layer and a linear classifier.

    Shapes:
        hx: (N, D + A); batch: (N,) -> (num_graphs, num_classes)
    """

    def __init__(self, *, in_dim: int, hidden: int, num_classes: int) -> None:
        super().__init__()
        self.readout = GatedReadout(in_dim=in_dim, out_dim=hidden)
        self.classifier = nn.Sequential(
            nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, num_classes)
        )

    def forward(self, hx: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        return self.classifier(self.readout(hx, batch, num_graphs))


def _num_graphs(batch: Tensor | None, num_graphs: int | None) -> int:
    if num_graphs is not None:
        return num_graphs
    return 1 if batch is None or batch.numel() == 0 else int(batch.max()) + 1


def _batch(x: Tensor, batch: Tensor | None) -> Tensor:
    return torch.zeros(x.shape[0], dtype=torch.long, device=x.device) if batch is None else batch


def _unpack(
    x: Tensor | Any,
    edge_index: Tensor | None,
    edge_type: Tensor | None,
    batch: Tensor | None,
    num_graphs: int | None,
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, int | None]:
    """The tensors of a forward call, from the arguments or from a PyG-style graph object."""
    if isinstance(x, Tensor):
        if edge_index is None:
            raise TypeError("edge_index is required with node features x")
        return x, edge_index, edge_type, batch, num_graphs
    x, edge_index, edge_type, data_batch, data_graphs = graph_inputs(x, edge_index, edge_type)
    return (
        x,
        edge_index,
        edge_type,
        data_batch if batch is None else batch,
        data_graphs if num_graphs is None else num_graphs,
    )


class GatedGraphNet(nn.Module):
    """GG-NN with a node-selection or graph-classification output.

    Args:
        state_dim: D.
        annotation_dim: A <= D.
        num_edge_types: K.
        output: "node" (one score per node) or "graph" (class logits per graph).
        num_classes: classes of the graph output.
        num_steps: propagation steps T.
        tie_directions, edge_bias: see ``GatedGraphPropagation``.

    Shapes:
        x: (N, A); edge_index: (2, E); edge_type: (E,); batch: (N,) ->
        (N,) node scores, or (num_graphs, num_classes) logits

    ``forward(data)`` takes a PyG-style ``Data`` / ``Batch`` instead of the tensors (``x``,
    ``edge_index``, ``edge_type`` or one-hot ``edge_attr``, ``batch``, ``num_graphs``; read by
    duck typing, see ``paperzoo.nn.graph.graph_inputs``).
    """

    def __init__(
        self,
        *,
        state_dim: int,
        annotation_dim: int,
        num_edge_types: int,
        output: Output = "node",
        num_classes: int | None = None,
        num_steps: int = 5,
        tie_directions: bool = False,
        edge_bias: bool = True,
    ) -> None:
        super().__init__()
        if output not in ("node", "graph"):
            raise ValueError(f"output must be 'node' or 'graph', got {output!r}")
        if output == "graph" and not num_classes:
            raise ValueError("output='graph' needs num_classes")
        self.output = output
        self.propagation = GatedGraphPropagation(
            state_dim=state_dim,
            annotation_dim=annotation_dim,
            num_edge_types=num_edge_types,
            num_steps=num_steps,
            tie_directions=tie_directions,
            edge_bias=edge_bias,
        )
        in_dim = state_dim + annotation_dim
        self.head: nn.Module = (
            NodeSelectionHead(in_dim=in_dim, hidden=state_dim)
            if output == "node"
            else GraphClassifierHead(in_dim=in_dim, hidden=state_dim, num_classes=num_classes or 0)
        )

    def forward(
        self,
        x: Tensor | Any,
        edge_index: Tensor | None = None,
        edge_type: Tensor | None = None,
        batch: Tensor | None = None,
        *,
        num_graphs: int | None = None,
    ) -> Tensor:
        x, edge_index, edge_type, batch, num_graphs = _unpack(
            x, edge_index, edge_type, batch, num_graphs
        )
        h = self.propagation(x, edge_index, edge_type)  # (N, D)
        hx = torch.cat([h, x], dim=1)  # (N, D + A)
        if self.output == "node":
            return self.head(hx)
        return self.head(hx, _batch(x, batch), _num_graphs(batch, num_graphs))


class GatedGraphSequenceNet(nn.Module):
    """GGS-NN: K outputs, re-predicting the annotations and propagating again before each.

    Args:
        state_dim, annotation_dim, num_edge_types, num_steps, tie_directions, edge_bias:
            as for ``GatedGraphNet``.
        output: "node" (a node per step; END is a node of the graph) or "graph" (a class per step).
        num_classes: classes of the graph output (including END).
        share_propagation: one propagation net for outputs and annotations (the authors' runs).

    Shapes:
        x: (N, A) -> (N, num_outputs) node scores, or (num_graphs, num_outputs, num_classes)

    ``forward(data, num_outputs=...)`` takes a PyG-style ``Data`` / ``Batch`` (as
    ``GatedGraphNet``).
    """

    def __init__(
        self,
        *,
        state_dim: int,
        annotation_dim: int,
        num_edge_types: int,
        output: Output = "node",
        num_classes: int | None = None,
        num_steps: int = 5,
        share_propagation: bool = True,
        tie_directions: bool = False,
        edge_bias: bool = True,
    ) -> None:
        super().__init__()
        if output not in ("node", "graph"):
            raise ValueError(f"output must be 'node' or 'graph', got {output!r}")
        if output == "graph" and not num_classes:
            raise ValueError("output='graph' needs num_classes")
        self.output = output
        self.share_propagation = share_propagation

        def prop() -> GatedGraphPropagation:
            return GatedGraphPropagation(
                state_dim=state_dim,
                annotation_dim=annotation_dim,
                num_edge_types=num_edge_types,
                num_steps=num_steps,
                tie_directions=tie_directions,
                edge_bias=edge_bias,
            )

        self.propagation = prop()  # F_o (and F_x when shared)
        self.annotation_propagation = None if share_propagation else prop()  # F_x
        in_dim = state_dim + annotation_dim
        self.head: nn.Module = (
            NodeSelectionHead(in_dim=in_dim, hidden=state_dim)
            if output == "node"
            else GraphClassifierHead(in_dim=in_dim, hidden=state_dim, num_classes=num_classes or 0)
        )
        self.annotation_head = nn.Sequential(  # X(k+1) = sigmoid(j([h, X(k)]))
            nn.Linear(in_dim, state_dim), nn.Tanh(), nn.Linear(state_dim, annotation_dim)
        )

    def forward(
        self,
        x: Tensor | Any,
        edge_index: Tensor | None = None,
        edge_type: Tensor | None = None,
        batch: Tensor | None = None,
        *,
        num_outputs: int,
        num_graphs: int | None = None,
    ) -> Tensor:
        x, edge_index, edge_type, batch, num_graphs = _unpack(
            x, edge_index, edge_type, batch, num_graphs
        )
        if num_outputs < 1:
            raise ValueError(f"num_outputs must be >= 1, got {num_outputs}")
        b, g = _batch(x, batch), _num_graphs(batch, num_graphs)
        outs = []
        ann = x
        # The graph's sparse matrices, built once for all outputs (and for F_x, whose layout is
        # the same as F_o's: a plan holds no weights).
        plan = self.propagation.plan(edge_index, edge_type, x.shape[0])
        for k in range(num_outputs):
            h = self.propagation(ann, edge_index, edge_type, plan=plan)  # H_o(k), (N, D)
            hx = torch.cat([h, ann], dim=1)
            outs.append(self.head(hx) if self.output == "node" else self.head(hx, b, g))
            if k + 1 < num_outputs:
                if self.annotation_propagation is not None:
                    h = self.annotation_propagation(ann, edge_index, edge_type, plan=plan)
                    hx = torch.cat([h, ann], dim=1)
                ann = torch.sigmoid(self.annotation_head(hx))  # X(k+1), (N, A)
        return torch.stack(outs, dim=1)  # (N, K) or (B, K, C)


def node_selection_logits(
    scores: Tensor, batch: Tensor, num_graphs: int, max_nodes: int | None = None
) -> Tensor:
    """Per-graph node log-probabilities, padded with -inf (``max_nodes``: the largest graph's
    nodes, known on the host; None: read from ``batch``, see ``to_dense_batch``).

    Shapes:
        scores: (N,) or (N, K) -> (B, max_nodes) or (B, K, max_nodes)
    """
    dense, _ = to_dense_batch(scores, batch, num_graphs, fill=float("-inf"), max_nodes=max_nodes)
    if dense.dim() == 3:
        dense = dense.transpose(1, 2)  # (B, K, M)
    return F.log_softmax(dense, dim=-1)


class SequenceBaseline(nn.Module):
    """RNN/LSTM over token sequences; the first output after the last token, then GO steps.

    Args:
        vocab_size: token ids in [0, vocab_size); 0 is padding, ``go_token`` starts outputs.
        num_classes: output classes.
        cell: "lstm" or "rnn" (tanh).
        embed_dim, hidden_dim: sizes (the authors used 50 and 50).

    Shapes:
        tokens: (B, L); lengths: (B,) -> (B, num_outputs, num_classes)
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        num_classes: int,
        cell: Literal["lstm", "rnn"] = "lstm",
        embed_dim: int = 50,
        hidden_dim: int = 50,
        go_token: int = 2,
    ) -> None:
        super().__init__()
        if cell not in ("lstm", "rnn"):
            raise ValueError(f"cell must be 'lstm' or 'rnn', got {cell!r}")
        self.go_token = go_token
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        rnn_cls = nn.LSTM if cell == "lstm" else nn.RNN
        self.rnn = rnn_cls(embed_dim, hidden_dim, batch_first=True)
        self.out = nn.Linear(hidden_dim, num_classes)

    def forward(self, tokens: Tensor, lengths: Tensor, *, num_outputs: int = 1) -> Tensor:
        packed = pack_padded_sequence(
            self.embed(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, state = self.rnn(packed)
        h_n = state[0] if isinstance(state, tuple) else state  # (1, B, H)
        hidden = [h_n[-1].unsqueeze(1)]  # (B, 1, H)
        if num_outputs > 1:
            go = torch.full((tokens.shape[0], num_outputs - 1), self.go_token, device=tokens.device)
            out, _ = self.rnn(self.embed(go), state)  # (B, K-1, H)
            hidden.append(out)
        return self.out(torch.cat(hidden, dim=1))  # (B, K, C)


MODELS.register("ggnn")(GatedGraphNet)
MODELS.register("ggsnn")(GatedGraphSequenceNet)


@MODELS.register("babi-lstm")
def babi_lstm(*, vocab_size: int, num_classes: int, hidden_dim: int = 50) -> SequenceBaseline:
    """LSTM baseline over serialized graphs."""
    return SequenceBaseline(
        vocab_size=vocab_size, num_classes=num_classes, cell="lstm", hidden_dim=hidden_dim
    )


@MODELS.register("babi-rnn")
def babi_rnn(*, vocab_size: int, num_classes: int, hidden_dim: int = 50) -> SequenceBaseline:
    """Vanilla (tanh) RNN baseline over serialized graphs."""
    return SequenceBaseline(
        vocab_size=vocab_size, num_classes=num_classes, cell="rnn", hidden_dim=hidden_dim
    )


class _LSTMCell(torch.autograd.Function):
    """An LSTM cell from its gate pre-activations, with a written-out backward pass (one node
    in the graph instead of about ten). PyTorch's gate order: i, f, g, o.

    Shapes:
        gates: (..., 4H); c: (..., H) -> h', c' (..., H)
    """

    @staticmethod
    def forward(ctx: Any, gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        n = c.shape[-1]
        act = gates.sigmoid()  # i, f, o (and g's slot, overwritten)
        act[..., 2 * n : 3 * n] = gates[..., 2 * n : 3 * n].tanh()
        i, f, g, o = act.split(n, dim=-1)
        c_new = torch.addcmul(f * c, i, g)
        tc = c_new.tanh()
        ctx.save_for_backward(act, c, tc)
        return o * tc, c_new

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, dh: Tensor, dc_out: Tensor) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        act, c, tc = ctx.saved_tensors
        n = c.shape[-1]
        i, f, g, o = act.split(n, dim=-1)
        dc = torch.addcmul(dc_out, dh * o, 1 - tc * tc)  # through h = o tanh(c)
        d = torch.empty_like(act)  # d loss / d (gate pre-activations)
        torch.mul(dc * g, i * (1 - i), out=d[..., :n])
        torch.mul(dc * c, f * (1 - f), out=d[..., n : 2 * n])
        torch.mul(dc * i, 1 - g * g, out=d[..., 2 * n : 3 * n])
        torch.mul(dh * tc, o * (1 - o), out=d[..., 3 * n :])
        return d, dc * f


class StackedSequenceBaseline(nn.Module):
    """K independent ``SequenceBaseline`` s evaluated as one module (stacked weights, batched
    matrix products), so that training K small models costs about one step's overhead.

    The recurrence is written out (``nn.RNN`` / ``nn.LSTM`` equations, PyTorch's gate order
    i, f, g, o); a sequence's final state is the state after its last real token, as with a
    packed sequence, so model k computes what ``models[k]`` computes, up to float round-off.
    Parameters are stacked along a leading model dimension: any element-wise optimiser (Adam,
    element-wise gradient clamping) on them is K independent optimisers.

    Args:
        models: the K baselines (same vocabulary, classes, cell and sizes); their current
            weights are copied (their own initialisations).

    ``forward(tokens, lengths, num_outputs=1, host_lengths=None)``: ``host_lengths``, the same
    lengths in host memory where ``lengths`` live on a GPU, gives the sizes the loop needs (its
    number of steps, the steps at which every sequence still reads) without reading the device;
    None: they are read from ``lengths``.

    Shapes:
        tokens: (K, B, L); lengths: (K, B) -> (K, B, num_outputs, num_classes)
    """

    def __init__(self, *, models: list[SequenceBaseline]) -> None:
        super().__init__()
        if not models:
            raise ValueError("models must not be empty")
        first = models[0]
        self.cell = "lstm" if isinstance(first.rnn, nn.LSTM) else "rnn"
        self.go_token = first.go_token
        for m in models:
            if (
                ("lstm" if isinstance(m.rnn, nn.LSTM) else "rnn") != self.cell
                or m.go_token != self.go_token
                or m.embed.weight.shape != first.embed.weight.shape
                or m.out.weight.shape != first.out.weight.shape
                or m.rnn.hidden_size != first.rnn.hidden_size
            ):
                raise ValueError("stacked baselines must share cell, sizes and go_token")

        def stack(get: Callable[[SequenceBaseline], Tensor]) -> nn.Parameter:
            return nn.Parameter(torch.stack([get(m).detach().clone() for m in models]))

        self.embed = stack(lambda m: m.embed.weight)  # (K, V, E)
        self.w_ih = stack(lambda m: m.rnn.weight_ih_l0.t())  # (K, E, G H)
        self.w_hh = stack(lambda m: m.rnn.weight_hh_l0.t())  # (K, H, G H)
        self.b_ih = stack(lambda m: m.rnn.bias_ih_l0)  # (K, G H)
        self.b_hh = stack(lambda m: m.rnn.bias_hh_l0)  # (K, G H), kept apart: Adam steps each
        self.w_out = stack(lambda m: m.out.weight.t())  # (K, H, C)
        self.b_out = stack(lambda m: m.out.bias)  # (K, C)
        self.hidden_dim = first.rnn.hidden_size

    @property
    def num_models(self) -> int:
        return self.embed.shape[0]

    def _cell(self, gx: Tensor, h: Tensor, c: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """One step. gx: (K, B, G H) input part with bias; h, c: (K, B, H)."""
        g = torch.baddbmm(gx, h, self.w_hh)  # (K, B, G H)
        if c is None:  # tanh RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
            return torch.tanh(g), None
        h, c = _LSTMCell.apply(g, c)  # c' = f c + i g, h' = o tanh(c')
        return h, c

    def forward(
        self,
        tokens: Tensor,
        lengths: Tensor,
        *,
        num_outputs: int = 1,
        host_lengths: Tensor | None = None,
    ) -> Tensor:
        k, b, steps = tokens.shape
        sizes = (lengths if host_lengths is None else host_lengths).cpu()  # no copy on the host
        vocab = self.embed.shape[1]
        bias = (self.b_ih + self.b_hh).unsqueeze(1)  # (K, 1, G H)
        # The input part of every token, W_ih e(v) + b, as one table per model (embedding and
        # input weights applied in one product; the same function): (K, V, G H)
        table = torch.baddbmm(bias, self.embed, self.w_ih)
        steps = int(sizes.max())
        # Rows of model k's table, time-major so that each step reads one slice: (L, K, B, G H)
        onehot = F.one_hot(tokens[:, :, :steps].transpose(1, 2), vocab).to(table.dtype)
        gx = torch.bmm(onehot.reshape(k, steps * b, vocab), table).view(k, steps, b, -1)
        live = torch.arange(steps, device=tokens.device).view(1, steps, 1) < lengths.unsqueeze(1)
        h = gx.new_zeros(k, b, self.hidden_dim)
        c = h if self.cell == "lstm" else None
        # the steps at which no sequence has ended, from the sizes on the host
        everyone = (torch.arange(steps).view(1, steps, 1) < sizes.unsqueeze(1)).all(2).all(0)
        everyone = everyone.tolist()
        for g_t, live_t, every in zip(
            gx.unbind(1), live.unsqueeze(-1).unbind(1), everyone, strict=True
        ):
            h_new, c_new = self._cell(g_t, h, c)  # live_t: (K, B, 1), sequences still reading
            if every:
                h, c = h_new, c_new
                continue
            h = torch.where(live_t, h_new, h)
            if c is not None and c_new is not None:
                c = torch.where(live_t, c_new, c)
        hidden = [h]
        if num_outputs > 1:  # GO tokens after the question, one per further output
            go = table[:, self.go_token].unsqueeze(1)  # (K, 1, G H)
            for _ in range(num_outputs - 1):
                h, c = self._cell(go.expand(k, b, -1), h, c)
                hidden.append(h)
        hs = torch.stack(hidden, dim=2)  # (K, B, num_outputs, H)
        out = torch.baddbmm(self.b_out.unsqueeze(1), hs.reshape(k, b * num_outputs, -1), self.w_out)
        return out.view(k, b, num_outputs, -1)  # (K, B, num_outputs, C)

    def unstacked(self, index: int, into: SequenceBaseline) -> SequenceBaseline:
        """Copy model ``index``'s weights into ``into`` (a ``SequenceBaseline`` of the same
        sizes) and return it."""
        with torch.no_grad():
            into.embed.weight.copy_(self.embed[index])
            into.rnn.weight_ih_l0.copy_(self.w_ih[index].t())
            into.rnn.weight_hh_l0.copy_(self.w_hh[index].t())
            into.rnn.bias_ih_l0.copy_(self.b_ih[index])
            into.rnn.bias_hh_l0.copy_(self.b_hh[index])
            into.out.weight.copy_(self.w_out[index].t())
            into.out.bias.copy_(self.b_out[index])
        return into


def _stacked_linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """K linear layers at once. Shapes: x (K, M, in); weight (K, out, in); bias (K, out) ->
    (K, M, out)."""
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


def _stack_parameters(modules: list[nn.Module]) -> nn.ParameterDict:
    """Every parameter of ``modules`` (same names and shapes) stacked along a new leading model
    dimension, under its name with dots as underscores."""
    return nn.ParameterDict(
        {
            name.replace(".", "_"): nn.Parameter(
                torch.stack([m.get_parameter(name).detach().clone() for m in modules])
            )
            for name, _ in modules[0].named_parameters()
        }
    )


def _unstack_parameters(stacked: nn.ParameterDict, index: int, into: nn.Module) -> None:
    """Copy model ``index``'s slice of ``stacked`` (``_stack_parameters``) into ``into``."""
    with torch.no_grad():
        for name, param in into.named_parameters():
            param.copy_(stacked[name.replace(".", "_")][index])


def _stacked_head(
    p: nn.ParameterDict, output: Output, hx: Tensor, batch: Tensor, num_graphs: int
) -> Tensor:
    """``NodeSelectionHead`` or ``GraphClassifierHead`` of K models (``_stack_parameters`` of
    the heads) with batched products.

    Shapes:
        hx: (K, N, D + A); batch: (K*N,) graph of each node in the union -> (K, N) node scores,
        or (K, B, num_classes) logits
    """
    k, n = hx.shape[:2]
    if output == "node":  # g([h, x]) * sigmoid(gate([h, x]))
        hidden = torch.tanh(_stacked_linear(hx, p["mlp_0_weight"], p["mlp_0_bias"]))
        score = _stacked_linear(hidden, p["mlp_2_weight"], p["mlp_2_bias"])
        gate = torch.sigmoid(_stacked_linear(hx, p["gate_weight"], p["gate_bias"]))
        return (score * gate).squeeze(-1)  # (K, N)
    # Eq. 7 readout, then the classifier
    act = _stacked_linear(hx, p["readout_lin_weight"], p["readout_lin_bias"])  # (K, N, 2H)
    out_dim = act.shape[2] // 2
    gated = torch.sigmoid(act[..., :out_dim]) * torch.tanh(act[..., out_dim:])
    pooled = global_add_pool(gated.reshape(k * n, out_dim), batch, k * num_graphs)
    hg = torch.tanh(pooled).view(k, num_graphs, out_dim)  # (K, B, H)
    hidden = torch.tanh(_stacked_linear(hg, p["classifier_0_weight"], p["classifier_0_bias"]))
    return _stacked_linear(hidden, p["classifier_2_weight"], p["classifier_2_bias"])


def _check_stackable(models: list[Any]) -> None:
    if not models:
        raise ValueError("models must not be empty")
    first = models[0]
    shapes = [(n, p.shape) for n, p in first.named_parameters()]
    for m in models:
        if (
            type(m) is not type(first)
            or m.output != first.output
            or [(n, p.shape) for n, p in m.named_parameters()] != shapes
        ):
            raise ValueError("stacked GG-NNs must share type, output, sizes and layout")


class _StackedGraphModel(nn.Module):
    """What the stacked GG-NN and GGS-NN share: K, and the union graph's plan."""

    propagation: StackedGatedPropagation

    @property
    def num_models(self) -> int:
        return self.propagation.num_models

    def plan(self, edge_index: Tensor, edge_type: Tensor | None, num_nodes: int) -> PropagationPlan:
        """The union graph's sparse matrices (``StackedGatedPropagation.plan``), reusable."""
        return self.propagation.plan(edge_index, edge_type, num_nodes)


class StackedGatedGraphNet(_StackedGraphModel):
    """K independent ``GatedGraphNet`` s (node selection or graph classification) evaluated as
    one module, so that training K of them (the restarts of one fold and question type) costs
    about one model's per-operation overhead.

    The propagation is a ``StackedGatedPropagation`` (message, GRU weights stacked, the sums
    over edges one sparse product over the block-diagonal union of the K models' graphs); the
    output head's weights are stacked too (``head`` holds them under the names of the single
    head's parameters, dots as underscores) and applied with batched products. Every parameter
    has a leading model dimension, so an element-wise optimiser (Adam) and element-wise gradient
    clamping on them are K independent ones; model k computes what ``models[k]`` computes on its
    block of the union, up to float round-off.

    Args:
        models: the K networks (same output, sizes and layout); their current weights are copied
            (their own initialisations).

    Shapes:
        x: (K, N, A), model k's nodes (its graphs batched as usual, N nodes each model);
        edge_index: (2, E) and edge_type: (E,) of the union (model k's node ids offset by k*N);
        batch: (K*N,) graph of each node in the union (model k's graphs are k*B ... (k+1)*B - 1)
        -> (K, N) node scores, or (K, B, num_classes) logits
    """

    def __init__(self, *, models: list[GatedGraphNet]) -> None:
        super().__init__()
        _check_stackable(models)
        self.output = models[0].output
        self.propagation = StackedGatedPropagation(modules=[m.propagation for m in models])
        self.head = _stack_parameters([m.head for m in models])

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_type: Tensor | None,
        batch: Tensor,
        *,
        num_graphs: int,
        plan: PropagationPlan | None = None,
    ) -> Tensor:
        k, n = x.shape[:2]
        if plan is None:
            plan = self.plan(edge_index, edge_type, k * n)
        h = self.propagation(x, plan)  # (K, N, D)
        hx = torch.cat([h, x], dim=2)  # (K, N, D + A)
        return _stacked_head(self.head, self.output, hx, batch, num_graphs)  # type: ignore[arg-type]

    def unstacked(self, index: int, into: GatedGraphNet) -> GatedGraphNet:
        """Copy model ``index``'s weights into ``into`` (a ``GatedGraphNet`` of the same sizes)
        and return it."""
        self.propagation.unstacked(index, into.propagation)
        _unstack_parameters(self.head, index, into.head)
        return into


class StackedGatedGraphSequenceNet(_StackedGraphModel):
    """K independent ``GatedGraphSequenceNet`` s (GGS-NNs) evaluated as one module, as
    ``StackedGatedGraphNet``: propagation nets, output and annotation heads stacked, applied with
    batched products; the sums over edges one sparse product over the union of the K models'
    graphs, its plan built once for every output. Model k computes what ``models[k]`` computes
    on its block of the union, up to float round-off.

    Args:
        models: the K networks (same output, sizes, layout and sharing of the propagation).

    Shapes:
        as ``StackedGatedGraphNet``, with ``num_outputs`` outputs ->
        (K, N, num_outputs) node scores, or (K, B, num_outputs, num_classes) logits
    """

    def __init__(self, *, models: list[GatedGraphSequenceNet]) -> None:
        super().__init__()
        _check_stackable(models)
        self.output = models[0].output
        self.propagation = StackedGatedPropagation(modules=[m.propagation for m in models])
        self.annotation_propagation = (
            None
            if models[0].annotation_propagation is None
            else StackedGatedPropagation(
                modules=[m.annotation_propagation for m in models]  # type: ignore[misc]
            )
        )
        self.head = _stack_parameters([m.head for m in models])
        self.annotation_head = _stack_parameters([m.annotation_head for m in models])

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_type: Tensor | None,
        batch: Tensor,
        *,
        num_outputs: int,
        num_graphs: int,
        plan: PropagationPlan | None = None,
    ) -> Tensor:
        if num_outputs < 1:
            raise ValueError(f"num_outputs must be >= 1, got {num_outputs}")
        k, n = x.shape[:2]
        if plan is None:
            plan = self.plan(edge_index, edge_type, k * n)
        p = self.annotation_head
        outs = []
        ann = x  # (K, N, A)
        for step in range(num_outputs):
            h = self.propagation(ann, plan)  # H_o(k), (K, N, D)
            hx = torch.cat([h, ann], dim=2)
            outs.append(_stacked_head(self.head, self.output, hx, batch, num_graphs))  # type: ignore[arg-type]
            if step + 1 < num_outputs:
                if self.annotation_propagation is not None:
                    hx = torch.cat([self.annotation_propagation(ann, plan), ann], dim=2)
                hidden = torch.tanh(_stacked_linear(hx, p["0_weight"], p["0_bias"]))
                ann = torch.sigmoid(_stacked_linear(hidden, p["2_weight"], p["2_bias"]))  # X(k+1)
        return torch.stack(outs, dim=2)  # (K, N, L) or (K, B, L, C)

    def unstacked(self, index: int, into: GatedGraphSequenceNet) -> GatedGraphSequenceNet:
        """Copy model ``index``'s weights into ``into`` (a GGS-NN of the same sizes); returns it."""
        self.propagation.unstacked(index, into.propagation)
        if self.annotation_propagation is not None and into.annotation_propagation is not None:
            self.annotation_propagation.unstacked(index, into.annotation_propagation)
        _unstack_parameters(self.head, index, into.head)
        _unstack_parameters(self.annotation_head, index, into.annotation_head)
        return into
