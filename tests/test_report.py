import json

import pytest

from paperzoo.report import ClaimResult, Result, evaluate_target, render_markdown, write_report


@pytest.mark.parametrize(
    ("target", "measured", "holds"),
    [
        (">= 0.95", 0.95, True),
        (">= 0.95", 0.9499, False),
        ("<= 0.1", 0.2, False),
        ("> 0", 0.01, True),
        ("< 2", 2.0, False),
        ("== 7553", 7553, True),
        ("within 2% of 0.27e6", 0.272e6, True),
        ("within 2% of 0.27e6", 0.28e6, False),
        ("is true", True, True),
        ("is false", True, False),
        ("reported", 0.3, None),
        (">= 0.5", None, None),
        (">= 0.5", float("nan"), False),
    ],
)
def test_evaluate_target(target, measured, holds):
    assert evaluate_target(target, measured) is holds


def test_bad_target_raises():
    with pytest.raises(ValueError, match="cannot parse"):
        evaluate_target("about 3", 3.0)
    with pytest.raises(ValueError, match="boolean"):
        evaluate_target("is true", 1.0)


def test_results_json_has_design_fields_and_computed_holds(tmp_path):
    res = Result(
        paper="x", title="T", scale="smoke", seed=0, device="cpu", wall_seconds=1.23,
        paperzoo_version="0.1.0", torch_version="2.13.0",
        data=[{"name": "d", "source": "generated", "n_train": 1, "n_test": 1}],
        claims=[ClaimResult("a.b", "s", 1.0, 0.5, ">= 0.9"), ClaimResult("c", "s", None, 2, "reported")],
        figures=["figures/f.png"],
    )  # fmt: skip
    jpath, mpath = write_report(res, tmp_path)
    d = json.loads(jpath.read_text())
    for key in ("paper", "title", "scale", "seed", "device", "wall_seconds", "paperzoo_version",
                "torch_version", "data", "claims", "figures"):  # fmt: skip
        assert key in d
    assert d["claims"][0]["holds"] is False and d["claims"][1]["holds"] is None
    md = mpath.read_text()
    assert "| `a.b`" in md and "❌" in md and "![f](figures/f.png)" in md
    assert render_markdown(res) == md
