"""tools/gpu_check.sh, tools/gpu_check_offline.sh and tools/synth_data.py: the check cannot pass
vacuously.

The script runs with stand-in programs in ``BIN`` (a ``paperzoo`` that exits as told, a
``python`` that records torchrun launches and passes everything else to this interpreter), so
no paper trains here. ``synth_data.py --small`` writes every format a full config reads, and each
file is read back with the package's own loaders.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_check.sh"
OFFLINE = ROOT / "tools" / "gpu_check_offline.sh"
SYNTH_S = 50  # the allowance for writing the synthetic data (kept for a rerun)

_FAKE_PAPERZOO = """#!/usr/bin/env bash
# stand-in: exits with $FAKE_RC; with 0 it writes --out/results.json as a --max-steps run does
# ($FAKE_RESULT when set)
out=
while [[ $# -gt 0 ]]; do [[ $1 == --out ]] && out=$2; shift; done
if [[ ${FAKE_RC:-0} -ne 0 ]]; then
  echo "paperzoo: error: CIFAR-10 is the paper's data set at full scale; give --data-root DIR" >&2
  exit "$FAKE_RC"
fi
# $FAKE_ORPHAN: leave a process behind in a session of its own (its pid written there)
if [[ -n ${FAKE_ORPHAN:-} ]]; then setsid sleep 300 >/dev/null 2>&1 & echo $! >"$FAKE_ORPHAN"; fi
result=${FAKE_RESULT:-}
[[ -n $result ]] || result='{"estimate_seconds": 3600}'
mkdir -p "$out" && echo "$result" >"$out/results.json"
"""

_FAKE_PYTHON = """#!/usr/bin/env bash
# stand-in: records torchrun launches (exit 0, nothing run); answers the CUDA device count with
# $FAKE_GPUS when set (after $FAKE_GPUS_DELAY s, as importing torch takes); writes no synthetic
# data with $FAKE_SYNTH; anything else runs in {python}
if [[ "$1 $2" == "-m torch.distributed.run" ]]; then echo "$*" >>"{log}"; exit 0; fi
if [[ $1 == -c && $2 == *device_count* && -n ${{FAKE_GPUS:-}} ]]; then
  sleep "${{FAKE_GPUS_DELAY:-0}}"; echo "$FAKE_GPUS"; exit 0
fi
if [[ $1 == tools/synth_data.py && -n ${{FAKE_SYNTH:-}} ]]; then exit 0; fi  # no data written
exec {python} "$@"
"""


def _bin(tmp_path: Path) -> Path:
    b = tmp_path / "bin"
    b.mkdir()
    (b / "paperzoo").write_text(_FAKE_PAPERZOO)
    (b / "python").write_text(_FAKE_PYTHON.format(python=sys.executable, log=tmp_path / "torchrun"))
    for f in b.iterdir():
        f.chmod(0o755)
    return b


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tools/gpu_check_plan.py's output, made once for the module's checks (PLAN)."""
    path = tmp_path_factory.mktemp("plan") / "plan.tsv"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_check_plan.py")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    path.write_text(proc.stdout)
    return path


@pytest.fixture(autouse=True)
def _plan(plan_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAN", str(plan_file))


def _check(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "DEVICE": "cpu", "SCALE": "smoke", "OUT": str(tmp_path / "out")}
    full.update(BIN=str(_bin(tmp_path)), **env)
    return subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120, env=full
    )


def test_a_paper_exiting_2_fails_the_check(tmp_path: Path) -> None:
    proc = _check(tmp_path, PAPERS="coordconv", FAKE_RC="2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("coordconv "))
    assert "FAILED (2)" in row and "CIFAR-10 is the paper's data set" in row
    assert "skipped" not in proc.stdout


def test_papers_that_run_pass_and_papers_left_out_are_not_run(tmp_path: Path) -> None:
    proc = _check(tmp_path, PAPERS="coordconv wrm")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [ln.split()[:3] for ln in proc.stdout.splitlines() if ln.split()[:1] in (["coordconv"], ["wrm"], ["gat"])]  # fmt: skip
    assert rows == [["coordconv", "single", "ran"], ["wrm", "single", "ran"]]
    assert "all 2 papers ran" in proc.stdout


def test_data_parallel_papers_go_through_torchrun_on_one_process(tmp_path: Path) -> None:
    proc = _check(tmp_path, PAPERS="resnet", NPROC="1")
    launches = (tmp_path / "torchrun").read_text().splitlines()
    assert len(launches) == 1
    assert "--nproc_per_node=1 -m paperzoo reproduce resnet" in launches[0]
    assert "resnet (torchrun x1" in proc.stdout
    # the stand-in ran nothing: exit 0 without results.json is a failure, not a pass
    assert proc.returncode == 1 and "exit 0 without results.json" in proc.stdout


@pytest.mark.parametrize(
    ("result", "state", "note"),
    [
        (
            '{"estimate_seconds": 60, "claims": [{"id": "a", "measured": null, '
            '"why_not_measured": ["diverged at step 1: loss nan"]}]}',
            "FAILED (diverged)",
            "diverged at step 1: loss nan",
        ),
        (
            '{"estimate_seconds": 60, "claims": [], '
            '"details": {"diverged": {"beta_vae-s0": "its VAE diverged at step 1 (loss nan)"}}}',
            "FAILED (diverged)",
            "beta_vae-s0: its VAE diverged at step 1",
        ),
        ('{"claims": []}', "FAILED (no estimate)", "a loop ran no step"),
    ],
)
def test_a_run_that_diverged_or_gives_no_estimate_fails(
    tmp_path: Path, result: str, state: str, note: str
) -> None:
    proc = _check(tmp_path, PAPERS="coordconv", FAKE_RESULT=result)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("coordconv "))
    assert state in row and note in row
    assert "1 of 1 papers FAILED" in proc.stdout


def test_the_table_shows_the_peak_gpu_memory_and_the_syncs_in_steps(tmp_path: Path) -> None:
    result = (
        '{"estimate_seconds": 60, "estimate": {"loops": [{"desc": "a", "peak_gpu_memory_gib": '
        '2.25, "step_syncs": {"x.py:3: called a synchronizing CUDA operation": 2}, "children": '
        '[{"desc": "b", "peak_gpu_memory_gib": 7.5, "step_syncs": {}}]}]}}'
    )
    proc = _check(tmp_path, PAPERS="coordconv", FAKE_RESULT=result)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    heads = next(ln for ln in proc.stdout.splitlines() if ln.startswith("paper "))
    assert "peak GPU GiB  step syncs" in heads
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("coordconv "))
    assert row.split()[6:8] == ["7.5", "2"]  # the largest loop's peak; the syncs of every loop


def test_the_costliest_papers_run_first(tmp_path: Path) -> None:
    proc = _check(tmp_path)
    order = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("gpu-check: ")]
    order = [p for p in order if p not in ("--scale", "the")]
    assert order[:3] == ["perceiver", "perceiver", "disentanglement"]  # launch and exit lines


