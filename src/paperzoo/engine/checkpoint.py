"""Checkpoints without pickle, verified by content hash: tensors in safetensors, the rest in JSON.

A checkpoint is a pair ``step_00001000.safetensors`` + ``step_00001000.json``. ``latest.json`` is
the manifest: it names the newest checkpoint and records, for every checkpoint kept, the SHA-256
of both files (and the identity of the run that wrote them, ``run_identity``). It is written last,
so a crash at any moment leaves the previous checkpoint loadable; files the manifest lists are
never overwritten (a step saved again goes to ``step_00001000_1.*``, and the manifest then keeps
the newest save of each step). Every file is written atomically (temp file + fsync + rename). Loading checks both hashes before reading a byte of
state: a checkpoint whose bytes changed (same size or not) is never loaded. ``load_state`` then
falls back to the newest intact checkpoint (with a warning naming the damaged file), or raises
``CheckpointError`` naming it when none is left. Loading never unpickles: safetensors holds only
tensors and the JSON holds only plain values.

Single weight files (``save_weights``) carry their hash beside them, ``NAME.safetensors.sha256``
in ``sha256sum`` format, checked by ``load_weights``.

``evaluation_only`` marks a block in which training loops must not train: a loop with a checkpoint
folder whose model is not finished raises ``CheckpointError`` (``check_may_train``), so that
``paperzoo verify`` recomputes the claims from stored final weights only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from paperzoo.utils.io import atomic_write_bytes, atomic_write_text

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
MANIFEST = "latest.json"
_STEM = re.compile(r"step_\d{8,}(_\d+)?")  # step_00000040, or step_00000040_1 when saved again


class CheckpointError(RuntimeError):
    """A checkpoint is missing, truncated, corrupt or does not match the model."""


class _Guard:
    run: str | None = None  # the identity of the run whose checkpoints are written and loaded
    evaluation_only = False  # training loops must not train (``paperzoo verify``)


_guard = _Guard()


@contextmanager
def run_identity(digest: str | None) -> Iterator[None]:
    """Within the block every checkpoint records ``digest`` (the run's resolved config, seed, code
    and data: ``paperzoo.experiments.runner.run_spec``) and loading one that recorded another
    raises ``CheckpointError``. Process-wide (threads included); None: no identity."""
    before, _guard.run = _guard.run, digest
    try:
        yield
    finally:
        _guard.run = before


@contextmanager
def evaluation_only() -> Iterator[None]:
    """Within the block ``check_may_train`` raises: models are loaded from finished checkpoints and
    evaluated, never trained (process-wide)."""
    before, _guard.evaluation_only = _guard.evaluation_only, True
    try:
        yield
    finally:
        _guard.evaluation_only = before


def check_may_train(directory: str | Path | None, desc: str) -> None:
    """Called by a training loop before it trains a model that checkpoints into ``directory``.

    Raises:
        CheckpointError: inside ``evaluation_only``: the model has no finished checkpoint.
    """
    if _guard.evaluation_only and directory is not None:
        raise CheckpointError(
            f"{desc}: no finished checkpoint in {directory}: the stored weights cannot be "
            "evaluated without training (a run stopped before it finished, or one that diverged, "
            "has nothing to verify)"
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    """Write ``state`` (nested dicts/lists of tensors and plain values) as checkpoint ``step`` and
    record the SHA-256 of its two files in the manifest.

    Args:
        directory: the checkpoint folder.
        step: the step the state is of.
        state: what to store.
        keep: the newest checkpoints kept (older ones are deleted; 0: all are kept).

    Returns:
        The path of the JSON half of the checkpoint.

    Raises:
        paperzoo.utils.io.WriteError: the folder cannot take the files (a full disk); the
            checkpoints written before are untouched.
    """
    from safetensors.torch import save

    directory = Path(directory)
    tensors: dict[str, torch.Tensor] = {}
    skeleton = _split(state, "state", tensors)
    entries = _entries_quietly(directory)
    # A step saved again (the final save after a periodic one at the last step) goes to new
    # files: the ones the manifest vouches for are never overwritten.
    stem, again = f"step_{step:08d}", 0
    while stem in entries:
        again += 1
        stem = f"step_{step:08d}_{again}"
    data = save(tensors)
    text = json.dumps({"format": FORMAT_VERSION, "step": step, "state": skeleton})
    atomic_write_bytes(directory / f"{stem}.safetensors", data, what="a checkpoint")
    atomic_write_text(directory / f"{stem}.json", text, what="a checkpoint")
    entries[stem] = {
        "step": step,
        "run": _guard.run,
        "json": _sha256(text.encode("utf-8")),
        "safetensors": _sha256(data),
    }
    newest = {entries[s]["step"]: s for s in sorted(entries, key=_order)}  # one per step
    kept = sorted(newest.values(), key=_order)
    kept = kept[-keep:] if keep > 0 else kept
    manifest = {
        "format": FORMAT_VERSION,
        "step": step,
        "stem": stem,
        "checkpoints": {s: entries[s] for s in kept},
    }
    atomic_write_text(directory / MANIFEST, json.dumps(manifest), what="a checkpoint manifest")
    for p in directory.glob("step_*"):  # the checkpoints the manifest no longer lists
        if p.suffix in (".json", ".safetensors") and p.stem not in kept:
            p.unlink(missing_ok=True)
    return directory / f"{stem}.json"


def _order(stem: str) -> tuple[int, int]:
    """(step, how often that step was saved before) of a checkpoint's stem: newest last."""
    parts = stem.split("_")
    return int(parts[1]), int(parts[2]) if len(parts) > 2 else 0


