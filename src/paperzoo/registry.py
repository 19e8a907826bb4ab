"""A small typed registry: variants are registered factories, looked up by name.

Every family of things paperzoo can build by name (models, experiments, data sources) lives in one
``Registry``. Registering a name twice raises; creating with an unknown keyword argument raises a
``TypeError`` that names the factory and lists what it accepts, instead of being silently ignored.
A registry may be given ``populate``, which imports the modules that register into it: it runs on
the first look-up, so importing the registry's module does not import every source.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])


class Registry(Generic[T]):
    """Maps names to factories returning ``T``.

    Args:
        kind: what is registered ("model", "experiment", ...), used in error messages.
        populate: called once, before the first look-up (``get``, ``create``, ``names``, ``in``,
            ``len``), to import the modules that register their factories.
    """

    def __init__(self, kind: str, *, populate: Callable[[], object] | None = None) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[..., T]] = {}
        self._populate = populate

    def _ensure_populated(self) -> None:
        populate, self._populate = self._populate, None
        if populate is not None:
            try:
                populate()
            except BaseException:
                self._populate = populate  # retried on the next look-up
                raise

    def populate_later(self, populate: Callable[[], object]) -> None:
        """Run ``populate`` before the next look-up (after the one given at construction, if
        that has not run yet), to register factories whose modules cannot be imported now."""
        first = self._populate

        def both() -> None:
            if first is not None:
                first()
            populate()

        self._populate = both

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator registering ``fn`` under ``name``; a duplicate name raises ``ValueError``."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def deco(fn: F) -> F:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._factories[name] = fn  # type: ignore[assignment]
            return fn

        return deco

    def get(self, name: str) -> Callable[..., T]:
        """The factory registered under ``name``; ``KeyError`` with close matches otherwise."""
        self._ensure_populated()
        try:
            return self._factories[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._factories, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise KeyError(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            ) from None

    def create(self, name: str, **kwargs: object) -> T:
        """Build the registered ``name`` with ``kwargs``; unknown keyword arguments raise."""
        factory = self.get(name)
        sig = inspect.signature(factory)
        params = sig.parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            accepted = [
                p.name
                for p in params
                if p.kind
                in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            ]
            unknown = sorted(set(kwargs) - set(accepted))
            if unknown:
                raise TypeError(
                    f"{self.kind} {name!r} got unknown argument(s) {unknown}; accepted: {accepted}"
                )
        try:
            return factory(**kwargs)
        except TypeError as err:
            # Factories that forward **kwargs to a keyword-only constructor fail there; name them.
            if "unexpected keyword argument" in str(err):
                raise TypeError(f"{self.kind} {name!r}: {err}") from err
            raise

    def names(self) -> list[str]:
        """Registered names, sorted."""
        self._ensure_populated()
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        self._ensure_populated()
        return name in self._factories

    def __len__(self) -> int:
        self._ensure_populated()
        return len(self._factories)
