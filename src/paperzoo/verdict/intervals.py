"""The statistics of a verdict: an interval on a finding's mean over seeds, decided at one error
rate, with more seeds only where it is unclear.

The rule (docs/verdicts.md, "The interval and the seed rule"), fixed before any run:

- ``ALPHA``: the rate at which a finding may read ``holds`` when its true mean sits exactly on
  its target (a false hold), over all the looks a run takes; the same rate bounds a false
  ``fails``.
- ``LOOKS``: quick scale runs seeds 0-3; while a finding is inconclusive it adds seeds 4-7, then
  8-15. Each look spends ``ALPHA / len(LOOKS)`` (Bonferroni across looks: valid however the
  looks depend on each other, whatever look a run stops at), so every interval has the one-sided
  level ``LEVEL`` on each side.
- A numeric finding: the Student-t interval ``mean -/+ t(LEVEL, n-1) * s / sqrt(n)``; it
  ``holds`` when the interval clears the target, ``fails`` when it lies wholly on the other side,
  and is ``inconclusive`` when it straddles. ``within P% of x``: equivalence, both bounds inside
  the band (two one-sided tests). A sample with no spread at all (every seed the same value, as a
  run that either solves its task or not gives when every seed solved it) has no interval to
  speak of: it is decided by the exact binomial rule on the seeds that meet the target.
- A boolean finding, and a sample with no spread: the exact binomial (sign) rule, one-sided at
  the same level: ``holds`` when so many seeds meet the target that a coin (one half) would give
  as many with probability at most ``ALPHA / len(LOOKS)``; the interval is Clopper-Pearson's on
  the fraction.

The functions here are pure: they take values and a target and return a ``Decision``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from paperzoo.verdict.targets import target_band

__all__ = [
    "ALPHA",
    "LEVEL",
    "LOOKS",
    "LOOK_ALPHA",
    "PROTOCOL_SEEDS",
    "SEED_RULE",
    "Decision",
    "binomial_tail",
    "decide",
    "holm",
    "look_of",
    "sample_std",
    "t_quantile",
]

ALPHA = 0.05  # the declared error rate of a verdict, over all its looks (one place)
LOOKS = (4, 8, 16)  # seeds at each look of a quick reproduction (seeds 0..n-1)
# The test seeds of the first look: a quick run counts over seeds 0..n-1 for n in LOOKS.
PROTOCOL_SEEDS = tuple(range(LOOKS[0]))
LOOK_ALPHA = ALPHA / len(LOOKS)  # spent at each look (Bonferroni across looks)
LEVEL = 1.0 - LOOK_ALPHA  # the one-sided confidence of each bound of an interval
# What results.json records as the rule a run was judged under; a run whose stored rule differs
# from this one does not count until it is rerun (a rule fixed after the results is no rule).
SEED_RULE = {
    "alpha": ALPHA,
    "looks": list(LOOKS),
    "level": round(LEVEL, 6),
    "interval": "student-t; exact binomial for booleans and samples with no spread",
}


@dataclass(frozen=True)
class Decision:
    """A finding's verdict over its seeds, and what it rests on.

    Attributes:
        verdict: ``holds``, ``fails``, ``inconclusive`` or ``not measured``.
        n: seeds measured.
        interval: (low, high), each a one-sided bound at ``level``; None for a side that is
            unbounded (one seed: no interval at all).
        level: the one-sided confidence of each bound.
        method: ``student-t``, ``exact binomial`` (booleans) or ``exact binomial, no spread``.
        of: what the interval bounds: ``mean`` (Student-t) or ``fraction meeting the target``
            (the binomial rule: Clopper-Pearson bounds on the fraction of seeds that meet it).
        look: which look of ``LOOKS`` ``n`` seeds are (1-based); None when ``n`` is no look.
        p_value: the one-sided p-value against the target's boundary in the direction of
            ``holds`` (None where not defined); used for the control across findings (``holm``).
    """

    verdict: str
    n: int
    interval: tuple[float | None, float | None]
    level: float
    method: str
    look: int | None = None
    p_value: float | None = None
    of: str = "mean"


def look_of(n: int) -> int | None:
    """The look (1-based) that ``n`` seeds make, None when ``n`` is not one of ``LOOKS``."""
    return LOOKS.index(n) + 1 if n in LOOKS else None


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom, correctly rounded.

    scipy's ``stdtrit`` gives the start; its last digits differ between scipy versions (1.15 is
    off by about 1e-11 at ``df=1``), so three Newton steps on the t CDF at 40 digits (mpmath:
    ``F(t) = 1 - I_x(df/2, 1/2) / 2`` for ``t >= 0``, ``x = df / (df + t^2)``) take it to the
    quantile itself: the same float on every platform and version, and so the same interval.
    """
    import mpmath
    from scipy.special import stdtrit

    if not (0.0 < p < 1.0 and df >= 1):
        raise ValueError(f"t_quantile needs 0 < p < 1 and df >= 1, got p={p}, df={df}")
    if p == 0.5:
        return 0.0
    start = float(stdtrit(df, p))
    with mpmath.workdps(40):
        nu, target, t = mpmath.mpf(df), mpmath.mpf(p), mpmath.mpf(start)
        density_scale = mpmath.gamma((nu + 1) / 2) / (
            mpmath.sqrt(nu * mpmath.pi) * mpmath.gamma(nu / 2)
        )
        for _ in range(3):
            tail = mpmath.betainc(nu / 2, 0.5, 0, nu / (nu + t * t), regularized=True) / 2
            cdf = 1 - tail if t >= 0 else tail
            density = density_scale * (1 + t * t / nu) ** (-(nu + 1) / 2)
            t -= (cdf - target) / density
        return float(t)


