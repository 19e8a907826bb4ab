"""Verdicts: what a claim's target means, what a run's results.json holds, whether a run counts,
and how runs merge.

- ``targets``: parsing a target and judging one measurement against it.
- ``intervals``: the statistics of a verdict: a finding's interval over seeds at the one declared
  error rate (``ALPHA``, split over the seed rule's ``LOOKS``), ``decide``, Holm's rule.
- ``result``: the results.json schema (``ClaimResult``, ``Result``), read and written.
- ``counting``: ``counts``, the one decision whether a run counts as a reproduction, which
  ``paperzoo reproduce``, ``paperzoo merge``, results.json, report.md and ``paperzoo summary``
  record or show (``Count``); it judges against what the code declares, given as ``Declare``.
- ``aggregation``: the rules of combining seed runs (``aggregate``) and what may be merged.

This is the bottom layer of the harness: it decides from what it is given and imports no
experiment, runner or report. Reading and writing run directories (``merge_dirs``,
``declare``, ``record_decision``) is the run layer's (``paperzoo.experiments.merging``,
``paperzoo.experiments.judging``); rendering is ``paperzoo.report`` and ``paperzoo.summary``.
See docs/verdicts.md.
"""

from paperzoo.verdict.aggregation import (
    SeedNotes,
    aggregate,
    check_mergeable,
    check_same_run,
    combine_partial,
    data_identity,
)
from paperzoo.verdict.counting import (
    Count,
    Declare,
    Declared,
    DeclaredClaim,
    counts,
    is_validation_run,
    rejudge,
    rule_text,
    threads_of,
)
from paperzoo.verdict.intervals import (
    ALPHA,
    LEVEL,
    LOOKS,
    PROTOCOL_SEEDS,
    SEED_RULE,
    Decision,
    decide,
    holm,
)
from paperzoo.verdict.result import (
    DECISION_KEYS,
    ClaimResult,
    Result,
    format_seeds,
    load_result,
    next_seeds,
    own_reason,
    run_label,
    scale_label,
)
from paperzoo.verdict.targets import (
    DIAGNOSIS_CAUSES,
    MIN_SEEDS_REPRODUCED,
    VALIDATION_SEEDS_FROM,
    VERDICTS,
    Measured,
    check_measurement,
    evaluate_target,
    is_boolean_target,
    is_measured,
    seeds_needed,
    target_line,
    validate_diagnosis,
    validate_target,
)

__all__ = [
    "ALPHA",
    "LEVEL",
    "LOOKS",
    "SEED_RULE",
    "Decision",
    "decide",
    "holm",
    "DECISION_KEYS",
    "DIAGNOSIS_CAUSES",
    "MIN_SEEDS_REPRODUCED",
    "PROTOCOL_SEEDS",
    "VALIDATION_SEEDS_FROM",
    "VERDICTS",
    "ClaimResult",
    "Count",
    "Declare",
    "Declared",
    "DeclaredClaim",
    "Measured",
    "Result",
    "SeedNotes",
    "aggregate",
    "check_measurement",
    "check_mergeable",
    "check_same_run",
    "combine_partial",
    "counts",
    "data_identity",
    "evaluate_target",
    "format_seeds",
    "is_boolean_target",
    "is_measured",
    "is_validation_run",
    "load_result",
    "next_seeds",
    "own_reason",
    "rejudge",
    "rule_text",
    "run_label",
    "scale_label",
    "seeds_needed",
    "target_line",
    "threads_of",
    "validate_diagnosis",
    "validate_target",
]
