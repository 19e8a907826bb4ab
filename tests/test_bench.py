"""`paperzoo bench`: the JSON report, threads passed on, errors, and the table rendered from it.

The benchmarks here are tiny stand-ins written into a temporary benchmarks/ directory (no timing is
asserted); one test runs a real script at its --quick sizes to check that it returns the schema.
"""

import datetime
import json
import os
import shutil
from pathlib import Path

import pytest
import torch

import paperzoo
from paperzoo import bench
from paperzoo.cli import main
from paperzoo.experiments import EXPERIMENTS, get_experiment

REAL = Path(__file__).resolve().parents[1] / "benchmarks"

# A stand-in benchmark: records the argv and threads it saw, and writes a wrong ratio of its own
# (the CLI must compute the ratio from the values).
FAKE = """
import argparse
import torch
from _common import add_common_args, agreement, apply_threads, result, row

def main(argv=None):
    ap = argparse.ArgumentParser()
    add_common_args(ap)
    args = ap.parse_args(argv)
    apply_threads(args)
    rows = [
        row("work", {"paperzoo": 1.0, "other": 2.0}, ours="paperzoo", anchor="other",
            unit="s", agreed=agreement("outputs", 0.0, 1e-6), ratio=99.0),
        row("modes", {"a": 4.0, "b": 1.0}, ours="a", anchor="b", unit="s", note="one model"),
    ]
    return result("NAME", args, rows, extra={"argv": list(argv or []),
                                             "torch_threads": torch.get_num_threads()})

if __name__ == "__main__":
    main()
"""


@pytest.fixture
def bench_dir(tmp_path, monkeypatch):
    d = tmp_path / "benchmarks"
    d.mkdir()
    shutil.copy(REAL / "_common.py", d / "_common.py")
    (d / "alpha.py").write_text(FAKE)
    (d / "beta.py").write_text(FAKE)
    monkeypatch.setattr(bench, "bench_dir", lambda: d)
    threads = torch.get_num_threads()
    yield d
    torch.set_num_threads(threads)


