"""The house drawn from the code: which module imports which (every import, at the top of a file
or inside a function), and the layers it must keep.

verdict/ is the bottom of the harness: it decides from what it is given and imports no
experiment, runner, report or summary; report.py renders and imports only verdict/ and
utilities; the run layer (experiments/: runner, judging, merging) sits above both. No import
loop among runner, report and verdict, and none inside verdict/.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "paperzoo"


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """Module -> the paperzoo modules it imports (``from pkg import name`` names the submodule
    when ``pkg.name`` is one)."""
    files = {_module(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        deps: set[str] = set()
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in files}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                if base not in files:
                    continue
                subs = {f"{base}.{a.name}" for a in node.names} & files.keys()
                deps |= subs or {base}
                if len(subs) < len(node.names):
                    deps.add(base)
        graph[mod] = deps - {mod}
    return graph


def _cycle(graph: dict[str, set[str]], nodes: set[str]) -> list[str] | None:
    """An import loop among ``nodes`` (following only edges between them), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, set()) & nodes):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state and (found := visit(m)) is not None:
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if n not in state and (found := visit(n)) is not None:
            return found
    return None


def test_verdict_imports_nothing_above_it() -> None:
    graph = _graph()
    allowed = ("paperzoo.verdict", "paperzoo.utils")
    for mod, deps in graph.items():
        if mod.startswith("paperzoo.verdict"):
            above = sorted(d for d in deps if not d.startswith(allowed))
            assert above == [], f"{mod} imports {above}"


def test_report_imports_only_the_verdict_layer_and_utilities() -> None:
    deps = _graph()["paperzoo.report"]
    assert sorted(d for d in deps if not d.startswith(("paperzoo.verdict", "paperzoo.utils"))) == []


def test_no_import_loop_among_runner_report_and_verdict_nor_inside_verdict() -> None:
    graph = _graph()
    verdict = {m for m in graph if m.startswith("paperzoo.verdict")}
    harness = verdict | {
        "paperzoo.report",
        "paperzoo.experiments.runner",
        "paperzoo.experiments.judging",
        "paperzoo.experiments.merging",
        "paperzoo.experiments.request",
    }
    assert _cycle(graph, verdict) is None, _cycle(graph, verdict)
    assert _cycle(graph, harness) is None, _cycle(graph, harness)


def test_the_graph_sees_a_loop_where_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph, {"a", "b", "c", "d"}) == ["a", "b", "c", "a"]
    assert _cycle(graph, {"a", "b", "d"}) is None
