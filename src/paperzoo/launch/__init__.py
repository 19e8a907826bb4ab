"""Cells of a reproduction (paper x seed x shard) as jobs: on Slurm or as local processes.

``start`` plans and submits a launch (``paperzoo launch``), ``relaunch`` continues one,
``status`` says where each cell stands (``paperzoo status``). See docs/cluster.md.
"""

from paperzoo.launch.launching import (
    Progress,
    advance,
    default_executor,
    describe,
    merge_papers,
    more_seeds,
    relaunch,
    start,
)
from paperzoo.launch.plan import Cell, LaunchError, PaperPlan, Resources
from paperzoo.launch.state import LaunchState, SlurmOptions
from paperzoo.launch.status import CellStatus, LaunchStatus, render_status, status

__all__ = [
    "Cell",
    "CellStatus",
    "LaunchError",
    "LaunchState",
    "LaunchStatus",
    "PaperPlan",
    "Progress",
    "Resources",
    "SlurmOptions",
    "advance",
    "default_executor",
    "describe",
    "merge_papers",
    "more_seeds",
    "relaunch",
    "render_status",
    "start",
    "status",
]