def sample_std(xs: Sequence[float]) -> float:
    """The sample standard deviation (``n - 1`` in the denominator; 0.0 below two values), from
    exactly rounded sums (``math.fsum``), so that it is the same float on every Python version
    (``statistics.stdev`` changed its last bits in 3.11)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mean = math.fsum(xs) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))


def _t_sf(t: float, df: int) -> float:
    """P(T >= t) for Student's t with ``df`` degrees of freedom."""
    from scipy.special import stdtr

    return float(1.0 - stdtr(df, t)) if t < 0 else float(stdtr(df, -t))


def binomial_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2): the exact one-sided p-value of k of n."""
    return sum(math.comb(n, i) for i in range(max(k, 0), n + 1)) / 2**n


def _clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (each at 1 - alpha) on a proportion, k of n."""

    def cdf(j: int, p: float) -> float:  # P(X <= j), X ~ Binomial(n, p)
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(j + 1))

    def solve(f, lo: float = 0.0, hi: float = 1.0) -> float:  # f decreasing in p: root
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(lambda p: alpha - (1 - cdf(k - 1, p)), 0.0, 1.0)
    high = 1.0 if k == n else solve(lambda p: cdf(k, p) - alpha, 0.0, 1.0)
    return low, high


def _inside(lo: float, hi: float, band: tuple[float, float, bool, bool]) -> bool:
    """Whether the interval [lo, hi] lies inside the band of values meeting the target."""
    b_lo, b_hi, strict_lo, strict_hi = band
    return (lo > b_lo if strict_lo else lo >= b_lo) and (hi < b_hi if strict_hi else hi <= b_hi)


def _outside(lo: float, hi: float, band: tuple[float, float, bool, bool]) -> bool:
    """Whether the interval [lo, hi] lies wholly where the target is not met."""
    b_lo, b_hi, strict_lo, strict_hi = band
    below = hi <= b_lo if strict_lo else hi < b_lo
    above = lo >= b_hi if strict_hi else lo > b_hi
    return below or above


def _sign_rule(meets: Sequence[bool], method: str, look: int | None) -> Decision:
    """The exact binomial rule on which seeds meet the target (``holds`` when a coin would give
    as many with probability <= the look's rate; ``fails`` when as few)."""
    n, k = len(meets), sum(meets)
    p_hold, p_fail = binomial_tail(k, n), binomial_tail(n - k, n)
    verdict = (
        "holds" if p_hold <= LOOK_ALPHA else "fails" if p_fail <= LOOK_ALPHA else "inconclusive"
    )
    low, high = _clopper_pearson(k, n, LOOK_ALPHA)
    return Decision(
        verdict, n, (low, high), LEVEL, method, look, p_hold, "fraction meeting the target"
    )


def decide(target: str, values: Sequence[float | int | bool | None]) -> Decision:
    """A finding's verdict from its per-seed ``values`` and its ``target`` (the rule above).

    Args:
        target: ``>= x``, ``> x``, ``<= x``, ``< x``, ``== x``, ``within P% of x``, ``is true``
            or ``is false`` (validated by the caller).
        values: one measurement per seed; a missing, NaN or infinite one makes the finding
            ``not measured``.

    Returns:
        The ``Decision``.
    """
    n, look = len(values), look_of(len(values))
    t = target.strip().lower()
    unmeasured = [
        v for v in values if v is None or (not isinstance(v, bool) and not math.isfinite(v))
    ]
    if not values or unmeasured:
        return Decision("not measured", n, (None, None), LEVEL, "none", look)
    if t in ("is true", "is false"):
        return _sign_rule([bool(v) is (t == "is true") for v in values], "exact binomial", look)
    xs = [float(v) for v in values]
    band = target_band(t)
    if n < 2:
        return Decision("inconclusive", n, (None, None), LEVEL, "student-t", look)
    mean = math.fsum(xs) / n
    s = sample_std(xs)
    if s <= 1e-12 * max(1.0, abs(mean)):  # no spread: the t-interval would be a point
        meets = [_inside(x, x, band) for x in xs]
        return _sign_rule(meets, "exact binomial, no spread", look)
    half = t_quantile(LEVEL, n - 1) * s / math.sqrt(n)
    lo, hi = mean - half, mean + half
    verdict = (
        "holds" if _inside(lo, hi, band) else "fails" if _outside(lo, hi, band) else "inconclusive"
    )
    p_value = _p_value(mean, s, n, band)
    return Decision(verdict, n, (lo, hi), LEVEL, "student-t", look, p_value)


def _p_value(mean: float, s: float, n: int, band: tuple[float, float, bool, bool]) -> float:
    """One-sided t-test p-value that the mean lies inside the band (the larger of the two
    one-sided tests for a two-sided band: equivalence)."""
    se = s / math.sqrt(n)
    b_lo, b_hi = band[0], band[1]
    ps = []
    if math.isfinite(b_lo):
        ps.append(_t_sf((mean - b_lo) / se, n - 1))
    if math.isfinite(b_hi):
        ps.append(_t_sf((b_hi - mean) / se, n - 1))
    return max(ps)


def holm(p_values: Sequence[float | None], alpha: float = LOOK_ALPHA) -> list[bool]:
    """Holm's step-down rule over a family of one-sided p-values: which are rejected at
    familywise rate ``alpha`` (a None is never rejected and counts in the family)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: math.inf if p_values[i] is None else p_values[i])
    out = [False] * m
    for rank, i in enumerate(order):
        p = p_values[i]
        if p is None or p > alpha / (m - rank):
            break
        out[i] = True
    return out
