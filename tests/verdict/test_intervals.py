"""``paperzoo.verdict.intervals``: a finding's verdict from an interval on its mean, the seed rule
that adds seeds only where a finding is unclear, and its error rate at the target's boundary."""

from __future__ import annotations

import math
from pathlib import Path

import mpmath
import numpy as np
import pytest
from scipy import stats

from paperzoo.verdict import (
    ALPHA,
    LEVEL,
    LOOKS,
    ClaimResult,
    Result,
    decide,
    holm,
    load_result,
    next_seeds,
)
from paperzoo.verdict.intervals import sample_std, t_quantile

ROOT = Path(__file__).resolve().parents[2]


def test_one_error_rate_split_over_the_looks() -> None:
    assert ALPHA == 0.05 and LOOKS == (4, 8, 16)
    assert LEVEL == pytest.approx(1 - ALPHA / len(LOOKS))


@pytest.mark.parametrize(
    ("target", "values", "verdict"),
    [
        (">= 0.7", [0.8, 0.81, 0.79, 0.8], "holds"),  # the interval clears 0.7
        (">= 0.7", [0.5, 0.52, 0.49, 0.5], "fails"),  # it lies below
        (">= 0.7", [0.6, 0.9, 0.7, 0.8], "inconclusive"),  # it straddles
        ("< 0", [-0.0148, -0.0049, -0.0256, -0.0026], "inconclusive"),
        ("< 0", [-0.0148, -0.0149, -0.0156, -0.0126], "holds"),
        ("within 10% of 5", [5.0, 5.1, 4.9, 5.05], "holds"),  # both bounds inside the band
        ("within 10% of 5", [4.0, 4.1, 3.9, 4.05], "fails"),  # wholly outside it
        ("within 10% of 5", [4.5, 5.5, 4.0, 5.0], "inconclusive"),  # one bound outside
        ("is true", [True] * 4, "inconclusive"),  # a coin gives 4 of 4 with p = 1/16 > 5%/3
        ("is true", [True] * 8, "holds"),
        ("is true", [True] * 7 + [False], "inconclusive"),  # p = 9/256 > 5%/3
        ("is true", [True] * 13 + [False] * 3, "holds"),  # p = 0.0106
        (">= 0.95", [1.0] * 4, "inconclusive"),  # no spread: the binomial rule
        (">= 0.95", [1.0] * 8, "holds"),
        (">= 0.95", [0.5] * 8, "fails"),
        ("> 0", [0.5], "inconclusive"),  # one seed: no interval
        ("> 0", [0.5, None, 0.5, 0.6], "not measured"),
        ("> 0", [0.5, float("nan"), 0.5, 0.6], "not measured"),
    ],
)
def test_decide_at_its_edges(target: str, values: list, verdict: str) -> None:
    assert decide(target, values).verdict == verdict


def test_the_interval_is_students_t_at_the_declared_level() -> None:
    values = [0.8, 0.81, 0.79, 0.83]
    d = decide(">= 0.7", values)
    low, high = stats.t.interval(
        1 - 2 * (1 - LEVEL), 3, loc=np.mean(values), scale=stats.sem(values)
    )
    assert d.interval == pytest.approx((low, high))
    assert (d.n, d.level, d.method, d.look, d.of) == (4, LEVEL, "student-t", 1, "mean")
    assert decide(">= 0.95", [1.0] * 4).of == "fraction meeting the target"


@pytest.mark.parametrize("p", [LEVEL, 0.975, 0.9, 0.6, 0.3, 0.01])
def test_the_t_quantile_is_the_correctly_rounded_closed_form(p: float) -> None:
    """Student's t has closed-form quantiles at 1 and 2 degrees of freedom: the computed ones
    (Newton steps on the CDF) are those to the last bit; and a table value at 10 (2.228139 for
    0.975)."""
    with mpmath.workdps(40):  # the closed forms at 40 digits, rounded once
        x = mpmath.mpf(p)
        q1 = float(mpmath.tan(mpmath.pi * (x - 0.5)))
        q2 = float((2 * x - 1) / mpmath.sqrt(2 * x * (1 - x)))
    assert t_quantile(p, 1) == q1
    assert t_quantile(p, 2) == q2
    assert round(t_quantile(0.975, 10), 6) == 2.228139
    assert t_quantile(p, 7) == pytest.approx(-t_quantile(1 - p, 7), rel=1e-14)
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)


