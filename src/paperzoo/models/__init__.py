"""Models, each an ``nn.Module`` usable on its own tensors; importing this package registers every
model in ``MODELS`` (``create_model("resnet20")``, ``list_models()``).

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

import paperzoo.models as _pkg
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
from paperzoo.utils.modules import import_submodules

import_submodules(_pkg)

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
