"""Models, each an ``nn.Module`` usable on its own tensors; each family registers itself in
``MODELS`` (``create_model("resnet20")``, ``list_models()``), which imports every family on its
first look-up.

* ResNet (He et al., 2015): ``CifarResNet`` (the CIFAR-10 family, 20-1202 layers) and ``ResNet``
  (the ImageNet family, 18-152 layers), with plain (shortcut-free) variants;
  ``load_torchvision_state_dict`` loads torchvision's ResNet weights into ``ResNet``.
* Gated graph neural networks (Li et al., 2016): ``GatedGraphNet``, ``GatedGraphSequenceNet``.
* DRAW (Gregor et al., 2015): ``DRAW`` with ``DRAWConfig``.
* Perceiver (Jaegle et al., 2021): ``Perceiver`` with ``PerceiverConfig``.
* Disentanglement and abstract reasoning (van Steenkiste et al., 2019): ``VAE`` with
  ``VAEConfig``, ``WReN``.
* CoordConv (Liu et al., 2018): ``CoordConvPainter``, ``CoordConvRegressor`` and their
  convolution-only baselines ``DeconvPainter``, ``ConvRegressor``.
* Distributional robustness (WRM, Sinha et al., 2018): ``WRMNet``, the MNIST CNN.
"""

from typing import TYPE_CHECKING

from paperzoo.utils.modules import lazy_exports

if TYPE_CHECKING:
    from paperzoo.models.coordconv import (
        ConvRegressor,
        CoordConvPainter,
        CoordConvRegressor,
        DeconvPainter,
    )
    from paperzoo.models.draw import DRAW, DRAWConfig, DRAWOutput
    from paperzoo.models.ggnn import GatedGraphNet, GatedGraphSequenceNet
    from paperzoo.models.perceiver import Perceiver, PerceiverConfig
    from paperzoo.models.registry import MODELS, create_model, list_models
    from paperzoo.models.resnet import CifarResNet, ResNet, load_torchvision_state_dict
    from paperzoo.models.vae import VAE, VAEConfig, VAEOutput
    from paperzoo.models.wren import WReN
    from paperzoo.models.wrm import WRMNet

# each name is imported from its module on first use: importing this package imports none of them
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ConvRegressor": "paperzoo.models.coordconv",
        "CoordConvPainter": "paperzoo.models.coordconv",
        "CoordConvRegressor": "paperzoo.models.coordconv",
        "DeconvPainter": "paperzoo.models.coordconv",
        "DRAW": "paperzoo.models.draw",
        "DRAWConfig": "paperzoo.models.draw",
        "DRAWOutput": "paperzoo.models.draw",
        "GatedGraphNet": "paperzoo.models.ggnn",
        "GatedGraphSequenceNet": "paperzoo.models.ggnn",
        "Perceiver": "paperzoo.models.perceiver",
        "PerceiverConfig": "paperzoo.models.perceiver",
        "MODELS": "paperzoo.models.registry",
        "create_model": "paperzoo.models.registry",
        "list_models": "paperzoo.models.registry",
        "CifarResNet": "paperzoo.models.resnet",
        "ResNet": "paperzoo.models.resnet",
        "load_torchvision_state_dict": "paperzoo.models.resnet",
        "VAE": "paperzoo.models.vae",
        "VAEConfig": "paperzoo.models.vae",
        "VAEOutput": "paperzoo.models.vae",
        "WReN": "paperzoo.models.wren",
        "WRMNet": "paperzoo.models.wrm",
    },
)


__all__ = [
    "DRAW",
    "MODELS",
    "VAE",
    "CifarResNet",
    "ConvRegressor",
    "CoordConvPainter",
    "CoordConvRegressor",
    "DRAWConfig",
    "DRAWOutput",
    "DeconvPainter",
    "GatedGraphNet",
    "GatedGraphSequenceNet",
    "Perceiver",
    "PerceiverConfig",
    "ResNet",
    "VAEConfig",
    "VAEOutput",
    "WRMNet",
    "WReN",
    "create_model",
    "list_models",
    "load_torchvision_state_dict",
]
