"""One way to write a number in tables, reports and notes."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["format_number"]


def format_number(
    v: Any,
    *,
    digits: int = 4,
    fixed: bool = False,
    sci_digits: int | None = None,
    none: str = "—",
) -> str:
    """``v`` as a table cell: ``None`` -> ``none``, booleans -> yes / no, integers as they are,
    NaN and infinities spelled out, other floats with ``digits`` significant digits (``fixed``:
    ``digits`` decimals, trailing zeros dropped) and, below 1e-3 or from 1e5 up, in scientific
    notation with ``sci_digits`` significant digits (default ``digits``). Anything else: ``str``.

    Examples: ``format_number(0.12345) == "0.1235"``, ``format_number(0.5, fixed=True) == "0.5"``,
    ``format_number(123456.0, sci_digits=2) == "1.2e+05"``.
    """
    if v is None:
        return none
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if not isinstance(v, float):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.{sci_digits if sci_digits is not None else digits}g}"
    if fixed:
        return f"{v:.{digits}f}".rstrip("0").rstrip(".")
    return f"{v:.{digits}g}"