def test_the_sample_std_is_the_exactly_summed_one() -> None:
    xs = [0.1, 0.2, 0.30000000000000004, 1e-9, 0.7]
    assert sample_std(xs) == pytest.approx(float(np.std(xs, ddof=1)), rel=1e-15)
    assert sample_std([3.0]) == 0.0 and sample_std([]) == 0.0
    assert ClaimResult("c", "c", None, xs, "> 0").std == sample_std(xs)


def test_no_finding_holds_where_students_t_does_not_clear_its_target() -> None:
    """Over random samples, ``holds`` implies that a one-sided Student-t interval at the declared
    level clears the target (computed here with scipy, independently of the code under test)."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.choice(LOOKS))
        values = list(rng.normal(rng.uniform(-1, 1), rng.uniform(0.01, 1), n))
        x = float(rng.uniform(-0.5, 0.5))
        low = np.mean(values) - stats.t.ppf(LEVEL, n - 1) * stats.sem(values)
        high = np.mean(values) + stats.t.ppf(LEVEL, n - 1) * stats.sem(values)
        assert (decide(f">= {x}", values).verdict == "holds") == (low >= x)
        assert (decide(f"<= {x}", values).verdict == "holds") == (high <= x)


def _sequential(draw, target: str, rng: np.random.Generator) -> str:
    """The seed rule on one simulated reproduction: looks at 4, 8, 16 seeds, stopping at the first
    look where the finding is decided."""
    values = list(draw(rng, LOOKS[-1]))
    for n in LOOKS:
        verdict = decide(target, values[:n]).verdict
        if verdict != "inconclusive":
            return verdict
    return verdict


@pytest.mark.parametrize(
    ("name", "draw", "target"),
    [
        # a numeric finding whose true mean sits exactly on its target
        ("normal", lambda rng, n: rng.normal(0.0, 1.0, n), ">= 0"),
        ("normal, strict", lambda rng, n: rng.normal(0.3, 0.05, n), "> 0.3"),
        # a boolean finding true on exactly half of the runs
        ("boolean", lambda rng, n: rng.random(n) < 0.5, "is true"),
        # a two-valued outcome (solves or not) that meets the target on exactly half of the runs
        ("two-valued", lambda rng, n: np.where(rng.random(n) < 0.5, 1.0, 0.5), ">= 0.95"),
    ],
)
def test_the_sequential_rules_false_hold_rate_at_the_boundary_is_within_the_level(
    name: str, draw, target: str
) -> None:
    """Stopping at the first decisive look does not raise the rate of false holds above ALPHA:
    simulated at the target's boundary, the rate (with its binomial standard error) stays within
    the declared level."""
    rng = np.random.default_rng(1234)
    runs = 4000
    holds = sum(_sequential(draw, target, rng) == "holds" for _ in range(runs))
    rate = holds / runs
    assert rate <= ALPHA, (name, rate)
    # and the rule is not vacuous: the same simulation away from the boundary does hold
    if name == "normal":
        away = sum(
            _sequential(lambda r, n: r.normal(1.5, 1.0, n), target, rng) == "holds"
            for _ in range(500)
        )
        assert away / 500 > 0.8


def test_holm_across_findings() -> None:
    assert holm([0.001, 0.02, 0.004, None], 0.05) == [True, True, True, False]
    assert holm([0.03, 0.03], 0.05) == [False, False]  # 0.03 > 0.05 / 2
    assert holm([], 0.05) == []


def _quick(values: list[float], scale: str = "quick") -> Result:
    n = len(values)
    return Result(
        paper="x", title="T", scale=scale, seeds=list(range(n)), device="cpu", wall_seconds=1.0,
        paperzoo_version="0.2.0", torch_version="2.13.0", data=[],
        claims=[ClaimResult("f", "a finding", None, values, "> 0")],
    )  # fmt: skip


def test_next_seeds_adds_the_next_look_only_while_a_finding_is_inconclusive() -> None:
    unclear = [0.1, -0.05, 0.2, 0.0]
    assert next_seeds(_quick(unclear)) == [4, 5, 6, 7]
    assert next_seeds(_quick(unclear * 2)) == list(range(8, 16))
    assert next_seeds(_quick(unclear * 4)) == []  # the last look
    assert next_seeds(_quick([0.5, 0.51, 0.52, 0.5])) == []  # decided
    assert next_seeds(_quick(unclear, scale="full")) == []  # full runs the seeds it is given
    assert next_seeds(_quick(unclear[:3])) == []  # no look


def _committed_findings():
    found = sorted((ROOT / "results").rglob("results.json"))
    if not found:
        pytest.skip("not a source checkout with results/")
    for path in found:
        import json

        raw = json.loads(path.read_text(encoding="utf-8"))
        for c in raw["claims"]:
            if c["kind"] == "finding" and c["target"] != "reported":
                yield path, raw, c


def test_every_committed_finding_is_decided_from_its_stored_interval_and_target() -> None:
    """For every committed run (aggregates and seed runs), each finding's stored verdict follows
    from its stored interval and target, and the interval from its stored per-seed values."""
    for path, _, c in _committed_findings():
        where = f"{path.relative_to(ROOT)}: {c['id']}"
        if c["verdict"] == "not measured":
            assert any(v is None for v in c["per_seed"]), where
            continue
        assert c["n"] == len(c["per_seed"]) and c["level"] == round(LEVEL, 6), where
        d = decide(c["target"], c["per_seed"])
        assert c["interval"] == pytest.approx(list(d.interval)), where
        assert c["verdict"] == d.verdict, where
        low, high = c["interval"]
        if c["interval_of"] != "mean" or low is None:
            continue
        t = c["target"].strip().lower()
        op, x = t.split()[0], float(t.split()[-1])
        if op in (">=", ">"):
            expect = "holds" if low >= x else "fails" if high < x else "inconclusive"
            assert c["verdict"] == expect or (op == ">" and low == x), where
        elif op in ("<=", "<"):
            expect = "holds" if high <= x else "fails" if low > x else "inconclusive"
            assert c["verdict"] == expect or (op == "<" and high == x), where


def test_no_committed_finding_holds_where_students_t_does_not_clear_its_target() -> None:
    for path, _, c in _committed_findings():
        if c["verdict"] != "holds" or all(isinstance(v, bool) for v in c["per_seed"]):
            continue
        xs = [float(v) for v in c["per_seed"]]
        n = len(xs)
        assert n >= 2, (path, c["id"])
        sem = stats.sem(xs) if np.std(xs) > 0 else 0.0
        half = stats.t.ppf(LEVEL, n - 1) * sem
        t = c["target"].strip().lower()
        x = float(t.split()[-1])
        if t.startswith((">=", ">")):
            assert np.mean(xs) - half >= x - 1e-12 * max(1, abs(x)), (path, c["id"])
        elif t.startswith(("<=", "<")):
            assert np.mean(xs) + half <= x + 1e-12 * max(1, abs(x)), (path, c["id"])
        if sem == 0.0:  # no spread: the binomial rule held it, which needs 6+ seeds
            assert 0.5**n <= (1 - LEVEL), (path, c["id"])
        assert math.isfinite(half)


def test_every_committed_run_records_its_decision_under_the_rule_in_force() -> None:
    for path in sorted((ROOT / "results").rglob("results.json")):
        r = load_result(path.parent)
        assert r.seed_rule is None or r.seed_rule["level"] == round(LEVEL, 6), path
