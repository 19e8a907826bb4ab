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


def _as_validation(run: Path, out: Path, flip: dict[str, float] | None = None) -> Path:
    """The aggregate of ``run`` as if its seeds were validation seeds 100 and up (its seed runs
    left behind), with the per-seed values of the claims in ``flip`` set to a value."""
    out.mkdir(parents=True)
    data = json.loads((run / "results.json").read_text())
    data["seeds"] = [100 + s for s in data["seeds"]]
    data["seed_dirs"] = []
    for claim in data["claims"]:
        if claim["id"] in (flip or {}):
            claim["per_seed"] = [flip[claim["id"]] for _ in claim["per_seed"]]  # type: ignore[index]
    (out / "results.json").write_text(json.dumps(data))
    return out


def test_same_verdicts_are_no_knife_edge_and_a_flipped_one_is(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    tool = _tool()
    test = ROOT / "results" / "coordconv-quick"
    same = _as_validation(test, tmp_path / "same")
    assert tool.main(["--compare", str(same), str(test)]) == 0
    assert "knife edges: 0 of" in capsys.readouterr().out

    # far above its target of <= 0.95
    flipped = _as_validation(
        test, tmp_path / "flipped", {"uniform.classification.deconv.test_acc": 1.0}
    )
    assert tool.main(["--compare", str(flipped), str(test)]) == 1
    out = capsys.readouterr().out
    assert "knife edges: 1 of" in out and "uniform.classification.deconv.test_acc" in out
    row = next(ln for ln in out.splitlines() if "uniform.classification.deconv.test_acc" in ln)
    assert "**knife edge**" in row and "fails (0/4)" in row


def test_a_run_that_cannot_decide_knife_edges_is_refused(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """Test seeds, or a config the code no longer declares, decide nothing (exit status 2)."""
    tool = _tool()
    test = ROOT / "results" / "coordconv-quick"
    assert tool.main(["--compare", str(test), str(test)]) == 2
    assert "are not validation seeds" in capsys.readouterr().err
    old = _as_validation(test, tmp_path / "old")
    data = json.loads((old / "results.json").read_text())
    data["config"]["render_steps"] = 300
    (old / "results.json").write_text(json.dumps(data))
    assert tool.main(["--compare", str(old), str(test)]) == 2
    assert (
        "config the code no longer declares (render_steps 300 -> 1000)" in capsys.readouterr().err
    )


def test_runs_of_different_papers_are_refused(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    tool = _tool()
    a = _as_validation(ROOT / "results" / "coordconv-quick", tmp_path / "a")
    b = ROOT / "results" / "draw-quick"
    assert tool.main(["--compare", str(a), str(b)]) == 2
    assert "not runs of one paper" in capsys.readouterr().err


def test_a_verdict_that_differs_from_any_test_run_is_a_knife_edge(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    tool = _tool()
    one = ROOT / "results" / "coordconv-quick"
    same = _as_validation(one, tmp_path / "same")
    two = tmp_path / "two-threads"
    shutil.copytree(ROOT / "results" / "coordconv-quick-2threads", two)
    data = json.loads((two / "results.json").read_text())
    claim = next(c for c in data["claims"] if c["id"] == "quadrant.rendering.coordconv.test_iou")
    claim["per_seed"] = [0.5 for _ in claim["per_seed"]]  # below its target of >= 0.9
    (two / "results.json").write_text(json.dumps(data))
    assert tool.main(["--compare", str(same), str(one), str(two)]) == 1
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
