import json
import os

import pytest
import torch

from paperzoo.engine import CheckpointError, load_state, load_weights, save_state, save_weights
from paperzoo.engine.checkpoint import latest_step


def _state():
    return {
        "w": torch.arange(6.0).view(2, 3),
        "nested": {"i": 3, 7: [torch.ones(2), (1, "a")], "none": None},
        "f": 0.5,
    }


def test_round_trip_preserves_structure_and_tensors(tmp_path):
    save_state(tmp_path, 5, _state())
    step, st = load_state(tmp_path)
    assert step == 5
    assert torch.equal(st["w"], torch.arange(6.0).view(2, 3))
    assert st["nested"]["i"] == 3 and st["nested"]["none"] is None and st["f"] == 0.5
    assert torch.equal(st["nested"][7][0], torch.ones(2)) and st["nested"][7][1] == (1, "a")


def test_only_newest_checkpoints_are_kept(tmp_path):
    for s in (1, 2, 3):
        save_state(tmp_path, s, {"x": torch.tensor([float(s)])}, keep=2)
    assert sorted(p.name for p in tmp_path.glob("step_*.json")) == [
        "step_00000002.json",
        "step_00000003.json",
    ]
    assert latest_step(tmp_path) == 3


def test_crash_mid_write_leaves_previous_checkpoint_loadable(tmp_path, monkeypatch):
    save_state(tmp_path, 1, {"x": torch.tensor([1.0])})

    def boom(*args, **kwargs):
        raise OSError("disk died")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk died"):
        save_state(tmp_path, 2, {"x": torch.tensor([2.0])})
    monkeypatch.undo()
    step, st = load_state(tmp_path)
    assert step == 1 and st["x"].item() == 1.0
    assert not list(tmp_path.glob("*.tmp")), "temporary files must be cleaned up"


def test_corrupt_or_missing_checkpoint_raises_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_state(tmp_path)
    save_state(tmp_path, 1, {"x": torch.tensor([1.0])})
    (tmp_path / "step_00000001.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        load_state(tmp_path)
    (tmp_path / "latest.json").write_text(json.dumps({"stem": "x"}))
    with pytest.raises(CheckpointError, match="corrupt"):
        latest_step(tmp_path)


def test_non_tensor_objects_are_refused(tmp_path):
    with pytest.raises(TypeError, match="cannot store"):
        save_state(tmp_path, 1, {"obj": object()})


def test_weights_round_trip_and_mismatch(tmp_path):
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    save_weights(tmp_path / "w.safetensors", a)
    load_weights(tmp_path / "w.safetensors", b)
    assert torch.equal(a.weight, b.weight)
    with pytest.raises(CheckpointError, match="does not match"):
        load_weights(tmp_path / "w.safetensors", torch.nn.Linear(4, 2))
    with pytest.raises(CheckpointError, match="not found"):
        load_weights(tmp_path / "nope.safetensors", b)
