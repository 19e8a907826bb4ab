import json

import pytest

from paperzoo.cli import main


def test_list_names_every_registered_paper(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "coordconv:" in out and "painter.coordconv.params" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "nosuchpaper", "--scale", "smoke"], "unknown paper 'nosuchpaper'"),
        (["reproduce", "--scale", "smoke"], "either a paper NAME or --all"),
        (["reproduce", "coordconv", "--all"], "either a paper NAME or --all"),
        (["reproduce", "coordconv", "--data-root", "/nonexistent/dir"], "is not a directory"),
        (["reproduce", "coordconv", "--device", "tpu"], "--device must be"),
        (
            ["reproduce", "coordconv", "--scale", "smoke", "--dataset", "mnist"],
            "does not support --dataset",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_argparse_rejects_bad_values(capsys):
    for argv in (
        ["reproduce", "coordconv", "--scale", "huge"],
        ["reproduce", "x", "--shard", "3/2"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2


def test_reproduce_smoke_writes_results(tmp_path, capsys):
    assert (
        main(["reproduce", "coordconv", "--scale", "smoke", "--quiet", "--out", str(tmp_path)]) == 0
    )
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["paper"] == "coordconv"
    assert "painter.coordconv.params" in capsys.readouterr().out


def test_merge_rejects_missing_results(tmp_path, capsys):
    assert main(["merge", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    assert "results.json not found" in capsys.readouterr().err
