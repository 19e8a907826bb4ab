"""``--set key=value``: change fields of an experiment's frozen config dataclass, typed.

Keys are field names, dotted for nested config dataclasses (``model.hidden=256``). A value is
read as JSON when it parses (``0.1``, ``true``, ``null``, ``[0.1, 0.2]``) and as a plain string
otherwise, then checked against the field's annotation: ``int``, ``float``, ``bool``, ``str``,
``X | None``, ``tuple[X, ...]``, ``tuple[X, Y]`` and ``Literal[...]``. Anything else (a tuple of
model specs, a mapping) cannot be set from the command line and says so.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["OverrideError", "apply_overrides", "config_to_dict", "parse_set"]


class OverrideError(ValueError):
    """A ``--set`` key that does not exist or a value of the wrong type."""


def parse_set(items: list[str]) -> dict[str, str]:
    """``["a=1", "b.c=x"]`` -> ``{"a": "1", "b.c": "x"}`` (the last of repeated keys wins)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OverrideError(f"--set takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def apply_overrides(cfg: Any, overrides: Mapping[str, str]) -> Any:
    """A copy of the frozen dataclass ``cfg`` with ``overrides`` applied (typed, validated)."""
    for key, raw in overrides.items():
        cfg = _set(cfg, key.split("."), raw, key)
    return cfg


def config_to_dict(cfg: Any) -> Any:
    """A JSON-able view of a config (dataclasses as dicts, tuples as lists)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: config_to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, list | tuple):
        return [config_to_dict(v) for v in cfg]
    if isinstance(cfg, Mapping):
        return {str(k): config_to_dict(v) for k, v in cfg.items()}
    if cfg is None or isinstance(cfg, bool | int | float | str):
        return cfg
    return str(cfg)


def _set(obj: Any, path: list[str], raw: str, full_key: str) -> Any:
    if not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        raise OverrideError(f"--set {full_key}: {type(obj).__name__} has no fields to set")
    names = [f.name for f in dataclasses.fields(obj)]
    name = path[0]
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; fields: {', '.join(names)}"
        raise OverrideError(f"--set {full_key}: {type(obj).__name__} has no field {name!r}{hint}")
    if len(path) > 1:
        value = _set(getattr(obj, name), path[1:], raw, full_key)
    else:
        hint = typing.get_type_hints(type(obj))[name]
        value = _coerce(_parse(raw), hint, full_key)
    try:
        return dataclasses.replace(obj, **{name: value})
    except (ValueError, TypeError) as err:  # the config's own validation
        raise OverrideError(f"--set {full_key}={raw}: {err}") from None


def _parse(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _coerce(value: Any, hint: Any, key: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    bad = OverrideError(f"--set {key}: expected {_name(hint)}, got {value!r}")
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arm in args:
            if arm is type(None):
                continue
            try:
                return _coerce(value, arm, key)
            except OverrideError:
                continue
        raise bad
    if origin is typing.Literal:
        if value in args:
            return value
        raise OverrideError(f"--set {key}: expected one of {list(args)}, got {value!r}")
    if origin is tuple:
        if not isinstance(value, list):
            value = [value]  # a single value for a one-element tuple: --set eps=0.1
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], key) for v in value)
        if len(value) != len(args):
            raise bad
        return tuple(_coerce(v, a, key) for v, a in zip(value, args, strict=True))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise bad
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise bad
    if hint is str:
        return value if isinstance(value, str) else json.dumps(value)
    raise OverrideError(f"--set {key}: a {_name(hint)} cannot be set from the command line")


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
