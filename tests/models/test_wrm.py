"""WRMNet, the MNIST CNN of Sinha et al. (2018): the paper's layout at every width."""

from __future__ import annotations

import pytest
import torch

from paperzoo.engine import seeded
from paperzoo.models import WRMNet, create_model
from paperzoo.utils import count_params


def test_the_papers_width_has_its_layers_and_parameters() -> None:
    net = WRMNet()
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (64, (8, 8), (2, 2)),
        (128, (6, 6), (2, 2)),
        (128, (5, 5), (1, 1)),
    ]
    # conv 1*64*8*8 + 64, conv 64*128*6*6 + 128, conv 128*128*5*5 + 128, dense 128*10 + 10
    assert count_params(net) == 4_160 + 295_040 + 409_728 + 1_290
    assert all(isinstance(m, torch.nn.ELU) for m in net.net[1:6:2])


@pytest.mark.parametrize("width", [4, 16])
def test_a_narrower_copy_maps_28_by_28_digits_to_logits(width: int) -> None:
    net = WRMNet(width=width)
    x = torch.zeros(2, 1, 28, 28)
    assert net.net[:2](x).shape == (2, width, 14, 14)
    assert net.net[:4](x).shape == (2, 2 * width, 5, 5)
    assert net(x).shape == (2, 10)


def test_registered_and_checked() -> None:
    with seeded(0):
        a = create_model("wrm_cnn", width=8)
    with seeded(0):
        b = WRMNet(width=8)
    x = torch.rand(3, 1, 28, 28)
    assert torch.equal(a(x), b(x))
    with pytest.raises(ValueError, match="width"):
        WRMNet(width=0)
