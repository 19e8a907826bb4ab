"""The library's public surface: each subpackage exports its building blocks, and importing the
building blocks needs none of the reproduction tooling (the ``paperzoo[repro]`` extra)."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paperzoo.cli import REPRO_MODULES
from paperzoo.registry import Registry

ROOT = Path(__file__).resolve().parents[1]

# What a user looks for in each subpackage (the names other libraries and the papers use).
REQUIRED = {
    "paperzoo.nn": [
        "GatedGraphPropagation", "GatedReadout", "CoordConv2d", "AddCoords",
        "FourierPositionEncoding", "AttentionReader", "AttentionWriter", "CrossAttentionBlock",
        "SelfAttentionBlock",
    ],
    "paperzoo.models": [
        "CifarResNet", "ResNet", "GatedGraphNet", "GatedGraphSequenceNet", "DRAW", "Perceiver",
        "VAE", "WReN", "CoordConvPainter", "create_model", "load_torchvision_state_dict",
    ],
    "paperzoo.optim": ["PathSGD", "Lamb"],
    "paperzoo.adversarial": [
        "FGSM", "PGD", "CW", "SPSA", "EOT", "BPDA", "BPDALayer", "Reparameterized", "WRM",
        "check_certificate", "GenerativeAdversarialTrainer", "PerturbationGenerator",
        "ThermometerEncoding", "StochasticActivationPruning", "InputTransformDefense",
    ],
    "paperzoo.metrics.disentanglement": [
        "mig", "dci", "sap", "modularity", "irs", "unsupervised", "beta_vae_score",
        "factor_vae_score", "ArrayGroundTruthData",
    ],
}  # fmt: skip

LIBRARY = [*REQUIRED, "paperzoo", "paperzoo.metrics", "paperzoo.adversarial.attacks"]

# Run in a fresh interpreter: the reproduction dependencies cannot be imported (as in an install
# without the extra), then the module is imported and what it loaded is reported.
_PROBE = """
import json, sys
blocked = set(json.loads(sys.argv[2]))
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
import importlib
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in blocked | {"paperzoo"})))
"""


@pytest.mark.parametrize("module", sorted(REQUIRED))
def test_subpackage_exports_its_building_blocks(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in REQUIRED[module] if name not in mod.__all__]
    assert not missing, f"{module}.__all__ lacks {missing}"


@pytest.mark.parametrize("module", sorted(LIBRARY))
def test_every_exported_name_resolves(module: str) -> None:
    mod = importlib.import_module(module)
    assert len(set(mod.__all__)) == len(mod.__all__), "a name is listed twice"
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


@pytest.mark.parametrize("module", sorted(LIBRARY))
def test_library_imports_without_the_repro_extra(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, module, json.dumps(REPRO_MODULES)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert not [m for m in loaded if not m.startswith("paperzoo")], loaded
    # the metrics read ground-truth data through paperzoo.data.ground_truth only: no data source
    # module (loaders, generators) is imported with them
    sources = [m for m in loaded if m.startswith("paperzoo.data.")]
    assert set(sources) <= {
        "paperzoo.data.base",
        "paperzoo.data.ground_truth",
        "paperzoo.data.layouts",
        "paperzoo.data.transforms",
    }, sources
    assert not [m for m in loaded if m.startswith("paperzoo.experiments")]


def _requirements(extra: str | None) -> set[str]:
    """The names of the installed distribution's requirements: the core ones, or one extra's."""
    names = set()
    for req in importlib.metadata.requires("paperzoo") or []:
        spec, _, marker = req.partition(";")
        if (f'extra == "{extra}"' in marker) if extra else not marker.strip():
            names.add(re.split(r"[<>=!~\[ ]", spec.strip(), maxsplit=1)[0].lower())
    return names


def test_repro_extra_lists_what_the_cli_names() -> None:
    """The CLI's list of reproduction modules is the ``repro`` extra (PIL is pillow's module),
    and no core requirement is one of them."""
    repro = _requirements("repro")
    assert repro == {"pillow" if m == "PIL" else m.lower() for m in REPRO_MODULES}
    assert not repro & _requirements(None)
    assert {"torch", "numpy", "einops", "scikit-learn"} <= _requirements(None)


def test_cli_without_the_extra_says_how_to_install_it() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'matplotlib':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from paperzoo.cli import main\n"
        "sys.exit(main(['list']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "paperzoo: error: matplotlib is not installed; the reproductions need it: "
        "pip install 'paperzoo[repro]'"
    ]


def test_data_sources_register_on_first_lookup() -> None:
    code = (
        "import sys\n"
        "import paperzoo.data\n"
        "assert 'paperzoo.data.cifar' not in sys.modules\n"
        "from paperzoo.data import DATASETS\n"
        "assert 'cifar10' in DATASETS.names() and 'paperzoo.data.cifar' in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_registry_populates_once_before_the_first_lookup() -> None:
    calls: list[int] = []

    def populate() -> None:
        calls.append(1)
        reg.register("a")(lambda: 1)

    reg: Registry[int] = Registry("thing", populate=populate)
    reg.register("b")(lambda: 2)  # registering does not populate
    assert calls == []
    assert reg.names() == ["a", "b"] and "a" in reg and len(reg) == 2 and reg.create("a") == 1
    assert calls == [1]


def test_registry_retries_a_failed_populate() -> None:
    attempts: list[int] = []

    def populate() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ImportError("first attempt fails")

    reg: Registry[int] = Registry("thing", populate=populate)
    with pytest.raises(ImportError):
        reg.names()
    assert reg.names() == [] and len(attempts) == 2


def test_package_declares_its_version_once_and_ships_py_typed() -> None:
    import paperzoo

    text = (ROOT / "pyproject.toml").read_text()
    project = text[text.index("[project]") : text.index("\n[", text.index("[project]"))]
    assert 'dynamic = ["version"]' in project and not re.search(r"^version\s*=", project, re.M)
    assert importlib.metadata.version("paperzoo") == paperzoo.__version__
    assert importlib.metadata.metadata("paperzoo")["License-Expression"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "src" / "paperzoo" / "py.typed").exists() and '"py.typed"' in text