def test_nproc_is_the_number_of_gpus_torch_sees(tmp_path: Path) -> None:
    proc = _check(tmp_path, DEVICE="cuda", FAKE_GPUS="3", PAPERS="resnet coordconv")
    launches = (tmp_path / "torchrun").read_text().splitlines()
    assert len(launches) == 1 and "--nproc_per_node=3 -m paperzoo reproduce resnet" in launches[0]
    assert "resnet (torchrun x3" in proc.stdout
    (tmp_path / "none").mkdir()
    proc = _check(tmp_path / "none", DEVICE="cuda", FAKE_GPUS="0", PAPERS="coordconv")
    assert proc.returncode == 2 and "torch sees no CUDA device" in proc.stderr


def test_a_spent_budget_fails_the_papers_not_started(tmp_path: Path) -> None:
    proc = _check(tmp_path, PAPERS="coordconv wrm", BUDGET="5")
    assert proc.returncode == 1
    assert "2 of 2 papers FAILED" in proc.stdout
    assert proc.stdout.count("not started") >= 2


def _limits() -> dict[str, int]:
    """paper -> its limit on CUDA (``Experiment.gpu_check``), as tools/gpu_check_plan.py lists
    it for the script."""
    rows = [ln.split("\t") for ln in Path(os.environ["PLAN"]).read_text().splitlines()]
    return {r[0]: int(r[1]) for r in rows}


