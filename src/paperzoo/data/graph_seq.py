"""The two graph-algorithm sequence tasks of Li et al. (ICLR 2016, Sec. 5.1): shortest paths and
Eulerian circuits, generated in the representation of ``paperzoo.data.babi``.

Both follow the authors' "noisy" files (``extra_seq_tasks/fold_K/noisy_parsed``): 9 nodes with
random ids; a 5-node component that the question is about plus a 4-node distractor component;
5 + 4 undirected "connected-to" edges, each listed in both directions (one edge type), in random
order.

* Shortest path: a random connected 5-node, 5-edge graph and a random 4-node, 4-edge distractor;
  the question names two nodes joined by a *unique* shortest path of at least two edges; the
  answer is the node sequence of that path.
* Eulerian circuit: the component is a 5-cycle, the distractor a 4-cycle; the question names a
  start node and the next node (the direction); the answer lists the cycle's nodes from the start.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from paperzoo.data.symbolic_graph import Question, SymbolicGraph

NUM_NODES = 9
MAIN_NODES, DISTRACTOR_NODES = 5, 4


def _random_edges(rng: np.random.Generator, n: int, m: int) -> list[tuple[int, int]]:
    """m distinct undirected edges on nodes 0..n-1, uniformly at random."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [pairs[k] for k in rng.choice(len(pairs), size=m, replace=False)]


def _bfs(adj: dict[int, list[int]], src: int) -> tuple[dict[int, int], dict[int, int]]:
    """(distance, number of shortest paths) from ``src``."""
    dist, count, todo = {src: 0}, {src: 1}, deque([src])
    while todo:
        u = todo.popleft()
        for v in adj[u]:
            if v not in dist:
                dist[v], count[v] = dist[u] + 1, count[u]
                todo.append(v)
            elif dist[v] == dist[u] + 1:
                count[v] += count[u]
    return dist, count


def _adjacency(n: int, edges: list[tuple[int, int]]) -> dict[int, list[int]]:
    adj: dict[int, list[int]] = {i: [] for i in range(n)}
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    return adj


def _emit(
    rng: np.random.Generator,
    main: list[tuple[int, int]],
    distractor: list[tuple[int, int]],
    ids: list[int],
) -> tuple[tuple[int, int, int], ...]:
    """Relabel (main nodes 0..4, distractor 5..8) with ``ids`` and list both directions."""
    undirected = [(u, v) for u, v in main] + [
        (u + MAIN_NODES, v + MAIN_NODES) for u, v in distractor
    ]
    out: list[tuple[int, int, int]] = []
    for k in rng.permutation(len(undirected)):
        u, v = undirected[k]
        if rng.integers(2):
            u, v = v, u
        out += [(ids[u], 0, ids[v]), (ids[v], 0, ids[u])]
    return tuple(out)


def generate_shortest_path(rng: np.random.Generator) -> SymbolicGraph:
    """A shortest-path question with a unique answer of length >= 2 edges."""
    while True:
        main = _random_edges(rng, MAIN_NODES, 5)
        adj = _adjacency(MAIN_NODES, main)
        if len(_bfs(adj, 0)[0]) < MAIN_NODES:
            continue  # the question's component must be connected
        candidates = []
        for s in range(MAIN_NODES):
            dist, count = _bfs(adj, s)
            candidates += [(s, t) for t in dist if dist[t] >= 2 and count[t] == 1]
        if candidates:
            break
    s, t = candidates[int(rng.integers(len(candidates)))]
    dist_t, _ = _bfs(adj, t)
    path = [s]
    while path[-1] != t:  # walk down the distances to t (unique by construction)
        path.append(next(v for v in adj[path[-1]] if dist_t[v] == dist_t[path[-1]] - 1))
    distractor = _random_edges(rng, DISTRACTOR_NODES, 4)
    ids = [int(v) for v in rng.permutation(NUM_NODES)]
    edges = _emit(rng, main, distractor, ids)
    question = Question(0, (ids[s], ids[t]), tuple(ids[v] for v in path))
    return SymbolicGraph(edges, (question,))


def _cycle(n: int, offset: int = 0) -> list[tuple[int, int]]:
    return [(offset + i, offset + (i + 1) % n) for i in range(n)]


def generate_eulerian(rng: np.random.Generator) -> SymbolicGraph:
    """An Eulerian-circuit question: start node and direction given, the cycle is the answer."""
    ids = [int(v) for v in rng.permutation(NUM_NODES)]  # main cycle 0-1-2-3-4-0 relabelled
    start = int(rng.integers(MAIN_NODES))
    step = 1 if rng.integers(2) else -1
    order = [(start + step * k) % MAIN_NODES for k in range(MAIN_NODES)]
    edges = _emit(rng, _cycle(MAIN_NODES), _cycle(DISTRACTOR_NODES), ids)
    question = Question(0, (ids[order[0]], ids[order[1]]), tuple(ids[v] for v in order))
    return SymbolicGraph(edges, (question,))


SEQ_GENERATORS: dict[str, Callable[[np.random.Generator], SymbolicGraph]] = {
    "shortest-path": generate_shortest_path,
    "eulerian": generate_eulerian,
}
