"""Path-SGD refuses, when it is built, models it cannot handle and parameters of other models."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.optim import PathSGD
from paperzoo.optim.path_sgd_graph import UnsupportedLayerError


class FunctionalReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.relu(self.fc1(x)))


class ConvFunctional(nn.Module):
    """Conv first: the input shape is unknown when the optimizer is built."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.fc = nn.Linear(2 * 6 * 6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(torch.tanh(self.conv(x)).flatten(1))


class Reused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.act(self.fc(x)))


class Branching(nn.Module):
    """Data-dependent control flow: not traceable; the probe decides at the first step."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 6)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x: Tensor) -> Tensor:
        h = self.act(self.fc1(x))
        if bool(h.sum() > -1e9):
            h = h + x
        return self.fc2(h)


class Plain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.act = nn.ReLU()
        self.flat = nn.Flatten()
        self.fc = nn.Linear(2 * 6 * 6, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.flat(self.act(self.conv(x))))


class Viewed(Plain):
    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.act(self.conv(x)).view(x.size(0), -1))


@pytest.mark.parametrize(
    ("net", "match"),
    [
        (FunctionalReLU(), r"FunctionalReLU\.forward calls .*relu \(after layer 'fc1'\)"),
        (ConvFunctional(), r"ConvFunctional\.forward calls .*tanh"),
        (Reused(), r"Reused\.forward is not a plain chain: layer\(s\) \['fc'\]"),
        (Viewed(), r"Viewed\.forward calls \.size\(\)"),
    ],
)
def test_functional_operations_are_refused_when_built(net: nn.Module, match: str) -> None:
    with pytest.raises(UnsupportedLayerError, match=match):
        PathSGD(net, lr=0.1)


def test_untraceable_forward_is_checked_on_a_probe() -> None:
    with pytest.raises(UnsupportedLayerError, match="Branching"):
        PathSGD(Branching(), lr=0.1)  # input shape known (a Linear first): probed when built


def test_plain_chain_of_modules_is_accepted() -> None:
    net = Plain()
    opt = PathSGD(net, lr=0.1)
    x = torch.rand(2, 1, 8, 8)
    net(x).sum().backward()
    before = net.fc.weight.detach().clone()
    opt.step()
    assert not torch.equal(before, net.fc.weight)


def test_add_param_group_refuses_parameters_of_another_model() -> None:
    net, other = Plain(), Plain()
    opt = PathSGD([net.conv.weight], lr=0.1, model=net)
    with pytest.raises(ValueError, match="does not belong"):
        opt.add_param_group({"params": other.fc.parameters()})
    with pytest.raises(ValueError, match="does not belong"):
        opt.add_param_group({"params": nn.Parameter(torch.zeros(3))})
    opt.add_param_group({"params": net.fc.parameters(), "lr": 0.01})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["lr"] == 0.01
