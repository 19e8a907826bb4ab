"""Papers from installed packages: the ``paperzoo.papers`` entry point group.

A package declares each of its papers as an entry point whose name is the paper's name and whose
object is its ``paperzoo.paper.Experiment`` subclass::

    [project.entry-points."paperzoo.papers"]
    my-paper = "my_paper.paper:MyPaper"

paperzoo's own pyproject.toml declares its ten papers the same way. On the first look-up in
``EXPERIMENTS`` (``paperzoo.experiments.lookup``) every declared paper is checked
(``paper_problem``) and registered; ``paperzoo list``, ``config``, ``reproduce``, ``merge`` and
``summary`` treat them all alike. A paper of another package that cannot be
loaded (an import error, a name already taken, a claim without a target, ...) is left out with
one warning line naming its package and what is wrong (``PluginError``), and the rest still
work. paperzoo's own papers (entry points into ``paperzoo.``) are not left out: an error loading
one (a missing extra such as matplotlib, or a bug) is raised.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from paperzoo.registry import Registry

__all__ = ["GROUP", "PluginError", "load_plugins", "paper_problem", "recorded_errors"]

GROUP = "paperzoo.papers"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PluginError:
    """A paper an installed package declares that could not be loaded, and why."""

    package: str  # the distribution declaring it (e.g. "my-paper 0.1.0")
    entry_point: str  # "name = module:object"
    problem: str  # one line

    def __str__(self) -> str:
        return (
            f"paper plugin {self.entry_point!r} of package {self.package} is not loaded: "
            f"{self.problem}"
        )


_ERRORS: list[PluginError] = []


def recorded_errors() -> list[PluginError]:
    """The papers of installed packages that could not be loaded so far in this process."""
    return list(_ERRORS)


def paper_problem(name: str, obj: Any, registry: Registry[Any]) -> str | None:
    """Why ``obj``, declared as paper ``name``, cannot be registered in ``registry``; None when it
    can: an ``Experiment`` subclass named ``name`` (a name not taken), with a title, a config for
    every scale and at least one finding, every claim with a target at each scale it declares."""
    from paperzoo.experiments.base import SCALES, ClaimSpec, Experiment

    if not (isinstance(obj, type) and issubclass(obj, Experiment)):
        return f"{obj!r} is not a subclass of paperzoo.paper.Experiment"
    if name in registry and registry.get(name) is not obj:
        return f"a paper named {name!r} is already declared (built in or by another package)"
    if getattr(obj, "name", None) != name:
        return f"its class declares name = {getattr(obj, 'name', None)!r}, not {name!r}"
    if not str(getattr(obj, "title", "") or "").strip():
        return "it declares no title"
    configs = getattr(obj, "configs", None)
    missing = [s for s in SCALES if not configs or s not in configs]
    if missing:
        return f"it declares no config at {', '.join(missing)} (configs needs {', '.join(SCALES)})"
    claims = getattr(obj, "claims", None) or ()
    if not any(isinstance(c, ClaimSpec) and c.kind == "finding" for c in claims):
        return "it declares no finding (claims: ClaimSpec(..., kind='finding'))"
    for c in claims:
        if not isinstance(c, ClaimSpec):
            return f"a claim is {type(c).__name__}, not a ClaimSpec"
        for scale in c.scales:
            if not c.target_at(scale).strip():
                return f"claim {c.id} has no target at {scale}"
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        return f"claim ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}"
    return None


def _entry_points() -> Iterable[metadata.EntryPoint]:
    return metadata.entry_points(group=GROUP)


def _package(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "(unknown package)"


def load_plugins(registry: Registry[Any]) -> list[PluginError]:
    """Register in ``registry`` every paper the installed packages declare (``GROUP``); each one
    that cannot be is logged as one warning line and returned, the others registered."""
    errors: list[PluginError] = []
    seen: set[tuple[str, str]] = set()
    for ep in sorted(_entry_points(), key=lambda e: (e.name, e.value)):
        if (ep.name, ep.value) in seen:  # the same distribution found twice on the path
            continue
        seen.add((ep.name, ep.value))
        where = f"{ep.name} = {ep.value}"
        try:
            obj = ep.load()
            problem = paper_problem(ep.name, obj, registry)
        except Exception as err:  # an import error or a bad declaration, in someone's package
            if ep.value.startswith("paperzoo."):
                raise  # paperzoo's own papers: a missing extra or a bug, reported as such
            problem = f"{type(err).__name__}: {' '.join(str(err).split())}"
        if problem is None:
            if ep.name not in registry:  # (its module may have registered it itself)
                registry.register(ep.name)(obj)
            continue
        error = PluginError(_package(ep), where, problem)
        log.warning("%s", error)
        errors.append(error)
    _ERRORS.extend(errors)
    return errors
