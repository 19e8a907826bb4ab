"""Explicit randomness: generators derived from one seed, and global RNG capture for resume."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch


def make_generator(seed: int, *, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh ``torch.Generator`` seeded with ``seed``."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def derive_seed(seed: int, *keys: int | str) -> int:
    """A deterministic 63-bit seed derived from ``seed`` and ``keys`` (stable across runs)."""
    ss = np.random.SeedSequence([int(seed)] + [_key(k) for k in keys])
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def _key(k: int | str) -> int:
    if isinstance(k, int):
        return k
    return int.from_bytes(k.encode("utf-8")[:16].ljust(16, b"\0"), "little") % (2**63)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch's global RNGs. For applications (the CLI), not library code."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture_global_rng() -> dict[str, Any]:
    """torch's global CPU RNG state (dropout etc. draw from it) and, when CUDA is in use, the
    current CUDA device's (the one this process trains on), as a checkpointable dict."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda_device"] = torch.cuda.get_rng_state()
    return state


def restore_global_rng(state: dict[str, Any]) -> None:
    """Inverse of ``capture_global_rng``: the CUDA state goes to the current device only, so a
    run resumes on fewer (or other) GPUs than it was saved on. (Checkpoints that hold every
    device's state, ``"cuda"``, give the current device its own entry, or the first.)"""
    torch.set_rng_state(state["torch"].to(torch.uint8))
    if not torch.cuda.is_available():
        return
    cuda = state.get("cuda_device")
    if cuda is None and state.get("cuda"):
        every = list(state["cuda"])
        index = torch.cuda.current_device()
        cuda = every[index] if index < len(every) else every[0]
    if cuda is not None:
        torch.cuda.set_rng_state(cuda.to(torch.uint8))


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block (e.g. model construction) under torch's global RNG seeded with ``seed``.

    The caller's global RNG state is saved before and restored after, so library code can make
    initialisation deterministic without clobbering the user's random stream.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        yield
