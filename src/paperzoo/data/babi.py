"""Symbolic bAbI for GG-NNs (Li et al., ICLR 2016, Sec. 5.1): a loader of the official files,
generated tasks (``generate_task``), and the batching used by the models.

One in-memory representation serves both sources: a ``BabiTask`` holds ``SymbolicGraph``s (typed
directed edges plus the questions asked about the graph, all ids 0-based;
``paperzoo.data.symbolic_graph``). Tasks 4, 15, 16, 18 and 19 are generated in
``paperzoo.data.babi_generators``, the sequence tasks (shortest path, Eulerian circuit) in
``paperzoo.data.graph_seq``.

Official layout (what the authors' ``get_10_fold_data.sh`` writes), under ``--data-root DIR``::

    DIR/processed_K/{train,test}/N_graphs.txt               N in 4, 15, 16, 18, 19
    DIR/processed_K/{train,test}/N_{edge_types,labels,question_types,node_ids}.txt
    DIR/extra_seq_tasks/fold_K/noisy_parsed/{train,test}/N_graphs.txt   N = 4 (shortest path),
                                                                        5 (Eulerian circuit)

The ten folds of this layout are the paper's data (``paperzoo reproduce ggnn --scale full``); the
GG-NN authors' scripts write them, and the public repository github.com/chingyaoc/ggnn.pytorch
holds a copy of their output under ``babi_data/`` (point ``--data-root`` at that directory). The
layout is registered as ``babi-folds`` (``paperzoo.data.layouts``); ``official_folds`` lists the
complete folds under a root. A single fold laid out as ``DIR/{train,test}/`` and
``DIR/seq/{train,test}/`` (the layout of the sample files) is read too, but is not the paper's
data (it has no fold numbers). ``N_graphs.txt`` holds one graph per block, blocks separated by a blank
line; ``src type dst`` edge lines (1-based ids) and ``? qtype args... answer`` question lines. In
the sequence tasks and task 19, the first two numbers after the question type are the arguments
and the rest is the answer sequence.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from paperzoo.data.base import DataError
from paperzoo.data.layouts import register_layout
from paperzoo.data.symbolic_graph import Question, SymbolicGraph

log = logging.getLogger(__name__)

KINDS = ("node", "graph", "graph_seq", "node_seq")
IGNORE = -100  # padding value of sequence targets (cross-entropy ignore_index)


@dataclass(frozen=True)
class TaskSpec:
    name: str  # "babi4", ..., "shortest-path", "eulerian"
    kind: str  # "node": select a node; "graph": a label; "*_seq": a sequence of them + END
    file_id: str  # official file prefix: N in N_graphs.txt
    sequence_file: bool  # lives under extra_seq_tasks/ (the two graph-algorithm tasks)


TASKS: dict[str, TaskSpec] = {
    s.name: s
    for s in (
        TaskSpec("babi4", "node", "4", False),
        TaskSpec("babi15", "node", "15", False),
        TaskSpec("babi16", "node", "16", False),
        TaskSpec("babi18", "graph", "18", False),
        TaskSpec("babi19", "graph_seq", "19", False),
        TaskSpec("shortest-path", "node_seq", "4", True),
        TaskSpec("eulerian", "node_seq", "5", True),
    )
}


def task_spec(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown bAbI task {name!r}; known: {', '.join(TASKS)}") from None


@dataclass(frozen=True)
class BabiTask:
    """One task's train and test graphs plus the sizes of its id spaces."""

    spec: TaskSpec
    train: tuple[SymbolicGraph, ...]
    test: tuple[SymbolicGraph, ...]
    num_nodes: int  # node ids are in [0, num_nodes) in every graph
    num_edge_types: int
    num_question_types: int
    num_labels: int  # answer labels of graph-level tasks (0 when answers are nodes)
    source: str  # "generated" or the directory the files came from
    names: dict[str, dict[str, int]] = field(default_factory=dict)  # official dictionaries

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def end_class(self) -> int:
        """The END output of sequence tasks: an extra node (node_seq) or an extra label."""
        return self.num_nodes if self.kind == "node_seq" else self.num_labels

    @property
    def num_classes(self) -> int:
        """Output classes of a sequence model reading the serialized graph (incl. END)."""
        base = self.num_labels if self.kind in ("graph", "graph_seq") else self.num_nodes
        return base + (1 if self.kind.endswith("_seq") else 0)


