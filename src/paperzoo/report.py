"""results.json and report.md: the paper's numbers beside ours, with ``holds`` computed."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperzoo.utils.io import atomic_write_text

_CMP = re.compile(r"^\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*$")
_WITHIN = re.compile(r"^\s*within\s+([0-9.]+)\s*%\s+of\s+([-+0-9.eE]+)\s*$")


def validate_target(target: str) -> None:
    """Raise ``ValueError`` unless ``target`` is a target string ``evaluate_target`` understands."""
    t = target.strip().lower()
    if t in ("reported", "is true", "is false") or _CMP.match(t) or _WITHIN.match(t):
        return
    raise ValueError(f"cannot parse claim target {target!r}")


def evaluate_target(target: str, measured: float | int | bool | None) -> bool | None:
    """Whether ``measured`` meets ``target``; ``None`` when there is nothing to judge.

    Targets: ``">= x"``, ``"> x"``, ``"<= x"``, ``"< x"``, ``"== x"``, ``"within P% of x"``,
    ``"is true"``, ``"is false"``, and ``"reported"`` (no target: holds is ``None``).
    """
    t = target.strip().lower()
    if t == "reported" or measured is None:
        return None
    if t in ("is true", "is false"):
        if not isinstance(measured, bool):
            raise ValueError(f"target {target!r} needs a boolean measurement, got {measured!r}")
        return measured is (t == "is true")
    value = float(measured)
    if math.isnan(value):
        return False
    if m := _CMP.match(t):
        op, x = m.group(1), float(m.group(2))
        return {
            ">=": value >= x,
            "<=": value <= x,
            ">": value > x,
            "<": value < x,
            "==": value == x,
        }[op]
    if m := _WITHIN.match(t):
        pct, x = float(m.group(1)), float(m.group(2))
        return abs(value - x) <= pct / 100.0 * abs(x)
    raise ValueError(f"cannot parse claim target {target!r}")


@dataclass
class ClaimResult:
    id: str
    statement: str
    paper: float | str | None
    measured: float | int | bool | None
    target: str

    @property
    def holds(self) -> bool | None:
        return evaluate_target(self.target, self.measured)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "statement": self.statement,
            "paper": self.paper,
            "measured": self.measured,
            "target": self.target,
            "holds": self.holds,
        }


@dataclass
class Result:
    paper: str
    title: str
    scale: str
    seed: int
    device: str
    wall_seconds: float
    paperzoo_version: str
    torch_version: str
    data: list[dict[str, Any]]
    claims: list[ClaimResult]
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "paper": self.paper,
            "title": self.title,
            "scale": self.scale,
            "seed": self.seed,
            "device": self.device,
            "wall_seconds": round(self.wall_seconds, 1),
            "paperzoo_version": self.paperzoo_version,
            "torch_version": self.torch_version,
            "data": self.data,
            "claims": [c.to_dict() for c in self.claims],
            "figures": self.figures,
            "notes": self.notes,
            "details": self.details,
        }

    @property
    def all_hold(self) -> bool:
        return all(c.holds is not False for c in self.claims)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:.4f}".rstrip("0").rstrip(".")
    return str(v)


def render_markdown(result: Result) -> str:
    """report.md: header, data, the claim table, notes, figures."""
    lines = [
        f"# {result.title}",
        "",
        f"`paperzoo reproduce {result.paper} --scale {result.scale} --seed {result.seed}` "
        f"on {result.device}, {result.wall_seconds:.1f} s "
        f"(paperzoo {result.paperzoo_version}, torch {result.torch_version})",
        "",
    ]
    if result.data:
        lines.append("Data: " + "; ".join(
            f"{d['name']} ({d['source']}, {d['n_train']} train / {d['n_test']} test)"
            for d in result.data
        ))  # fmt: skip
        lines.append("")
    lines += ["| claim | paper | ours | target | holds |", "|---|---|---|---|---|"]
    for c in result.claims:
        holds = {True: "✅", False: "❌", None: "—"}[c.holds]
        lines.append(
            f"| `{c.id}`<br>{c.statement} | {_fmt(c.paper)} | {_fmt(c.measured)} "
            f"| {c.target} | {holds} |"
        )
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    if result.figures:
        lines += ["", "## Figures", ""] + [f"![{Path(f).stem}]({f})" for f in result.figures]
    return "\n".join(lines) + "\n"


def write_report(result: Result, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``out_dir/results.json`` and ``out_dir/report.md`` atomically."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jpath, mpath = out / "results.json", out / "report.md"
    atomic_write_text(jpath, json.dumps(result.to_dict(), indent=2) + "\n")
    atomic_write_text(mpath, render_markdown(result))
    return jpath, mpath
