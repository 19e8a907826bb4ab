"""Everything a paper of your own uses, from one place: ``from paperzoo.paper import ...``.

A paper is an ``Experiment`` subclass in your own package, declared through the
``paperzoo.papers`` entry point group (``paperzoo new NAME`` writes one; docs/your-paper.md is the
guide). paperzoo then lists it, runs it over seeds and thread counts, merges, summarises and
judges it exactly as the ten papers built in. This module is the stable surface such a package
writes against; its names and signatures are covered by tests (tests/test_paper_surface.py) and
change only with a changelog entry.

- Declaring the paper: ``Experiment`` (name, title, claims, configs per scale in ``SCALES``,
  ``run``), ``ClaimSpec`` (a finding or a check with its target per scale and the paper's
  number), ``NotRun`` (why there is no full-scale run), ``Option`` (a command-line option of the
  paper's own), ``added_later`` (a config field added after runs were made).
- Running it: ``RunContext`` (scale, seed, device, output directory, figures, the selection
  hygiene guard on test data), ``Outcome`` (what ``run`` returns: measurements by claim id, the
  data read, figures, notes).
- Training: ``Trainer`` and ``TrainConfig`` (seeded batch order, checkpoints and exact resume,
  ``--max-steps``, progress, DDP under torchrun), ``seeded``, ``derive_seed``.
- Data: ``DataInfo`` (what results.json records of a data set), ``examples_sha256``,
  ``stratified_split``, ``validation_split`` (a validation set carved from the training data).
"""

from __future__ import annotations

from paperzoo.data.base import DataInfo, examples_sha256, stratified_split
from paperzoo.data.splits import validation_split
from paperzoo.engine import TrainConfig, Trainer, derive_seed, seeded
from paperzoo.experiments.base import (
    SCALES,
    ClaimSpec,
    Experiment,
    NotRun,
    Option,
    Outcome,
    RunContext,
    added_later,
)
from paperzoo.experiments.plugins import GROUP as ENTRY_POINT_GROUP
from paperzoo.verdict import Measured

__all__ = [
    "ENTRY_POINT_GROUP",
    "SCALES",
    "ClaimSpec",
    "DataInfo",
    "Experiment",
    "Measured",
    "NotRun",
    "Option",
    "Outcome",
    "RunContext",
    "TrainConfig",
    "Trainer",
    "added_later",
    "derive_seed",
    "examples_sha256",
    "seeded",
    "stratified_split",
    "validation_split",
]
