"""load_torchvision_state_dict: a torchvision-layout state dict, built here by hand (no
torchvision, no download), loads into our ResNet and gives the output of a reference forward
pass computed from the same tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from paperzoo.models.resnet import (
    BasicBlock,
    Bottleneck,
    ResNet,
    load_torchvision_state_dict,
    torchvision_key,
)

WIDTHS = (64, 128, 256, 512)


def _bn(sd: dict[str, Tensor], prefix: str, c: int, g: torch.Generator) -> None:
    sd[f"{prefix}.weight"] = 1 + 0.1 * torch.randn(c, generator=g)
    sd[f"{prefix}.bias"] = 0.1 * torch.randn(c, generator=g)
    sd[f"{prefix}.running_mean"] = 0.1 * torch.randn(c, generator=g)
    sd[f"{prefix}.running_var"] = 0.5 + torch.rand(c, generator=g)
    sd[f"{prefix}.num_batches_tracked"] = torch.tensor(7)


def _conv(sd: dict[str, Tensor], key: str, cout: int, cin: int, k: int, g: torch.Generator):
    sd[key] = torch.randn(cout, cin, k, k, generator=g) * (2 / (cin * k * k)) ** 0.5


def torchvision_layout(layers: tuple[int, ...], bottleneck: bool, classes: int) -> dict:
    """The key names and shapes of torchvision.models.resnet{18,50}-style weights."""
    g = torch.Generator().manual_seed(0)
    sd: dict[str, Tensor] = {}
    _conv(sd, "conv1.weight", 64, 3, 7, g)
    _bn(sd, "bn1", 64, g)
    expansion = 4 if bottleneck else 1
    cin = 64
    for i, (width, count) in enumerate(zip(WIDTHS, layers, strict=True)):
        for j in range(count):
            p = f"layer{i + 1}.{j}"
            stride = 2 if i > 0 and j == 0 else 1
            if bottleneck:
                shapes = [(width, cin, 1), (width, width, 3), (width * 4, width, 1)]
            else:
                shapes = [(width, cin, 3), (width, width, 3)]
            for k, (co, ci, ks) in enumerate(shapes, start=1):
                _conv(sd, f"{p}.conv{k}.weight", co, ci, ks, g)
                _bn(sd, f"{p}.bn{k}", co, g)
            if stride != 1 or cin != width * expansion:
                _conv(sd, f"{p}.downsample.0.weight", width * expansion, cin, 1, g)
                _bn(sd, f"{p}.downsample.1", width * expansion, g)
            cin = width * expansion
    sd["fc.weight"] = 0.05 * torch.randn(classes, cin, generator=g)
    sd["fc.bias"] = 0.05 * torch.randn(classes, generator=g)
    return sd


def reference_forward(sd: dict[str, Tensor], x: Tensor, bottleneck: bool) -> Tensor:
    """torchvision's ResNet forward (v1.5: the stride on the 3x3), written with F.* only."""

    def bn(t: Tensor, p: str) -> Tensor:
        return F.batch_norm(t, sd[f"{p}.running_mean"], sd[f"{p}.running_var"],
                            sd[f"{p}.weight"], sd[f"{p}.bias"], False, 0.0, 1e-5)  # fmt: skip

    x = F.relu(bn(F.conv2d(x, sd["conv1.weight"], stride=2, padding=3), "bn1"))
    x = F.max_pool2d(x, 3, 2, 1)
    for i in range(1, 5):
        j = 0
        while f"layer{i}.{j}.conv1.weight" in sd:
            p, s = f"layer{i}.{j}", 2 if i > 1 and j == 0 else 1
            convs = ["conv1", "conv2", "conv3"] if bottleneck else ["conv1", "conv2"]
            out = x
            for k, c in enumerate(convs):
                w = sd[f"{p}.{c}.weight"]
                strided = c == ("conv2" if bottleneck else "conv1")
                out = bn(F.conv2d(out, w, stride=s if strided else 1, padding=w.shape[-1] // 2),
                         f"{p}.bn{k + 1}")  # fmt: skip
                if k < len(convs) - 1:
                    out = F.relu(out)
            short = x
            if f"{p}.downsample.0.weight" in sd:
                short = bn(F.conv2d(x, sd[f"{p}.downsample.0.weight"], stride=s),
                           f"{p}.downsample.1")  # fmt: skip
            x = F.relu(out + short)
            j += 1
    return F.linear(x.mean((2, 3)), sd["fc.weight"], sd["fc.bias"])


@pytest.mark.parametrize(
    ("block", "layers"), [(BasicBlock, (2, 1, 1, 1)), (Bottleneck, (1, 2, 1, 1))]
)
def test_torchvision_weights_load_and_compute_the_same_function(block, layers) -> None:  # noqa: ANN001
    bottleneck = block is Bottleneck
    sd = torchvision_layout(layers, bottleneck, classes=7)
    model = ResNet(block=block, layers=layers, num_classes=7).eval()
    load_torchvision_state_dict(model, sd)
    assert torch.equal(model.stem[0].weight, sd["conv1.weight"])
    assert torch.equal(
        model.stages[1][0].shortcut[1].running_var, sd["layer2.0.downsample.1.running_var"]
    )
    x = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.allclose(model(x), reference_forward(sd, x, bottleneck), atol=1e-4, rtol=1e-4)
    # a DataParallel checkpoint's "module." prefix is dropped
    prefixed = {f"module.{k}": v for k, v in sd.items()}
    other = ResNet(block=block, layers=layers, num_classes=7).eval()
    load_torchvision_state_dict(other, prefixed)
    with torch.no_grad():
        assert torch.equal(other(x), model(x))


def test_names_and_refusals() -> None:
    assert torchvision_key("layer3.1.downsample.0.weight") == "stages.2.1.shortcut.0.weight"
    assert torchvision_key("bn1.running_mean") == "stem.1.running_mean"
    assert torchvision_key("fc.bias") == "fc.bias"
    sd = torchvision_layout((1, 1, 1, 1), False, classes=7)
    with pytest.raises(ValueError, match="parameters without a key"):
        load_torchvision_state_dict(
            ResNet(block=BasicBlock, layers=(2, 1, 1, 1), num_classes=7), sd
        )
    with pytest.raises(ValueError, match="keys without a parameter"):
        # option A has no projection shortcuts; torchvision has them where the shape changes
        load_torchvision_state_dict(
            ResNet(block=BasicBlock, layers=(1, 1, 1, 1), num_classes=7, shortcut="A"), sd
        )
    with pytest.raises(ValueError, match="stem"):
        load_torchvision_state_dict(
            ResNet(block=BasicBlock, layers=(1, 1, 1, 1), num_classes=7, stem="small"), sd
        )