def _run(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_json_report_schema_machine_and_computed_ratio(bench_dir, tmp_path, capsys):
    path = tmp_path / "out" / "bench.json"
    rc, out, _ = _run(["bench", "--threads", "1", "--json", str(path)], capsys)
    assert rc == 0 and "== alpha" in out and "== beta" in out
    report = json.loads(path.read_text())
    assert report["schema"] == "paperzoo-bench/1"
    m = report["machine"]
    assert isinstance(m["cpu"], str) and m["cpu"]
    assert m["cores"] == os.cpu_count() and m["threads"] == 1
    assert m["torch"] == torch.__version__ and m["paperzoo"] == paperzoo.__version__
    assert datetime.datetime.fromisoformat(m["date"]).tzinfo is not None
    assert [b["benchmark"] for b in report["benchmarks"]] == ["alpha", "beta"]
    rows = report["benchmarks"][0]["rows"]
    assert rows[0]["ratio"] == pytest.approx(2.0)  # anchor / ours, not the 99 the script wrote
    assert rows[0]["agreed"] == {"check": "outputs", "max_diff": 0.0, "tol": 1e-6, "ok": True}
    assert rows[1]["ratio"] == pytest.approx(0.25) and rows[1]["agreed"] is None
    assert rows[1]["note"] == "one model"
    assert not list(path.parent.glob(".*.tmp"))  # written atomically, nothing left behind


def test_threads_reach_the_benchmark(bench_dir, tmp_path, capsys):
    path = tmp_path / "bench.json"
    rc, _, _ = _run(["bench", "alpha", "--threads", "2", "--quick", "--json", str(path)], capsys)
    assert rc == 0
    (b,) = json.loads(path.read_text())["benchmarks"]
    assert b["extra"]["argv"] == ["--threads", "2", "--quick"]  # the script's own --threads
    assert b["extra"]["torch_threads"] == 2 and b["threads"]["torch"] == 2
    assert b["args"]["threads"] == 2 and b["args"]["quick"] is True


def test_unknown_benchmark_is_one_line_exit_2(bench_dir, capsys):
    rc, out, err = _run(["bench", "nosuch"], capsys)
    assert rc == 2 and "==" not in out
    assert err.count("\n") == 1 and "no benchmark 'nosuch'" in err and "alpha, beta" in err


def test_bad_json_path_fails_before_running(bench_dir, tmp_path, capsys):
    rc, out, err = _run(["bench", "--json", str(tmp_path)], capsys)
    assert rc == 2 and "is a directory" in err and err.count("\n") == 1 and "==" not in out
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc, out, err = _run(["bench", "--json", str(blocker / "x.json")], capsys)
    assert rc == 2 and "is not a directory" in err and err.count("\n") == 1 and "==" not in out


def test_a_failing_benchmark_is_reported_and_the_others_run(bench_dir, tmp_path, capsys):
    (bench_dir / "alpha.py").write_text("def main(argv=None):\n    raise RuntimeError('boom')\n")
    path = tmp_path / "bench.json"
    rc, _, _ = _run(["bench", "--json", str(path)], capsys)
    assert rc == 1
    alpha, beta = json.loads(path.read_text())["benchmarks"]
    assert alpha["error"] == "RuntimeError: boom" and alpha["rows"] == []
    assert len(beta["rows"]) == 2


def test_table_is_rendered_from_the_json(bench_dir, tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert _run(["bench", "--quick", "--json", str(path)], capsys)[0] == 0
    rc, out, _ = _run(["bench", "--table", str(path)], capsys)
    assert rc == 0
    assert "| alpha | work | paperzoo | other | 2.00 | yes: outputs" in out
    assert "| beta | modes | a | b | 0.25 | not compared [1] |" in out
    assert "[1] one model" in out and "say nothing about speed" in out
    rc, _, err = _run(["bench", "--table", str(tmp_path / "missing.json")], capsys)
    assert rc == 2 and err.count("\n") == 1
    (tmp_path / "other.json").write_text('{"schema": "x"}')
    rc, _, err = _run(["bench", "--table", str(tmp_path / "other.json")], capsys)
    assert rc == 2 and "not a `paperzoo bench --json` report" in err


def test_a_real_benchmark_returns_the_schema(tmp_path, capsys, monkeypatch):
    """resnet at its --quick sizes (one step of resnet20 at batch 2), through the CLI."""
    monkeypatch.setattr(bench, "bench_dir", lambda: REAL)
    threads = torch.get_num_threads()
    path = tmp_path / "bench.json"
    try:
        rc, _, _ = _run(
            ["bench", "resnet", "--quick", "--threads", "1", "--json", str(path)], capsys
        )
    finally:
        torch.set_num_threads(threads)
    assert rc == 0
    (b,) = json.loads(path.read_text())["benchmarks"]
    assert b["skipped"] is None and b["threads"]["torch"] == 1
    modes = {(r["ours"], r["anchor"]) for r in b["rows"]}
    assert modes == {
        ("contiguous", "fp32 matmul peak"),
        ("channels_last", "fp32 matmul peak"),
        ("channels_last", "contiguous"),
    }
    for r in b["rows"]:
        assert r["measure"] == "seconds" and r["agreed"] is None and r["note"]
        v = r["values"]
        assert r["ratio"] == pytest.approx(v[r["anchor"]] / v[r["ours"]])


def test_table_marks_failed_checks_skipped_and_failed_benchmarks():
    machine = {"date": "d", "cpu": "cpu", "cores": 2, "threads": 1, "torch": "t", "paperzoo": "p"}
    bad = {"check": "outputs", "max_diff": 0.5, "tol": 1e-6, "ok": False}
    report = {
        "machine": machine,
        "command": {"quick": False},
        "benchmarks": [
            {
                "benchmark": "x",
                "rows": [
                    {
                        "workload": "w",
                        "values": {"p": 3.0, "q": 1.5},
                        "ours": "p",
                        "anchor": "q",
                        "agreed": bad,
                    }
                ],
            },
            {"benchmark": "y", "skipped": "lib is not installed", "rows": []},
            {"benchmark": "z", "error": "RuntimeError: boom", "rows": []},
        ],
    }
    out = bench.render_bench_table(report)
    assert "| x | w | p | q | 0.50 | **no**: outputs, max diff 5.0e-01 (tol 1e-06) |" in out
    assert "- y: skipped: lib is not installed" in out and "- z: RuntimeError: boom" in out
    assert "say nothing about speed" not in out


def test_conv_layout_builds_every_quick_path_and_checks_both_layouts(capsys):
    """conv_layout at its --quick sizes (batch 2, one round): one row per quick-scale path, each
    with the two layouts' agreement check, the fraction of peak of both and the float64 errors
    (no timing is asserted)."""
    threads = torch.get_num_threads()
    try:
        out = bench.run_script(REAL / "conv_layout.py", ["--quick", "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    rows = out["rows"]
    experiments = {r["experiment"] for r in rows}
    # every paper with the engine's channels-last switch in its quick config is measured
    switch = {
        n
        for n in EXPERIMENTS.names()
        if hasattr(get_experiment(n).config("quick"), "channels_last")
    }
    assert switch <= experiments <= set(EXPERIMENTS.names()), (switch, experiments)
    assert {r["scale"] for r in rows} == {"quick"}
    assert len({r["workload"] for r in rows}) == len(rows)
    for r in rows:
        assert (r["ours"], r["anchor"]) == ("channels_last", "contiguous") and r["batch"] == 2
        assert r["agreed"]["tol"] == 1e-3 and r["agreed"]["max_diff"] >= 0
        assert set(r["peak_fraction"]) == {"contiguous", "channels_last"} and r["macs_per_step"] > 0
        assert r["ratio"] == pytest.approx(r["values"]["contiguous"] / r["values"]["channels_last"])
        if r["float64_error"] is not None:
            assert set(r["float64_error"]) == {"contiguous", "channels_last"}
    # the dropout and VAE objectives draw dtype-dependent random numbers: no float64 reference
    no_f64 = {"dropout", "vae beta_vae", "vae factor_vae"}
    assert all((r["float64_error"] is None) == (r["path"] in no_f64) for r in rows)
