"""One ``paperzoo reproduce`` command as a value: ``RunRequest``.

The command line is parsed once into a ``RunRequest``, the values of the options in the table
``paperzoo.experiments.flags.REPRODUCE_FLAGS``; everything that repeats the command is made from
it and that table: the ``RunContext`` of each seed's run (``context``), the command line of each
seed's process in a multi-seed run (``child_argv``), and the command that resumes an interrupted
run (``resume_command``). ``run`` checks the request before anything is written, takes the lock
of the output folder (``paperzoo.utils.lock``: one writer per folder; the seed processes work
under it), then runs it: one process per seed with ``--seeds`` (``jobs`` at a time, aggregated),
else in this process (under torchrun every rank runs each seed in turn).

A paper's own options (``Experiment.options``, e.g. GG-NN's ``--folds``) travel in the request
by flag and reach only the papers that declare them.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from paperzoo.engine.distributed import DistInfo
from paperzoo.experiments.base import RunContext
from paperzoo.experiments.flags import (
    PaperOptions,
    context_flags,
    flag_argv,
    flag_defaults,
)
from paperzoo.experiments.lookup import get_experiment
from paperzoo.experiments.merging import merge_dirs
from paperzoo.experiments.runner import check_run, resolve_config, run_experiment
from paperzoo.utils.lock import holding
from paperzoo.verdict import Result

log = logging.getLogger(__name__)


class SeedRunError(RuntimeError):
    """A seed's process of a multi-seed run exited with an error."""


class SeedUsageError(ValueError):
    """The seed processes exited 2 (bad arguments or data): the first one's own error."""


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_out_dir(out: Path | None) -> None:
    """Fail before any work when ``--out`` (or the first of its parents that exists) is not a
    directory, instead of when the results are written.

    Raises:
        ValueError: one line naming the file in the way, or the directory that cannot be written.
    """
    if out is None:
        return
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == out else f" ({existing} is a file)"
        raise ValueError(f"--out {out} is not a directory{where}")
    if existing is not None:  # a probe directory, made and removed: can anything be written there?
        import tempfile

        try:
            os.rmdir(tempfile.mkdtemp(prefix=".paperzoo-probe-", dir=existing))
        except OSError as err:
            raise ValueError(
                f"--out {out} cannot be written: {err.strerror} ({existing})"
            ) from None


def resolve_device(requested: str | None) -> str:
    """``--device``: cuda when present without one; ``ValueError`` for one this machine lacks."""
    import torch

    if requested is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {requested}: CUDA is not available on this machine")
    if not (requested == "cpu" or requested.startswith("cuda")):
        raise ValueError(f"--device must be cpu, cuda or cuda:N, got {requested!r}")
    return requested


def gpu_slots(device: str | None, jobs: int) -> list[str] | None:
    """The GPU each of ``jobs`` concurrent seed processes gets (its ``CUDA_VISIBLE_DEVICES``),
    spreading them over the GPUs this process may use (``CUDA_VISIBLE_DEVICES`` if set, else
    every device torch sees), round robin; None when the seeds do not run on CUDA or were given
    one device (``--device cuda:N``)."""
    import torch

    if device not in (None, "cuda") or not torch.cuda.is_available():
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = [g.strip() for g in visible.split(",") if g.strip()] if visible is not None else []
    if visible is None:
        gpus = [str(i) for i in range(torch.cuda.device_count())]
    if not gpus:
        return None
    return [gpus[i % len(gpus)] for i in range(jobs)]