# ------------------------------------------------------------------------------------- loading
_INT = re.compile(r"^\d+$")


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not a text file (byte {e.start} is not UTF-8)") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e})") from e


def read_graphs_file(path: str | Path, *, kind: str) -> list[SymbolicGraph]:
    """Parse an official ``N_graphs.txt`` file (1-based ids) into 0-based graphs.

    Raises:
        DataError: naming the file and line of the first malformed line.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    path = Path(path)
    lines = _read_lines(path)
    graphs: list[SymbolicGraph] = []
    edges: list[tuple[int, int, int]] = []
    questions: list[Question] = []
    start = 1

    def close(lineno: int) -> None:
        nonlocal edges, questions
        if edges or questions:
            if not questions:
                raise DataError(
                    f"{path}:{lineno}: the graph starting at line {start} has no question line"
                )
            graphs.append(SymbolicGraph(tuple(edges), tuple(questions)))
        edges, questions = [], []

    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            close(lineno)
            start = lineno + 1
            continue
        tokens = line.split()
        is_question = tokens[0] == "?"
        body = tokens[1:] if is_question else tokens
        bad = [t for t in body if not _INT.match(t)]
        if bad:
            raise DataError(f"{path}:{lineno}: expected non-negative integers, got {bad[0]!r}")
        nums = [int(t) for t in body]
        if is_question:
            questions.append(_parse_question(nums, kind, path, lineno))
        else:
            if len(nums) != 3:
                raise DataError(
                    f"{path}:{lineno}: an edge line is 'src edge_type dst', got {len(nums)} numbers"
                )
            if min(nums) < 1:
                raise DataError(f"{path}:{lineno}: ids are 1-based, got 0 in {line!r}")
            s, t, d = nums
            edges.append((s - 1, t - 1, d - 1))
    close(len(lines) + 1)
    if not graphs:
        raise DataError(f"{path}: no graphs found")
    return graphs


def _parse_question(nums: list[int], kind: str, path: Path, lineno: int) -> Question:
    if kind.endswith("_seq"):  # '? qtype a b  answer...' (two arguments, then the sequence)
        if len(nums) < 4:
            raise DataError(
                f"{path}:{lineno}: a sequence question is '? qtype arg1 arg2 answer...', "
                f"got {len(nums)} numbers"
            )
        qtype, args, answer = nums[0], nums[1:3], nums[3:]
    else:  # '? qtype args... answer'
        if len(nums) < 3:
            raise DataError(
                f"{path}:{lineno}: a question is '? qtype args... answer', got {len(nums)} numbers"
            )
        qtype, args, answer = nums[0], nums[1:-1], nums[-1:]
    if min(nums) < 1:
        raise DataError(f"{path}:{lineno}: ids are 1-based, got 0")
    return Question(qtype - 1, tuple(a - 1 for a in args), tuple(a - 1 for a in answer))


def read_dictionary(path: str | Path) -> dict[str, int]:
    """Parse a ``name=id`` dictionary file (``N_edge_types.txt`` etc.); the last '=' separates."""
    path = Path(path)
    out: dict[str, int] = {}
    for lineno, raw in enumerate(_read_lines(path), 1):
        line = raw.strip()
        if not line:
            continue
        name, sep, value = line.rpartition("=")
        if not sep or not name or not _INT.match(value):
            raise DataError(f"{path}:{lineno}: expected 'name=id', got {line!r}")
        out[name] = int(value)
    return out


def format_graphs(graphs: Sequence[SymbolicGraph], *, kind: str) -> str:
    """The official ``N_graphs.txt`` text of ``graphs`` (1-based ids): ``read_graphs_file``'s
    inverse, for writing fixtures or folds of generated data in the official layout."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    blocks = []
    for g in graphs:
        lines = [f"{s + 1} {t + 1} {d + 1}" for s, t, d in g.edges]
        for q in g.questions:
            nums = (q.qtype, *q.args, *q.answer)
            lines.append("? " + " ".join(str(v + 1) for v in nums))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def write_official_fold(root: str | Path, fold: int, tasks: Mapping[str, BabiTask]) -> None:
    """Write ``tasks`` (name -> task) as fold ``fold`` of the official layout under ``root``
    (``processed_K/{train,test}/N_graphs.txt``; the sequence tasks under
    ``extra_seq_tasks/fold_K/noisy_parsed/``): fixtures, or generated folds for ``--data-root``."""
    for name, task in tasks.items():
        spec = task_spec(name)
        base = (
            Path(root) / "extra_seq_tasks" / f"fold_{fold}" / "noisy_parsed"
            if spec.sequence_file
            else Path(root) / f"processed_{fold}"
        )
        for split, graphs in (("train", task.train), ("test", task.test)):
            (base / split).mkdir(parents=True, exist_ok=True)
            text = format_graphs(graphs, kind=spec.kind)
            (base / split / f"{spec.file_id}_graphs.txt").write_text(text)


