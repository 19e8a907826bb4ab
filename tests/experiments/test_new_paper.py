"""An eleventh paper is one new package: a copy of a small paper's package under a new name,
with only its registered name and its imports of its own modules changed, is listed, runs at
smoke, shows in the summary and passes the catalogue tests, without any other edit to src/ or
tests/.

The package is copied to a temporary directory and every command runs in a subprocess with
``PYTHONPATH`` pointing at the copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "gat"  # a small paper: one package
NEW = "gat-copy"
# The catalogue tests: what every registered paper must satisfy (claims, costs, `list`).
CATALOGUE_TESTS = [
    "tests/experiments/test_claims.py",
    "tests/test_cost.py",
    "tests/test_cli.py::test_list_names_every_registered_paper",
    "tests/test_cli.py::test_list_json_schema",
]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """src/ copied with the package papers/gat/ duplicated as experiments/gat_copy/,
    registered as ``gat-copy``."""
    root = tmp_path_factory.mktemp("eleventh")
    src = root / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    experiments = src / "paperzoo" / "experiments"
    package = experiments / "gat_copy"
    shutil.copytree(experiments / SOURCE, package, ignore=shutil.ignore_patterns("__pycache__"))
    for path in package.glob("*.py"):  # its modules import one another by absolute name
        own = rf"\bpaperzoo\.experiments\.{SOURCE}\b"
        path.write_text(re.sub(own, "paperzoo.experiments.gat_copy", path.read_text()))
    module = (package / "experiment.py").read_text()
    renamed, n = re.subn(
        rf'(@EXPERIMENTS\.register\(|\n    name = )"{SOURCE}"', rf'\1"{NEW}"', module
    )
    assert n == 2, "the module's register() and name lines were not found"
    (package / "experiment.py").write_text(renamed)
    return root


def _run(copy: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(copy / "src"), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_copy_is_the_one_imported(copy):
    proc = _run(copy, "-c", "import paperzoo; print(paperzoo.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).is_relative_to(copy / "src")


def test_an_eleventh_paper_lists_runs_and_shows_in_the_summary(copy):
    listed = _run(copy, "-m", "paperzoo", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    papers = {p["name"]: p for p in json.loads(listed.stdout)["papers"]}
    assert NEW in papers and SOURCE in papers
    # no stored count: counted as it is listed, the same work as the paper it copies
    assert papers[NEW]["full_cost"]["stored"] is False and papers[SOURCE]["full_cost"]["stored"]
    assert papers[NEW]["full_cost"]["flop"] == papers[SOURCE]["full_cost"]["flop"]
    assert [c["id"] for c in papers[NEW]["claims"]] == [c["id"] for c in papers[SOURCE]["claims"]]
    text = _run(copy, "-m", "paperzoo", "list")
    assert text.returncode == 0 and f"\n{NEW}: " in text.stdout, text.stderr

    out = copy / "runs" / "eleventh"  # (a name the summary could not show NEW from)
    run = _run(copy, "-m", "paperzoo", "reproduce", NEW, "--scale", "smoke", "--quiet",
               "--threads", "1", "--out", str(out))  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    assert result["paper"] == NEW and result["scale"] == "smoke"

    summary = _run(copy, "-m", "paperzoo", "summary", str(out))
    assert summary.returncode == 0, summary.stderr[-3000:]
    lines = summary.stdout.splitlines()
    assert any(line.startswith(f"| `{NEW}` | ") for line in lines), summary.stdout  # its row
    assert any(line.startswith(f"## `{NEW}`: ") for line in lines), summary.stdout  # its section


def test_the_catalogue_tests_pass_with_an_eleventh_paper(copy):
    tests = [str(ROOT / t) for t in CATALOGUE_TESTS]
    proc = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                "-c", str(ROOT / "pyproject.toml"), *tests, timeout=1200)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "failed" not in proc.stdout and " passed" in proc.stdout
    # they ran against the copy: the new paper is among the ones parametrised over
    collected = _run(copy, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                     "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                     str(ROOT / CATALOGUE_TESTS[0]))  # fmt: skip
    assert f"[{NEW}]" in collected.stdout, collected.stdout[-2000:]