def test_each_paper_has_its_own_stated_limit_on_cuda(tmp_path: Path) -> None:
    limits = _limits()
    assert limits["perceiver"] != limits["coordconv"]
    proc = _check(tmp_path, DEVICE="cuda", FAKE_GPUS="1", PAPERS="perceiver coordconv")
    assert f"perceiver (torchrun x1, up to {limits['perceiver']}s)" in proc.stdout
    assert f"coordconv (single, up to {limits['coordconv']}s)" in proc.stdout
    heads = next(ln for ln in proc.stdout.splitlines() if ln.startswith("paper "))
    assert heads.split()[:6] == ["paper", "mode", "status", "limit", "s", "wall"]
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("coordconv "))
    assert row.split()[:4] == ["coordconv", "single", "ran", str(limits["coordconv"])]
    # TIMEOUT, when set, is every paper's limit
    (tmp_path / "override").mkdir()
    proc = _check(
        tmp_path / "override", DEVICE="cuda", FAKE_GPUS="1", PAPERS="coordconv", TIMEOUT="77"
    )
    assert "coordconv (single, up to 77s)" in proc.stdout
    # the default budget counts from the end of the preflight: a slow one cuts no paper's limit
    (tmp_path / "slow").mkdir()
    proc = _check(
        tmp_path / "slow", DEVICE="cuda", FAKE_GPUS="1", FAKE_GPUS_DELAY="1.5", PAPERS="coordconv"
    )
    assert f"coordconv (single, up to {limits['coordconv']}s)" in proc.stdout
    # a BUDGET set by the user counts from the start, the preflight included
    (tmp_path / "set").mkdir()
    proc = _check(
        tmp_path / "set", DEVICE="cuda", FAKE_GPUS="1", FAKE_GPUS_DELAY="1.5", PAPERS="coordconv",
        TIMEOUT="77", BUDGET="77",
    )  # fmt: skip
    cut = re.search(r"coordconv \(single, up to (\d+)s of its 77s\)", proc.stdout)
    assert cut and 60 <= int(cut[1]) <= 76  # 1.5 s and more spent before the paper
    # a paper that is not registered does not start
    (tmp_path / "unknown").mkdir()
    proc = _check(tmp_path / "unknown", DEVICE="cuda", FAKE_GPUS="1", PAPERS="coordconv nosuch")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "gpu-check: unknown paper 'nosuch' (paperzoo list names them)"


def test_each_limit_is_derived_from_the_papers_counts() -> None:
    """Every registered paper's limit is ceil(plumbing + 1.5 x (setup + steps + loader)): its
    stated plumbing and setup, the check's 6 steps of each planned loop at the priced seconds of
    one of its full run's steps (its stored count), and one loader warm-up (one worker's
    whole batch), recomputed here from the stored counts."""
    import math

    from paperzoo.cost import GPU_CHECK_STEPS, _full_plan, cached_costs
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.lookup import get_experiment

    limits = _limits()
    assert sorted(limits) == sorted(EXPERIMENTS.names())
    counts = cached_costs()
    for name, limit in limits.items():
        exp = get_experiment(name)
        cfg, plan = _full_plan(name)
        c = counts[name]
        step = c["gpu_hours"] * 3600 / c["steps"]
        loader = sum(p["loader_seconds"] for p in c["parts"]) / c["steps"]
        work = (
            exp.gpu_check.setup_s
            + GPU_CHECK_STEPS * len(plan) * step
            + exp.loader_workers(cfg) * loader  # one warm-up: the loops share the loader
        )
        assert limit == math.ceil(exp.gpu_check.plumbing_s + 1.5 * work), name
    # the Perceiver's: its 6 steps of FLOP (the Perceiver's own 4.7 s a step) and one loader
    # warm-up of one worker decoding a 1,024-image batch are in it
    perceiver = counts["perceiver"]["parts"][0]
    assert perceiver["what"] == "perceiver_raster training"
    flop_step = perceiver["gpu_hours"] * 3600 / 150120
    assert 4.5 < flop_step < 5.0
    warm = 16 * counts["perceiver"]["parts"][0]["loader_seconds"] / 150120
    assert limits["perceiver"] >= 8 + 1.5 * (GPU_CHECK_STEPS * flop_step + warm)