def task_sha256(task: BabiTask) -> str:
    """SHA-256 of a task's graphs: its training and test splits in the official text format
    (``format_graphs``), so the same graphs give the same digest whether read or generated."""
    h = hashlib.sha256()
    for split in (task.train, task.test):
        h.update(format_graphs(split, kind=task.kind).encode() if split else b"")
        h.update(b"\0")
    return h.hexdigest()


def combine_sha256(digests: Sequence[str]) -> str:
    """One SHA-256 over several digests in order (e.g. a task's folds)."""
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def official_dirs(
    root: str | Path, name: str, *, fold: int = 1, require_fold: bool = False
) -> tuple[Path, Path]:
    """(train_dir, test_dir) of task ``name`` under ``root`` (official or single-fold layout).

    Args:
        root: the data root.
        name: the task (``babi15``, ``eulerian``, ...).
        fold: the official fold K: ``processed_K/`` or ``extra_seq_tasks/fold_K/noisy_parsed/``.
        require_fold: accept only fold K's own directory, not the single-fold layout
            (``root/{train,test}``, ``root/seq/``) that would read the same files for every K.

    Raises:
        DataError: no such directory, or no file of the task in it.
    """
    root, spec = Path(root), task_spec(name)
    if spec.sequence_file:
        candidates = [
            root / "extra_seq_tasks" / f"fold_{fold}" / "noisy_parsed",
            root / "seq",
        ]
    else:
        candidates = [root / f"processed_{fold}", root]
    if require_fold:
        if not candidates[0].is_dir():
            raise DataError(
                f"fold {fold} of task {name}: no directory {candidates[0]} "
                f"(each fold K is read from {root / 'processed_K'} and "
                f"{root / 'extra_seq_tasks' / 'fold_K' / 'noisy_parsed'})"
            )
        candidates = candidates[:1]
    for base in candidates:
        if (base / "train" / f"{spec.file_id}_graphs.txt").is_file():
            return base / "train", base / "test"
    raise DataError(
        f"no {spec.file_id}_graphs.txt for task {name} (fold {fold}) under {root}; expected "
        f"{candidates[0] / 'train' / f'{spec.file_id}_graphs.txt'}; the files have no canonical "
        "download: the GG-NN authors' babi/data/get_10_fold_data.sh (github.com/yujiali/ggnn) "
        "writes them"
    )


NUM_FOLDS = 10  # the paper's folds (Sec. 5.1: 10 folds of 1000 training + 1000 test stories)
FOLDS_LAYOUT = "babi-folds"


def fold_complete(root: str | Path, fold: int, tasks: Sequence[str] = tuple(TASKS)) -> bool:
    """Whether fold ``fold``'s own directories under ``root`` hold the train and test files of
    every task in ``tasks`` (the single-fold layout does not count)."""
    root = Path(root)
    for name in tasks:
        try:
            train_dir, test_dir = official_dirs(root, name, fold=fold, require_fold=True)
        except DataError:
            return False
        file = f"{task_spec(name).file_id}_graphs.txt"
        if not (test_dir / file).is_file():
            return False
    return True


