"""Symbolic bAbI: the official-file loader, the generators, batching and serialization."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch

from paperzoo.data import DataError, DataRequired, babi, layouts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "babi"
SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "babi_symbolic_sample"
_KIND_OF_FILE = {"4": "node", "15": "node", "16": "node", "18": "graph", "19": "graph_seq"}


def _graph_files() -> list[tuple[Path, str]]:
    files = []
    for root in (FIXTURES, SAMPLE):
        for f in sorted(root.rglob("*_graphs.txt")) if root.is_dir() else []:
            prefix = f.name.split("_")[0]
            seq = "extra_seq_tasks" in f.parts or "seq" in f.parts
            files.append((f, "node_seq" if seq else _KIND_OF_FILE[prefix]))
    return files


@pytest.mark.parametrize(("path", "kind"), _graph_files(), ids=lambda v: str(v)[-40:])
def test_loader_parses_every_sample_file(path: Path, kind: str) -> None:
    graphs = babi.read_graphs_file(path, kind=kind)
    text_blocks = [b for b in path.read_text().split("\n\n") if b.strip()]
    assert len(graphs) == len(text_blocks)
    for g, block in zip(graphs, text_blocks, strict=True):
        lines = block.strip().splitlines()
        assert len(g.edges) + len(g.questions) == len(lines)
        assert g.questions and all(min(e) >= 0 for e in g.edges)
        for q in g.questions:
            assert len(q.args) == (2 if kind.endswith("_seq") else len(lines[-1].split()) - 3)
            assert q.answer


def test_loader_values_are_zero_based() -> None:
    g = babi.read_graphs_file(FIXTURES / "processed_1" / "train" / "18_graphs.txt", kind="graph")
    # First block: "1 1 2 / 3 1 4 / ... / ? 1 2 3 1 ..."
    assert g[0].edges[0] == (0, 0, 1)
    assert g[0].questions[0] == babi.Question(0, (1, 2), (0,))
    seq = babi.read_graphs_file(
        FIXTURES / "extra_seq_tasks" / "fold_1" / "noisy_parsed" / "train" / "4_graphs.txt",
        kind="node_seq",
    )
    assert seq[0].questions[0] == babi.Question(0, (8, 5), (8, 3, 5))  # "? 1  9 6  9 4 6"


@pytest.mark.parametrize("name", list(babi.TASKS))
def test_official_layout_and_generator_share_the_representation(name: str) -> None:
    loaded = babi.load_official(name, FIXTURES, fold=1)
    generated = babi.generate_task(name, n_train=3, n_test=3, seed=0)
    assert loaded.kind == generated.kind == babi.task_spec(name).kind
    assert loaded.num_edge_types == generated.num_edge_types
    assert loaded.num_question_types <= generated.num_question_types
    assert loaded.num_nodes <= generated.num_nodes
    assert loaded.num_labels == generated.num_labels
    assert type(loaded.train[0]) is type(generated.train[0]) is babi.SymbolicGraph
    for task in (loaded, generated):
        ex = babi.examples(task, task.test, annotation_dim=10)
        batch = babi.collate(ex)
        assert batch["x"].shape[0] == batch["batch"].shape[0]
        assert int(batch["edge_index"].max()) < batch["x"].shape[0]


def test_dictionaries_are_read() -> None:
    task = babi.load_official("babi19", FIXTURES, fold=1)
    assert task.names["edge_types"] == {"s": 3, "e": 1, "w": 4, "n": 2}
    task18 = babi.load_official("babi18", FIXTURES, fold=1)
    assert task18.names["edge_types"] == {">": 1} and task18.names["labels"]["true"] == 1


def test_missing_fold_and_download_are_clear() -> None:
    with pytest.raises(DataError, match="fold 2"):
        babi.load_official("babi15", FIXTURES, fold=2)
    with pytest.raises(DataError, match="no canonical download"):
        babi.load_task("babi15", data_root=FIXTURES / "nowhere", download=True)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1 2", "edge line"),
        ("1 x 2", "non-negative integers"),
        ("0 1 2", "1-based"),
        ("? 1 2", "a question"),
        ("1 1 2 3", "edge line"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "15_graphs.txt"
    path.write_text(f"1 1 2\n3 2 4\n? 1 1 4\n\n5 1 6\n{line}\n? 1 5 6\n\n")
    with pytest.raises(DataError, match=message) as err:
        babi.read_graphs_file(path, kind="node")
    assert f"{path}:6:" in str(err.value)  # the bad line is the sixth


def test_graph_without_question_and_bad_dictionary(tmp_path: Path) -> None:
    path = tmp_path / "g.txt"
    path.write_text("1 1 2\n? 1 1 2\n\n3 1 4\n\n")
    with pytest.raises(DataError, match=f"{path}:5: the graph starting at line 4"):
        babi.read_graphs_file(path, kind="node")
    seq = tmp_path / "s.txt"
    seq.write_text("1 1 2\n? 1 1\n\n")
    with pytest.raises(DataError, match=f"{seq}:2: a sequence question"):
        babi.read_graphs_file(seq, kind="node_seq")
    d = tmp_path / "d.txt"
    d.write_text("a=1\nb2\n")
    with pytest.raises(DataError, match=f"{d}:2:"):
        babi.read_dictionary(d)


# ------------------------------------------------------------------------------ generators
def _gen(name: str, n: int = 300, seed: int = 0) -> babi.BabiTask:
    return babi.generate_task(name, n_train=0, n_test=n, seed=seed)


def test_generated_task18_answers_are_balanced_and_true() -> None:
    task = _gen("babi18", 1000)
    answers = Counter(q.answer[0] for g in task.test for q in g.questions)
    assert 0.45 <= answers[0] / sum(answers.values()) <= 0.55
    for g in task.test:
        bigger = {(s, d) for s, _, d in g.edges}  # s > d
        closure = set(bigger)
        while True:
            more = {(a, d) for a, b in closure for c, d in closure if b == c} - closure
            if not more:
                break
            closure |= more
        assert 4 <= len(g.edges) <= 9
        for q in g.questions:
            x, y = q.args  # "is x < y?"
            assert q.answer == ((0,) if (y, x) in closure else (1,))
            assert (x, y) in closure or (y, x) in closure


def test_generated_task4_follows_edge_semantics() -> None:
    for g in _gen("babi4").test:
        (q,) = g.questions
        etype = g.edges[0][1]
        assert len(g.edges) == 2 and g.edges[1][1] == etype
        forward = {"n": 0, "e": 1}
        asked = {0: "s", 1: "e", 2: "w", 3: "n"}[q.qtype]
        if asked in forward:  # "a R b": b lies R of a
            assert forward[asked] == etype
            assert (q.args[0], etype, q.answer[0]) in g.edges
        else:
            assert {"s": 0, "w": 1}[asked] == etype
            assert (q.answer[0], etype, q.args[0]) in g.edges


def test_generated_task15_and_16_are_answerable() -> None:
    for g in _gen("babi15").test:
        is_a = {s: d for s, t, d in g.edges if t == 0}
        fears = {s: d for s, t, d in g.edges if t == 1}
        assert len(g.edges) == 8 and len(g.questions) == 4
        assert all(fears[a] != a for a in fears)
        for q in g.questions:
            assert q.answer[0] == fears[is_a[q.args[0]]]
    for g in _gen("babi16").test:
        color = {s: d for s, t, d in g.edges if t == 0}
        animal = {s: d for s, t, d in g.edges if t == 1}
        (q,) = g.questions
        assert len(g.edges) == 9 and q.args[0] not in color
        peers = [a for a in color if animal[a] == animal[q.args[0]]]
        assert peers and all(color[a] == q.answer[0] for a in peers)


def test_generated_task19_paths_follow_the_edges() -> None:
    step = {0: "e", 1: "n", 2: "s", 3: "w"}  # edge types
    label = {0: "n", 1: "w", 2: "e", 3: "s"}  # answer labels
    for g in _gen("babi19").test:
        (q,) = g.questions
        assert len(g.edges) == 4 and len(q.answer) == 2
        node = q.args[0]
        for lab in q.answer:
            nxt = [d for s, t, d in g.edges if s == node and step[t] == label[lab]]
            assert len(nxt) == 1
            node = nxt[0]
        assert node == q.args[1]


def test_generation_is_deterministic_and_split_streams_differ() -> None:
    a = babi.generate_task("babi16", n_train=20, n_test=20, seed=7)
    b = babi.generate_task("babi16", n_train=20, n_test=20, seed=7)
    assert a.train == b.train and a.test == b.test
    assert a.train != a.test
    assert babi.generate_task("babi16", n_train=20, n_test=0, seed=8).train != a.train


# -------------------------------------------------------------------- batching & serialization
def test_collate_offsets_nodes_and_pads_targets() -> None:
    task = _gen("shortest-path", 4)
    exs = babi.examples(task, task.test, annotation_dim=10)
    b = babi.collate(exs)
    assert b["num_nodes"].tolist() == [10] * 4  # 9 nodes + END
    for i, ex in enumerate(exs):
        sel = b["batch"][b["edge_index"][0]] == i
        assert torch.equal(b["edge_index"][:, sel] - 10 * i, ex.edge_index)
        assert torch.equal(b["y"][i, : ex.y.numel()], ex.y)
        assert (b["y"][i, ex.y.numel() :] == babi.IGNORE).all()
        assert ex.y[-1] == task.end_class == 9
        assert ex.x[9, -1] == 1 and ex.x[:, :2].sum() == 2


def test_serialization_tokens_and_targets() -> None:
    task = _gen("babi19", 5)
    vocab = babi.vocabulary(task)
    tokens, lengths, targets = babi.sequences(task, task.test)
    assert tokens.shape[0] == lengths.shape[0] == targets.shape[0] == 5
    assert int(tokens.max()) < len(vocab)
    assert (lengths == 4 * 4 + 4).all()  # 4 edges of 4 tokens, question of 4 tokens
    assert (targets[:, -1] == task.end_class).all() and task.num_classes == 5
    g = task.test[0]
    t, y = babi.serialize(task, g, g.questions[0])
    s, e, d = g.edges[0]
    assert t[:4] == [vocab.node(s), vocab.edge(e), vocab.node(d), babi.EOL]
    assert y == [*g.questions[0].answer, task.end_class]


def test_missing_test_split_holds_out_part_of_the_training_file(tmp_path: Path) -> None:
    src = FIXTURES / "extra_seq_tasks" / "fold_1" / "noisy_parsed"
    (tmp_path / "seq" / "train").mkdir(parents=True)
    text = (src / "train" / "5_graphs.txt").read_text() + (
        src / "test" / "5_graphs.txt"
    ).read_text()
    (tmp_path / "seq" / "train" / "5_graphs.txt").write_text(text)
    task = babi.load_official("eulerian", tmp_path)  # the sample layout: seq/train only
    assert (len(task.train), len(task.test)) == (4, 2)
    assert "held out" in task.source


@pytest.mark.parametrize("name", list(babi.TASKS))
def test_format_graphs_is_the_loaders_inverse(name: str, tmp_path: Path) -> None:
    task = babi.generate_task(name, n_train=4, n_test=2, seed=3)
    path = tmp_path / "graphs.txt"
    path.write_text(babi.format_graphs(task.train, kind=task.kind))
    assert tuple(babi.read_graphs_file(path, kind=task.kind)) == task.train


def test_require_fold_refuses_the_single_fold_layout(tmp_path: Path) -> None:
    # The single-fold layout answers any fold number; a request for fold 2 must not read it.
    if not SAMPLE.is_dir():
        pytest.skip(f"{SAMPLE} (the official sample) is not here")
    assert babi.official_dirs(SAMPLE, "babi15", fold=2)[0] == SAMPLE / "train"
    with pytest.raises(DataError, match="processed_2"):
        babi.official_dirs(SAMPLE, "babi15", fold=2, require_fold=True)
    assert babi.official_dirs(FIXTURES, "eulerian", fold=1, require_fold=True)[0].parts[-3] == (
        "fold_1"
    )


def _write_official_fold(root: Path, k: int, seed: int) -> None:
    tasks = {n: babi.generate_task(n, n_train=4, n_test=2, seed=seed) for n in babi.TASKS}
    babi.write_official_fold(root, k, tasks)


def test_official_folds_are_the_complete_ones(tmp_path: Path) -> None:
    for k in (1, 2, 5):
        _write_official_fold(tmp_path, k, seed=k)
    (tmp_path / "extra_seq_tasks" / "fold_2" / "noisy_parsed" / "test" / "5_graphs.txt").unlink()
    assert babi.official_folds(tmp_path) == [1, 5]
    assert babi.official_folds(tmp_path, ["babi4", "shortest-path"]) == [1, 2, 5]
    _write_official_fold(tmp_path, 11, seed=11)  # beyond the paper's ten: not one of its folds
    assert babi.official_folds(tmp_path) == [1, 5]
    layouts.require(babi.FOLDS_LAYOUT, tmp_path)
    if SAMPLE.is_dir():  # the single-fold layout has no numbered folds
        assert babi.official_folds(SAMPLE) == []
        with pytest.raises(DataRequired, match="lacks them"):
            layouts.require(babi.FOLDS_LAYOUT, SAMPLE)
    with pytest.raises(DataRequired) as err:
        layouts.require(babi.FOLDS_LAYOUT, None)
    msg = str(err.value)
    assert "\n" not in msg and "DIR/processed_K/" in msg and "DIR/extra_seq_tasks/fold_K/" in msg


def test_task_digest_is_the_graphs_identity(tmp_path: Path) -> None:
    task = babi.generate_task("babi19", n_train=5, n_test=3, seed=1)
    _write_official_fold(tmp_path, 1, seed=1)
    loaded = babi.load_official("babi19", tmp_path, fold=1, require_fold=True)
    # The files hold the generator's graphs: read or generated, one digest.
    assert babi.task_sha256(babi.generate_task("babi19", n_train=4, n_test=2, seed=1)) == (
        babi.task_sha256(loaded)
    )
    assert babi.task_sha256(task) != babi.task_sha256(loaded)
    assert babi.combine_sha256(["a", "b"]) != babi.combine_sha256(["b", "a"])