def test_the_check_takes_its_steps_and_its_budget_from_the_derivation(tmp_path: Path) -> None:
    """The script's STEPS is the steps the limits are derived for (at least 6: a steady step
    averaged over 5), and its budget on CUDA is the listed papers' limits added, the synthetic
    data's allowance with them when it writes the data."""
    from paperzoo.cost import GPU_CHECK_STEPS

    assert GPU_CHECK_STEPS >= 6
    assert f"STEPS=${{STEPS:-{GPU_CHECK_STEPS}}}" in SCRIPT.read_text()
    assert f"SYNTH_S={SYNTH_S} " in SCRIPT.read_text()
    limits = _limits()
    papers = ["coordconv", "wrm"]
    proc = _check(tmp_path, DEVICE="cuda", FAKE_GPUS="1", PAPERS=" ".join(papers))
    first = proc.stdout.splitlines()[0]
    budget = sum(limits[p] for p in papers)
    assert first == f"gpu-check: the check runs 6 steps per loop within a budget of {budget} s"
    (tmp_path / "synth").mkdir()
    proc = _check(
        tmp_path / "synth", DEVICE="cuda", FAKE_GPUS="1", PAPERS="coordconv", SYNTH="1",
        FAKE_SYNTH="1",
    )  # fmt: skip
    assert f"within a budget of {limits['coordconv'] + SYNTH_S} s" in proc.stdout


def test_every_registered_paper_runs_by_default_and_the_data_parallel_ones_under_torchrun(
    tmp_path: Path,
) -> None:
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.lookup import get_experiment

    proc = _check(tmp_path, NPROC="1", PLAN="")  # the plan made by the script itself
    ran = [ln.split()[1] for ln in proc.stdout.splitlines() if " exit 0 after " in ln]
    assert sorted(ran) == EXPERIMENTS.names()
    launched = (tmp_path / "torchrun").read_text().splitlines()
    ddp = sorted(n for n in EXPERIMENTS.names() if get_experiment(n).gpu_check.torchrun)
    assert ddp == ["disentanglement", "perceiver", "resnet"]
    assert sorted(ln.split(" reproduce ")[1].split()[0] for ln in launched) == ddp


def test_no_process_of_a_paper_outlives_it(tmp_path: Path) -> None:
    """A process the paper left running in a session of its own (as a rank started with setsid
    could) is killed when the paper ends, and named in its log."""
    pid_file = tmp_path / "orphan.pid"
    proc = _check(tmp_path, PAPERS="coordconv", FAKE_ORPHAN=str(pid_file))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pid = int(pid_file.read_text())
    assert "environ" not in proc.stderr  # processes that end while they are scanned: no noise
    assert (
        f"gpu-check: coordconv left 1 process(es) running after it ended; killed: {pid}"
        in proc.stdout
    )
    try:
        os.waitpid(pid, os.WNOHANG)  # (not our child: raises)
    except ChildProcessError:
        pass
    state = Path(f"/proc/{pid}/stat")
    assert not state.exists() or state.read_text().split()[2] == "Z"  # gone (or a zombie)


