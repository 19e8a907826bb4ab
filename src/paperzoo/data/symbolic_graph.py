"""The in-memory graphs of symbolic bAbI (``paperzoo.data.babi``): typed directed edges plus the
questions asked about the graph, all ids 0-based. The official-file reader, the task generators
(``babi_generators``, ``graph_seq``) and the batching all build and read these."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Question", "SymbolicGraph"]


@dataclass(frozen=True)
class Question:
    qtype: int  # 0-based question type
    args: tuple[int, ...]  # 0-based node ids named by the question (they get annotation bits)
    answer: tuple[int, ...]  # node id(s) or label(s), 0-based; sequences without END


@dataclass(frozen=True)
class SymbolicGraph:
    edges: tuple[tuple[int, int, int], ...]  # (src, edge_type, dst), 0-based
    questions: tuple[Question, ...]
