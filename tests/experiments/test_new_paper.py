"""An eleventh paper comes through the same door as the ten: a copy of a small paper's package,
outside paperzoo, under a new name, declared by its own distribution under the
``paperzoo.papers`` entry point group, is listed with a price, runs at smoke, shows in the summary
and passes the same catalogue tests as the ten (claims, costs, ``list``, and the check that test
data are read only in the final evaluation), without any edit to paperzoo's src/ or tests/.

The package and its distribution's metadata (a ``.dist-info`` folder with ``entry_points.txt``,
what ``pip install`` writes) are written to a temporary directory, and every command runs in a
subprocess with ``PYTHONPATH`` pointing at it, beside the installed paperzoo.
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

# Every command runs in a subprocess at one thread (OMP_NUM_THREADS=1).
pytestmark = pytest.mark.fixed_threads

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "src" / "paperzoo" / "papers"
SOURCE = "gat"  # a small paper: one package
NEW = "gat-copy"
PACKAGE = "gat_copy"
# The catalogue tests: what every registered paper must satisfy (claims, costs, `list`, holdout).
CATALOGUE_TESTS = [
    "tests/experiments/test_claims.py",
    f"tests/experiments/test_holdout.py::test_test_data_are_read_only_in_the_final_evaluation[{NEW}]",
    "tests/test_cost.py",
    "tests/test_cli.py::test_list_names_every_registered_paper",
    "tests/test_cli.py::test_list_json_schema",
]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the package ``gat_copy`` (papers/gat/ under its new name) and the
    metadata of a distribution ``gat-copy-paper`` declaring it as the paper ``gat-copy``."""
    root = tmp_path_factory.mktemp("eleventh")
    package = root / PACKAGE
    shutil.copytree(PAPERS / SOURCE, package, ignore=shutil.ignore_patterns("__pycache__"))
    for path in package.glob("*.py"):  # its modules import one another by absolute name
        own = rf"\bpaperzoo\.papers\.{SOURCE}\b"
        path.write_text(re.sub(own, PACKAGE, path.read_text()))
    module = (package / "experiment.py").read_text()
    renamed, n = re.subn(rf'\n    name = "{SOURCE}"', f'\n    name = "{NEW}"', module)
    assert n == 1, "the class's name line was not found"
    (package / "experiment.py").write_text(renamed)
    stored = json.loads((package / "full_cost.json").read_text())  # the count travels, renamed
    (package / "full_cost.json").write_text(json.dumps(stored | {"paper": NEW}))
    info = root / "gat_copy_paper-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gat-copy-paper\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[paperzoo.papers]\n{NEW} = {PACKAGE}.experiment:GATExperiment\n"
    )
    return root


def _run(copy: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_copy_is_found_through_its_entry_point(copy):
    code = (
        "from importlib import metadata; "
        "print([(e.name, e.value, e.dist.name) for e in metadata.entry_points("
        "group='paperzoo.papers') if e.name == 'gat-copy'])"
    )
    proc = _run(copy, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert "('gat-copy', 'gat_copy.experiment:GATExperiment', 'gat-copy-paper')" in proc.stdout


def test_an_eleventh_paper_lists_runs_and_shows_in_the_summary(copy):
    listed = _run(copy, "-m", "paperzoo", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    papers = {p["name"]: p for p in json.loads(listed.stdout)["papers"]}
    assert NEW in papers and SOURCE in papers
    # its stored count travelled with the package (full_cost.json beside its module), current:
    # the same work as the paper it copies
    assert papers[NEW]["full_cost"]["stored"] and papers[SOURCE]["full_cost"]["stored"]
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
