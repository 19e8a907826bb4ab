"""The settings of each scale (``Config``, ``CONFIGS``), the paper's Table 6 test errors
(``PAPER_TEST_ERROR``), the claims (``CLAIMS``) and the depth of a net's name (``net_depth``)."""

from __future__ import annotations

from dataclasses import dataclass

from paperzoo.experiments.base import ClaimSpec


@dataclass(frozen=True)
class Config:
    plain_shallow: str  # shallow plain net of the degradation claims (paper: plain20)
    plain_deep: str  # deep plain net (paper: plain56)
    res_shallow: str  # ResNet twin of the shallow net (for the figure)
    res_deep: str  # ResNet twin of the deep net (paper: resnet56)
    more: tuple[str, ...]  # further nets trained for Fig. 6 / Table 6
    steps: int  # optimisation steps per net (paper: 64k)
    batch_size: int  # global batch (paper: 128), split across DDP ranks
    lr: float  # initial learning rate (paper: 0.1)
    milestones: tuple[int, ...]  # lr divided by 10 at these steps (paper: 32k, 48k)
    warmup_steps: int  # lr x 0.1 for this many steps for nets of depth >= 110 (paper: ~400)
    momentum: float  # SGD momentum (0.9)
    weight_decay: float  # L2 weight decay (1e-4)
    pad: int  # random-crop padding (4; 0: no crop)
    flip: bool  # random horizontal flips
    n_val: int  # training images held out for validation (paper: 5k; 0: none)
    n_train: int | None  # use only this many training images (None: all)
    n_test: int | None  # evaluate on at most this many test images (None: all)
    loss_window: int  # final training loss = mean over this many last steps
    log_every: int  # steps per logged (averaged) training record
    eval_every: int  # steps between validation evaluations (0: only at the end; none if n_val=0)
    channels_last: bool  # engine option: channels-last memory format
    compile: bool  # engine option: torch.compile when available
    downsample: int = 1  # average-pool train and test images by this factor (1: as loaded)
    # under torchrun with several processes: train every net over all of them (DDP) instead of
    # one net per process (docs/resnet.md, "Under torchrun"); the same computation either way
    data_parallel: bool = False


# Table 6 test errors (%) on CIFAR-10, shown beside ours at full scale.
PAPER_TEST_ERROR = {
    "resnet20": 8.75,
    "resnet32": 7.51,
    "resnet44": 7.17,
    "resnet56": 6.97,
    "resnet110": 6.43,
    "resnet1202": 7.93,
}


def _at_most(paper_err: float, rel_tol: float = 0.10) -> str:
    """A one-sided target for a test error (%): ``<= paper + rel_tol * paper`` (2 decimals)."""
    return f"<= {paper_err * (1 + rel_tol):.2f}"