@dataclass(frozen=True, init=False)
class RunRequest:
    """What ``paperzoo reproduce`` was asked to do: the papers, and the value of every option of
    the table ``REPRODUCE_FLAGS`` (``paperzoo.experiments.flags``) by its ``dest``, read as an
    attribute (``request.scale``, ``request.data_root``, ``request.overrides``: the ``--set``
    items in order, ``request.options``: the papers' own options given, by flag). An option
    not given has its default.

    Args:
        names: the papers to run (every registered one for ``--all``).
        command: the command line, recorded in results.json.
        **values: the options by ``dest``.

    Raises:
        TypeError: a name that is no option of the table.
    """

    names: tuple[str, ...]
    values: Mapping[str, Any]
    command: str | None

    def __init__(self, names: Sequence[str], *, command: str | None = None, **values: Any):
        defaults = flag_defaults()
        unknown = sorted(set(values) - set(defaults))
        if unknown:
            raise TypeError(f"RunRequest: {unknown[0]!r} is no option of REPRODUCE_FLAGS")
        given = defaults | values
        given["options"] = MappingProxyType(dict(given["options"]))
        object.__setattr__(self, "names", tuple(names))
        object.__setattr__(self, "values", MappingProxyType(given))
        object.__setattr__(self, "command", command)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def sequential(self) -> bool:
        """No seed was given at quick scale: the seed rule decides how many seeds run (seeds
        0-3, then 4-7 and 8-15 while a finding is inconclusive; ``paperzoo.verdict.LOOKS``)."""
        given = self.values["seeds"] is not None or self.values["seed"] is not None
        return not given and self.scale == "quick" and self.shard is None

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds to run first: ``--seeds``, else ``--seed``, else the seed rule's first look
        at quick scale (``sequential``) and seed 0 at the other scales."""
        from paperzoo.verdict import PROTOCOL_SEEDS

        if self.values["seeds"] is not None:
            return tuple(self.values["seeds"])
        if self.values["seed"] is not None:
            return (self.values["seed"],)
        return tuple(PROTOCOL_SEEDS) if self.sequential else (0,)

    @property
    def multi(self) -> bool:
        """Several seeds, one process each, aggregated: ``--seeds``, or the seed rule."""
        return self.values["seeds"] is not None or self.sequential

    # -- what the request repeats -----------------------------------------------------------

    def out_dir(self, name: str) -> Path:
        """Where paper ``name`` writes: ``--out`` (``OUT/NAME`` with ``--all``), else
        ``runs/NAME-SCALE-sSEED`` (``-seedsA-B`` for ``--seeds``)."""
        if self.out is not None:
            return self.out / name if self.all else self.out
        tag = f"seeds{self.seeds[0]}-{self.seeds[-1]}" if self.multi else f"s{self.seeds[0]}"
        tag = "looks" if self.sequential else tag
        return Path("runs") / f"{name}-{self.scale}-{tag}"

    def context(self, name: str, seed: int, out: Path, dist: DistInfo, device: str) -> RunContext:
        """The ``RunContext`` of paper ``name``'s run of ``seed`` in ``out``: the options the
        table gives the run (``Flag.context``), paper ``name``'s own options and the precision
        (``--precision``, else the paper's default on ``device``)."""
        from paperzoo.engine.precision import default_precision

        cuda_precision = get_experiment(name).cuda_precision
        options = PaperOptions.given(self.options, name)
        return RunContext(
            seed=seed,
            device=device,
            out_dir=out,
            options=MappingProxyType({o.dest: v for o, v in options}),
            precision=self.precision or default_precision(cuda_precision, device),
            dist=dist,
            command=self.command,
            flags=self.values,
            **context_flags(self.values),
        )

    def child_argv(self, name: str, seed: int, out: Path, threads: int) -> list[str]:
        """The ``paperzoo`` arguments of paper ``name``'s process for ``seed`` in a multi-seed
        run: this command with one seed, its own ``out`` and ``threads``, and the options the
        seeds repeat (``Flag.seeds``)."""
        argv = ["reproduce", name, "--seed", str(seed), "--out", str(out)]
        argv += ["--threads", str(threads)]
        return argv + list(flag_argv(self.values, lambda f: f.seeds, name))

    def resume_command(self) -> str:
        """The command that resumes this run: the same command with its ``--out`` and the
        options the resume repeats (``Flag.resume``; not ``--restart``: resuming must not
        start over)."""
        cmd = ["paperzoo", "reproduce", "--all" if self.all else self.names[0]]
        if self.values["seeds"] is not None:
            cmd += ["--seeds", ",".join(map(str, self.seeds))]
        elif not self.sequential:
            cmd += ["--seed", str(self.seeds[0])]
        if self.jobs is not None:
            cmd += ["--jobs", str(self.jobs)]
        if self.out is not None or not self.all:
            cmd += ["--out", str(self.out if self.out is not None else self.out_dir(self.names[0]))]
        cmd += flag_argv(self.values, lambda f: f.resume, None)
        return shlex.join(cmd)

    # -- running it ---------------------------------------------------------------------------

    @property
    def seed_jobs(self) -> int:
        """Seed processes at once: ``--jobs`` (default: under the seed rule as many as the cores
        hold at ``--threads`` each, else 1), at most one per seed."""
        if self.jobs is not None:
            jobs = self.jobs
        else:
            jobs = max(1, cores() // (self.threads or 1)) if self.sequential else 1
        return max(1, min(jobs, len(self.seeds)))

    @property
    def seed_threads(self) -> int:
        """Torch threads of each seed's process: ``threads``, else the cores shared by the jobs."""
        return self.threads or max(1, cores() // self.seed_jobs)

    def check(self) -> dict[str, str]:
        """Check the request before anything is written: the flags that do not combine, the
        data, ``--dataset``, ``--part``, ``--shard`` and the papers' options of every paper
        (``runner.check_run``, ``Experiment.check_options``); returns the parsed ``--set``.

        Raises:
            ValueError: one line saying what cannot run (the CLI exits 2).
            paperzoo.data.DataRequired: a full run's data are not under ``data_root``.
        """
        from paperzoo.experiments.overrides import parse_set

        if self.data_root is not None and not self.data_root.is_dir():
            if self.data_root.exists() or not self.download:  # --download creates a missing one
                raise ValueError(f"--data-root {self.data_root} is not a directory")
        check_out_dir(self.out)
        if self.overrides and self.all:
            raise ValueError("--set changes one paper's config: give a paper NAME, not --all")
        overrides = parse_set(list(self.overrides))
        if not self.all:
            resolve_config(self.names[0], self.scale, overrides)  # a bad key or value: now
        if self.multi and self.shard is not None:
            raise ValueError(
                "--shard and --seeds don't combine: run each seed's shards, then merge"
            )
        if self.jobs is not None and self.jobs > 1 and not self.multi:
            raise ValueError("--jobs needs several seeds (--seeds, or no --seed at quick scale)")
        if self.tensorboard:
            from paperzoo.engine.tensorboard import require

            require()
        jobs, threads = self.seed_jobs, self.seed_threads
        if self.multi and jobs * threads > cores():
            raise ValueError(
                f"--jobs {jobs} x --threads {threads} exceeds the {cores()} cores: "
                "processes spinning on shared cores slow every step by up to 50x"
            )
        for name in self.names:  # before anything is written to --out
            exp = get_experiment(name)
            if self.shard is not None and not exp.has_grid:
                raise ValueError(f"{name} trains no grid of models: --shard does not apply")
            ctx = self.context(name, self.seeds[0], Path("runs"), DistInfo(), "cpu")
            check_run(exp, ctx)
            exp.check_options(ctx)
        return overrides

    def run(self) -> Iterator[tuple[str, Result, Path]]:
        """Check, then run every paper of the request; yields (paper, result, its ``out``) as
        each finishes, on the main process only.

        Raises:
            ValueError, paperzoo.data.DataRequired: see ``check``; nothing was written.
            SeedUsageError, SeedRunError: a seed's process failed (``--seeds``).
            paperzoo.engine.interrupt.Interrupted: a signal stopped the run (``resume_command``
                resumes it).
            paperzoo.utils.lock.FolderBusy: another live run writes to the output folder.
        """
        from paperzoo.engine import init_distributed

        overrides = self.check()
        device = resolve_device(self.device)
        dist = init_distributed(device)
        if dist.enabled and device.startswith("cuda"):
            device = f"cuda:{dist.local_rank}"
        # one writer per output folder (rank 0 holds it for the ranks; seed processes work
        # under their parent's lock): taken before anything is written there
        folders = [self.out] if self.out is not None else [self.out_dir(n) for n in self.names]
        with holding(*folders, command=self.command) if dist.is_main else nullcontext():
            yield from self._run(overrides, device, dist)

    def _run(
        self, overrides: dict[str, str], device: str, dist: DistInfo
    ) -> Iterator[tuple[str, Result, Path]]:
        import torch

        from paperzoo.engine import seed_everything

        for name in self.names:
            out = self.out_dir(name)
            seeds, done = list(self.seeds), []
            while seeds:  # the seed rule: a look, then the next one while a finding is unclear
                if self.multi and not dist.enabled:
                    result = run_seeds(self, name, out, seeds, earlier=done)
                else:
                    if self.threads:
                        torch.set_num_threads(self.threads)
                    for seed in seeds:  # under torchrun the seeds run one after another
                        seed_everything(seed)
                        seed_out = out / f"seed-{seed}" if self.multi else out
                        result = run_experiment(
                            name, self.context(name, seed, seed_out, dist, device), overrides
                        )
                    if self.multi:
                        seed_dirs = [out / f"seed-{s}" for s in [*done, *seeds]]
                        result = merge_dirs(seed_dirs, out, command=self.command)
                done += seeds
                seeds = _next_look(name, result, out) if self.sequential else []
            if dist.is_main:
                yield name, result, out


def _next_look(name: str, result: Result, out: Path) -> list[int]:
    """The seeds the seed rule adds after ``result`` (``paperzoo.verdict.next_seeds`` of the
    run judged against the declared claims), logged with the findings still inconclusive."""
    from paperzoo.experiments.judging import judge
    from paperzoo.verdict import format_seeds, next_seeds

    judged = judge(result, out).result
    more = next_seeds(judged)
    if more:
        unclear = [c.id for c in judged.findings if c.verdict == "inconclusive"]
        log.info(
            "%s: %d finding(s) inconclusive at seeds %s (%s): adding seeds %s",
            name, len(unclear), format_seeds(judged.seeds), ", ".join(unclear),
            format_seeds(more),
        )  # fmt: skip
    return more


def _last_error(log_file: Path) -> str | None:
    """The last ``paperzoo: error: ...`` line of a seed's log, without the prefix."""
    prefix = "paperzoo: error: "
    try:
        lines = log_file.read_text(errors="replace").splitlines()
    except OSError:
        return None
    return next((ln[len(prefix) :] for ln in reversed(lines) if ln.startswith(prefix)), None)


def run_seeds(
    request: RunRequest,
    name: str,
    out_dir: Path,
    seeds: Sequence[int] | None = None,
    *,
    earlier: Sequence[int] = (),
) -> Result:
    """Run paper ``name`` of ``request`` once per seed (``seeds``, default ``request.seeds``),
    ``request.seed_jobs`` processes at a time, and aggregate them with the ``earlier`` seeds'
    runs in ``out_dir`` (the seed rule's previous looks).

    Each seed runs as ``python -m paperzoo`` with ``request.child_argv`` (``--seed S --out
    OUT/seed-S --threads T`` and the request's other flags) with its log in
    ``OUT/seed-S/log.txt``; the aggregate ``results.json`` / ``report.md`` (per-seed values,
    mean, std, verdicts) go to ``OUT``: ``paperzoo.experiments.merging.merge_dirs``, as ``paperzoo merge
    OUT/seed-*`` writes it.

    A signal (SIGINT / SIGTERM) is passed on to the running seed processes, which checkpoint
    and stop; seeds not started yet are not started. Rerunning the command resumes every seed.

    Raises:
        SeedUsageError: the failed seed processes exited 2 (bad arguments or data): the first
            one's one-line error, naming its log.
        SeedRunError: a seed's process failed otherwise (the message names the logs).
        paperzoo.engine.interrupt.Interrupted: a signal stopped the run (after its children).
    """
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    seeds = list(request.seeds if seeds is None else seeds)
    jobs, threads = request.seed_jobs, request.seed_threads
    out_dir = Path(out_dir).resolve()
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    lock = threading.Lock()
    # --device cuda: each running seed process on a GPU of its own while there are enough
    free = gpu_slots(request.device, jobs)
    live: dict[int, subprocess.Popen[bytes]] = {}  # seed -> its running process
    stopping: list[int] = []  # the signal that stops the run, once one arrived

    def one(seed: int) -> tuple[int, int, float]:
        seed_dir = out_dir / f"seed-{seed}"
        seed_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "paperzoo", *request.child_argv(name, seed, seed_dir, threads)]
        start = time.perf_counter()
        with open(seed_dir / "log.txt", "a") as logf:
            with lock:
                if stopping:  # never start a seed once the run is stopping
                    return seed, 128 + stopping[0], 0.0
                gpu = free.pop(0) if free else None
                child = env if gpu is None else env | {"CUDA_VISIBLE_DEVICES": gpu}
                proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=child)
                live[seed] = proc
            try:
                rc = proc.wait()
            finally:
                with lock:
                    live.pop(seed, None)
                    if gpu is not None:
                        free.append(gpu)
        wall = time.perf_counter() - start
        log.info("%s seed %d finished in %.0f s (exit %d)", name, seed, wall, rc)
        return seed, rc, wall

    log.info(
        "%s: %d seeds, %d at a time, %d thread(s) each; logs in %s/seed-S/log.txt",
        name, len(seeds), jobs, threads, out_dir,
    )  # fmt: skip
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, s) for s in seeds]
        try:
            done = [f.result() for f in futures]
        except KeyboardInterrupt as stop:  # interrupt.Interrupted, or Ctrl-C without handlers
            signum = getattr(stop, "signum", signal.SIGINT)
            log.warning("%s: stopping the seed runs (they checkpoint first)", name)
            with lock:
                stopping.append(signum)
            for f in futures:
                f.cancel()
            _stop_children(signum, lock, live)
            raise
    failed = [(s, rc) for s, rc, _ in done if rc != 0]
    if failed and all(rc == 2 for _, rc in failed):
        seed_log = out_dir / f"seed-{failed[0][0]}" / "log.txt"
        message = _last_error(seed_log)
        if message is not None:
            raise SeedUsageError(f"{message} (seed {failed[0][0]}; log: {seed_log})")
    if failed:
        logs = ", ".join(
            f"seed {s} (exit {rc}): {out_dir / f'seed-{s}' / 'log.txt'}" for s, rc in failed
        )
        raise SeedRunError(f"{name}: seed runs failed: {logs}")
    runs = [out_dir / f"seed-{s}" for s in [*earlier, *seeds]]
    return merge_dirs(runs, out_dir, command=request.command)


def _stop_children(signum: int, lock: threading.Lock, live: dict[int, Any]) -> None:
    """Pass ``signum`` to the running seed processes and wait until they have exited; a repeated
    signal is passed on too (the children then stop at once)."""
    sent: set[int] = set()
    while True:
        with lock:
            procs = [p for p in live.values() if p.poll() is None]
        if not procs:
            return
        try:
            for p in procs:
                if p.pid not in sent:
                    p.send_signal(signum)
                    sent.add(p.pid)
            time.sleep(0.1)
        except KeyboardInterrupt as again:
            signum, sent = getattr(again, "signum", signal.SIGINT), set()