def test_the_kill_grace_is_longer_than_torchruns() -> None:
    text = SCRIPT.read_text()
    assert 'timeout --kill-after="$KILL_GRACE"' in text
    default = int(text.split("KILL_GRACE=${KILL_GRACE:-")[1].split("}")[0])
    assert default > 30  # torchrun gives its ranks 30 s after a SIGTERM


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            {"KILL_GRACE": "30"},
            "gpu-check: KILL_GRACE must be a whole number of seconds above torchrun's 30, got '30'",
        ),
        ({"STEPS": "two"}, "gpu-check: STEPS must be a whole number, got 'two'"),
        ({"NPROC": "0"}, "gpu-check: NPROC must be at least 1, got 0"),
        ({"PAPERS": " "}, "gpu-check: PAPERS is empty"),
    ],
)
def test_bad_settings_exit_2_with_one_line(
    tmp_path: Path, setting: dict[str, str], message: str
) -> None:
    proc = _check(tmp_path, **{"PAPERS": "coordconv", **setting})
    assert proc.returncode == 2
    assert proc.stderr.strip() == message


# -- tools/synth_data.py ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synth():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location("synth_data", ROOT / "tools" / "synth_data.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_synth_data_writes_every_full_format_the_loaders_read(
    tmp_path: Path, synth, capsys: pytest.CaptureFixture
) -> None:
    from paperzoo.data import babi, layouts
    from paperzoo.data.base import DATASETS
    from paperzoo.data.dsprites import DSPRITES_FILE, DSpritesNPZ
    from paperzoo.data.imagenet import scan_image_folder

    root = tmp_path / "data"
    assert synth.main([str(root), "--small"]) == 0
    for name in ("mnist", "cifar10", "cifar100", "svhn", "imagenet", "abstract-dsprites"):
        layouts.require(name, root)  # present in the layout a full run checks for
    layouts.require(babi.FOLDS_LAYOUT, root)

    for name, classes in (("mnist", 10), ("cifar10", 10), ("cifar100", 100), ("svhn", 10)):
        split = DATASETS.get(name)(data_root=root)
        assert split.num_classes == classes and len(split.x_train) > 0 and len(split.x_test) > 0
        assert int(split.y_train.max()) < classes

    train = scan_image_folder(root / "imagenet" / "train")
    val = scan_image_folder(root / "imagenet" / "val", train.classes)
    assert len(train) == 2 * len(train.classes) and len(val) == len(train.classes)
    assert all(c.startswith("n") and len(c) == 9 for c in train.classes)  # WordNet-id form
    assert train.load(0).mode == "RGB"

    grid = synth.SMALL_DSPRITES_GRID
    ds = DSpritesNPZ(root / "dsprites" / DSPRITES_FILE, factor_sizes=grid)
    x = ds.sample_observations_from_factors(np.zeros((2, 5), np.int64), np.random.default_rng(0))
    assert tuple(x.shape) == (2, 1, 64, 64) and set(x.unique().tolist()) <= {0.0, 1.0}

    assert babi.official_folds(root) == list(range(1, babi.NUM_FOLDS + 1))
    for task in babi.TASKS:
        loaded = babi.load_official(task, root, fold=babi.NUM_FOLDS, require_fold=True)
        assert len(loaded.train) == len(loaded.test) == 20

    capsys.readouterr()
    assert synth.main([str(root), "--small", "--only", "mnist,babi"]) == 0  # kept, not rewritten
    assert capsys.readouterr().out.split("\n")[:2] == [
        f"kept synthetic mnist under {root}",
        f"kept synthetic babi under {root}",
    ]


def test_synth_data_refuses_an_unknown_data_set(tmp_path: Path, synth, capsys) -> None:  # noqa: ANN001
    assert synth.main([str(tmp_path), "--only", "mnist,imagenet21k"]) == 2
    assert "unknown data set 'imagenet21k'" in capsys.readouterr().err


_FAKE_PYTHON3 = """#!/usr/bin/env bash
# stand-in for a GPU machine's own python3: `-m paperzoo` writes --out/results.json as a
# --max-steps run does; anything else runs in {python}
if [[ "$1 $2" == "-m paperzoo" ]]; then
  out=
  while [[ $# -gt 0 ]]; do [[ $1 == --out ]] && out=$2; shift; done
  mkdir -p "$out" && echo '{{"estimate_seconds": 60}}' >"$out/results.json"
  exit 0
fi
exec {python} "$@"
"""


