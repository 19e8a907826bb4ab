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
    with pytest.raises(CheckpointError, match="does not match the SHA-256.*--restart"):
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


def _flip_same_size(path, at: int = -64) -> None:
    """Change bytes of ``path`` without changing its size (what safetensors cannot see)."""
    data = bytearray(path.read_bytes())
    data[at : at + 16] = bytes(b ^ 0xFF for b in data[at : at + 16])
    path.write_bytes(bytes(data))


def test_same_size_corruption_falls_back_to_the_newest_intact_checkpoint(tmp_path, caplog):
    save_state(tmp_path, 1, {"x": torch.full((64,), 1.0)})
    save_state(tmp_path, 2, {"x": torch.full((64,), 2.0)})
    _flip_same_size(tmp_path / "step_00000002.safetensors")
    step, st = load_state(tmp_path)
    assert step == 1 and st["x"][0].item() == 1.0  # the damaged newest one is skipped
    assert "step_00000002.safetensors does not match the SHA-256" in caplog.text
    _flip_same_size(tmp_path / "step_00000001.json", at=2)  # the JSON half counts too
    with pytest.raises(CheckpointError) as err:
        load_state(tmp_path)
    message = str(err.value)
    assert "step_00000002.safetensors does not match the SHA-256" in message
    assert "no intact checkpoint" in message and "--restart" in message
    assert "\n" not in message


def test_a_step_saved_again_never_overwrites_the_files_the_manifest_lists(tmp_path, monkeypatch):
    save_state(tmp_path, 1, {"x": torch.zeros(1)})
    save_state(tmp_path, 2, {"x": torch.ones(1), "finished": False})
    listed = {p.name: p.read_bytes() for p in tmp_path.glob("step_00000002.*")}

    def killed(*args, **kwargs):  # the process dies before the manifest names the new files
        raise KeyboardInterrupt

    import paperzoo.engine.checkpoint as ckpt

    real = ckpt.atomic_write_text
    monkeypatch.setattr(
        ckpt,
        "atomic_write_text",
        lambda p, t, **kw: killed() if p.name == "latest.json" else real(p, t, **kw),
    )
    with pytest.raises(KeyboardInterrupt):
        save_state(tmp_path, 2, {"x": torch.ones(1), "finished": True})  # the final save
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.glob("step_00000002.*")} == listed
    assert load_state(tmp_path)[1]["finished"] is False  # intact: the save before the kill
    save_state(tmp_path, 2, {"x": torch.ones(1), "finished": True})
    assert load_state(tmp_path) == (2, {"x": torch.ones(1), "finished": True})
    manifest = json.loads((tmp_path / "latest.json").read_text())
    assert list(manifest["checkpoints"]) == ["step_00000001", "step_00000002_1"]  # one per step
    assert sorted(p.name for p in tmp_path.glob("step_*")) == [
        "step_00000001.json", "step_00000001.safetensors",
        "step_00000002_1.json", "step_00000002_1.safetensors",
    ]  # fmt: skip


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    from paperzoo.engine.checkpoint import run_identity

    with run_identity("a" * 64):
        save_state(tmp_path, 1, {"x": torch.zeros(1)})
        assert load_state(tmp_path)[0] == 1
    with run_identity("b" * 64), pytest.raises(CheckpointError, match="written by another run"):
        load_state(tmp_path)
    assert json.loads((tmp_path / "latest.json").read_text())["checkpoints"]["step_00000001"][
        "run"
    ] == ("a" * 64)


def test_evaluation_only_refuses_to_train():
    from paperzoo.engine.checkpoint import check_may_train, evaluation_only

    check_may_train("ckpts", "model")  # outside: training is fine
    with evaluation_only(), pytest.raises(CheckpointError, match="model: no finished checkpoint"):
        check_may_train("ckpts", "model")
    with evaluation_only():
        check_may_train(None, "model")  # a model that never checkpoints is retrained, as on resume


def test_weights_carry_their_hash(tmp_path):
    a, b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
    path = tmp_path / "w.safetensors"
    save_weights(path, a)
    assert (tmp_path / "w.safetensors.sha256").read_text().endswith("  w.safetensors\n")
    _flip_same_size(path)
    with pytest.raises(CheckpointError, match="w.safetensors is corrupt: it does not match"):
        load_weights(path, b)
    save_weights(path, a)
    (tmp_path / "w.safetensors.sha256").unlink()
    with pytest.raises(CheckpointError, match="recorded SHA-256 .* is missing"):
        load_weights(path, b)


def test_the_rng_of_the_current_cuda_device_only(monkeypatch) -> None:  # noqa: ANN001
    """A checkpoint holds the CUDA RNG state of the device the process trains on, and restores
    it there only: a run saved on eight GPUs resumes on one (torch.cuda stood in for here)."""
    from paperzoo.engine.seeding import capture_global_rng, restore_global_rng

    devices = {i: torch.full((16,), i, dtype=torch.uint8) for i in range(2)}  # what this host has
    current = {"index": 1}

    def set_all(states):  # noqa: ANN001, ANN202
        if len(states) != len(devices):
            raise RuntimeError(f"{len(states)} states for {len(devices)} devices")
        devices.update(enumerate(states))

    cuda = torch.cuda
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(cuda, "current_device", lambda: current["index"])
    monkeypatch.setattr(cuda, "get_rng_state", lambda device="cuda": devices[current["index"]])
    monkeypatch.setattr(cuda, "get_rng_state_all", lambda: [devices[i] for i in sorted(devices)])
    monkeypatch.setattr(cuda, "set_rng_state_all", set_all)

    def set_one(state, device="cuda"):  # noqa: ANN001, ANN202
        devices[current["index"]] = state

    monkeypatch.setattr(cuda, "set_rng_state", set_one)
    state = capture_global_rng()
    assert int(state["cuda_device"][0]) == 1 and "cuda" not in state  # device 1's alone
    devices[1] = torch.zeros(16, dtype=torch.uint8)
    restore_global_rng(state)
    assert int(devices[1][0]) == 1 and int(devices[0][0]) == 0
    # a checkpoint of eight devices' states, resumed on this host's device 0
    eight = {"torch": torch.get_rng_state(), "cuda": [torch.full((16,), 10 + i) for i in range(8)]}
    current["index"] = 0
    restore_global_rng(eight)
    assert int(devices[0][0]) == 10 and int(devices[1][0]) == 1
