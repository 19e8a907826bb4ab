"""Shortest-path and Eulerian-circuit generators: structure as the official files, correct answers."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from paperzoo.data import babi
from paperzoo.data.graph_seq import SEQ_GENERATORS, generate_eulerian, generate_shortest_path


def _adjacency(g: babi.SymbolicGraph) -> dict[int, set[int]]:
    adj: dict[int, set[int]] = {i: set() for i in range(9)}
    for s, _, d in g.edges:
        adj[s].add(d)
    return adj


def _components(adj: dict[int, set[int]]) -> list[set[int]]:
    seen: set[int] = set()
    comps = []
    for start in adj:
        if start in seen:
            continue
        comp, todo = {start}, deque([start])
        while todo:
            for v in adj[todo.popleft()]:
                if v not in comp:
                    comp.add(v)
                    todo.append(v)
        seen |= comp
        comps.append(comp)
    return comps


def _shortest_paths(adj: dict[int, set[int]], s: int, t: int) -> list[list[int]]:
    paths, frontier = [], [[s]]
    while frontier and not paths:
        nxt = []
        for p in frontier:
            for v in adj[p[-1]]:
                if v not in p:
                    (paths if v == t else nxt).append([*p, v])
        frontier = nxt
    return paths


@pytest.mark.parametrize("gen", [generate_shortest_path, generate_eulerian])
def test_structure_matches_the_official_noisy_files(gen) -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        g = gen(rng)
        assert len(g.edges) == 18 and {t for _, t, _ in g.edges} == {0}
        for i in range(0, 18, 2):  # each undirected edge listed in both directions, in a row
            (s, _, d), (s2, _, d2) = g.edges[i], g.edges[i + 1]
            assert (s2, d2) == (d, s) and s != d
        adj = _adjacency(g)
        comps = sorted(_components(adj), key=len)
        assert [len(c) for c in comps] == [4, 5]
        assert sum(len(adj[v]) for v in comps[1]) == 10  # 5 undirected edges
        (q,) = g.questions
        assert set(q.args) <= comps[1]


def test_shortest_path_answer_is_the_unique_shortest_path() -> None:
    rng = np.random.default_rng(1)
    lengths = set()
    for _ in range(300):
        g = generate_shortest_path(rng)
        (q,) = g.questions
        paths = _shortest_paths(_adjacency(g), *q.args)
        assert paths == [list(q.answer)]
        assert len(q.answer) >= 3
        lengths.add(len(q.answer))
    assert {3, 4} <= lengths


def test_eulerian_answer_is_the_circuit_from_the_given_start_and_direction() -> None:
    rng = np.random.default_rng(2)
    for _ in range(300):
        g = generate_eulerian(rng)
        adj = _adjacency(g)
        (q,) = g.questions
        circuit = list(q.answer)
        assert circuit[:2] == list(q.args) and len(set(circuit)) == 5
        used = {frozenset((a, b)) for a, b in zip(circuit, circuit[1:] + circuit[:1], strict=True)}
        component_edges = {frozenset((s, d)) for s, _, d in g.edges if s in circuit}
        assert used == component_edges  # every edge of the component exactly once
        assert all(len(adj[v]) == 2 for v in adj)  # both components are cycles


def test_seq_tasks_through_the_common_interface() -> None:
    for name in SEQ_GENERATORS:
        task = babi.generate_task(name, n_train=2, n_test=2, seed=0)
        assert task.kind == "node_seq" and task.num_nodes == 9 and task.end_class == 9
        assert babi.generate_task(name, n_train=2, n_test=2, seed=0) == task
