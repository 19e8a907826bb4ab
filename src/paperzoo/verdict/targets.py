"""Claim targets: parsing them, judging one measurement against one, and the seed rules.

A target is a string fixed before the run: ``">= x"``, ``"> x"``, ``"<= x"``, ``"< x"``,
``"== x"`` (counts only), ``"within P% of x"``, ``"is true"``, ``"is false"`` or (checks only)
``"reported"``. How a finding is decided over its seeds is ``paperzoo.verdict.intervals``; a check
holds when the mean over its seeds meets the target and so do at least ``seeds_needed(n)`` of
its ``n`` seeds (``paperzoo.verdict.result.ClaimResult.verdict``); see docs/verdicts.md.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "DIAGNOSIS_CAUSES",
    "MIN_SEEDS_REPRODUCED",
    "VALIDATION_SEEDS_FROM",
    "VERDICTS",
    "Measured",
    "check_measurement",
    "evaluate_target",
    "is_boolean_target",
    "is_measured",
    "seeds_needed",
    "target_band",
    "target_line",
    "validate_diagnosis",
    "validate_target",
]

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"  # a finite decimal number, as float() reads
_CMP = re.compile(rf"^\s*(>=|<=|==|>|<)\s*({_NUM})\s*$", re.IGNORECASE)
_WITHIN = re.compile(rf"^\s*within\s+(\d+\.?\d*|\.\d+)\s*%\s+of\s+({_NUM})\s*$", re.IGNORECASE)

Measured = float | int | bool | None

# What a declared diagnosis of a finding that does not reproduce at a scale names first: the
# effect needs more data, steps or model than the scale gives; the project's code or protocol
# differs from the paper's; or the effect does not appear as the paper reports it.
DIAGNOSIS_CAUSES = ("the small scale", "our code", "the paper")
# findings: holds, fails, inconclusive (by their interval); checks: holds, fragile, fails
VERDICTS = ("holds", "fails", "inconclusive", "fragile", "not measured", "reported")
MIN_SEEDS_REPRODUCED = 4  # a finding counts as reproduced at smoke/quick only over this many seeds
# Seeds from VALIDATION_SEEDS_FROM up are for selection runs (configs decided on validation
# seeds) and never count; the test seeds a quick verdict counts over are the seed rule's looks
# (``paperzoo.verdict.intervals.LOOKS``).
VALIDATION_SEEDS_FROM = 100
# '== n' on counts: the mean of n integers equal to x may differ from x by float round-off
# (0.1 * 3 / 3), never by more than this relative amount.
_INT_EQ_TOL = 1e-9


def validate_target(target: str) -> None:
    """Raise ``ValueError`` unless ``target`` is a target string ``evaluate_target`` understands.

    Its numbers must be finite (``<= 1e999`` reads as infinity, a target that always holds), and
    ``== x`` compares integers only (a count): equality on a float needs a tolerance, written
    ``within P% of x``."""
    t = target.strip().lower()
    if t in ("reported", "is true", "is false"):
        return
    m = _CMP.match(t) or _WITHIN.match(t)
    if m is None:
        raise ValueError(f"cannot parse claim target {target!r}")
    if not all(math.isfinite(float(g)) for g in m.groups() if g is not None and g[0] not in "<>="):
        raise ValueError(f"claim target {target!r} has a number that is not finite")
    if m.re is _CMP and m.group(1) == "==" and not re.fullmatch(r"[-+]?\d+", m.group(2)):
        raise ValueError(
            f"claim target {target!r}: equality on a float needs a tolerance "
            f"(write 'within P% of {m.group(2)}'); '==' compares integers (counts) only"
        )


def is_boolean_target(target: str) -> bool:
    """Whether ``target`` is ``"is true"`` / ``"is false"`` (it judges booleans, not numbers)."""
    return target.strip().lower() in ("is true", "is false")


def check_measurement(target: str, measured: Measured, claim: str = "claim") -> None:
    """Raise ``TypeError`` naming ``claim`` when a boolean meets a numeric target or a number a
    boolean one (a wrong claim declaration, not a failed finding)."""
    t = target.strip().lower()
    if measured is None or t == "reported":
        return
    if is_boolean_target(t) and not isinstance(measured, bool):
        raise TypeError(f"{claim}: target {target!r} needs a boolean measurement, got {measured!r}")
    if not is_boolean_target(t) and isinstance(measured, bool):
        raise TypeError(f"{claim}: target {target!r} needs a number, got the boolean {measured}")


def is_measured(value: Measured) -> bool:
    """False for a missing (``None``), NaN or infinite measurement (a run that diverged)."""
    if value is None:
        return False
    return isinstance(value, bool) or math.isfinite(float(value))


def evaluate_target(target: str, measured: Measured) -> bool | None:
    """Whether ``measured`` meets ``target``; ``None`` only for a ``"reported"`` target.

    Targets: ``">= x"``, ``"> x"``, ``"<= x"``, ``"< x"``, ``"== x"``, ``"within P% of x"``
    (two-sided: for a parameter count, not for an error or an accuracy, where beating the paper is
    no failure: those are ``"<= x"`` / ``">= x"``), ``"is true"``, ``"is false"``, and
    ``"reported"`` (no target). A missing, NaN or infinite measurement never meets a target; a
    boolean against a numeric target, or the reverse, is a ``ValueError``.
    """
    validate_target(target)
    t = target.strip().lower()
    if t == "reported":
        return None
    if not is_measured(measured):
        return False
    try:
        check_measurement(target, measured)
    except TypeError as err:
        raise ValueError(str(err)) from None
    if is_boolean_target(t):
        return measured is (t == "is true")
    lo, hi, strict_lo, strict_hi = target_band(t)
    value = float(measured)  # type: ignore[arg-type]
    return (value > lo if strict_lo else value >= lo) and (value < hi if strict_hi else value <= hi)


def target_band(target: str) -> tuple[float, float, bool, bool]:
    """The values that meet a numeric target: (low, high, low end strict, high end strict), an
    unbounded side +-inf (``> 2``: ``(2, inf, True, False)``; ``within 10% of 5``: ``(4.5, 5.5,
    False, False)``; ``== 3`` on counts: 3 within float round-off).

    Raises:
        ValueError: not a numeric target.
    """
    t = target.strip().lower()
    if m := _CMP.match(t):
        op, x = m.group(1), float(m.group(2))
        if op == "==":  # a mean of counts may differ from x by round-off (0.1 * 3 / 3)
            tol = _INT_EQ_TOL * max(1.0, abs(x))
            return x - tol, x + tol, False, False
        return {
            ">=": (x, math.inf, False, False),
            ">": (x, math.inf, True, False),
            "<=": (-math.inf, x, False, False),
            "<": (-math.inf, x, False, True),
        }[op]
    if m := _WITHIN.match(t):
        pct, x = float(m.group(1)), float(m.group(2))
        return x - pct / 100.0 * abs(x), x + pct / 100.0 * abs(x), False, False
    raise ValueError(f"{target!r} is not a numeric target")


def target_line(target: str) -> float | None:
    """The number a target compares against (for plots); ``None`` for boolean/reported targets."""
    t = target.strip().lower()
    if m := _CMP.match(t):
        return float(m.group(2))
    if m := _WITHIN.match(t):
        return float(m.group(2))
    return None


def seeds_needed(n: int) -> int:
    """Seeds that must meet the target for ``holds``: ``ceil(3n/4)``."""
    return math.ceil(3 * n / 4)


def validate_diagnosis(text: str) -> str:
    """``text`` when it reads "CAUSE: why" with CAUSE one of ``DIAGNOSIS_CAUSES`` and a reason
    after it; ``ValueError`` (one line) otherwise."""
    cause, sep, why = text.partition(": ")
    if not sep or cause not in DIAGNOSIS_CAUSES or not why.strip():
        raise ValueError(
            f"a diagnosis reads 'CAUSE: why' with CAUSE one of {', '.join(DIAGNOSIS_CAUSES)}; "
            f"got {text[:60]!r}"
        )
    return text
