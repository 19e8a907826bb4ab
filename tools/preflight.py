"""Before a GPU check spends its lease: what it needs, one line each, in a few seconds.

    python tools/preflight.py [--device cuda|cpu] [--scale full|quick|smoke]
                              [--papers "NAME ..."] [--ranks N] [--data-root DIR | --synth DIR]
                              [--out DIR] [--shm DIR] [--disk-gib G]

In this order, each a line ``preflight: WHAT: ok ...`` or ``preflight: WHAT: FAILED ...``; the
first failure ends the check with exit status 2 (0 when all pass):

1. ``python``: this interpreter against ``requires-python`` in pyproject.toml;
2. ``torch``: importable, its version against paperzoo's ``torch>=`` floor in pyproject.toml;
3. ``cuda`` (``--device cuda``): a CUDA build that sees at least one device, each named with its
   memory (``--device cpu``: the CPU plumbing mode, no device asked for);
4. ``papers``: paperzoo imports (a module it needs that is missing is named) and knows every
   paper in ``--papers`` (default: all of them);
5. ``shm``: free space in ``--shm`` (``/dev/shm``) against the most that the papers' data-loader
   workers hold there at once at their ``--scale`` configs (default full; ``Experiment.loader_shared_memory``: the
   batches in flight, e.g. the Perceiver's 16 workers x 2 batches of 1,024 uint8 224 x 224
   crops, 4.9 GB on one rank; a container's 64 MB default is not enough), on ``--ranks`` ranks
   (default: the devices torch sees, 1 on the CPU);
6. ``disk``: free space where ``--out`` lies against ``--disk-gib`` (default 10 GiB: the
   synthetic data, about 0.1 GiB, and the check's runs, whose largest checkpoints are the
   Perceiver's 45M parameters with LAMB's two moments, about 0.5 GiB, two kept);
7. ``data`` (at ``--scale full``; smaller scales read no files): with ``--data-root``, each
   listed paper's own data set present in its layout (the files' presence only: a run compares
   them with the canonical release itself); with ``--synth DIR``, that DIR can be written
   (tools/synth_data.py writes there) or already holds the files.

Only the standard library is imported before check 2; paperzoo (from ``src/`` beside this
script, else the installed one) only from check 4 on, so a missing or too old torch gives one
line, not a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


class Failed(Exception):
    """A check that failed: its one line."""


def _version(text: str) -> tuple[int, ...]:
    """The release numbers of a version string (``2.13.0+cu126`` -> (2, 13, 0))."""
    release = re.match(r"\d+(\.\d+)*", text.strip())
    if release is None:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in release.group(0).split("."))


def floors(pyproject: Path = ROOT / "pyproject.toml") -> tuple[str, str]:
    """(Python's floor, torch's floor) as pyproject.toml states them (``requires-python =
    ">=X"``, ``"torch>=Y"`` among the dependencies); the installed paperzoo's metadata when
    there is no pyproject.toml beside this script."""
    if pyproject.is_file():
        text = pyproject.read_text()
        py = re.search(r'^requires-python\s*=\s*">=\s*([\d.]+)"', text, re.M)
        torch = re.search(r'"torch\s*>=\s*([\d.]+)', text)
        if py is None or torch is None:
            raise Failed(f"floors: {pyproject} states no requires-python or torch floor")
        return py.group(1), torch.group(1)
    from importlib import metadata

    meta = metadata.metadata("paperzoo")
    torch_req = next(r for r in metadata.requires("paperzoo") or [] if r.startswith("torch"))
    return meta["Requires-Python"].lstrip(">= "), torch_req.split(">=")[1].split(",")[0]


def check_python(floor: str) -> str:
    have = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:3] < _version(floor):
        raise Failed(f"python: FAILED {have} at {sys.executable} is below the floor {floor}")
    return f"python: ok {have} >= {floor} ({sys.executable})"


def check_torch(floor: str) -> str:
    try:
        import torch
    except Exception as err:  # noqa: BLE001 (a missing or broken torch: one line)
        raise Failed(f"torch: FAILED not importable ({type(err).__name__}: {err})") from None
    if _version(torch.__version__) < _version(floor):
        raise Failed(f"torch: FAILED {torch.__version__} is below the floor {floor}")
    return f"torch: ok {torch.__version__} >= {floor} (CUDA build {torch.version.cuda or 'none'})"


def check_cuda(device: str) -> tuple[str, int]:
    """The line and the number of devices (0 on the CPU)."""
    import torch

    if device == "cpu":
        return "cuda: ok not asked for (--device cpu)", 0
    if not torch.cuda.is_available():
        build = torch.version.cuda or "none (a CPU build)"
        raise Failed(
            f"cuda: FAILED torch {torch.__version__} sees no CUDA device (its CUDA build: "
            f"{build}; CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})"
        )
    n = torch.cuda.device_count()
    names = []
    for i in range(n):
        p = torch.cuda.get_device_properties(i)
        names.append(f"{i}: {p.name} {p.total_memory / GIB:.0f} GiB")
    return f"cuda: ok {n} device(s), CUDA {torch.version.cuda}: " + "; ".join(names), n


def shm_need(papers: list[str], ranks: int, scale: str = "full") -> tuple[int, str]:
    """(bytes, the paper that needs them): the most any listed paper's loader workers hold in
    shared memory at once at its ``scale`` config on ``ranks`` ranks."""
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.runner import resolve_config

    need, who = 0, "none"
    for name in papers:
        n = get_experiment(name).loader_shared_memory(resolve_config(name, scale), ranks)
        if n > need:
            need, who = n, name
    return need, who


def check_shm(shm: Path, papers: list[str], ranks: int, scale: str = "full") -> str:
    need, who = shm_need(papers, ranks, scale)
    try:
        free = shutil.disk_usage(shm).free
    except OSError as err:
        if need == 0:
            return (
                f"shm: ok {shm} absent ({err.strerror}), and no listed paper starts loader workers"
            )
        raise Failed(
            f"shm: FAILED {shm} cannot be read ({err}); {who} needs {need / GIB:.1f} GiB there"
        ) from None
    if free < need:
        raise Failed(
            f"shm: FAILED {free / GIB:.2f} GiB free in {shm}, {who}'s loader workers hold up to "
            f"{need / GIB:.2f} GiB there on {ranks} rank(s) (run the container with a larger "
            f"--shm-size, or --set workers=... for that paper)"
        )
    what = f"{who} needs {need / GIB:.2f} GiB on {ranks} rank(s)" if need else "no loader workers"
    return f"shm: ok {free / GIB:.1f} GiB free in {shm}; {what}"


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_disk(out: Path, gib: float) -> str:
    free = shutil.disk_usage(_existing(out)).free
    if free < gib * GIB:
        raise Failed(f"disk: FAILED {free / GIB:.1f} GiB free under {out}, the check needs {gib:g}")
    return f"disk: ok {free / GIB:.0f} GiB free under {out} (needs {gib:g})"


def check_data(papers: list[str], data_root: Path | None, synth: Path | None) -> str:
    from paperzoo.data import layouts
    from paperzoo.experiments.lookup import get_experiment

    wanted = sorted({d for p in papers if (d := get_experiment(p).paper_data) is not None})
    if synth is not None:
        present = [d for d in wanted if layouts.layout(d).present(synth)]
        if len(present) < len(wanted):
            base = _existing(synth)
            try:
                tempfile.TemporaryFile(dir=base).close()
            except OSError as err:
                raise Failed(
                    f"data: FAILED {base} cannot be written for the synthetic data ({err.strerror})"
                ) from None
        return (
            f"data: ok synthetic under {synth} ({len(present)} of {len(wanted)} data sets there, "
            "the rest written by tools/synth_data.py)"
        )
    if data_root is None:
        if wanted:
            raise Failed(f"data: FAILED no --data-root and no --synth; {', '.join(wanted)} needed")
        return "data: ok none needed"
    for d in wanted:
        if not layouts.layout(d).present(data_root):
            raise Failed(f"data: FAILED {layouts.message(d, data_root)}")
    return f"data: ok {', '.join(wanted)} under {data_root}"


def check_papers(names: list[str]) -> list[str]:
    """The papers to check (``names``, or every registered one when empty), paperzoo imported
    (from ``src/`` beside this script when it is there)."""
    if (ROOT / "src" / "paperzoo").is_dir() and str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    try:
        from paperzoo.experiments import EXPERIMENTS
        from paperzoo.experiments.lookup import get_experiment

        known = EXPERIMENTS.names()
        for name in names or known:
            if name in known:
                get_experiment(name)  # imports the paper's modules
    except Exception as err:  # noqa: BLE001 (a module paperzoo needs is missing: one line)
        raise Failed(
            f"papers: FAILED paperzoo does not import ({type(err).__name__}: {err}; bring the "
            "missing package as a wheel: make wheelhouse)"
        ) from None
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise Failed(f"papers: FAILED unknown paper(s) {', '.join(unknown)}")
    return names or list(known)


def run(args: argparse.Namespace) -> None:
    """Every check in order, each line written as it passes; raises ``Failed`` at the first
    failure."""

    def say(line: str) -> None:
        sys.stdout.write(f"preflight: {line}\n")
        sys.stdout.flush()

    py_floor, torch_floor = floors()
    say(check_python(py_floor))
    say(check_torch(torch_floor))
    line, devices = check_cuda(args.device)
    say(line)
    papers = check_papers(args.papers.split())
    say(f"papers: ok {len(papers)}: {' '.join(papers)}")
    ranks = args.ranks or max(1, devices)
    say(check_shm(args.shm, papers, ranks, args.scale))
    say(check_disk(args.out, args.disk_gib))
    if args.scale == "full":
        say(check_data(papers, args.data_root, args.synth))
    else:
        say(f"data: ok none read at --scale {args.scale}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--scale", choices=("full", "quick", "smoke"), default="full")
    p.add_argument("--papers", default="", help="space-separated (default: every paper)")
    p.add_argument("--ranks", type=int, default=0, help="ranks per machine (0: the devices)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--data-root", type=Path, default=None)
    where.add_argument("--synth", type=Path, default=None, help="where synthetic data go")
    p.add_argument("--out", type=Path, default=Path("runs"))
    p.add_argument("--shm", type=Path, default=Path("/dev/shm"))
    p.add_argument("--disk-gib", type=float, default=10.0)
    args = p.parse_args(argv)
    if args.ranks < 0 or not args.disk_gib >= 0:
        p.error("--ranks and --disk-gib must be >= 0")
    try:
        run(args)
    except Failed as err:
        sys.stdout.flush()
        sys.stderr.write(f"preflight: {err}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