def official_folds(root: str | Path, tasks: Sequence[str] = tuple(TASKS)) -> list[int]:
    """The folds K in 1..``NUM_FOLDS`` that are complete under ``root`` for ``tasks``, ascending."""
    return [k for k in range(1, NUM_FOLDS + 1) if fold_complete(root, k, tasks)]


register_layout(
    FOLDS_LAYOUT,
    what="Symbolic bAbI (the GG-NN authors' 10 official folds)",
    layout=(
        "DIR/processed_K/{train,test}/N_graphs.txt (N = 4, 15, 16, 18, 19) and "
        "DIR/extra_seq_tasks/fold_K/noisy_parsed/{train,test}/N_graphs.txt (N = 4, 5), K = 1..10 "
        "(babi_data/ of github.com/chingyaoc/ggnn.pytorch)"
    ),
    downloadable=False,  # no canonical download with a published checksum
    present=lambda root: bool(official_folds(root)),
)


def load_official(
    name: str, root: str | Path, *, fold: int = 1, require_fold: bool = False
) -> BabiTask:
    """Load task ``name`` from the official symbolic files under ``root`` (fold ``fold``).

    ``require_fold`` reads only fold ``fold``'s own directory (see ``official_dirs``).

    Raises:
        DataError: missing files or malformed lines (with file and line number).
    """
    spec = task_spec(name)
    train_dir, test_dir = official_dirs(root, name, fold=fold, require_fold=require_fold)
    test_file = test_dir / f"{spec.file_id}_graphs.txt"
    train = read_graphs_file(train_dir / f"{spec.file_id}_graphs.txt", kind=spec.kind)
    source = str(train_dir.parent)
    if test_file.is_file():
        test = read_graphs_file(test_file, kind=spec.kind)
    else:  # e.g. the sample files ship only a training split of the sequence tasks
        if len(train) < 3:
            raise DataError(f"{test_file}: missing (the test split of task {name})")
        cut = len(train) - len(train) // 3
        train, test = train[:cut], train[cut:]
        source += " (no test split: the last third of the training file is held out)"
        log.warning(
            "%s is missing: holding out %d training graphs as the test split", test_file, len(test)
        )
    names: dict[str, dict[str, int]] = {}
    for key in ("edge_types", "labels", "question_types", "node_ids"):
        f = train_dir / f"{spec.file_id}_{key}.txt"
        if f.is_file():
            names[key] = read_dictionary(f)
    return _assemble(spec, train, test, source=source, names=names)


def _assemble(
    spec: TaskSpec,
    train: Sequence[SymbolicGraph],
    test: Sequence[SymbolicGraph],
    *,
    source: str,
    names: dict[str, dict[str, int]] | None = None,
    num_nodes: int | None = None,
    num_edge_types: int | None = None,
    num_question_types: int | None = None,
    num_labels: int | None = None,
) -> BabiTask:
    """Build a ``BabiTask``, sizing the id spaces from the data (and dictionaries) when not given."""
    graphs = [*train, *test]
    node_answers = spec.kind in ("node", "node_seq")
    max_node = max_type = max_q = max_label = -1
    for g in graphs:
        for s, t, d in g.edges:
            max_node, max_type = max(max_node, s, d), max(max_type, t)
        for q in g.questions:
            max_q = max(max_q, q.qtype)
            max_node = max(max_node, *q.args) if q.args else max_node
            if node_answers:
                max_node = max(max_node, *q.answer)
            else:
                max_label = max(max_label, *q.answer)
    names = names or {}

    def size(given: int | None, seen: int, key: str) -> int:
        n = max(seen + 1, len(names.get(key, {})))
        if given is not None:
            if given < seen + 1:
                raise DataError(f"{spec.name}: ids up to {seen} exceed the declared {key} {given}")
            n = given
        return n

    return BabiTask(
        spec=spec,
        train=tuple(train),
        test=tuple(test),
        num_nodes=size(num_nodes, max_node, "node_ids"),
        num_edge_types=size(num_edge_types, max_type, "edge_types"),
        num_question_types=size(num_question_types, max_q, "question_types"),
        num_labels=0 if node_answers else size(num_labels, max_label, "labels"),
        source=source,
        names=names,
    )