def _entries_quietly(directory: Path) -> dict[str, dict[str, Any]]:
    """The manifest's entries, or none when it is missing or unreadable (the next write replaces
    it)."""
    try:
        return _manifest(directory)[1]
    except CheckpointError:
        return {}


def _manifest(directory: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    """(newest step, entries by stem) of the manifest in ``directory``.

    Raises:
        CheckpointError: there is none, or it is corrupt or records no content hashes.
    """
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint in {directory}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(
            f"{path} is corrupt ({err}): its checkpoints cannot be verified; add --restart to "
            "start the run over"
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("checkpoints"), dict):
        raise CheckpointError(
            f"{path} is corrupt: it records no content hashes of its checkpoints (or was written "
            "by an older paperzoo); add --restart to start the run over"
        )
    try:
        entries = {
            str(stem): {**e, "step": int(e["step"])} for stem, e in manifest["checkpoints"].items()
        }
        if any(not _STEM.fullmatch(s) or _order(s)[0] != e["step"] for s, e in entries.items()):
            raise ValueError("a checkpoint name that is not step_NNNNNNNN of its step")
        return int(manifest["step"]), entries
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path} is corrupt: {err!r}") from None


def latest_step(directory: str | Path) -> int | None:
    """Step of the newest checkpoint in ``directory``'s manifest, or ``None`` if there is none
    (``load_state`` may fall back to an older one when its files are damaged).

    Raises:
        CheckpointError: the manifest is corrupt.
    """
    directory = Path(directory)
    if not (directory / MANIFEST).exists():
        return None
    return _manifest(directory)[0]


def remove_all(directory: str | Path) -> None:
    """Delete every checkpoint in ``directory`` (the manifest first, so none is half-visible)."""
    directory = Path(directory)
    (directory / MANIFEST).unlink(missing_ok=True)
    for p in directory.glob("step_*"):
        if p.suffix in (".json", ".safetensors"):
            p.unlink(missing_ok=True)


class _Damaged(CheckpointError):
    """One checkpoint's files are missing or do not match their recorded hashes."""


