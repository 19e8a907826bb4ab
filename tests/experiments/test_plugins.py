"""Papers from installed packages (the ``paperzoo.papers`` entry point group), as a researcher
installs them: in a fresh virtual environment with paperzoo installed from its wheel, a package
made by ``paperzoo new`` and a one-file package written from docs/your-paper.md alone, each
listed, run over two seeds, summarised, with its own package's provenance; and a broken package
that is one warning line while the ten papers built in still work."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

from paperzoo.experiments.plugins import GROUP
from paperzoo.provenance import source_sha256

# Every command runs in a subprocess at one thread (OMP_NUM_THREADS=1).
pytestmark = pytest.mark.fixed_threads

ROOT = Path(__file__).resolve().parents[2]
# paperzoo's own papers: the entry points its installed distribution declares (pyproject.toml)
BUILT_IN = sorted(
    ep.name for ep in metadata.distribution("paperzoo").entry_points if ep.group == GROUP
)
ENV = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _run(cmd: list[str | Path], cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"} | kw.pop("env", {})  # type: ignore[operator]
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with paperzoo installed from the wheel of this checkout; the
    libraries it needs (torch, numpy, ...) are this environment's, on its path."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs paperzoo's source checkout to build its wheel")
    root = tmp_path_factory.mktemp("venv")
    wheels = root / "wheels"
    _ok(_run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, ROOT], root))
    env = root / "env"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", env], root))
    py = env / "bin" / "python"
    site = Path(_ok(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root)).strip())  # fmt: skip
    outer = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "_outer_libraries.pth").write_text("\n".join(outer) + "\n")
    _ok(_pip(py, "install", "--no-deps", *wheels.glob("paperzoo-*.whl")))
    where = _ok(_run([py, "-c", "import paperzoo; print(paperzoo.__file__)"], root))
    assert where.startswith(str(env)), where  # the wheel's paperzoo, not this checkout's
    return py


def _pip(py: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "pip", "--python", py, "-q", *args], py.parent)


def _git_package(folder: Path) -> str:
    """Make ``folder`` a git checkout with one commit; its short HEAD."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    _ok(_run([*git, "init", "-q"], folder))
    (folder / ".gitignore").write_text("runs/\n*.egg-info/\n__pycache__/\nbuild/\n")
    _ok(_run([*git, "add", "-A"], folder))
    _ok(_run([*git, "commit", "-q", "-m", "paper"], folder))
    return _ok(_run(["git", "rev-parse", "--short=12", "HEAD"], folder)).strip()


def _paper_runs_like_the_ten(py: Path, folder: Path, name: str, code: Path) -> None:
    """Install ``folder`` (editable), then list, reproduce two seeds, summarise; the runs name
    the commit of ``folder`` and the digest of ``code`` (the paper's package or module)."""
    head = _git_package(folder)
    _ok(_pip(py, "install", "--no-deps", "-e", folder))
    listed = _run([py, "-m", "paperzoo", "list"], folder)
    assert f"{name}:" in _ok(listed) and not listed.stderr.strip(), listed.stderr
    assert all(f"{b}:" in listed.stdout for b in BUILT_IN)
    out = folder / "runs" / "smoke"
    cmd = ["reproduce", name, "--scale", "smoke", "--seeds", "0-1", "--jobs", "2", "--quiet"]
    _ok(_run([py, "-m", "paperzoo", *cmd, "--threads", "1", "--out", out], folder))
    result = json.loads((out / "results.json").read_text())
    assert result["paper"] == name and result["seeds"] == [0, 1]
    assert all(None not in c["per_seed"] for c in result["claims"])
    # the provenance of the paper's own package, not paperzoo's
    assert result["commit"] == head
    assert result["source_sha256"] == source_sha256(code)
    assert result["not_counted"] == "smoke runs only prove the pipeline"
    summary = _ok(_run([py, "-m", "paperzoo", "summary", folder / "runs"], folder))
    assert f"| `{name}` |" in summary and "Findings holding: " in summary


