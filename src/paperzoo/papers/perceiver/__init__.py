"""Reproduction of the Perceiver's ImageNet and permuted-ImageNet results (Jaegle et al., 2021,
arXiv:2103.03206, Sec. 4.1, Tab. 1-2).

**Full scale: the paper's experiment** (``--scale full --data-root DIR``, ImageNet in
``DIR/imagenet/{train,val}/<wnid>/``, ``paperzoo.data.imagenet``). Three models are trained, and
evaluated by top-1 accuracy on the 50,000 validation images:

* the paper's ImageNet Perceiver (``IMAGENET``: 224 x 224 RGB pixels + 64-band Fourier features
  with maximum resolution 224, 261 channels; a 512 x 1024 latent array; 8 cross-attends with one
  head, weights shared after the first; a 6-block latent Transformer with 8 heads shared by all
  repeats; 44.9M parameters) on raster-ordered pixels. It is evaluated twice: on raster pixels,
  and on pixels under one fixed random permutation, applied after the crop and after the
  position features are built, so the positions travel with the pixels (Sec. 4.1, "Permuted
  ImageNet"). The paper trains a second Perceiver on the permuted pixels; this run does not:
  with the positions permuted with the pixels, that Perceiver would see the same set of
  (pixel, position) tokens as the raster one, from the same initialisation and the same crops,
  and attention sums over its inputs, so it would compute the raster Perceiver's function up to
  float summation order (the paper reports 78.0 % for both). Its claim is therefore a check,
  measured on the raster-trained model, which halves the cost of the run;
* a ResNet-50 fed RGB + the same Fourier features as image channels ("ResNet-50 (FF)", Tab. 1-2)
  trained on raster and on permuted pixels (the permutation moves the position channels with
  the pixels, as in the paper).

Training, from the paper: Inception-style crops to 224 x 224 and RandAugment; LAMB (You et al.,
2020; ``paperzoo.optim.Lamb``); 120 epochs; learning rate 0.004, divided by 10 at epochs 84, 102
and 114; no dropout. The project's choices where the paper is silent (each marked in
``PerceiverImageNetConfig`` and docs/perceiver.md): batch 1024, LAMB weight decay 0.1 on weight
matrices (biases and normalisation scales: no decay, no trust ratio), LAMB betas (0.9, 0.999) and
eps 1e-6, no warm-up, RandAugment N = 2 and M = 9, the horizontal flip, pixel normalisation
with the ImageNet mean and std, evaluation on the central 224 crop of the image resized to 256,
and the ResNet-50 (FF)'s whole training recipe (SGD with momentum 0.9, lr 0.4 = 0.1 x
batch / 256 after a 5-epoch warm-up, the Perceiver's step decays, weight decay 1e-4, the same
augmentation and 120 epochs; Tab. 1 calls it "our implementation of the baselines" and gives
nothing else).

Batches: the Perceiver computes each rank's share of the batch of 1024 in micro-batches
(``micro_batch``) whose gradients are summed, the same update within one GPU's memory (it has no
batch statistics: LayerNorm normalises each example). The ResNet's batch norm normalises over
ghost batches of ``resnet_bn_batch`` = 32 images of the rank's share (None: the whole share in one
pass), following Goyal et al. (2017, Sec. 2.3), whose large-batch recipe the baseline uses and who
keep batch norm's per-worker batch at n = 32 for every total batch; the statistics then do not
depend on the number of GPUs. Under torchrun the gradients of the micro- or ghost batches are
all-reduced once per step (``DistributedDataParallel.no_sync`` on the others,
``paperzoo.engine.accumulation``). JPEGs are decoded in DataLoader worker processes
(``workers`` per rank, ``prefetch`` batches ahead, pinned memory on CUDA) and moved as uint8
pixels, normalised on the device.

**The digit variant** (any scale with ``--dataset mnist5k|mnist|fashion-mnist``; the default at
smoke and quick, 5,000 embedded digits): the same protocol on 28 x 28 digits with seven small
models, targets on orderings only, not the paper's numbers:

* a Perceiver on raster-ordered pixels, and one on permuted pixels with the positions permuted
  jointly: the architecture has no 2-D prior, so the two match;
* the same Perceiver on permuted pixels with positions left in raster order: the spatial
  information is destroyed for it too, and it drops;
* a ConvNet trained the same way on raster and on permuted pixels: it drops. Like the paper's
  ResNet-50 it is a residual network ending in global average pooling (a CIFAR ResNet-8 of
  ``paperzoo.models.resnet``), so its features are local;
* an MLP on both (permutation-invariant by construction, like the Perceiver; the paper has no
  MLP, so the comparison with it is a reported check);
* the parameter counts of the paper's ImageNet Perceiver with and without weight sharing.

Every digit model gets the same optimiser (AdamW, linear warm-up then cosine decay), batch size,
augmentation and number of steps (only the raster-positions Perceiver, a reported check, may get
fewer: ``raster_pos_steps``). Deviations of the digit variant from the paper: digits instead of
ImageNet, a small Perceiver and a small ConvNet instead of the 45M-parameter Perceiver and a
ResNet-50, AdamW instead of LAMB, one-pixel random translations instead of the paper's ImageNet
augmentation. At full scale it runs only when named with ``--dataset`` (the 60,000-digit config,
``PerceiverImageNetConfig.digits``), and is then marked "not the paper's setting".

Protocol, results and what fails: docs/perceiver.md. This package: ``config.py`` (``Config``,
``PerceiverImageNetConfig``, ``CONFIGS``, ``CLAIMS``), ``training.py`` (the models and their
training loops), ``experiment.py`` (``PerceiverExperiment``: the runs, evaluation and figures).
"""

from paperzoo.papers.perceiver.config import (
    CLAIMS,
    CONFIGS,
    Config,
    PerceiverImageNetConfig,
)
from paperzoo.papers.perceiver.experiment import PerceiverExperiment

__all__ = ["CLAIMS", "CONFIGS", "Config", "PerceiverExperiment", "PerceiverImageNetConfig"]