# ------------------------------------------------------------------------------------ generated
# Sizes of the id spaces of generated tasks: (nodes, edge types, question types, labels).
_SIZES = {
    "babi4": (4, 2, 4, 0),
    "babi15": (8, 2, 1, 0),
    "babi16": (13, 2, 1, 0),
    "babi18": (6, 1, 1, 2),
    "babi19": (6, 4, 1, 4),
    "shortest-path": (9, 1, 1, 0),
    "eulerian": (9, 1, 1, 0),
}


def generate_task(name: str, *, n_train: int, n_test: int, seed: int) -> BabiTask:
    """Generate ``n_train`` + ``n_test`` graphs of task ``name`` (independent streams per split)."""
    spec = task_spec(name)
    if spec.sequence_file:
        from paperzoo.data.graph_seq import SEQ_GENERATORS

        gen = SEQ_GENERATORS[name]
    else:
        from paperzoo.data.babi_generators import GENERATORS

        gen = GENERATORS[name]
    train_ss, test_ss = np.random.SeedSequence([seed, *name.encode()]).spawn(2)
    train_rng, test_rng = np.random.default_rng(train_ss), np.random.default_rng(test_ss)
    train = [gen(train_rng) for _ in range(n_train)]
    test = [gen(test_rng) for _ in range(n_test)]
    n, k, q, labels = _SIZES[name]
    return _assemble(
        spec,
        train,
        test,
        source="generated",
        num_nodes=n,
        num_edge_types=k,
        num_question_types=q,
        num_labels=labels if labels else None,
    )


def load_task(
    name: str,
    *,
    data_root: str | Path | None = None,
    fold: int = 1,
    n_train: int = 1000,
    n_test: int = 1000,
    seed: int = 0,
    download: bool = False,
) -> BabiTask:
    """Official files when ``data_root`` is given, generated data otherwise."""
    if data_root is None:
        return generate_task(name, n_train=n_train, n_test=n_test, seed=seed)
    try:
        return load_official(name, data_root, fold=fold)
    except DataError:
        if download:
            raise DataError(
                "the symbolic bAbI files have no canonical download: the GG-NN authors generate "
                "them with babi/data/get_10_fold_data.sh (github.com/yujiali/ggnn); run it and "
                "point --data-root at its output, or drop --data-root to use paperzoo's generator"
            ) from None
        raise


# ----------------------------------------------------------------------------------- batching
@dataclass(frozen=True)
class GraphExample:
    """One question about one graph, as tensors.

    Shapes:
        x: (n, annotation_dim); edge_index: (2, E); edge_type: (E,); y: (L,) targets (node ids
        local to the graph, or labels; sequence tasks end with END)
    """

    x: Tensor
    edge_index: Tensor
    edge_type: Tensor
    y: Tensor
    qtype: int


def encode(
    task: BabiTask, graph: SymbolicGraph, question: Question, annotation_dim: int
) -> GraphExample:
    """Annotate the question's arguments (bit i marks argument i) and build the targets.

    Sequence tasks with node outputs get an extra isolated END node whose last annotation bit is
    set, and END appended to the targets (as the authors' ``seq_data.add_end_node``).
    """
    n = task.num_nodes + (1 if task.kind == "node_seq" else 0)
    needed = len(question.args) + (1 if task.kind == "node_seq" else 0)  # + the END bit
    if needed > annotation_dim:
        raise ValueError(f"task {task.spec.name} needs annotation_dim >= {needed}")
    x = torch.zeros(n, annotation_dim)
    for i, a in enumerate(question.args):
        x[a, i] = 1.0
    if task.kind == "node_seq":
        x[task.num_nodes, annotation_dim - 1] = 1.0
    e = torch.tensor(graph.edges, dtype=torch.long).view(-1, 3)
    y = list(question.answer)
    if task.kind.endswith("_seq"):
        y.append(task.end_class)
    return GraphExample(
        x=x,
        edge_index=e[:, [0, 2]].t().contiguous(),
        edge_type=e[:, 1].contiguous(),
        y=torch.tensor(y, dtype=torch.long),
        qtype=question.qtype,
    )