def test_a_package_made_by_paperzoo_new_lists_runs_summarises_and_passes_its_tests(
    venv: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "my-paper"
    _ok(_run([venv, "-m", "paperzoo", "new", "my-paper", "--dir", folder], tmp_path))
    _paper_runs_like_the_ten(venv, folder, "my-paper", folder / "src" / "my_paper")
    _ok(_run([venv, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], folder))
    # one command counts: the seed rule's quick run (seeds 0-3, more only where unclear)
    out = folder / "runs" / "quick"
    cmd = ["reproduce", "my-paper", "--scale", "quick", "--quiet", "--out", out]
    _ok(_run([venv, "-m", "paperzoo", *cmd], folder))
    report = (out / "report.md").read_text()
    assert "**Findings reproduced: 1 of 1 (quick, seeds 0-3, commit " in report
    # a target loosened in the code after the run: the run is judged as it stored, and the
    # finding does not count until rerun
    paper = folder / "src" / "my_paper" / "paper.py"
    paper.write_text(paper.read_text().replace('"quick": ">= 0.9"', '"quick": ">= 0.5"'))
    summary = _ok(_run([venv, "-m", "paperzoo", "summary", out], folder))
    assert "Findings reproduced: 0 of 1 (quick, seeds 0-3" in summary
    assert "target changed after the run: stored '>= 0.9', declared '>= 0.5'; rerun to count" in (
        summary
    )


def _guide_files() -> dict[str, str]:
    """The files of the worked example in docs/your-paper.md: ``<!-- file: NAME -->`` then a
    fenced block."""
    text = (ROOT / "docs" / "your-paper.md").read_text(encoding="utf-8")
    found = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", text, flags=re.S)
    return dict(found)


def test_a_one_file_package_written_from_the_guide_runs_like_the_ten(
    venv: Path, tmp_path: Path
) -> None:
    files = _guide_files()
    assert sorted(files) == ["pyproject.toml", "ridge_paper.py"]
    folder = tmp_path / "ridge"
    folder.mkdir()
    for rel, text in files.items():
        (folder / rel).write_text(text, encoding="utf-8")
    _paper_runs_like_the_ten(venv, folder, "ridge", folder / "ridge_paper.py")


_BROKEN = {
    # package name -> (entry point, module file, its code)
    "broken-import": ("broken = broken_import:Paper", "broken_import", "import not_a_module\n"),
    "taken-name": (
        "gat = taken_name:Paper",
        "taken_name",
        "from paperzoo.paper import ClaimSpec, Experiment\n\n"
        "class Paper(Experiment):\n    name = 'gat'\n    title = 'a copy'\n"
        "    claims = (ClaimSpec('a', 'a', 1.0, '>= 0'),)\n"
        "    configs = {'smoke': 1, 'quick': 1, 'full': 1}\n"
        "    def run(self, cfg, ctx): ...\n",
    ),
    "no-target": (
        "no-target = no_target:Paper",
        "no_target",
        "from paperzoo.paper import ClaimSpec, Experiment\n\n"
        "class Paper(Experiment):\n    name = 'no-target'\n    title = 'claims without targets'\n"
        "    claims = (ClaimSpec('a', 'a', 1.0, ''),)\n"
        "    configs = {'smoke': 1, 'quick': 1, 'full': 1}\n"
        "    def run(self, cfg, ctx): ...\n",
    ),
    "none-target": (
        "none-target = none_target:Paper",
        "none_target",
        "from paperzoo.paper import ClaimSpec, Experiment\n\n"
        "class Paper(Experiment):\n    name = 'none-target'\n    title = 't'\n"
        "    claims = (ClaimSpec('cal.ece_ratio', 'a', 1.0, target=None),)\n"
        "    configs = {'smoke': 1, 'quick': 1, 'full': 1}\n"
        "    def run(self, cfg, ctx): ...\n",
    ),
    "typo-target": (
        "typo-target = typo_target:Paper",
        "typo_target",
        "from paperzoo.paper import ClaimSpec, Experiment\n\n"
        "class Paper(Experiment):\n    name = 'typo-target'\n    title = 't'\n"
        "    claims = (ClaimSpec('cal.ece_ratio', 'a', 1.0, '>= 1.2.3'),)\n"
        "    configs = {'smoke': 1, 'quick': 1, 'full': 1}\n"
        "    def run(self, cfg, ctx): ...\n",
    ),
}


def test_a_broken_plugin_is_one_line_naming_its_package_and_the_ten_still_work(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    for dist, (entry, module, code) in _BROKEN.items():  # installed as pip would lay them out
        (site / f"{module}.py").write_text(code)
        info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[paperzoo.papers]\n{entry}\n")
    src = str(ROOT / "src") if (ROOT / "src").is_dir() else ""
    path = os.pathsep.join(p for p in (str(site), src) if p)
    proc = _run([sys.executable, "-m", "paperzoo", "list"], tmp_path, env={"PYTHONPATH": path})
    listed = _ok(proc)
    assert all(f"{b}:" in listed for b in BUILT_IN) and "no-target:" not in listed
    assert "a copy" not in listed  # the built-in gat, not the package's
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == len(_BROKEN), proc.stderr
    by_entry_point = sorted(_BROKEN, key=lambda dist: _BROKEN[dist][0])  # the order loaded
    for dist, line in zip(by_entry_point, lines, strict=True):
        assert f"of package {dist} 0.1 is not loaded: " in line, line
    assert "ModuleNotFoundError: No module named 'not_a_module'" in lines[0]
    assert "'gat' is already declared" in lines[1]
    assert "target" in lines[2]
    # a declaration mistake names the paper (its entry point) and the claim
    assert "'none-target = none_target:Paper'" in lines[3]
    assert "TypeError: claim cal.ece_ratio: target must be a string" in lines[3]
    assert "'typo-target = typo_target:Paper'" in lines[4]
    assert "ValueError: claim cal.ece_ratio: cannot parse claim target '>= 1.2.3'" in lines[4]


def test_the_scaffold_imports_only_paperzoo_paper_and_is_listed_with_its_data_and_price(
    tmp_path: Path,
) -> None:
    """The package ``paperzoo new`` writes, found on the path as pip lays it out: its code and
    tests import paperzoo only through ``paperzoo.paper`` (which a process may import first),
    ``paperzoo list`` shows its data set, why it has no full run and a counted price, and its
    tests pass."""
    from paperzoo.scaffold import package_files

    files = package_files("calib-paper")
    for rel, text in files.items():
        if rel.endswith(".py"):
            imported = re.findall(r"^\s*(?:from|import) (paperzoo\S*)", text, flags=re.M)
            assert set(imported) <= {"paperzoo.paper"}, (rel, imported)
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    info = tmp_path / "site" / "calib_paper-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: calib-paper\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[paperzoo.papers]\ncalib-paper = calib_paper.paper:Paper\n"
    )
    src = [str(ROOT / "src")] if (ROOT / "src").is_dir() else []
    path = os.pathsep.join([str(tmp_path / "site"), str(tmp_path / "pkg" / "src"), *src])
    env = {"PYTHONPATH": path}
    first = "from paperzoo.paper import papers, plugin_errors; print(papers(), plugin_errors())"
    loaded = _ok(_run([sys.executable, "-c", first], tmp_path, env=env))
    assert "'calib-paper'" in loaded and loaded.rstrip().endswith("[]"), loaded
    listed = _ok(_run([sys.executable, "-m", "paperzoo", "list"], tmp_path, env=env))
    mine = listed.split("calib-paper: ", 1)[1].split("\n  - ", 1)[0]
    assert "data: sklearn-digits;" in mine
    assert "full: not run: the full config fits a CPU; its run is not committed yet" in mine
    assert "full run: at least " in mine and "GPU-hours" in mine
    _ok(
        _run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            tmp_path / "pkg",
            env=env,
        )
    )
