"""ResNet / plain nets: sizes from the paper, shortcut options, skip connections, init."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

from paperzoo.models import create_model
from paperzoo.models.resnet import BasicBlock, Bottleneck, CifarResNet, PadShortcut
from paperzoo.utils import count_macs, count_params

# Table 6 (CIFAR-10) and Table 1 / torchvision (ImageNet); exact values of this architecture.
CIFAR_PARAMS = {
    "resnet20": 269_722,  # paper: 0.27M
    "resnet32": 464_154,  # 0.46M
    "resnet44": 658_586,  # 0.66M
    "resnet56": 853_018,  # 0.85M
    "resnet110": 1_727_962,  # 1.7M
    "resnet1202": 19_421_274,  # 19.4M
}
IMAGENET_PARAMS = {
    "resnet18": 11_689_512,
    "resnet34": 21_797_672,
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,
    "resnet152": 60_192_808,
}


@functools.cache
def _default(name: str) -> nn.Module:
    return create_model(name)


@pytest.mark.parametrize("name", sorted(CIFAR_PARAMS))
def test_cifar_param_counts(name: str) -> None:
    assert count_params(_default(name)) == CIFAR_PARAMS[name]
    # the plain twin has exactly the same layers (option A shortcuts have no parameters)
    if name != "resnet1202":
        assert count_params(_default(name.replace("resnet", "plain"))) == CIFAR_PARAMS[name]


@pytest.mark.parametrize("name", sorted(IMAGENET_PARAMS))
def test_imagenet_param_counts(name: str) -> None:
    assert count_params(_default(name)) == IMAGENET_PARAMS[name]
    if name in ("resnet18", "resnet34"):  # plain twins differ by the three projection shortcuts
        proj = sum(c * 2 * c + 2 * 2 * c for c in (64, 128, 256))
        assert (
            count_params(_default(name.replace("resnet", "plain"))) == IMAGENET_PARAMS[name] - proj
        )


def test_imagenet_macs_match_table_1() -> None:
    # Table 1: 1.8 / 3.6 / 3.8 G (4.1 G with the stride on the 3x3, as torchvision counts)
    expected = {"resnet18": 1.8e9, "resnet34": 3.6e9, "resnet50": 4.1e9}
    for name, macs in expected.items():
        assert count_macs(_default(name), (1, 3, 224, 224)) == pytest.approx(macs, rel=0.02)
    v1 = create_model("resnet50", stride_in_1x1=True)
    assert count_macs(v1, (1, 3, 224, 224)) == pytest.approx(3.86e9, rel=0.01)


def test_option_a_has_no_shortcut_params_b_and_c_do() -> None:
    a = create_model("resnet20", shortcut="A")
    b = create_model("resnet20", shortcut="B")
    c = create_model("resnet20", shortcut="C")
    assert count_params(a) == count_params(create_model("plain20"))
    assert sum(isinstance(m, PadShortcut) for m in a.modules()) == 2  # the two stage transitions
    # B: 1x1 conv + BN at the two transitions (16->32, 32->64); C: on all nine blocks
    b_extra = (16 * 32 + 2 * 32) + (32 * 64 + 2 * 64)
    assert count_params(b) - count_params(a) == b_extra
    c_extra = 3 * (16 * 16 + 32) + b_extra + 2 * (32 * 32 + 64) + 2 * (64 * 64 + 128)
    assert count_params(c) - count_params(a) == c_extra


def test_option_a_shortcut_is_subsampled_identity_with_zero_channels() -> None:
    sc = PadShortcut(in_channels=2, out_channels=5, stride=2)
    x = torch.randn(1, 2, 4, 4)
    y = sc(x)
    assert y.shape == (1, 5, 2, 2)
    assert torch.equal(y[:, :2], x[:, :, ::2, ::2]) and not y[:, 2:].any()
    with pytest.raises(ValueError, match="option A cannot reduce"):
        PadShortcut(in_channels=4, out_channels=2, stride=1)


def _zero_residual_branches(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, BasicBlock | Bottleneck):
            norm = m.last_norm
            nn.init.zeros_(norm.weight)
            nn.init.zeros_(norm.bias)


@pytest.mark.parametrize("pair", [("resnet20", "plain20"), ("resnet18", "plain18")])
def test_only_resnets_carry_the_signal_past_a_zeroed_residual_branch(pair: tuple[str, str]) -> None:
    x = torch.randn(4, 3, 32, 32)
    for name in pair:
        model = create_model(name, num_classes=5).eval()
        before = model(x)
        _zero_residual_branches(model)
        after = model(x)
        assert not torch.allclose(before, after)  # the branch mattered in both nets
        spread = (after - after.mean(0)).abs().max().item()
        if name.startswith("resnet"):
            assert spread > 1e-3  # the shortcuts still carry the input to the classifier
        else:
            assert spread < 1e-6  # no skip connection: the output no longer depends on x
            assert all(getattr(m, "shortcut", None) is None for m in model.modules())


def test_zero_init_residual_makes_blocks_start_as_identity() -> None:
    model = create_model("resnet18", zero_init_residual=True, num_classes=3)
    block = model.stages[0][0]
    assert torch.count_nonzero(block.bn2.weight) == 0
    x = torch.relu(torch.randn(2, 64, 8, 8))  # block inputs follow a ReLU
    block.train()
    assert torch.allclose(block(x), x)
    bottleneck = create_model("resnet50", zero_init_residual=True).stages[1][1]
    assert torch.count_nonzero(bottleneck.bn3.weight) == 0


def test_he_init_std() -> None:
    model = create_model("resnet110")
    conv = model.stages[2][5].conv1  # 64 -> 64, 3x3: std = sqrt(2 / (9 * 64))
    assert conv.weight.std().item() == pytest.approx((2 / (9 * 64)) ** 0.5, rel=0.05)
    bn = model.stages[0][0].bn1
    assert torch.all(bn.weight == 1) and torch.all(bn.bias == 0)
    assert torch.all(model.fc.bias == 0)


@pytest.mark.parametrize(
    ("name", "kw", "shape"),
    [
        ("resnet20", {"in_chans": 1}, (2, 1, 28, 28)),
        ("resnet20", {"in_chans": 1}, (2, 1, 8, 8)),
        ("resnet18", {"in_chans": 1}, (2, 1, 28, 28)),
        ("resnet18", {"in_chans": 1, "stem": "small"}, (2, 1, 28, 28)),
        ("resnet50", {"in_chans": 3, "shortcut": "A"}, (2, 3, 40, 24)),
        ("plain34", {"in_chans": 3}, (2, 3, 17, 17)),
    ],
)
def test_any_input_shape_and_channels(name: str, kw: dict, shape: tuple[int, ...]) -> None:
    model = create_model(name, num_classes=7, **kw)
    assert model(torch.rand(*shape)).shape == (shape[0], 7)


def test_gradients_reach_every_parameter() -> None:
    model = create_model("resnet20", shortcut="B", num_classes=3)
    model(torch.randn(4, 3, 16, 16)).logsumexp(1).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="6n\\+2"):
        CifarResNet(depth=21)
    with pytest.raises(ValueError, match="shortcut option"):
        create_model("resnet20", shortcut="D")
    with pytest.raises(TypeError, match="resnet20"):
        create_model("resnet20", widht=3)
    with pytest.raises(ValueError, match="stem"):
        create_model("resnet18", stem="tiny")


def test_groupnorm_variant_has_no_batch_statistics() -> None:
    model = create_model("resnet20", norm_layer=lambda c: nn.GroupNorm(4, c))
    assert not any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    x = torch.randn(3, 3, 16, 16)
    model.train()
    assert torch.allclose(model(x)[:1], model(x[:1]), atol=1e-5)  # per-example output
