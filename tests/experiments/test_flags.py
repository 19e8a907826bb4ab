"""The table of ``reproduce``'s options: the parser, the request, the run context, the seeds'
command lines, the resume command and run.json all come from it."""

import shlex
from dataclasses import fields
from pathlib import Path

import pytest

from paperzoo.cli import build_parser, run_request
from paperzoo.engine.distributed import DistInfo
from paperzoo.experiments import RunContext
from paperzoo.experiments import flags as flag_table
from paperzoo.experiments.request import RunRequest
from paperzoo.experiments.runner import resolve_config, run_spec


def _request(*argv: str) -> RunRequest:
    return run_request(build_parser().parse_args(["reproduce", *argv]))


def _spec(request: RunRequest, tmp_path: Path) -> dict:
    name = request.names[0]
    ctx = request.context(name, request.seeds[0], tmp_path, DistInfo(), "cpu")
    return run_spec(name, ctx, resolve_config(name, ctx.scale), None)


def test_a_flag_added_to_the_table_reaches_seeds_resume_and_run_json(monkeypatch, tmp_path):
    colour = flag_table.Flag(
        "--colour", "a colour (test)", str, seeds=True, resume=True, record=True
    )
    monkeypatch.setattr(flag_table, "REPRODUCE_FLAGS", (*flag_table.REPRODUCE_FLAGS, colour))
    request = _request("gat", "--seeds", "0-1", "--scale", "smoke", "--colour", "red")
    assert request.colour == "red"
    assert request.child_argv("gat", 1, Path("o"), 1)[-2:] == ["--colour", "red"]
    resume = request.resume_command()
    assert resume.endswith("--colour red")
    assert _spec(request, tmp_path)["colour"] == "red"
    assert _request("gat").colour is None and _spec(_request("gat"), tmp_path)["colour"] is None
    # the resume command is read back as the same request
    again = run_request(build_parser().parse_args(shlex.split(resume)[1:]))
    assert dict(again.values) == {**request.values, "out": Path("runs/gat-smoke-seeds0-1")}
    help_text = build_parser()._subparsers._group_actions[0].choices["reproduce"].format_help()
    assert "--colour COLOUR" in help_text and "a colour (test)" in help_text


def test_an_unknown_option_is_refused():
    with pytest.raises(TypeError, match="'colour' is no option"):
        RunRequest(("gat",), colour="red")


def test_every_option_the_run_sees_is_a_run_context_field():
    context = {f.name for f in fields(RunContext)}
    for f in flag_table.REPRODUCE_FLAGS:
        if f.context:
            assert f.dest in context, f.dest
    assert {"scale", "data_root", "shard", "max_steps", "restart", "tensorboard"} <= {
        f.dest for f in flag_table.REPRODUCE_FLAGS if f.context
    }


# Commands as the hand-written argv code made them before the table: the table keeps them.
SAME_AS_BEFORE = [
    (
        ["--all", "--scale", "smoke", "--quiet", "--device", "cpu", "--precision", "bf16"],
        "paperzoo reproduce --all --seed 0 --scale smoke --device cpu --precision bf16 --quiet",
        "--scale smoke --device cpu --precision bf16",
    ),
    (
        ["--all", "--out", "x", "--restart", "--download", "--data-root", "d"],
        "paperzoo reproduce --all --out x --scale quick --data-root d --download",
        "--scale quick --data-root d --download --restart",
    ),
    (
        [
            "wrm",
            "--part",
            "spheres",
            "--seed",
            "3",
            "--dataset",
            "mnist",
            "--shard",
            "1/3",
            "--quiet",
        ],
        "paperzoo reproduce wrm --seed 3 --out runs/wrm-quick-s3 --scale quick --dataset mnist "
        "--part spheres --shard 1/3 --quiet",
        "--scale quick --dataset mnist --part spheres",
    ),
    (
        [
            "disentanglement",
            "--seeds",
            "0,2",
            "--restart",
            "--precision",
            "tf32",
            "--max-steps",
            "5",
        ],
        "paperzoo reproduce disentanglement --seeds 0,2 --out runs/disentanglement-quick-seeds0-2 "
        "--scale quick --precision tf32 --max-steps 5",
        "--scale quick --precision tf32 --max-steps 5 --restart",
    ),
    (
        ["ggnn", "--folds", "1-2", "--data-root", "r", "--set", "steps=3"],
        "paperzoo reproduce ggnn --out runs/ggnn-quick-looks --scale quick --folds 1,2 "
        "--data-root r --set steps=3",
        "--scale quick --folds 1,2 --data-root r --set steps=3",
    ),
]


@pytest.mark.parametrize(("argv", "resume", "seed_flags"), SAME_AS_BEFORE)
def test_resume_commands_and_seed_command_lines_are_unchanged(argv, resume, seed_flags):
    request = _request(*argv)
    assert request.resume_command() == resume
    name = request.names[0]
    prefix = ["reproduce", name, "--seed", "0", "--out", "o/seed-0", "--threads", "1"]
    assert request.child_argv(name, 0, Path("o/seed-0"), 1) == prefix + seed_flags.split()


def test_run_json_records_the_same_keys(tmp_path):
    base = {"paper", "scale", "seed", "dataset", "data_root", "options", "shard", "config"}
    base |= {"code", "data_files"}
    assert set(_spec(_request("gat"), tmp_path)) == base
    capped = _request("wrm", "--part", "spheres", "--max-steps", "2", "--precision", "bf16")
    spec = _spec(capped, tmp_path)
    assert set(spec) == base | {"part", "max_steps", "precision"}
    assert (spec["part"], spec["max_steps"], spec["precision"]) == ("spheres", 2, "bf16")
    ggnn = _spec(_request("ggnn", "--folds", "1-2", "--shard", "0/2", "--data-root", "r"), tmp_path)
    assert ggnn["options"] == {"folds": [1, 2]} and ggnn["shard"] == [0, 2]
    assert ggnn["data_root"] == str(Path("r").resolve())


def test_tensorboard_is_repeated_reaches_the_run_and_is_not_its_identity(tmp_path):
    request = _request("gat", "--seeds", "0-1", "--tensorboard")
    assert request.tensorboard is True and _request("gat").tensorboard is False
    assert "--tensorboard" in request.child_argv("gat", 0, Path("o"), 1)
    assert "--tensorboard" in request.resume_command()
    assert request.context("gat", 0, tmp_path, DistInfo(), "cpu").tensorboard is True
    assert _spec(request, tmp_path) == _spec(_request("gat", "--seeds", "0-1"), tmp_path)
