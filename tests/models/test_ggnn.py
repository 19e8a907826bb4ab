"""GG-NN / GGS-NN output models and the RNN/LSTM baselines."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from paperzoo.data import babi
from paperzoo.engine import seeded
from paperzoo.models import create_model
from paperzoo.models.ggnn import (
    GatedGraphNet,
    GatedGraphSequenceNet,
    SequenceBaseline,
    StackedGatedGraphNet,
    StackedGatedGraphSequenceNet,
    StackedSequenceBaseline,
    node_selection_logits,
)


def _batch(task: str, n: int, annotation_dim: int) -> tuple[babi.BabiTask, dict[str, Tensor]]:
    t = babi.generate_task(task, n_train=n, n_test=0, seed=0)
    return t, babi.collate(babi.examples(t, t.train, annotation_dim=annotation_dim))


def _args(b: dict[str, Tensor]) -> tuple[Tensor, ...]:
    return b["x"], b["edge_index"], b["edge_type"], b["batch"]


def test_node_selection_is_a_softmax_over_each_graphs_nodes() -> None:
    task, b = _batch("babi15", 4, 1)
    with seeded(0):
        model = GatedGraphNet(state_dim=5, annotation_dim=1, num_edge_types=2)
    scores = model(*_args(b))
    assert scores.shape == (b["x"].shape[0],)
    logp = node_selection_logits(scores, b["batch"], len(b["y"]))
    assert logp.shape == (16, task.num_nodes)  # 4 graphs x 4 questions, 8 nodes each
    assert torch.allclose(logp.exp().sum(1), torch.ones(16), atol=1e-5)


def test_graph_and_node_outputs_batch_like_one_by_one() -> None:
    task, b = _batch("babi18", 5, 2)
    exs = babi.examples(task, task.train, annotation_dim=2)
    with seeded(1):
        graph_model = GatedGraphNet(
            state_dim=3, annotation_dim=2, num_edge_types=1, output="graph", num_classes=2
        )
        node_model = GatedGraphNet(state_dim=3, annotation_dim=2, num_edge_types=1)
    batched = graph_model(*_args(b), num_graphs=len(exs))
    single = torch.cat([graph_model(ex.x, ex.edge_index, ex.edge_type) for ex in exs])
    assert torch.allclose(batched, single, atol=1e-6)
    nodes = node_model(*_args(b))
    assert torch.allclose(
        nodes, torch.cat([node_model(ex.x, ex.edge_index, ex.edge_type) for ex in exs]), atol=1e-6
    )


def test_ggsnn_first_output_is_a_plain_ggnn() -> None:
    task, b = _batch("shortest-path", 3, 10)
    with seeded(2):
        seq = GatedGraphSequenceNet(state_dim=12, annotation_dim=10, num_edge_types=1)
    plain = GatedGraphNet(state_dim=12, annotation_dim=10, num_edge_types=1)
    plain.propagation.load_state_dict(seq.propagation.state_dict())
    plain.head.load_state_dict(seq.head.state_dict())
    out = seq(*_args(b), num_outputs=4)
    assert out.shape == (b["x"].shape[0], 4)
    assert torch.allclose(out[:, 0], plain(*_args(b)), atol=1e-6)
    # Later outputs depend on the predicted annotations; the first one does not.
    with torch.no_grad():
        seq.annotation_head[-1].bias.add_(1.0)
    out2 = seq(*_args(b), num_outputs=4)
    assert torch.allclose(out2[:, 0], out[:, 0])
    assert not torch.allclose(out2[:, 1:], out[:, 1:], atol=1e-4)


@pytest.mark.parametrize("share", [True, False])
def test_ggsnn_graph_outputs_and_gradients(share: bool) -> None:
    task, b = _batch("babi19", 4, 3)
    with seeded(3):
        model = GatedGraphSequenceNet(
            state_dim=6,
            annotation_dim=3,
            num_edge_types=4,
            output="graph",
            num_classes=task.num_labels + 1,
            share_propagation=share,
        )
    assert (model.annotation_propagation is None) == share
    out = model(*_args(b), num_outputs=b["y"].shape[1])
    assert out.shape == (4, 3, 5)  # 4 graphs, 2 directions + END, 4 labels + END
    F.cross_entropy(out.flatten(0, 1), b["y"].flatten()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_ggnn_learns_babi15_from_50_graphs() -> None:
    task = babi.generate_task("babi15", n_train=50, n_test=25, seed=0)
    train = babi.examples(task, task.train, annotation_dim=1)
    test = babi.collate(babi.examples(task, task.test, annotation_dim=1))
    with seeded(0):
        model = GatedGraphNet(state_dim=5, annotation_dim=1, num_edge_types=2)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        b = babi.collate([train[int(i)] for i in torch.randint(len(train), (10,), generator=g)])
        loss = F.nll_loss(node_selection_logits(model(*_args(b)), b["batch"], 10), b["y"][:, 0])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        pred = node_selection_logits(model(*_args(test)), test["batch"], 100).argmax(1)
    assert (pred == test["y"][:, 0]).float().mean() >= 0.95


def test_sequence_baseline_ignores_padding() -> None:
    with seeded(4):
        model = SequenceBaseline(vocab_size=20, num_classes=7, cell="lstm")
    tokens = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
    lengths = torch.tensor([3, 5])
    out = model(tokens, lengths, num_outputs=3)
    assert out.shape == (2, 3, 7)
    alone = model(tokens[:1, :3], lengths[:1], num_outputs=3)
    assert torch.allclose(out[:1], alone, atol=1e-6)
    rnn = SequenceBaseline(vocab_size=20, num_classes=7, cell="rnn")
    assert rnn(tokens, lengths).shape == (2, 1, 7)


def test_registry_builds_models_strictly() -> None:
    m = create_model("ggnn", state_dim=4, annotation_dim=1, num_edge_types=2)
    assert isinstance(m, GatedGraphNet)
    assert isinstance(
        create_model("ggsnn", state_dim=4, annotation_dim=3, num_edge_types=1),
        GatedGraphSequenceNet,
    )
    assert isinstance(create_model("babi-lstm", vocab_size=10, num_classes=3), SequenceBaseline)
    with pytest.raises(TypeError, match="unknown argument"):
        create_model("ggnn", state_dim=4, annotation_dim=1, num_edge_types=2, typo=1)
    with pytest.raises(ValueError, match="num_classes"):
        GatedGraphNet(state_dim=4, annotation_dim=1, num_edge_types=1, output="graph")


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_stacked_baselines_compute_what_each_computes_alone(cell: str) -> None:
    """K stacked baselines: model k's outputs and gradients are those of baseline k alone, on
    its own tokens, with sequences of different lengths and several outputs."""
    k, b, length = 3, 5, 9
    models = []
    for i in range(k):
        with seeded(i):
            models.append(SequenceBaseline(vocab_size=11, num_classes=4, cell=cell))  # type: ignore[arg-type]
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(2, length + 1, (k, b), generator=g)
    tokens = torch.randint(3, 11, (k, b, length), generator=g)
    tokens[torch.arange(length).view(1, 1, -1) >= lengths.unsqueeze(-1)] = babi.PAD
    stacked = StackedSequenceBaseline(models=models)
    out = stacked(tokens, lengths, num_outputs=3)  # (K, B, 3, C)
    assert out.shape == (k, b, 3, 4)
    out.pow(2).sum().backward()
    for i, m in enumerate(models):
        ref = m(tokens[i], lengths[i], num_outputs=3)
        torch.testing.assert_close(out[i], ref, rtol=1e-5, atol=1e-6)
        ref.pow(2).sum().backward()
        torch.testing.assert_close(stacked.w_hh.grad[i], m.rnn.weight_hh_l0.grad.t())
        torch.testing.assert_close(stacked.b_ih.grad[i], m.rnn.bias_ih_l0.grad)
        torch.testing.assert_close(stacked.embed.grad[i], m.embed.weight.grad)
    # Unstacking gives back each model's function.
    twin = SequenceBaseline(vocab_size=11, num_classes=4, cell=cell)  # type: ignore[arg-type]
    stacked.unstacked(1, twin)
    torch.testing.assert_close(twin(tokens[1], lengths[1]), models[1](tokens[1], lengths[1]))


def test_stacked_baselines_must_match() -> None:
    a = SequenceBaseline(vocab_size=11, num_classes=4, cell="rnn")
    b = SequenceBaseline(vocab_size=11, num_classes=4, cell="lstm")
    with pytest.raises(ValueError, match="share cell"):
        StackedSequenceBaseline(models=[a, b])
    with pytest.raises(ValueError, match="empty"):
        StackedSequenceBaseline(models=[])


@pytest.mark.parametrize(
    ("task", "output", "annotation_dim"), [("babi15", "node", 1), ("babi18", "graph", 2)]
)
def test_stacked_ggnns_compute_what_each_computes_alone(
    task: str, output: str, annotation_dim: int
) -> None:
    """K stacked GG-NNs on the union of their minibatches (one collated batch, model k's graphs
    the k-th block): model k's outputs and the gradients of its slice of every weight are those
    of GG-NN k alone on its own graphs; unstacking gives GG-NN k back."""
    t = babi.generate_task(task, n_train=20, n_test=0, seed=1)
    ex = babi.examples(t, t.train, annotation_dim=annotation_dim)
    k, b = 3, 4
    classes = t.num_labels if output == "graph" else None

    def make() -> GatedGraphNet:
        return GatedGraphNet(
            state_dim=5,
            annotation_dim=annotation_dim,
            num_edge_types=t.num_edge_types,
            output=output,  # type: ignore[arg-type]
            num_classes=classes,
        )

    models = []
    for i in range(k):
        with seeded(i):
            models.append(make())
    stacked = StackedGatedGraphNet(models=models)
    picks = [ex[i * b : (i + 1) * b] for i in range(k)]
    union = babi.collate([e for p in picks for e in p])
    x = union["x"].view(k, -1, annotation_dim)  # (K, N, A)
    out = stacked(x, union["edge_index"], union["edge_type"], union["batch"], num_graphs=b)
    assert out.shape == ((k, x.shape[1]) if output == "node" else (k, b, classes))
    out.pow(2).sum().backward()
    for i, m in enumerate(models):
        one = babi.collate(picks[i])
        ref = m(*_args(one), num_graphs=b)
        torch.testing.assert_close(out[i], ref, rtol=1e-5, atol=1e-6)
        ref.pow(2).sum().backward()
        for name, p in m.named_parameters():
            part, rest = name.split(".", 1)
            q = stacked.propagation if part == "propagation" else stacked.head
            sq = (
                getattr(q, rest.replace(".", "_"))
                if part == "propagation"
                else q[rest.replace(".", "_")]
            )
            torch.testing.assert_close(sq.grad[i], p.grad, rtol=1e-4, atol=1e-6, msg=name)
    twin = stacked.unstacked(1, make())
    for a, c in zip(twin.state_dict().values(), models[1].state_dict().values(), strict=True):
        assert torch.equal(a, c)


def test_stacked_ggnns_must_match() -> None:
    a = GatedGraphNet(state_dim=4, annotation_dim=1, num_edge_types=2)
    b = GatedGraphNet(state_dim=5, annotation_dim=1, num_edge_types=2)
    c = GatedGraphNet(
        state_dim=4, annotation_dim=1, num_edge_types=2, output="graph", num_classes=2
    )
    for other in (b, c):
        with pytest.raises(ValueError, match="share type, output"):
            StackedGatedGraphNet(models=[a, other])
    with pytest.raises(ValueError, match="empty"):
        StackedGatedGraphNet(models=[])


@pytest.mark.parametrize(
    ("task", "output", "annotation_dim", "share"),
    [
        ("shortest-path", "node", 10, True),
        ("babi19", "graph", 3, True),
        ("babi19", "graph", 3, False),
    ],
)
def test_stacked_ggsnns_compute_what_each_computes_alone(
    task: str, output: str, annotation_dim: int, share: bool
) -> None:
    """K stacked GGS-NNs: model k's outputs (every step, the annotations re-predicted between
    them) and gradients are those of GGS-NN k alone; unstacking gives it back."""
    t = babi.generate_task(task, n_train=12, n_test=0, seed=2)
    ex = babi.examples(t, t.train, annotation_dim=annotation_dim)
    k, b, steps = 3, 3, 4
    classes = t.num_labels + 1 if output == "graph" else None

    def make() -> GatedGraphSequenceNet:
        return GatedGraphSequenceNet(
            state_dim=12,
            annotation_dim=annotation_dim,
            num_edge_types=t.num_edge_types,
            output=output,  # type: ignore[arg-type]
            num_classes=classes,
            share_propagation=share,
        )

    models = []
    for i in range(k):
        with seeded(10 + i):
            models.append(make())
    stacked = StackedGatedGraphSequenceNet(models=models)
    picks = [ex[i * b : (i + 1) * b] for i in range(k)]
    union = babi.collate([e for p in picks for e in p])
    x = union["x"].view(k, -1, annotation_dim)
    args = (x, union["edge_index"], union["edge_type"], union["batch"])
    out = stacked(*args, num_outputs=steps, num_graphs=b)
    assert out.shape == ((k, x.shape[1], steps) if output == "node" else (k, b, steps, classes))
    out.pow(2).sum().backward()
    params = dict(stacked.named_parameters())
    for i, m in enumerate(models):
        ref = m(*_args(babi.collate(picks[i])), num_outputs=steps, num_graphs=b)
        torch.testing.assert_close(out[i], ref, rtol=1e-5, atol=1e-6)
        ref.pow(2).sum().backward()
        for name, p in m.named_parameters():
            part, rest = name.split(".", 1)
            q = params[f"{part}.{rest.replace('.', '_')}"]  # stacked under the same name
            torch.testing.assert_close(q.grad[i], p.grad, rtol=1e-4, atol=1e-6, msg=name)
    twin = stacked.unstacked(2, make())
    for a, c in zip(twin.state_dict().values(), models[2].state_dict().values(), strict=True):
        assert torch.equal(a, c)