def _read_verified(path: Path, expected: object, manifest: Path) -> bytes:
    """The bytes of ``path`` if their SHA-256 is ``expected`` (``_Damaged`` otherwise)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _Damaged(f"checkpoint file missing: {path}") from None
    except OSError as err:
        raise _Damaged(f"checkpoint file {path} cannot be read: {err.strerror}") from None
    if _sha256(data) != expected:
        raise _Damaged(
            f"checkpoint file {path} does not match the SHA-256 recorded in {manifest} when it "
            "was written: it was changed or damaged"
        )
    return data


def _load_one(directory: Path, stem: str, entry: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    from safetensors import SafetensorError
    from safetensors.torch import load

    recorded = entry.get("run")
    if _guard.run is not None and recorded is not None and recorded != _guard.run:
        raise CheckpointError(
            f"the checkpoints in {directory} were written by another run (identity "
            f"{str(recorded)[:12]}, this run {_guard.run[:12]}): resume it with the command that "
            "wrote them (its run.json), or choose another --out"
        )
    manifest = directory / MANIFEST
    jpath, tpath = directory / f"{stem}.json", directory / f"{stem}.safetensors"
    text = _read_verified(jpath, entry.get("json"), manifest)
    data = _read_verified(tpath, entry.get("safetensors"), manifest)
    try:
        meta = json.loads(text)
        tensors = load(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RuntimeError, ValueError) as err:
        raise CheckpointError(f"checkpoint {stem} in {directory} is corrupt: {err}") from err
    except SafetensorError as err:
        raise CheckpointError(f"checkpoint {stem} in {directory} is corrupt: {err}") from err
    found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
    if found != FORMAT_VERSION:
        raise CheckpointError(f"{jpath}: unsupported checkpoint format {found!r}")
    try:
        return int(meta["step"]), _join(meta["state"], tensors)
    except (CheckpointError, KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"checkpoint {stem} in {directory} is incomplete: {err}") from None


def load_state(directory: str | Path, step: int | None = None) -> tuple[int, dict[str, Any]]:
    """Load checkpoint ``step`` (default: the newest intact one) from ``directory``, after
    checking the SHA-256 of both its files against the manifest.

    Without ``step``, a checkpoint whose files are missing or changed is skipped with a warning
    naming the file, and the next older one is loaded.

    Returns:
        ``(step, state)`` with tensors on the CPU.

    Raises:
        CheckpointError: no checkpoint, none intact (the message names the damaged file and says
            ``--restart``), one written by another run (``run_identity``), or one that does not
            hold what its format promises.
    """
    directory = Path(directory)
    _, entries = _manifest(directory)
    stems = sorted(entries, key=_order, reverse=True)
    if step is not None:
        stems = [s for s in stems if entries[s]["step"] == step]
        if not stems:
            raise CheckpointError(f"no checkpoint of step {step} in {directory}")
    damaged: list[str] = []
    for stem in stems:
        try:
            return _load_one(directory, stem, entries[stem])
        except _Damaged as err:
            damaged.append(str(err))
            log.warning("%s; trying the checkpoint before it", err)
    first = damaged[0] if damaged else f"the manifest in {directory} lists no checkpoint"
    raise CheckpointError(
        f"{first}; no intact checkpoint is left in {directory}: add --restart to start the run over"
    )


def save_weights(path: str | Path, module: torch.nn.Module) -> None:
    """Atomically write a module's ``state_dict`` as one safetensors file, and its SHA-256 beside
    it (``PATH.sha256``, in ``sha256sum`` format)."""
    from safetensors.torch import save

    path = Path(path)
    sd = {k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}
    data = save(sd)
    atomic_write_bytes(path, data, what="model weights")
    atomic_write_text(_hash_file(path), f"{_sha256(data)}  {path.name}\n", what="model weights")


def _hash_file(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def load_weights(path: str | Path, module: torch.nn.Module) -> None:
    """Load a safetensors ``state_dict`` into ``module`` (strict: names and shapes must match),
    after checking its SHA-256 against ``PATH.sha256``.

    Raises:
        CheckpointError: the file is missing, corrupt, changed since it was written, or does not
            match ``module``.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load

    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"weights file not found: {path}") from None
    try:
        recorded = _hash_file(path).read_text().split()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        raise CheckpointError(
            f"weights file {path} is corrupt or unverifiable: its recorded SHA-256 "
            f"({_hash_file(path).name}) is missing or unreadable"
        ) from None
    if _sha256(data) != recorded:
        raise CheckpointError(
            f"weights file {path} is corrupt: it does not match the SHA-256 recorded when it "
            "was written (it was changed or damaged)"
        )
    try:
        sd = load(data)
    except (OSError, RuntimeError, ValueError, SafetensorError) as err:
        raise CheckpointError(f"weights file {path} is corrupt: {err}") from err
    try:
        module.load_state_dict(sd)
    except RuntimeError as err:
        raise CheckpointError(f"{path} does not match {type(module).__name__}: {err}") from err
