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
- Grids of models: ``shard_slice`` (the models of ``--shard K/N``), ``rank_slice`` (the models
  of this rank under torchrun), ``read_record`` and ``write_record`` (a finished model's record
  in ``--out``, which a rerun loads instead of training it again), ``DistInfo`` (``ctx.dist``).
- The price of a full run (``paperzoo list``): ``Piece``, ``Work``, ``step`` and ``forward``
  build what ``Experiment.full_cost`` returns.
- Checking a package: ``declaration_problem`` (why paperzoo would not load a paper class),
  ``papers`` (the papers registered now), ``plugin_errors`` (installed papers not loaded).
"""

from __future__ import annotations

from paperzoo.cost import store_cost
from paperzoo.data.base import DataInfo, examples_sha256, stratified_split
from paperzoo.data.splits import validation_split
from paperzoo.engine import TrainConfig, Trainer, derive_seed, seeded
from paperzoo.engine.distributed import DistInfo
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
from paperzoo.experiments.grid import rank_slice, read_record, shard_slice, write_record
from paperzoo.experiments.lookup import plugin_errors
from paperzoo.experiments.plugins import GROUP as ENTRY_POINT_GROUP
from paperzoo.experiments.plugins import PluginError
from paperzoo.utils.work import Piece, Work, forward, step
from paperzoo.verdict import Measured


def declaration_problem(paper: type, name: str | None = None) -> str | None:
    """Why paperzoo would not load ``paper`` declared under the entry point name ``name``
    (default: its ``name`` attribute): the one line its warning would show (not a subclass of
    ``Experiment``, no title, a scale without a config, no finding, a claim without a target,
    repeated claim ids); None when it loads. A name already taken is not checked here."""
    from paperzoo.experiments.plugins import paper_problem
    from paperzoo.registry import Registry

    return paper_problem(
        str(getattr(paper, "name", "")) if name is None else name, paper, Registry("experiment")
    )


def papers() -> list[str]:
    """The names of every paper registered now: the ten built in and those of installed packages
    that loaded (``plugin_errors`` lists the others)."""
    from paperzoo.experiments.lookup import EXPERIMENTS

    return EXPERIMENTS.names()


__all__ = [
    "ENTRY_POINT_GROUP",
    "SCALES",
    "ClaimSpec",
    "DataInfo",
    "DistInfo",
    "Experiment",
    "Measured",
    "NotRun",
    "Option",
    "Outcome",
    "Piece",
    "PluginError",
    "RunContext",
    "TrainConfig",
    "Trainer",
    "Work",
    "added_later",
    "declaration_problem",
    "derive_seed",
    "examples_sha256",
    "forward",
    "papers",
    "plugin_errors",
    "rank_slice",
    "read_record",
    "seeded",
    "shard_slice",
    "step",
    "store_cost",
    "stratified_split",
    "validation_split",
    "write_record",
]
