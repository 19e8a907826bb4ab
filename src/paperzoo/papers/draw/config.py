"""DRAW's settings: ``Config`` (one per scale in ``CONFIGS``), the paper's Table 2 bounds
(``PAPER_ATTENTION``, ``PAPER_NO_ATTENTION``), the two models compared (``VARIANTS``) and the
claims (``CLAIMS``). How the quick config departs from the paper's and how it was selected on
validation data: experiment.py's module docstring and docs/draw.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from paperzoo.experiments.base import ClaimSpec
from paperzoo.models.draw import DRAWConfig

PAPER_ATTENTION, PAPER_NO_ATTENTION = 80.97, 87.40


def _plus_2pct(paper_nats: float) -> float:
    """The full scale's one-sided bar for a test bound: the paper's number plus 2 %."""
    return round(paper_nats * 1.02, 2)


VARIANTS = ("attention", "no_attention")


@dataclass(frozen=True)
class Config:
    model: DRAWConfig  # the attention model; the baseline is the same with read_n = write_n = None
    binarization: str  # "threshold" (x > 0.5) or "stochastic" (fixed once, seeded)
    train_steps: int  # optimisation steps per model
    batch_size: int  # images per step
    lr: float  # Adam learning rate
    grad_clip: float | None  # max global gradient norm (None: no clipping)
    lr_decay: float = 1.0  # final learning rate / initial (linear decay over training)
    kl_warmup: int = 0  # steps of linear KL annealing 0 -> 1 in the training loss (0: none)
    n_train: int | None = None  # use only the first n training images (None: all)
    n_test: int | None = None  # use only the first n test images (None: all)
    n_train_eval: int = 1000  # training images on which the train NLL bound is measured
    eval_every: int = 0  # monitor the validation bound every this many steps (0: no monitor)
    n_monitor: int = 500  # training images held out (stratified) as that monitor's validation set
    eval_batch: int = 500  # images per evaluation forward pass
    importance_samples: int = 0  # k of the importance-weighted NLL estimate (0: skip)
    n_iw: int | None = None  # test images for the importance-weighted estimate (None: all)
    log_every: int = 50  # trainer log interval


# Quick: 16 glimpses of 5x5 (read = write grid) instead of the paper's 64 of 2x2 (experiment.py's
# docstring).
QUICK_MODEL = DRAWConfig(steps=16, enc_size=128, dec_size=128, z_size=32, read_n=5, write_n=5)

CONFIGS = {
    "smoke": Config(
        model=DRAWConfig(steps=3, enc_size=16, dec_size=16, z_size=4, read_n=2, write_n=3),
        binarization="threshold",
        train_steps=3,
        batch_size=16,
        lr=1e-3,
        grad_clip=10.0,
        n_train=64,
        n_test=32,
        n_train_eval=32,
        eval_every=2,
        n_monitor=16,
        importance_samples=2,
        log_every=1,
    ),
    "quick": Config(
        model=QUICK_MODEL,
        binarization="threshold",
        train_steps=2000,  # selected on validation data (experiment.py's docstring)
        batch_size=50,
        lr=3e-3,
        grad_clip=10.0,
        kl_warmup=150,
        eval_every=200,
        n_monitor=300,
        importance_samples=10,
        n_iw=500,
    ),
    "full": Config(
        model=DRAWConfig(steps=64, enc_size=256, dec_size=256, z_size=100, read_n=2, write_n=5),
        binarization="stochastic",
        train_steps=120_000,  # 200 epochs of 60,000 digits
        batch_size=100,
        lr=1e-3,
        grad_clip=10.0,
        lr_decay=0.1,
        n_train_eval=10_000,
        eval_every=5_000,
        n_monitor=2_000,
        importance_samples=100,
        n_iw=2_000,
        log_every=100,
    ),
}

CLAIMS = (
    ClaimSpec(
        "mnist.attention.test_nll_bound",
        "DRAW with attention (paper and --scale full: 64 glimpses, 2x2 read, 5x5 write; quick: 16 "
        "glimpses of 5x5, 5x5 write): negative ELBO on binarized test digits, nats per image "
        "(full: at most the paper's 80.97 plus 2 %, 1.62 nats)",
        paper=PAPER_ATTENTION,
        # quick: a smaller model (experiment.py's docstring) that has clearly learned (the mean
        # image scores ~205 nats); full: one-sided, a lower bound than the paper's is no failure.
        # The tolerance (2 %, 1.62 nats) is the project's: the paper reports one run, no spread;
        # 2 % covers a one-sample ELBO estimate over 10,000 digits and a binarisation drawn by
        # us rather than the paper's file.
        target={"quick": "<= 115", "full": f"<= {_plus_2pct(PAPER_ATTENTION)}"},
    ),
    ClaimSpec(
        "mnist.no_attention.test_nll_bound",
        "DRAW without attention (full-image read and write): negative ELBO on binarized test "
        "digits, nats per image (full: at most the paper's 87.40 plus 2 %, 1.75 nats)",
        paper=PAPER_NO_ATTENTION,
        # quick: the same bar as its attention twin (same size, steps and optimiser); full:
        # one-sided with the same 2 % as the attention model (a baseline much better than the
        # paper's would show in the ordering below, which must keep its margin).
        target={"quick": "<= 115", "full": f"<= {_plus_2pct(PAPER_NO_ATTENTION)}"},
    ),
    ClaimSpec(
        "mnist.attention_vs_no_attention.test_nll_bound",
        "Attention helps: test bound with attention minus test bound without (nats; the paper's "
        "ordering is <= 0; full: the paper's -6.43 plus the two tolerances above, 1.62 + 1.75 "
        "nats)",
        paper=round(PAPER_ATTENTION - PAPER_NO_ATTENTION, 2),
        target={"quick": "<= 0", "full": "<= -3.06"},
    ),
    ClaimSpec(
        "mnist.attention.train_nll_bound",
        "DRAW with attention: negative ELBO on binarized training digits (overfitting check)",
        paper=None,
        target="reported",
        kind="check",
    ),
    ClaimSpec(
        "mnist.no_attention.train_nll_bound",
        "DRAW without attention: negative ELBO on binarized training digits (overfitting check)",
        paper=None,
        target="reported",
        kind="check",
    ),
)
