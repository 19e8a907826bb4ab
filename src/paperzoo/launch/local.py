"""Cells as local processes: the executor of a machine without Slurm.

Each cell runs its command (``python -m paperzoo reproduce ...``) as a child process, ``jobs`` at
a time, its output appended to ``DIR/launch/logs/cell-I.log`` and its events (``start`` with
the process id, ``end``, ``retry``) to the events file, as on Slurm. A cell that fails (exit
status not 0, not 2) is rerun, at most ``retries`` times: the rerun resumes from its
checkpoints. A signal (Ctrl-C, SIGTERM) is passed on to the running cells, which checkpoint and
stop; ``paperzoo launch --out DIR`` then continues them.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from paperzoo.launch.state import LaunchState, read_events, write_event

log = logging.getLogger(__name__)


def run_cells(state: LaunchState, indices: Sequence[int], jobs: int) -> dict[int, int]:
    """Run the cells ``indices`` of ``state``, ``jobs`` at a time; their exit statuses.

    Raises:
        KeyboardInterrupt: a signal stopped the launch (after the running cells stopped).
    """
    lock = threading.Lock()
    live: dict[int, subprocess.Popen[bytes]] = {}
    stopping: list[int] = []

    def one(i: int) -> int:
        cell = state.cells[i]
        events = state.events_file(i)
        threads = str(cell.resources.threads)
        env = os.environ | {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        cmd = [sys.executable, "-m", "paperzoo", *cell.argv]
        state.log_file(i).parent.mkdir(parents=True, exist_ok=True)
        while True:
            with open(state.log_file(i), "a") as logf, lock:
                if stopping:
                    return 128 + stopping[0]
                proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env)
                live[i] = proc
                state.jobs[i] = f"pid {proc.pid}"
                write_event(events, str(proc.pid), "start", os.uname().nodename)
            rc = proc.wait()
            with lock:
                live.pop(i, None)
            write_event(events, str(proc.pid), "end", str(rc))
            log.info("%s finished (exit %d)", cell.id, rc)
            retried = sum(e.kind == "retry" for e in read_events(events))
            if rc in (0, 2) or rc < 0 or rc > 128 or retried >= state.slurm.retries:
                return rc
            write_event(events, str(proc.pid), "retry", str(rc))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {i: pool.submit(one, i) for i in indices}
        try:
            return {i: f.result() for i, f in futures.items()}
        except KeyboardInterrupt as stop:  # interrupt.Interrupted, or Ctrl-C without handlers
            signum = getattr(stop, "signum", signal.SIGINT)
            with lock:
                stopping.append(signum)
                procs = list(live.values())
            for f in futures.values():
                f.cancel()
            for p in procs:
                p.send_signal(signum)
            for p in procs:
                p.wait()
            raise
