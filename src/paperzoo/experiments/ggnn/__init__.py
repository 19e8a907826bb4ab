"""Gated Graph Sequence Neural Networks (Li et al., ICLR 2016): the reproduction; docs/ggnn.md."""

from paperzoo.experiments.ggnn.experiment import *  # noqa: F403
from paperzoo.experiments.ggnn.experiment import (  # noqa: F401
    _CLAIM_ID,
    _baseline_train,
    _baseline_updates,
    _BestKeeper,
    _EarliestKeeper,
    _EpochBatches,
    _fold_key,
    _gap_claim_id,
    _GraphBank,
    _seed_key,
    _split_train,
    fit_batched,
)
