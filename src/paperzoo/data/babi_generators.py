"""Generators of symbolic bAbI tasks 4, 15, 16, 18 and 19 (Li et al., ICLR 2016, Sec. 5.1), in
the representation of ``paperzoo.data.babi`` (``babi.generate_task`` draws a task's graphs).

They follow the bAbI task code (github.com/facebookarchive/bAbI-tasks, lua/babi/tasks: IsDir,
Deduction, Induction, Size, PathFinding) with the entity ids of the official symbolic files.
Task 18 is the "fixed" version: every question is asked as "x < y" and, by a fair coin, about the
true or the reversed pair, so true and false answers are balanced.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from paperzoo.data.symbolic_graph import Question, SymbolicGraph

# Entity ids (0-based) as in the official symbolic files of each task.
_B4_N, _B4_E, _B4_NODES = 0, 1, 4  # edge types n=1, e=2
_B4_Q = {"s": 0, "e": 1, "w": 2, "n": 3}  # question types s=1, e=2, w=3, n=4
_B15_NAMES, _B15_ANIMALS = (0, 2, 6, 7), (1, 3, 4, 5)  # is=1, has_fear=2
_B16_NAMES, _B16_COLORS, _B16_ANIMALS = (0, 2, 4, 6, 8), (1, 3, 9, 10), (5, 7, 11, 12)
_B19_EDGE = {"e": 0, "n": 1, "s": 2, "w": 3}  # edge types e=1, n=2, s=3, w=4
_B19_LABEL = {"n": 0, "w": 1, "e": 2, "s": 3}  # answer labels n=1, w=2, e=3, s=4
_B19_STEP = {"n": (0, 1), "s": (0, -1), "e": (1, 0), "w": (-1, 0)}


def _shuffled(rng: np.random.Generator, items: Sequence) -> list:
    return [items[i] for i in rng.permutation(len(items))]


def generate_babi4(rng: np.random.Generator) -> SymbolicGraph:
    """Task 4 (two-argument relations): a chain a-R->b-R->c, asked "what is R/opp(R) of b?"."""
    a, b, c = (int(v) for v in rng.choice(_B4_NODES, size=3, replace=False))
    axis = ("n", "e")[rng.integers(2)]
    etype = _B4_N if axis == "n" else _B4_E
    edges = _shuffled(rng, [(a, etype, b), (b, etype, c)])  # "a R b": b lies R of a
    opposite = {"n": "s", "e": "w"}[axis]
    ask = (axis, opposite)[rng.integers(2)]
    answer = c if ask == axis else a
    return SymbolicGraph(tuple(edges), (Question(_B4_Q[ask], (b,), (answer,)),))


def generate_babi15(rng: np.random.Generator) -> SymbolicGraph:
    """Task 15 (basic deduction): actor is animal, animal fears animal; what does actor fear?"""
    n = len(_B15_ANIMALS)
    assign = rng.permutation(n)  # actor i is animal assign[i]
    afraid = [int(rng.choice([j for j in range(n) if j != i])) for i in range(n)]
    edges = [(_B15_NAMES[i], 0, _B15_ANIMALS[assign[i]]) for i in range(n)]
    edges += [(_B15_ANIMALS[i], 1, _B15_ANIMALS[afraid[i]]) for i in range(n)]
    questions = [
        Question(0, (_B15_NAMES[i],), (_B15_ANIMALS[afraid[assign[i]]],))
        for i in rng.permutation(n)
    ]
    return SymbolicGraph(tuple(_shuffled(rng, edges)), tuple(questions))


def generate_babi16(rng: np.random.Generator) -> SymbolicGraph:
    """Task 16 (basic induction): the color of an actor follows from another of its species."""
    n_actors, n_animals = len(_B16_NAMES), len(_B16_ANIMALS)
    color_of = rng.permutation(n_animals)  # animal -> color, a bijection
    animal_of = [int(rng.integers(n_animals)) for _ in range(n_actors)]
    q = int(rng.integers(n_actors))
    while animal_of.count(animal_of[q]) < 2:  # make sure induction can be performed
        animal_of[q] = int(rng.integers(n_animals))
    has_color = [
        (_B16_NAMES[i], 0, _B16_COLORS[color_of[animal_of[i]]]) for i in range(n_actors) if i != q
    ]
    is_a = [(_B16_NAMES[i], 1, _B16_ANIMALS[animal_of[i]]) for i in range(n_actors)]
    answer = _B16_COLORS[color_of[animal_of[q]]]
    question = Question(0, (_B16_NAMES[q],), (answer,))
    return SymbolicGraph(tuple(_shuffled(rng, has_color + is_a)), (question,))


def _dag_dist(edges: set[tuple[int, int]], src: int) -> dict[int, int]:
    adj: dict[int, list[int]] = {}
    for u, v in edges:
        adj.setdefault(u, []).append(v)
    dist, todo = {src: 0}, deque([src])
    while todo:
        u = todo.popleft()
        for v in adj.get(u, []):
            if v not in dist:
                dist[v] = dist[u] + 1
                todo.append(v)
    return dist


def _pairs_at_distance(edges: set[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    nodes = sorted({u for e in edges for u in e})
    return [(x, y) for x in nodes for y, d in sorted(_dag_dist(edges, x).items()) if d == length]


def generate_babi18(rng: np.random.Generator, *, num_objects: int = 6) -> SymbolicGraph:
    """Task 18 (size reasoning, fixed version): "x > y" facts, questions "is x < y?" (balanced).

    As bAbI's Size task: a chain of two facts guarantees a question, then 2..7 further true
    facts that keep at least one pair at shortest distance 2; every pair at distance exactly 2 is
    asked, as (small < big) -> true or (big < small) -> false with probability 1/2 each.
    """
    order = [int(v) for v in rng.permutation(num_objects)]  # order[0] is the biggest
    first = sorted(int(v) for v in rng.choice(num_objects, size=3, replace=False))
    facts = [(order[first[0]], order[first[1]]), (order[first[1]], order[first[2]])]
    known = set(facts)
    for _ in range(int(rng.integers(2, 8))):  # math.random(steps, 7) with steps = 2
        tries = 0
        while True:
            tries += 1
            i, j = sorted(int(v) for v in rng.choice(num_objects, size=2, replace=False))
            fact = (order[i], order[j])
            if fact in known:
                continue
            known.add(fact)
            if _pairs_at_distance(known, 2):
                facts.append(fact)
                break
            known.discard(fact)
            if tries > 100:
                break
    edges = [(big, 0, small) for big, small in _shuffled(rng, facts)]  # edge type ">"
    questions = []
    for big, small in _shuffled(rng, _pairs_at_distance(known, 2)):
        if rng.integers(2) == 0:
            questions.append(Question(0, (small, big), (0,)))  # "small < big": true (label 0)
        else:
            questions.append(Question(0, (big, small), (1,)))  # "big < small": false (label 1)
    return SymbolicGraph(tuple(edges), tuple(questions))


def _grid_paths(cells: dict[tuple[int, int], int], src: tuple, dst: tuple, limit: int) -> int:
    """Number of simple paths src -> dst (up to ``limit``) between 4-adjacent occupied cells."""
    count = 0

    def walk(c: tuple, seen: set) -> None:
        nonlocal count
        if count >= limit:
            return
        if c == dst:
            count += 1
            return
        for dx, dy in _B19_STEP.values():
            n = (c[0] + dx, c[1] + dy)
            if n in cells and n not in seen:
                walk(n, seen | {n})

    walk(src, {src})
    return count


def generate_babi19(
    rng: np.random.Generator, *, num_locations: int = 6, path_length: int = 2, decoys: int = 2
) -> SymbolicGraph:
    """Task 19 (path finding) as bAbI's PathFinding: a path on a grid plus decoy locations.

    Locations sit on grid cells; a move is accepted only if the source->target path stays unique
    among 4-adjacent occupied cells. The answer is the sequence of directions (labels).
    """
    locs = [int(v) for v in rng.permutation(num_locations)]
    dirs = list(_B19_STEP)
    cells: dict[tuple[int, int], int] = {(0, 0): locs[0]}
    where = {locs[0]: (0, 0)}
    edges, path = [], []
    cur, i = (0, 0), 1
    while len(path) < path_length:
        d = dirs[rng.integers(4)]
        nxt = (cur[0] + _B19_STEP[d][0], cur[1] + _B19_STEP[d][1])
        if nxt in cells:
            continue
        cells[nxt] = locs[i]
        if _grid_paths(cells, (0, 0), nxt, 2) > 1:
            del cells[nxt]
            continue
        where[locs[i]] = nxt
        edges.append((cells[cur], _B19_EDGE[d], locs[i]))
        path.append(d)
        cur, i = nxt, i + 1
    target = cur
    placed = 0
    while placed < decoys:
        rel = locs[int(rng.integers(i))]  # any location placed so far
        d = dirs[rng.integers(4)]
        cell = (where[rel][0] + _B19_STEP[d][0], where[rel][1] + _B19_STEP[d][1])
        if cell in cells:
            continue
        cells[cell] = locs[i]
        if _grid_paths(cells, (0, 0), target, 2) > 1:
            del cells[cell]
            continue
        where[locs[i]] = cell
        edges.append((rel, _B19_EDGE[d], locs[i]))
        i, placed = i + 1, placed + 1
    question = Question(0, (locs[0], cells[target]), tuple(_B19_LABEL[d] for d in path))
    return SymbolicGraph(tuple(_shuffled(rng, edges)), (question,))


GENERATORS: dict[str, Callable[[np.random.Generator], SymbolicGraph]] = {
    "babi4": generate_babi4,
    "babi15": generate_babi15,
    "babi16": generate_babi16,
    "babi18": generate_babi18,
    "babi19": generate_babi19,
}