def examples(
    task: BabiTask,
    graphs: Sequence[SymbolicGraph],
    *,
    annotation_dim: int,
    question_type: int | None = None,
) -> list[GraphExample]:
    """Every question of ``graphs`` (optionally only of one question type) as an example."""
    return [
        encode(task, g, q, annotation_dim)
        for g in graphs
        for q in g.questions
        if question_type is None or q.qtype == question_type
    ]


def collate(batch: Sequence[GraphExample]) -> dict[str, Tensor]:
    """Batch examples into one disjoint graph (node ids offset, PyG style).

    Returns:
        dict with x (N, A), edge_index (2, E), edge_type (E,), batch (N,), y (B, L) padded with
        ``IGNORE``, num_nodes (B,).
    """
    if not batch:
        raise ValueError("cannot collate an empty batch")
    sizes = torch.tensor([ex.x.shape[0] for ex in batch])
    offsets = torch.cumsum(sizes, 0) - sizes
    n_edges = torch.tensor([ex.edge_index.shape[1] for ex in batch])
    edge_index = torch.cat([ex.edge_index for ex in batch], dim=1)
    edge_index = edge_index + torch.repeat_interleave(offsets, n_edges)  # (2, E)
    y_len = max(ex.y.numel() for ex in batch)
    y = torch.full((len(batch), y_len), IGNORE, dtype=torch.long)
    for i, ex in enumerate(batch):
        y[i, : ex.y.numel()] = ex.y
    return {
        "x": torch.cat([ex.x for ex in batch]),
        "edge_index": edge_index,
        "edge_type": torch.cat([ex.edge_type for ex in batch]),
        "batch": torch.repeat_interleave(torch.arange(len(batch)), sizes),
        "y": y,
        "num_nodes": sizes,
    }


# -------------------------------------------------------------------- serialized (RNN baselines)
PAD, EOL, GO = 0, 1, 2  # special tokens


@dataclass(frozen=True)
class Vocabulary:
    """Token ids of the serialized graphs: specials, then nodes, edge types, question types."""

    num_nodes: int
    num_edge_types: int
    num_question_types: int

    def node(self, i: int) -> int:
        return 3 + i

    def edge(self, t: int) -> int:
        return 3 + self.num_nodes + t

    def question(self, q: int) -> int:
        return 3 + self.num_nodes + self.num_edge_types + q

    def __len__(self) -> int:
        return 3 + self.num_nodes + self.num_edge_types + self.num_question_types


def vocabulary(task: BabiTask) -> Vocabulary:
    return Vocabulary(task.num_nodes, task.num_edge_types, task.num_question_types)


def serialize(
    task: BabiTask, graph: SymbolicGraph, question: Question
) -> tuple[list[int], list[int]]:
    """(tokens, targets): "src type dst EOL" per edge, then "qtype args... EOL".

    Targets are the answer (node ids or labels, as output classes) plus END for sequence tasks.
    """
    v = vocabulary(task)
    tokens: list[int] = []
    for s, t, d in graph.edges:
        tokens += [v.node(s), v.edge(t), v.node(d), EOL]
    tokens += [v.question(question.qtype), *(v.node(a) for a in question.args), EOL]
    targets = list(question.answer)
    if task.kind.endswith("_seq"):
        targets.append(task.end_class)
    return tokens, targets


def sequences(task: BabiTask, graphs: Sequence[SymbolicGraph]) -> tuple[Tensor, Tensor, Tensor]:
    """All questions of ``graphs`` serialized and padded.

    Returns:
        tokens (M, L) padded with PAD, lengths (M,), targets (M, T) padded with ``IGNORE``.
    """
    pairs = [serialize(task, g, q) for g in graphs for q in g.questions]
    n_tok = max(len(t) for t, _ in pairs)
    n_tgt = max(len(y) for _, y in pairs)
    tokens = torch.full((len(pairs), n_tok), PAD, dtype=torch.long)
    targets = torch.full((len(pairs), n_tgt), IGNORE, dtype=torch.long)
    for i, (t, y) in enumerate(pairs):
        tokens[i, : len(t)] = torch.tensor(t)
        targets[i, : len(y)] = torch.tensor(y)
    lengths = torch.tensor([len(t) for t, _ in pairs])
    return tokens, lengths, targets
