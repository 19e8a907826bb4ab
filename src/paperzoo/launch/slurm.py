"""Cells as Slurm jobs: one ``sbatch`` job array per paper and submission, and a merge job.

Why plain ``sbatch`` arrays and not submitit: the cells are command lines (``paperzoo reproduce
...``), not Python functions to pickle, so submitit's main service is not needed; arrays submit
a paper's cells in one call and give each a job id (``ARRAY_TASK``) that ``squeue``,
``scontrol requeue`` and ``scancel`` take; the scripts are plain text a user can read, rerun and
adapt; and the launch needs nothing beyond Slurm's own commands (no extra dependency on the
cluster's login or compute nodes).

A cell's script (``cell_script``): the resources of the paper's plan, ``--requeue`` and
``--signal=B:USR1@WARN_S``: Slurm signals the script ``WARN_S`` seconds before the time limit
(and a preemption with ``GraceTime`` signals it too); the script passes SIGTERM to the run,
which finishes its step, checkpoints and exits (``paperzoo.engine.interrupt``), then requeues
its own job; the same command then resumes from the checkpoint. A job that Slurm itself
requeues or cancels (``scontrol requeue``, ``scancel``, preemption) sends SIGTERM to the run
directly, with the same effect. A run that fails otherwise (exit status not 0, not 2: 2 is bad
arguments or data, which a retry does not mend) is requeued at most ``SlurmOptions.retries``
times. Under ``--nodes N --gpus-per-node G`` (``Resources.torchrun``) the run is torchrun
under ``srun``, one task per node, with the c10d rendezvous on the first node.

The merge job (``merge_script``) depends on every cell (``afterok``; ``--kill-on-invalid-dep``
ends it when a cell fails for good) and runs ``paperzoo launch --out DIR --merge``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from paperzoo.launch.plan import Cell, LaunchError, Resources
from paperzoo.launch.state import LaunchState, SlurmOptions

WARN_S = 120  # seconds between Slurm's warning signal and the time limit
MERGE_TIME_S = 3600  # the merge job's time limit
MERGE_MEM_GB = 8
RDZV_PORT = 29500  # torchrun's rendezvous port on the first node (plus the job id mod 1000)
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "SUSPENDED",
          "RESIZING", "REQUEUE_HOLD", "REQUEUE_FED", "STAGE_OUT", "SIGNALING"}  # fmt: skip


def hms(seconds: float) -> str:
    """``seconds`` as Slurm's ``H:MM:SS``."""
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _python() -> list[str]:
    return [sys.executable, "-m"]


def _run_words(cell: Cell) -> list[str]:
    """The command of one cell: paperzoo, or torchrun over the cell's nodes and GPUs."""
    r = cell.resources
    if not r.torchrun:
        return [*_python(), "paperzoo", *cell.argv]
    return [
        *_python(),
        "torch.distributed.run",
        f"--nnodes={r.nodes}",
        f"--nproc_per_node={r.gpus_per_node}",
        "--rdzv_backend=c10d",
        "--rdzv_id=$SLURM_JOB_ID",
        "--rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT",
        "-m",
        "paperzoo",
        *cell.argv,
    ]


def _header(
    job_name: str, r: Resources | None, time_s: int, log: str, options: SlurmOptions
) -> list[str]:
    words = [f"--job-name={job_name}", f"--output={log}", "--open-mode=append"]
    words.append(f"--time={hms(time_s)}")
    if r is None:  # the merge job
        words += ["--nodes=1", "--ntasks=1", "--cpus-per-task=1", f"--mem={MERGE_MEM_GB}G"]
    else:
        words += [f"--nodes={r.nodes}", "--ntasks-per-node=1", f"--cpus-per-task={r.cpus_per_task}"]
        words.append(f"--mem={r.mem_gb}G")
        if r.gpus_per_node:
            words.append(f"--gpus-per-node={r.gpus_per_node}")
        words += [f"--signal=B:USR1@{WARN_S}", "--requeue"]
    return [f"#SBATCH {w}" for w in words + options.lines()]


