"""tools/probes/: each probe runs end to end at smoke size (``--smoke``: the paper's smoke config,
seconds at one thread) and writes the record its docs read, and each uses only paperzoo's public
names, so that a change to a paper module that would break a probe fails here."""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "tools" / "probes"


def _private_uses(path: Path) -> set[str]:
    """The private names (one leading underscore) ``path`` imports from paperzoo or reads as an
    attribute of anything but ``self``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("paperzoo"):
            found |= {a.name for a in node.names if a.name.startswith("_")}
            found |= {p for p in (node.module or "").split(".") if p.startswith("_")}
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            dunder = node.attr.startswith("__") and node.attr.endswith("__")
            on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if not dunder and not on_self:
                found.add(node.attr)
    return found


@pytest.mark.parametrize("name", sorted(p.name for p in PROBES.glob("*.py")))
def test_probe_uses_only_public_names(name: str) -> None:
    assert _private_uses(PROBES / name) == set()


def test_the_private_name_check_sees_imports_and_attributes(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from paperzoo.papers.gat import CONFIGS, _helper\n"
        "import torch\n"
        "x = exp._train(1)\n"
        "y = torch.__version__\n"
        "class A:\n"
        "    def f(self):\n"
        "        return self._own\n",
        encoding="utf-8",
    )
    assert _private_uses(probe) == {"_helper", "_train"}


def _run(script: str, *args: str | Path) -> str:
    """Run ``tools/probes/SCRIPT`` with ``args`` at one thread on this checkout's source; its
    standard output (a failure shows the probe's stderr)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])
        ),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        [sys.executable, str(PROBES / script), *map(str, args)],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _load(script: str) -> ModuleType:
    """The probe ``tools/probes/SCRIPT`` imported as a module (its file names are not module
    names)."""
    spec = importlib.util.spec_from_file_location(f"probe_{Path(script).stem}", PROBES / script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_coordconv_why_writes_one_record_per_call(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run("coordconv_why.py", "--smoke", "--model", "quadrant-cls", "--variant", "base",
         "--seed", "3", "--out", out)  # fmt: skip
    rec = json.loads((out / "quadrant-cls-base-s3.json").read_text())
    assert rec["scale"] == "smoke" and rec["seed"] == rec["trainer_seed"] == 3
    assert all(0.0 <= rec[k] <= 1.0 for k in ("train_acc", "val_acc", "test_acc"))


def test_coordconv_why_runs_every_variant() -> None:
    probe = _load("coordconv_why.py")
    from paperzoo.papers.coordconv import training

    before = (training.seeded, training.CoordConvPainter)
    for model, variants in probe.VARIANTS.items():
        for variant in variants:
            if variant == "base":
                continue  # the command-line test's
            rec = probe.run(model, variant, seed=0, order=probe.ORDER_OFFSET, smoke=True)
            keys = ("test_rmse_px", "max_on_hot_pixel") if model == "regressor" else ("test_acc",)
            assert all(math.isfinite(rec[k]) for k in keys), (model, variant, rec)
    assert (training.seeded, training.CoordConvPainter) == before  # the patches are undone


def test_disentanglement_mixing_scores_and_summarises(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # seed 100: --summarize compares with the committed validation run of that seed
    _run("disentanglement_mixing.py", "--smoke", "--seed", "100", "--baseline",
         "--families", "rotation,coupling", "--out", out)  # fmt: skip
    rec = json.loads((out / "seed-100.json").read_text())
    assert rec["scale"] == "smoke" and set(rec["families"]) == {"rotation", "coupling"}
    assert set(rec["baseline_ground_truth"]) == {"metrics", "wren"}
    for fam in rec["families"].values():
        assert [it["t"] for it in fam["items"]] == [0.0, 0.5, 1.0]
        assert set(fam["spearman_t_metric"]) == {"beta_vae", "factor_vae", "dci"}
    table = _run("disentanglement_mixing.py", "--summarize", "--out", out)
    assert "## rotation" in table and "quick VAE range" in table


def test_disentanglement_mixing_calibrates(tmp_path: Path) -> None:
    probe = _load("disentanglement_mixing.py")
    from paperzoo.papers.disentanglement import training

    study_codes = training.panel_codes
    probe.calibrate(7, tmp_path, smoke=True)
    rec = json.loads((tmp_path / "calibration-seed-7.json").read_text())
    assert rec["chosen"] in ("coupling4", "coupling8") and len(rec["rows"]) == 4
    assert training.panel_codes is study_codes


def test_gat_scale_measures_the_gap_at_every_stop(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run("gat_scale.py", "--smoke", "--seeds", "0", "--steps", "1,2", "--out", out)
    rec = json.loads((out / "smoke-seed-0.json").read_text())
    assert rec["scale"] == "smoke" and [s["steps"] for s in rec["stops"]] == [1, 2]
    for stop in rec["stops"]:
        acc = stop["accuracy"]
        gap = sum(acc["gat"][f"fgsm{e}"] - acc["fgsm_at"][f"fgsm{e}"] for e in (0.1, 0.2, 0.3))
        assert stop["gap"] == pytest.approx(gap / 3)
    assert "| smoke | 2 |" in _run("gat_scale.py", "--summary", "--out", out)


def test_gat_masking_probe_trains_both_fgsm_at_and_summarises(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run("gat_fgsm_at_masking.py", "--smoke", "--seeds", "0", "--out", out)
    rec = json.loads((out / "seed-0.json").read_text())
    assert rec["scale"] == "smoke" and set(rec["accuracy"]) == {"gat", *rec["gap"]}
    for name in rec["gap"]:
        acc, eps = rec["accuracy"][name], rec["eps"]
        gap = sum(rec["accuracy"]["gat"][f"fgsm{e}"] - acc[f"fgsm{e}"] for e in eps) / len(eps)
        assert rec["gap"][name] == pytest.approx(gap) and f"pgd{eps[0]}" in acc
    table = _run("gat_fgsm_at_masking.py", "--summary", "--out", out)
    assert "| 0 | fgsm_at_random_start |" in table and "rises with eps on" in table


def test_gat_masking_probe_swaps_the_training_attack_and_restores_it() -> None:
    probe = _load("gat_fgsm_at_masking.py")
    from paperzoo.papers.gat import training

    original, calls = training.FGSM, []

    def counting(model, *, eps):
        calls.append(eps)
        return probe.random_start_fgsm(model, eps=eps)

    with probe.training_attack(counting):
        assert training.FGSM is counting
    assert training.FGSM is original and not calls
    with pytest.raises(RuntimeError), probe.training_attack(counting):
        raise RuntimeError
    assert training.FGSM is original  # restored on an error too
    attack = probe.random_start_fgsm(torch.nn.Linear(4, 2), eps=0.25)
    assert (attack.steps, attack.alpha, attack.random_start) == (1, 0.3125, True)
    assert probe.rises({"fgsm0.1": 0.5, "fgsm0.2": 0.6, "fgsm0.3": 0.1}, (0.1, 0.2, 0.3))
    assert not probe.rises({"fgsm0.1": 0.9, "fgsm0.2": 0.6, "fgsm0.3": 0.6}, (0.1, 0.2, 0.3))


def test_path_sgd_probe_compares_against_its_reference(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run("path-sgd_balanced_adagrad.py", "--smoke", "--seed", "0", "--out", out)
    rec = json.loads((out / "mnist5k-n300-e2-s0.json").read_text())
    assert rec["scale"] == "smoke" and [r["opt"] for r in rec["runs"]] == ["pathsgd", "adagrad"]
    ref, other = rec["runs"]
    assert ref["mean_log10_ratio_vs_ref"] == 0.0 and ref["final_loss_minus_ref"] == 0.0
    assert len(other["train_loss"]) == rec["epochs"] + 1  # epoch 0: the initialisation
