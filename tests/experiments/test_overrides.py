from dataclasses import dataclass, field
from typing import Literal

import pytest

from paperzoo.experiments.overrides import (
    OverrideError,
    apply_overrides,
    config_to_dict,
    parse_set,
)


@dataclass(frozen=True)
class Inner:
    hidden: int = 8
    act: Literal["relu", "elu"] = "relu"


@dataclass(frozen=True)
class Cfg:
    lr: float = 0.1
    steps: int = 10
    limit: int | None = None
    name: str = "x"
    flag: bool = False
    eps: tuple[float, ...] = (0.1,)
    pair: tuple[int, int] = (1, 2)
    inner: Inner = field(default_factory=Inner)
    table: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")


def _apply(**kw: str) -> Cfg:
    return apply_overrides(Cfg(), kw)


def test_typed_values_and_nested_keys():
    cfg = apply_overrides(
        Cfg(),
        parse_set(["lr=1", "steps=20", "limit=null", "name=abc", "flag=true", "eps=[0.1, 0.3]",
                   "pair=[3,4]", "inner.hidden=16", "inner.act=elu"]),
    )  # fmt: skip
    assert cfg.lr == 1.0 and isinstance(cfg.lr, float) and cfg.steps == 20 and cfg.limit is None
    assert cfg.name == "abc" and cfg.flag is True and cfg.eps == (0.1, 0.3) and cfg.pair == (3, 4)
    assert cfg.inner == Inner(16, "elu")
    assert _apply(limit="5").limit == 5 and _apply(eps="0.2").eps == (0.2,)
    assert Cfg() == Cfg(lr=0.1)  # the default config is untouched


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("lrr", "0.1", "did you mean lr"),
        ("inner.hiden", "3", "did you mean hidden"),
        ("lr.x", "3", "has no fields to set"),
        ("steps", "1.5", "expected int"),
        ("steps", "true", "expected int"),
        ("flag", "1", "expected bool"),
        ("limit", "abc", "expected int | None"),
        ("pair", "[1]", "expected tuple"),
        ("inner.act", "tanh", "expected one of"),
        ("table", "{}", "cannot be set from the command line"),
        ("steps", "-1", "steps must be >= 0"),
    ],
)
def test_bad_keys_and_values_name_the_problem(key, value, message):
    with pytest.raises(OverrideError, match=message):
        apply_overrides(Cfg(), {key: value})


def test_parse_set_needs_key_value():
    assert parse_set(["a=1", "a=2", "b.c= x "]) == {"a": "2", "b.c": "x"}
    with pytest.raises(OverrideError, match="KEY=VALUE"):
        parse_set(["novalue"])


def test_config_to_dict_is_json_able():
    d = config_to_dict(Cfg())
    assert d["inner"] == {"hidden": 8, "act": "relu"} and d["eps"] == [0.1] and d["limit"] is None