def cell_script(state: LaunchState, indices: Sequence[int]) -> str:
    """The sbatch script of the cells ``indices`` of ``state`` (one paper's, same resources):
    an array over their indices."""
    cells = [state.cells[i] for i in indices]
    r = cells[0].resources
    work = state.work
    header = _header(
        f"paperzoo-{cells[0].paper}", r, r.time_s, str(work / "logs" / "cell-%a.log"), state.slurm
    )
    header.insert(0, f"#SBATCH --array={','.join(map(str, indices))}")
    cases = "\n".join(
        f"  {i}) cmd=({' '.join(_quote(w) for w in _run_words(c))}) ;;"
        for i, c in zip(indices, cells, strict=True)
    )
    torchrun = ""
    if r.torchrun:
        torchrun = (
            'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
            f"MASTER_PORT=$(( {RDZV_PORT} + SLURM_JOB_ID % 1000 ))\n"
            "export MASTER_ADDR MASTER_PORT\n"
        )
    run = "srun --kill-on-bad-exit=1 " if r.torchrun else ""
    return f"""#!/bin/bash
# paperzoo launch: cells of {cells[0].paper} (written by paperzoo; `paperzoo status {state.root}`)
{chr(10).join(header)}
set -u
export OMP_NUM_THREADS={r.threads} MKL_NUM_THREADS={r.threads}
RETRIES={state.slurm.retries}
cell=$SLURM_ARRAY_TASK_ID
events={shlex.quote(str(work / "events"))}/cell-$cell.tsv
mkdir -p "$(dirname "$events")"
{torchrun}case $cell in
{cases}
  *) echo "paperzoo launch: no cell $cell in this script" >&2; exit 2 ;;
esac
note() {{ printf '%s\\t%s\\t%s\\t%s\\n' "$(date +%s)" "$SLURM_JOB_ID" "$1" "$2" >> "$events"; }}
child=
stop() {{  # SIGTERM to the run: it finishes its step, checkpoints and exits
  kill -TERM "$child" 2>/dev/null; wait "$child"; note end "$?"
}}
on_warning() {{ stop; note requeue "warning signal (time limit or preemption)"; \\
  scontrol requeue "$SLURM_JOB_ID"; exit 0; }}
on_term() {{ stop; exit 143; }}
trap on_warning USR1
trap on_term TERM
note start "$(hostname)"
{run}"${{cmd[@]}}" &
child=$!
wait "$child"
rc=$?
note end "$rc"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$(grep -c "$(printf '\\tretry\\t')" "$events")" -lt "$RETRIES" ]; then
  note retry "$rc"
  scontrol requeue "$SLURM_JOB_ID"
  exit 0
fi
exit "$rc"
"""


def _quote(word: str) -> str:
    """A word of the command: the torchrun words that name job variables stay expandable."""
    if "$" in word and word.startswith("--rdzv_"):
        return f'"{word}"'
    return shlex.quote(word)


def merge_script(state: LaunchState, after: Sequence[str]) -> str:
    """The sbatch script of the merge job, after the jobs ``after`` succeed."""
    header = _header(
        "paperzoo-merge", None, MERGE_TIME_S, str(state.work / "logs" / "merge.log"), state.slurm
    )
    if after:
        header.insert(0, f"#SBATCH --dependency=afterok:{':'.join(after)}")
        header.insert(1, "#SBATCH --kill-on-invalid-dep=yes")
    cmd = shlex.join([*_python(), "paperzoo", "launch", "--out", str(state.root), "--merge"])
    return f"""#!/bin/bash
# paperzoo launch: merge the cells of {state.root} (written by paperzoo)
{chr(10).join(header)}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
exec {cmd}
"""


def available() -> bool:
    """Whether ``sbatch`` is on the PATH."""
    return shutil.which("sbatch") is not None


def _sbatch(args: list[str]) -> str:
    """Run ``sbatch args``; its stdout. ``LaunchError`` (sbatch's first error line) when it fails."""
    if not available():
        raise LaunchError("sbatch not found: Slurm is not installed here (use --executor local)")
    try:
        proc = subprocess.run(["sbatch", *args], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise LaunchError(
            "sbatch did not answer within 120 s (is the Slurm controller up?)"
        ) from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        raise LaunchError(f"{lines[0] if lines else f'sbatch exited {proc.returncode}'}")
    return proc.stdout


def check(script: Path) -> None:
    """Ask Slurm whether ``script`` could run (``sbatch --test-only``): a bad option, an
    unknown partition or account, an unreachable controller is a ``LaunchError``."""
    _sbatch(["--test-only", str(script)])


def submit(script: Path) -> str:
    """Submit ``script``; its job id."""
    return _sbatch(["--parsable", str(script)]).strip().split(";")[0]


def write_script(path: Path, text: str) -> Path:
    """Write an sbatch script (executable) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def queue(jobs: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Slurm's view of ``jobs`` (``ARRAY_TASK`` or plain ids): ``{job: (state, reason)}`` for
    those it still lists (pending, running, or recently ended); ``{}`` without Slurm."""
    if not jobs or shutil.which("squeue") is None:
        return {}
    arrays = sorted({j.split("_")[0] for j in jobs})
    try:
        proc = subprocess.run(
            ["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T|%r", "-j", ",".join(arrays)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        return {}
    found: dict[str, tuple[str, str]] = {}
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            found[parts[0]] = (parts[1], parts[2])
    return {j: found[j] for j in jobs if j in found}


def cancel(job: str) -> None:
    """Cancel ``job`` (a merge job superseded by a new one); errors are ignored."""
    if shutil.which("scancel") is not None:
        subprocess.run(["scancel", job], capture_output=True, timeout=60, check=False)
