"""tools/knife_edges.py: a finding whose verdict differs between validation and test seeds is named."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("knife_edges", ROOT / "tools" / "knife_edges.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_same_verdicts_are_no_knife_edge_and_a_flipped_one_is(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    tool = _tool()
    test = ROOT / "results" / "coordconv-quick"
    assert tool.main(["--compare", str(test), str(test)]) == 0
    assert "knife edges: 0 of" in capsys.readouterr().out

    flipped = tmp_path / "validation"
    shutil.copytree(test, flipped)
    data = json.loads((flipped / "results.json").read_text())
    claim = next(c for c in data["claims"] if c["id"] == "uniform.classification.deconv.test_acc")
    claim["per_seed"] = [1.0 for _ in claim["per_seed"]]  # far above its target of <= 0.95
    (flipped / "results.json").write_text(json.dumps(data))
    assert tool.main(["--compare", str(flipped), str(test)]) == 1
    out = capsys.readouterr().out
    assert "knife edges: 1 of" in out and "uniform.classification.deconv.test_acc" in out
    row = next(ln for ln in out.splitlines() if "uniform.classification.deconv.test_acc" in ln)
    assert "**knife edge**" in row and "fails (0/4)" in row


def test_runs_of_different_papers_are_refused(capsys) -> None:  # noqa: ANN001
    tool = _tool()
    a, b = ROOT / "results" / "coordconv-quick", ROOT / "results" / "draw-quick"
    assert tool.main(["--compare", str(a), str(b)]) == 2
    assert "not runs of one paper" in capsys.readouterr().err


def test_a_verdict_that_differs_from_any_test_run_is_a_knife_edge(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    tool = _tool()
    one = ROOT / "results" / "coordconv-quick"
    two = tmp_path / "two-threads"
    shutil.copytree(ROOT / "results" / "coordconv-quick-2threads", two)
    data = json.loads((two / "results.json").read_text())
    claim = next(c for c in data["claims"] if c["id"] == "quadrant.rendering.coordconv.test_iou")
    claim["per_seed"] = [0.5 for _ in claim["per_seed"]]  # below its target of >= 0.9
    (two / "results.json").write_text(json.dumps(data))
    assert tool.main(["--compare", str(one), str(one), str(two)]) == 1
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if "quadrant.rendering.coordconv.test_iou" in ln)
    assert row.count("holds (4/4)") == 2 and "fails (0/4)" in row and "**knife edge**" in row
    assert "knife edges: 1 of" in out


def test_a_part_run_is_compared_on_its_part_findings_only(capsys) -> None:  # noqa: ANN001
    """A validation run of ``--part rendering`` names no finding of the other parts a knife edge."""
    tool = _tool()
    part = ROOT / "results" / "validation" / "coordconv-rendering-quick-s100-107"
    test = ROOT / "results" / "coordconv-quick"
    assert tool.main(["--compare", str(part), str(test)]) == 0
    out = capsys.readouterr().out
    assert "part rendering" in out and "knife edges: 0 of 1" in out
    assert "quadrant.rendering.coordconv.test_iou" in out and "classification" not in out
