"""Checkpoints without pickle: tensors in safetensors, everything else in JSON.

A checkpoint is a pair ``step_00001000.safetensors`` + ``step_00001000.json``; ``latest.json``
names the newest complete pair and is written last, so a crash at any moment leaves the previous
checkpoint loadable. Every file is written atomically (temp file + fsync + rename). Loading never
unpickles: safetensors holds only tensors and the JSON holds only plain values.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from paperzoo.utils.io import atomic_write_bytes, atomic_write_text

log = logging.getLogger(__name__)

FORMAT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint is missing, truncated, corrupt or does not match the model."""


def _split(obj: Any, prefix: str, tensors: dict[str, torch.Tensor]) -> Any:
    """Replace every tensor in a nested structure with a reference into ``tensors``."""
    if isinstance(obj, torch.Tensor):
        key = prefix
        tensors[key] = obj.detach().cpu().contiguous()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str | int):
                raise TypeError(f"checkpoint keys must be str or int, got {type(k).__name__}")
            tag = f"i:{k}" if isinstance(k, int) else f"s:{k}"
            out[tag] = _split(v, f"{prefix}.{k}", tensors)
        return {"__dict__": out}
    if isinstance(obj, list | tuple):
        items = [_split(v, f"{prefix}.{i}", tensors) for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot store {type(obj).__name__} at {prefix!r} in a checkpoint")


def _join(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            try:
                return tensors[obj["__tensor__"]]
            except KeyError:
                raise CheckpointError(f"tensor {obj['__tensor__']!r} missing") from None
        if "__tuple__" in obj:
            return tuple(_join(v, tensors) for v in obj["__tuple__"])
        if "__dict__" in obj:
            return {
                (int(k[2:]) if k.startswith("i:") else k[2:]): _join(v, tensors)
                for k, v in obj["__dict__"].items()
            }
    if isinstance(obj, list):
        return [_join(v, tensors) for v in obj]
    return obj


def save_state(directory: str | Path, step: int, state: dict[str, Any], *, keep: int = 2) -> Path:
    """Write ``state`` (nested dicts/lists of tensors and plain values) as checkpoint ``step``.

    Returns:
        The path of the JSON half of the checkpoint.
    """
    from safetensors.torch import save

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    skeleton = _split(state, "state", tensors)
    stem = f"step_{step:08d}"
    atomic_write_bytes(directory / f"{stem}.safetensors", save(tensors))
    meta = {"format": FORMAT_VERSION, "step": step, "state": skeleton}
    atomic_write_text(directory / f"{stem}.json", json.dumps(meta))
    atomic_write_text(directory / "latest.json", json.dumps({"step": step, "stem": stem}))
    # Keep only the newest ``keep`` complete checkpoints.
    stems = sorted(p.stem for p in directory.glob("step_*.json"))
    for old in stems[:-keep] if keep > 0 else []:
        for suffix in (".json", ".safetensors"):
            (directory / f"{old}{suffix}").unlink(missing_ok=True)
    return directory / f"{stem}.json"


def latest_step(directory: str | Path) -> int | None:
    """Step of the newest complete checkpoint in ``directory``, or ``None`` if there is none."""
    pointer = Path(directory) / "latest.json"
    if not pointer.exists():
        return None
    try:
        return int(json.loads(pointer.read_text())["step"])
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{pointer} is corrupt: {err}") from err


def remove_all(directory: str | Path) -> None:
    """Delete every checkpoint in ``directory`` (the pointer first, so none is half-visible)."""
    directory = Path(directory)
    (directory / "latest.json").unlink(missing_ok=True)
    for p in directory.glob("step_*"):
        if p.suffix in (".json", ".safetensors"):
            p.unlink(missing_ok=True)


def load_state(directory: str | Path, step: int | None = None) -> tuple[int, dict[str, Any]]:
    """Load checkpoint ``step`` (default: the latest) from ``directory``.

    Returns:
        ``(step, state)`` with tensors on the CPU.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    directory = Path(directory)
    if step is None:
        step = latest_step(directory)
        if step is None:
            raise CheckpointError(f"no checkpoint in {directory}")
    stem = f"step_{step:08d}"
    jpath, tpath = directory / f"{stem}.json", directory / f"{stem}.safetensors"
    try:
        meta = json.loads(jpath.read_text())
        tensors = load_file(str(tpath))
    except FileNotFoundError as err:  # safetensors' own error names no file
        raise CheckpointError(f"checkpoint file missing: {err.filename or tpath}") from err
    except (json.JSONDecodeError, OSError, RuntimeError, ValueError, SafetensorError) as err:
        raise CheckpointError(f"checkpoint {stem} in {directory} is corrupt: {err}") from err
    found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
    if found != FORMAT_VERSION:
        raise CheckpointError(f"{jpath}: unsupported checkpoint format {found!r}")
    try:
        return int(meta["step"]), _join(meta["state"], tensors)
    except (CheckpointError, KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"checkpoint {stem} in {directory} is incomplete: {err}") from None


def save_weights(path: str | Path, module: torch.nn.Module) -> None:
    """Atomically write a module's ``state_dict`` as one safetensors file."""
    from safetensors.torch import save

    sd = {k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}
    atomic_write_bytes(path, save(sd))


def load_weights(path: str | Path, module: torch.nn.Module) -> None:
    """Load a safetensors ``state_dict`` into ``module`` (strict: names and shapes must match)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        sd = load_file(str(path))
    except FileNotFoundError:
        raise CheckpointError(f"weights file not found: {path}") from None
    except (OSError, RuntimeError, ValueError, SafetensorError) as err:
        raise CheckpointError(f"weights file {path} is corrupt: {err}") from err
    try:
        module.load_state_dict(sd)
    except RuntimeError as err:
        raise CheckpointError(f"{path} does not match {type(module).__name__}: {err}") from err
