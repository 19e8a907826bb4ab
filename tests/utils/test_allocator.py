from __future__ import annotations

import platform

import pytest

from paperzoo.utils.allocator import tune_allocator


def test_opt_out_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERZOO_NO_MALLOPT", "1")
    assert tune_allocator() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_applies_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAPERZOO_NO_MALLOPT", raising=False)
    assert tune_allocator() is True


def test_rejects_out_of_range_thresholds() -> None:
    with pytest.raises(ValueError, match="mmap_threshold"):
        tune_allocator(mmap_threshold=1 << 40)
    with pytest.raises(ValueError, match="trim_threshold"):
        tune_allocator(trim_threshold=0)
