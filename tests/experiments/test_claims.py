"""Every registered experiment declares its claims under the verdict protocol (DESIGN.md,
"Verdicts"): a kind per claim, at least one finding per paper, and every finding judged against
an explicit comparison at every scale (never "reported")."""

from __future__ import annotations

import re

import pytest

from paperzoo.experiments import EXPERIMENTS, SCALES

NAMES = sorted(EXPERIMENTS.names())
# A comparison: an order relation with a number, "within P% of x", or a boolean target.
_COMPARISON = re.compile(r"^(>=|<=|==|>|<)\s*[-+0-9.]|^within\s|^is (true|false)$")


def test_every_paper_is_covered() -> None:
    assert len(NAMES) == 10, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_claims_follow_the_verdict_protocol(name: str) -> None:
    claims = EXPERIMENTS.create(name).claims
    assert claims, name
    assert len({c.id for c in claims}) == len(claims), "duplicate claim ids"
    assert all(c.kind in ("finding", "check") for c in claims), [
        (c.id, c.kind) for c in claims if c.kind not in ("finding", "check")
    ]
    findings = [c for c in claims if c.kind == "finding"]
    assert findings, f"{name} declares no finding"
    for c in findings:
        targets = c.targets()
        assert set(targets) == set(SCALES), (c.id, targets)
        reported = [s for s, t in targets.items() if t.strip().lower() == "reported"]
        assert not reported, (c.id, reported)
        full = targets["full"].strip().lower()
        assert _COMPARISON.match(full), (c.id, full)