_DEGRADATION_PAPER = "> 0 (Fig. 1, 6)"
CLAIMS = (
    ClaimSpec(
        "degradation.plain_deep_vs_shallow.train_loss",
        "final training loss of the deep plain net minus that of the shallow plain net, same "
        "steps (degradation: positive)",
        _DEGRADATION_PAPER,
        "> 0",
    ),
    ClaimSpec(
        "degradation.residual_deep_vs_plain_deep.train_loss",
        "final training loss of the deep ResNet minus that of the equally deep plain net "
        "(residual learning fixes degradation: negative)",
        "< 0 (Fig. 6)",
        "< 0",
    ),
    # The headline's second half (Sec. 4.2, Fig. 6): the deeper residual net trains to a lower
    # error than the shallower nets, residual and plain. Paper orderings, at every scale.
    ClaimSpec(
        "degradation.residual_deep_vs_residual_shallow.train_loss",
        "final training loss of the deep ResNet minus that of the shallow ResNet (deeper residual "
        "nets train to lower error: negative)",
        "< 0 (Fig. 6)",
        "< 0",
    ),
    ClaimSpec(
        "degradation.residual_deep_vs_plain_shallow.train_loss",
        "final training loss of the deep ResNet minus that of the shallow plain net (negative)",
        "< 0 (Fig. 6)",
        "< 0",
    ),
    # Table 6 / Fig. 6 test errors (%), for the nets trained at every scale (ResNet-32/44/110 are
    # trained at full scale only and judged there, below). Full: one-sided, at most the paper's
    # CIFAR-10 error plus 10 % of it (0.64-0.88 points; a lower error than the paper's is no
    # failure). Why 10 %: the paper's only reported spread is ResNet-110's 0.16 std over 5 runs
    # (6.61 +- 0.16 against its best 6.43), and our nets train on the 45k split, so a run may
    # land a few tenths above the paper's best for reasons that are not the method. Quick (7x7
    # digits, not CIFAR): the ResNets generalise, at most 15 % test error (set from the
    # validation error of a probe, 10.4 / 9.2 % on 500 held-out training digits; docs/resnet.md).
    ClaimSpec(
        "test_err.residual_shallow",
        "test error (%) of the shallow ResNet (ResNet-20; CIFAR-10 at full scale)",
        8.75,
        {"quick": "<= 15", "full": _at_most(8.75)},
    ),
    ClaimSpec(
        "test_err.residual_deep",
        "test error (%) of the deep ResNet (ResNet-56; CIFAR-10 at full scale)",
        6.97,
        {"quick": "<= 15", "full": _at_most(6.97)},
    ),
    # The other depths of Table 6, trained at full scale only (``_FULL_MORE``).
    *(
        ClaimSpec(
            f"test_err.resnet{d}",
            f"test error (%) of ResNet-{d} on CIFAR-10 (Table 6)",
            PAPER_TEST_ERROR[f"resnet{d}"],
            _at_most(PAPER_TEST_ERROR[f"resnet{d}"]),
            scales=("full",),
        )
        for d in (32, 44, 110)
    ),
    ClaimSpec(
        "test_err.plain_deep_vs_shallow",
        "test error (percentage points) of the deep plain net minus that of the shallow plain net "
        "(plain-56 is worse than plain-20 also on test data; Fig. 6 left: about 13.5 vs 9.5 %)",
        "~ +4 (Fig. 6)",
        {"quick": "> 0", "full": "> 2"},
    ),
    # Sizes hold by construction of the architectures: checks.
    ClaimSpec("params.resnet20", "parameters of CIFAR ResNet-20 (Table 6)", 0.27e6, "within 2% of 0.27e6", kind="check"),
    ClaimSpec("params.resnet32", "parameters of CIFAR ResNet-32 (Table 6)", 0.46e6, "within 2% of 0.46e6", kind="check"),
    ClaimSpec("params.resnet44", "parameters of CIFAR ResNet-44 (Table 6)", 0.66e6, "within 2% of 0.66e6", kind="check"),
    ClaimSpec("params.resnet56", "parameters of CIFAR ResNet-56 (Table 6)", 0.85e6, "within 2% of 0.85e6", kind="check"),
    ClaimSpec("params.resnet110", "parameters of CIFAR ResNet-110 (Table 6)", 1.7e6, "within 2% of 1.7e6", kind="check"),
    ClaimSpec(
        "params.resnet50_imagenet",
        "parameters of ImageNet ResNet-50 (option B shortcuts)",
        25.56e6,
        "within 1% of 25.56e6",
        kind="check",
        unverified="the paper gives no ImageNet parameter counts; 25.56e6 is torchvision's "
        "resnet50 (num_params 25,557,032), docs/paper-numbers.md",
    ),
    ClaimSpec(
        "macs.resnet50_imagenet",
        "multiply-adds of ImageNet ResNet-50 at 224x224 (stride on the 3x3, as torchvision counts)",
        3.8e9,  # Table 1: "3.8x10^9" FLOPs (multiply-adds) for the paper's own bottleneck
        "within 2% of 4.1e9",
        kind="check",
        unverified="the target is torchvision's count for its stride-on-the-3x3 ResNet-50 v1.5 "
        "(4.09 GFLOPS), not the paper's 3.8e9 (Table 1), docs/paper-numbers.md",
    ),
)  # fmt: skip

_FULL_MORE = ("plain32", "plain44", "resnet32", "resnet44", "resnet110")


CONFIGS = {
    "smoke": Config(
        plain_shallow="plain8", plain_deep="plain14", res_shallow="resnet8",
        res_deep="resnet14", more=(), steps=6, batch_size=32, lr=0.1, milestones=(4,),
        warmup_steps=0, momentum=0.9, weight_decay=1e-4, pad=1, flip=False, n_val=0,
        n_train=256, n_test=64, loss_window=3, log_every=1, eval_every=3,
        channels_last=False, compile=False,
    ),
    # Fig. 6 in miniature (docs/resnet.md, "quick"): MNIST digits pooled to 7x7 stay hard to
    # fit, so the nets are still apart when measured; lr 0.01 throughout (the paper's
    # warm-up rate: ResNet-56 does not start converging at 0.05-0.1 here, as ResNet-110 at
    # 0.1 in §4.2), /10 at 50 % and 75 % of the steps as §4.2's 32k/48k of 64k.
    "quick": Config(
        plain_shallow="plain20", plain_deep="plain56",
        res_shallow="resnet20", res_deep="resnet56", more=(), steps=1500, batch_size=64,
        lr=0.01, milestones=(750, 1125), warmup_steps=0, momentum=0.9, weight_decay=1e-4,
        pad=1, flip=False, n_val=0, n_train=None, n_test=None, loss_window=300, log_every=10,
        eval_every=0, channels_last=True, compile=False, downsample=4,
    ),
    "full": Config(
        plain_shallow="plain20", plain_deep="plain56",
        res_shallow="resnet20", res_deep="resnet56", more=_FULL_MORE, steps=64_000,
        batch_size=128, lr=0.1, milestones=(32_000, 48_000), warmup_steps=400, momentum=0.9,
        weight_decay=1e-4, pad=4, flip=True, n_val=5_000, n_train=None, n_test=None,
        loss_window=500, log_every=100, eval_every=2_000, channels_last=True, compile=False,
    ),
}  # fmt: skip


def net_depth(name: str) -> int:
    """``"plain56"`` -> 56 (any 6n+2 depth, not only the registered ones)."""
    for prefix in ("resnet", "plain"):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return int(name[len(prefix) :])
    raise ValueError(f"expected a CIFAR net name like 'resnet56' or 'plain20', got {name!r}")
