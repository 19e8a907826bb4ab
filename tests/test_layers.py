"""The house drawn from the code: which module imports which (every import, at the top of a file
or inside a function), and the layers it must keep.

verdict/ is the bottom of the harness: it decides from what it is given and imports no
experiment, runner, report or summary; report.py renders and imports only verdict/ and
utilities; the run layer (experiments/: runner, judging, merging) sits above both. No import
loop anywhere in paperzoo: what two modules share lives in a module below both.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "paperzoo"


def _module(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PKG) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, read with ``ast`` from every ``.py`` file
    under it: ``import`` and ``from ... import`` statements anywhere in a file (inside functions
    too), relative imports resolved, and ``from pkg import name`` naming the submodule
    ``pkg.name`` when that is a module (and ``pkg`` itself for names that are not). Only import
    statements count: a package named by a string and imported at run time is not an edge."""
    src = package.parent
    files = {_module(p, src): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        deps: set[str] = set()
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in files}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                if base not in files:
                    continue
                subs = {f"{base}.{a.name}" for a in node.names} & files.keys()
                deps |= subs or {base}
                if len(subs) < len(node.names):
                    deps.add(base)
        graph[mod] = deps - {mod}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import loops of ``graph``: its strongly connected components of more than one module
    (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root] & graph.keys())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, succ = work[-1]
            nxt = next(succ, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt] & graph.keys()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


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
    graph = import_graph()
    allowed = ("paperzoo.verdict", "paperzoo.utils")
    for mod, deps in graph.items():
        if mod.startswith("paperzoo.verdict"):
            above = sorted(d for d in deps if not d.startswith(allowed))
            assert above == [], f"{mod} imports {above}"


def test_report_imports_only_the_verdict_layer_and_utilities() -> None:
    deps = import_graph()["paperzoo.report"]
    assert sorted(d for d in deps if not d.startswith(("paperzoo.verdict", "paperzoo.utils"))) == []


def test_no_import_loop_among_runner_report_and_verdict_nor_inside_verdict() -> None:
    graph = import_graph()
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


def test_no_import_loop_in_paperzoo() -> None:
    loops = import_cycles(import_graph())
    assert loops == [], "import loops: " + "; ".join(" <-> ".join(c) for c in loops)


def test_tarjan_finds_every_loop_and_nothing_else() -> None:
    graph = {
        "a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"},
        "f": {"a", "f"}, "g": set(), "h": {"g", "outside"},
    }  # fmt: skip
    assert import_cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.a import A\n",
        "a.py": "A = 1\ndef f():\n    from . import b\n",
        "b.py": "from .sub import c\nfrom pkg import a, VALUE\n",
        "sub/__init__.py": "",
        "sub/c.py": "import pkg.sub\nfrom ..a import A\nimport os\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    assert import_graph(pkg) == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.b"},  # inside a function
        "pkg.b": {"pkg.sub.c", "pkg.a", "pkg"},  # VALUE is no module: the package itself
        "pkg.sub": set(),
        "pkg.sub.c": {"pkg.sub", "pkg.a"},
    }
    assert import_cycles(import_graph(pkg)) == [["pkg", "pkg.a", "pkg.b", "pkg.sub.c"]]
