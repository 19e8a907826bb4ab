"""Small MLPs and CNNs used by several papers (Path-SGD, WRM, GAT, obfuscated gradients).

* ``MLP``: fully connected net, e.g. Path-SGD's 2 x 4000 ReLU network.
* ``SmallCNN``: two conv + pool stages and a hidden FC layer, for MNIST-sized images.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from paperzoo.models.registry import MODELS

_ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "elu": nn.ELU,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
    "softplus": nn.Softplus,
}


def activation(name: str) -> nn.Module:
    """A fresh activation module by name (relu, elu, tanh, gelu, softplus)."""
    try:
        return _ACTIVATIONS[name]()
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; choose from {sorted(_ACTIVATIONS)}"
        ) from None


class MLP(nn.Module):
    """Flatten, then ``Linear -> act [-> Dropout]`` per hidden layer, then a linear output.

    Args:
        in_features: size of the flattened input.
        hidden: widths of the hidden layers.
        num_classes: output size.
        act: activation name.
        dropout: dropout probability after each hidden activation (0: none).

    Shapes:
        x: (B, *) with prod(*) == in_features -> (B, num_classes)
    """

    def __init__(
        self,
        *,
        in_features: int,
        hidden: Sequence[int] = (256, 256),
        num_classes: int = 10,
        act: str = "relu",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), activation(act)]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)
        self.in_features = in_features

    def forward(self, x: Tensor) -> Tensor:
        if x[0].numel() != self.in_features:
            raise ValueError(
                f"MLP expects {self.in_features} input features, got {tuple(x.shape[1:])}"
            )
        return self.net(x)


class SmallCNN(nn.Module):
    """conv3x3(c1) -> act -> maxpool2 -> conv3x3(c2) -> act -> maxpool2 -> FC(hidden) -> act -> FC.

    Shapes:
        x: (B, in_chans, H, W) with H, W divisible by 4 -> (B, num_classes)
    """

    def __init__(
        self,
        *,
        in_chans: int = 1,
        num_classes: int = 10,
        image_size: int = 28,
        channels: Sequence[int] = (32, 64),
        hidden: int = 128,
        act: str = "relu",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        c1, c2 = channels
        feat = image_size // 4
        self.features = nn.Sequential(
            nn.Conv2d(in_chans, c1, 3, padding=1),
            activation(act),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1),
            activation(act),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Linear(c2 * feat * feat, hidden),
            activation(act),
            nn.Dropout(dropout) if dropout > 0 else nn.Identity(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


@MODELS.register("mlp")
def mlp(**kw: object) -> MLP:
    return MLP(**kw)  # type: ignore[arg-type]


@MODELS.register("small_cnn")
def small_cnn(**kw: object) -> SmallCNN:
    return SmallCNN(**kw)  # type: ignore[arg-type]
