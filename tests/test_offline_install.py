"""`make install` from a wheelhouse, with the network off.

The wheelhouse is made here without a package index: every requirement of
``paperzoo[repro,test]`` and torch as a small stand-in wheel of its name at its floor version (no
multi-GB download: what is tested is that pip resolves the whole set from the folder alone), and
setuptools, the build backend of the editable install, as a real wheel repacked from the copy
installed in this interpreter. The Makefile's own ``install`` recipe then builds a fresh venv
from it in a copy of the tree, in a network namespace of its own where ``unshare -n`` may make
one, and always with the package index pointed at a closed port.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A py3-none-any wheel of ``files`` (path in site-packages -> bytes), its dist-info made."""
    norm = re.sub(r"[-_.]+", "_", name).lower()
    info = f"{norm}-{version}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    return _zip_wheel(folder, norm, version, files)


def _zip_wheel(folder: Path, norm: str, version: str, files: dict[str, bytes]) -> Path:
    """``files`` (archive path -> bytes, the dist-info included) as a wheel in ``folder``, with
    the RECORD that lists them."""
    info = f"{norm}-{version}.dist-info"
    record = [_record_line(k, v) for k, v in files.items()] + [f"{info}/RECORD,,"]
    path = folder / f"{norm}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def _repack(dist_name: str, folder: Path) -> Path:
    """The installed pure-Python distribution ``dist_name`` as a wheel (its files, its
    metadata)."""
    dist = importlib.metadata.distribution(dist_name)
    files: dict[str, bytes] = {}
    for f in dist.files or []:
        if f.parts[0] == ".." or "__pycache__" in f.parts or f.name in ("RECORD", "INSTALLER"):
            continue
        if f.name == "direct_url.json":
            continue
        files[str(f)] = Path(dist.locate_file(f)).read_bytes()
    version = dist.version
    norm = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    info = f"{norm}-{version}.dist-info"
    files = {k: v for k, v in files.items() if not k.endswith(".dist-info/METADATA")}
    files[f"{info}/METADATA"] = dist.read_text("METADATA").encode()
    files = {k: v for k, v in files.items() if not k.endswith(".dist-info/WHEEL")}
    files[f"{info}/WHEEL"] = (dist.read_text("WHEEL") or "").encode()
    return _zip_wheel(folder, norm, version, files)


def _requirements() -> dict[str, str]:
    """name -> floor version of every requirement ``make install`` installs (torch,
    paperzoo[repro,test], the build requirements)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = [
        *project["project"]["dependencies"],
        *project["project"]["optional-dependencies"]["repro"],
        *project["project"]["optional-dependencies"]["test"],
        *project["build-system"]["requires"],
    ]
    out: dict[str, str] = {}
    for text in reqs:
        req = Requirement(text)
        floor = next((s.version for s in req.specifier if s.operator in (">=", "==")), "1.0")
        out[req.name] = floor
    return out


def _offline(cmd: list[str]) -> list[str]:
    """``cmd`` in a network namespace of its own, where this user may make one."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n", *cmd]
    return cmd


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what ``make install`` reads: the Makefile, pyproject, README, LICENSE, src."""
    dst = tmp_path / "tree"
    dst.mkdir()
    for name in ("Makefile", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dst / name)
    shutil.copytree(
        ROOT / "src", dst / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    return dst


def _make(tree: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",  # a closed port: any index access fails
        "PIP_NO_CACHE_DIR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PIP_FIND_LINKS", None)
    env.pop("PYTHONPATH", None)
    cmd = _offline(["make", "-C", str(tree), *args, f"PY={sys.executable}"])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def test_make_install_builds_the_venv_from_the_wheelhouse_alone(tree: Path) -> None:
    wheels = tree / "wheelhouse"
    wheels.mkdir()
    _repack("setuptools", wheels)
    made = {"setuptools"}
    for name, floor in _requirements().items():
        if name not in made:
            _write_wheel(wheels, name, floor, {f"{re.sub(r'[-.]', '_', name)}_stub.py": b""})
            made.add(name)
    torch_floor = _requirements()["torch"]
    proc = _make(tree, "install", f"TORCH_VERSION={torch_floor}")  # OFFLINE: the folder has wheels
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--no-index --find-links" in proc.stdout
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own paths
    listed = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True, text=True, check=True, env=clean,
    )  # fmt: skip
    versions = {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)}
    from paperzoo import __version__

    assert versions["paperzoo"] == __version__
    assert versions["torch"] == torch_floor
    assert {n.lower() for n in _requirements()} - {"setuptools", "wheel"} <= set(versions)
    located = subprocess.run(
        [str(tree / ".venv" / "bin" / "python"), "-c",
         "import importlib.util; print(importlib.util.find_spec('paperzoo').origin)"],
        capture_output=True, text=True, check=True, cwd="/", env=clean,
    )  # fmt: skip
    assert located.stdout.strip() == str(tree / "src" / "paperzoo" / "__init__.py")  # editable


def test_offline_install_without_wheels_exits_2_with_one_line(tree: Path) -> None:
    proc = _make(tree, "install", "OFFLINE=1", "WHEELS=nowhere")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[0] == (
        "make: OFFLINE=1 but nowhere holds no wheels (make wheelhouse on a machine with an index)"
    )
    assert not (tree / ".venv").exists()
