"""What a verification stands behind: the stored values, not the verdicts judged from them.

The end-to-end check (a real run verified, a value edited, the edit named) is in
tests/test_run_safety.py; these tests need no training.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperzoo.experiments.verifying import (
    VERIFY_RECORD,
    stored_values_sha256,
    verification_flag,
)


def _run(tmp_path: Path) -> Path:
    results = {
        "paper": "toy",
        "scale": "quick",
        "seeds": [0, 1, 2, 3],
        "seed": None,
        "commit": "abc123",
        "source_sha256": "f" * 64,
        "config": {"steps": 10},
        "overrides": {},
        "claims": [
            {"id": "b", "kind": "finding", "per_seed": [0.5, 0.6, None, 0.7],
             "target": "> 0.4", "verdict": "inconclusive", "interval": [0.1, 0.9]},
            {"id": "a", "kind": "reported", "per_seed": [True, True, False, True]},
        ],
        "counting": {"headline": "Findings reproduced: 0 of 1"},
    }  # fmt: skip
    (tmp_path / "results.json").write_text(json.dumps(results))
    return tmp_path


def _edit(run: Path, change) -> None:  # noqa: ANN001
    data = json.loads((run / "results.json").read_text())
    change(data)
    (run / "results.json").write_text(json.dumps(data, indent=2))


def _verified(run: Path) -> None:
    record = {"passed": True, "stored_values_sha256": stored_values_sha256(run / "results.json")}
    (run / VERIFY_RECORD).write_text(json.dumps(record))


def test_a_re_decision_keeps_the_verification(tmp_path):
    run = _run(tmp_path)
    assert verification_flag(run) is not None and "never verified" in verification_flag(run)
    _verified(run)
    assert verification_flag(run) is None

    def redecide(d: dict) -> None:
        d["claims"][0].update(target="> 0.55", verdict="fails", interval=[0.2, 0.8])
        d["counting"]["headline"] = "Findings reproduced: 0 of 1 (re-judged)"
        d["claims"].reverse()  # the order claims are written in is not a value

    _edit(run, redecide)
    assert verification_flag(run) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["claims"][0]["per_seed"].__setitem__(0, 0.51),  # an edited value
        lambda d: d["claims"][1]["per_seed"].__setitem__(2, True),  # an edited boolean
        lambda d: d["claims"][0]["per_seed"].append(0.9),  # a seed's value added
        lambda d: d.update(seeds=[0, 1, 2, 4]),  # other seeds
        lambda d: d.update(commit="def456"),  # other code
        lambda d: d["config"].update(steps=20),  # another config
        lambda d: d["claims"].pop(),  # a claim dropped
    ],
)
def test_a_changed_stored_value_loses_it(tmp_path, change):
    run = _run(tmp_path)
    _verified(run)
    _edit(run, change)
    assert "never verified" in (verification_flag(run) or "")


def test_a_failed_verification_and_unreadable_files(tmp_path):
    run = _run(tmp_path)
    record = {
        "passed": False,
        "stored_values_sha256": stored_values_sha256(run / "results.json"),
        "differences": ["seed 0: b: results.json has 0.5, the stored weights give 0.4"],
    }
    (run / VERIFY_RECORD).write_text(json.dumps(record))
    assert verification_flag(run) == (
        "failed verification: 1 stored value(s) differ from the weights (verify.json)"
    )
    (run / VERIFY_RECORD).write_text("{not json")
    assert "never verified" in (verification_flag(run) or "")
    (run / "results.json").write_text("[]")
    with pytest.raises(ValueError, match="is not a paperzoo results.json"):
        stored_values_sha256(run / "results.json")
    assert "never verified" in (verification_flag(run) or "")
    assert verification_flag(None) is None
