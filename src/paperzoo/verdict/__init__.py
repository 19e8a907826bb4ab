"""Verdicts: what a claim's target means, what a run's results.json holds, whether a run counts,
and how runs merge.

- ``targets``: parsing a target and judging one measurement against it; the seed rules.
- ``result``: the results.json schema (``ClaimResult``, ``Result``), read and written.
- ``counting``: ``counts``, the one decision whether a run counts as a reproduction, used by
  ``paperzoo reproduce``, ``paperzoo merge``, report.md and ``paperzoo summary`` alike.
- ``merging``: ``merge_dirs``, the one way seed runs and shards are combined, with one set of
  checks.

Rendering (report.md, the summary page) lives in ``paperzoo.report`` and ``paperzoo.summary``.
See docs/verdicts.md.
"""

from paperzoo.verdict.counting import (
    Count,
    counts,
    is_validation_run,
    mark_knife_edges,
    mark_unstable,
    own_reason,
    rejudge,
    threads_of,
    validation_problem,
)
from paperzoo.verdict.merging import (
    aggregate,
    check_mergeable,
    check_same_run,
    combine_partial,
    data_identity,
    merge_dirs,
)
from paperzoo.verdict.result import (
    ClaimResult,
    Result,
    format_seeds,
    load_result,
    run_label,
    scale_label,
)
from paperzoo.verdict.targets import (
    MIN_SEEDS_REPRODUCED,
    PROTOCOL_SEEDS,
    VALIDATION_SEEDS_FROM,
    VERDICTS,
    Measured,
    check_measurement,
    evaluate_target,
    is_boolean_target,
    is_measured,
    seeds_needed,
    target_line,
    validate_target,
)

__all__ = [
    "MIN_SEEDS_REPRODUCED",
    "PROTOCOL_SEEDS",
    "VALIDATION_SEEDS_FROM",
    "VERDICTS",
    "ClaimResult",
    "Count",
    "Measured",
    "Result",
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
    "mark_knife_edges",
    "mark_unstable",
    "merge_dirs",
    "own_reason",
    "rejudge",
    "run_label",
    "scale_label",
    "seeds_needed",
    "target_line",
    "threads_of",
    "validate_target",
    "validation_problem",
]