def test_the_offline_check_runs_paperzoo_with_the_machines_python3(tmp_path: Path) -> None:
    path = tmp_path / "path"
    path.mkdir()
    (path / "python3").write_text(_FAKE_PYTHON3.format(python=sys.executable))
    (path / "python3").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{path}:{os.environ['PATH']}",
        "DEVICE": "cpu",
        "SCALE": "smoke",
        "SYNTH": "0",
        "PAPERS": "coordconv wrm",
        "REPORT": str(tmp_path / "report"),
        "CHECK_OUT": str(tmp_path / "check"),
        "OUT": str(tmp_path / "a remote runner's folder"),
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "tools" / "gpu_check_offline.sh")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = tmp_path / "report"
    assert sorted(p.name for p in report.iterdir()) == [
        "gpu-check-runs.tgz",
        "gpu-check.txt",
        "status.tsv",
    ]
    log = (report / "gpu-check.txt").read_text()
    assert f"torch {__import__('torch').__version__}" in log and "all 2 papers ran" in log
    assert (tmp_path / "check" / "wrm" / "results.json").is_file()
    assert not (tmp_path / "a remote runner's folder").exists()


def test_the_offline_check_names_a_missing_module_before_writing_any_data(tmp_path: Path) -> None:
    """A module the package imports that the machine lacks stops the check with one line naming
    it (exit 2), before the synthetic data or any run is written."""
    path = tmp_path / "path"
    path.mkdir()
    (path / "python3").write_text(_FAKE_PYTHON3.format(python=sys.executable))
    (path / "python3").chmod(0o755)
    absent = tmp_path / "absent" / "safetensors"  # shadows the installed package
    absent.mkdir(parents=True)
    (absent / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'safetensors'\", name='safetensors')\n"
    )
    pythonpath = os.pathsep.join([str(tmp_path / "absent"), os.environ.get("PYTHONPATH", "")])
    env = {
        **os.environ,
        "PATH": f"{path}:{os.environ['PATH']}",
        "PYTHONPATH": pythonpath.rstrip(os.pathsep),
        "DEVICE": "cpu",
        "SCALE": "smoke",
        "SYNTH": "1",
        "PAPERS": "coordconv",
        "REPORT": str(tmp_path / "report"),
        "CHECK_OUT": str(tmp_path / "check"),
    }
    proc = subprocess.run(
        ["bash", str(OFFLINE)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(
        "gpu-check-offline: missing module(s) the reproductions import: safetensors "
    )
    assert not (tmp_path / "check").exists()  # no synthetic data, no run
    log = (tmp_path / "report" / "gpu-check.txt").read_text()
    assert "preflight: data: ok" in log  # the preflight ran first (the import is a lazy one)
    assert "safetensors: ModuleNotFoundError" in log


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a box without CUDA")
def test_the_offline_check_stops_at_the_preflight_or_an_empty_wheelhouse(tmp_path: Path) -> None:
    """On CUDA (the default) without a device the preflight's line ends the check before any
    data or run (exit 2); a WHEELS folder with no wheels ends it before anything is installed."""
    path = tmp_path / "path"
    path.mkdir()
    (path / "python3").write_text(_FAKE_PYTHON3.format(python=sys.executable))
    (path / "python3").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{path}:{os.environ['PATH']}",
        "PAPERS": "coordconv",
        "REPORT": str(tmp_path / "report"),
        "CHECK_OUT": str(tmp_path / "check"),
    }
    env.pop("DEVICE", None)
    proc = subprocess.run(
        ["bash", str(OFFLINE)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("preflight: cuda: FAILED")
    assert not (tmp_path / "check").exists()
    log = (tmp_path / "report" / "gpu-check.txt").read_text()
    assert "preflight: torch: ok" in log and "preflight: cuda: FAILED" in log
    (tmp_path / "empty").mkdir()
    proc = subprocess.run(
        ["bash", str(OFFLINE)], capture_output=True, text=True, timeout=120,
        env={**env, "WHEELS": str(tmp_path / "empty")},
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        proc.stderr
        == f"gpu-check-offline: WHEELS={tmp_path / 'empty'} holds no wheels (make wheelhouse)\n"
    )
