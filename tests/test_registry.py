import pytest

from paperzoo import create_model, list_models
from paperzoo.registry import Registry


def test_register_create_and_names():
    reg: Registry[tuple] = Registry("thing")

    @reg.register("pair")
    def pair(*, a: int, b: int = 2) -> tuple:
        return (a, b)

    assert reg.create("pair", a=1) == (1, 2)
    assert reg.names() == ["pair"] and "pair" in reg and len(reg) == 1


def test_duplicate_name_raises():
    reg: Registry[int] = Registry("thing")
    reg.register("x")(lambda: 1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("x")(lambda: 2)


def test_unknown_kwarg_is_rejected_with_accepted_list():
    reg: Registry[int] = Registry("thing")
    reg.register("f")(lambda *, depth=1: depth)
    with pytest.raises(
        TypeError, match=r"unknown argument\(s\) \['detph'\].*accepted: \['depth'\]"
    ):
        reg.create("f", detph=3)


def test_unknown_name_suggests_close_matches():
    reg: Registry[int] = Registry("model")
    reg.register("resnet56")(lambda: 1)
    with pytest.raises(KeyError, match="did you mean resnet56"):
        reg.create("resnet65")


def test_forwarding_factory_reports_bad_kwarg():
    with pytest.raises(TypeError, match="model 'mlp'.*unexpected keyword argument 'widht'"):
        create_model("mlp", in_features=4, widht=3)


def test_public_model_registry_lists_shared_models():
    names = list_models()
    for n in ("mlp", "small_cnn", "wrm_cnn", "coordconv_painter"):
        assert n in names
