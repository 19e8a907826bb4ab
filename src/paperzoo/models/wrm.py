"""The MNIST network of Sinha, Namkoong & Duchi, "Certifying Some Distributional Robustness with
Principled Adversarial Training", ICLR 2018 (arXiv:1710.10571, Sec. 4.2): ``WRMNet``, an ELU CNN
(conv 8x8/2, conv 6x6/2, conv 5x5/1, dense), smooth as WRM's certificate requires.
"""

from __future__ import annotations

from torch import Tensor, nn

from paperzoo.models.registry import MODELS
from paperzoo.models.small import activation


class WRMNet(nn.Module):
    """The paper's CNN: conv ``width`` 8x8/2, conv ``2 width`` 6x6/2, conv ``2 width`` 5x5/1, dense.

    With 28x28 inputs and 'same'-free convolutions (padding 3 on the first layer, as in the
    official TensorFlow code's SAME padding) the spatial size goes 28 -> 14 -> 5 -> 1. The paper's
    network is ``width=64`` (layers 64-128-128, 710,218 parameters); a smaller width is the same
    layout, narrower.

    Args:
        in_chans: input channels.
        num_classes: outputs.
        width: channels of the first convolution (the others have twice as many).
        act: activation name (the paper: ELU).

    Shapes:
        x: (B, in_chans, 28, 28) -> (B, num_classes)
    """

    def __init__(
        self, *, in_chans: int = 1, num_classes: int = 10, width: int = 64, act: str = "elu"
    ) -> None:
        super().__init__()
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.net = nn.Sequential(
            nn.Conv2d(in_chans, width, 8, stride=2, padding=3),  # 28 -> 14
            activation(act),
            nn.Conv2d(width, 2 * width, 6, stride=2),  # 14 -> 5
            activation(act),
            nn.Conv2d(2 * width, 2 * width, 5, stride=1),  # 5 -> 1
            activation(act),
            nn.Flatten(),
            nn.Linear(2 * width, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


@MODELS.register("wrm_cnn")
def wrm_cnn(**kw: object) -> WRMNet:
    return WRMNet(**kw)  # type: ignore[arg-type]
