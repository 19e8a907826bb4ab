"""``paperzoo new NAME``: a working package for a paper of your own, ready to install.

The package declares one paper through the ``paperzoo.papers`` entry point group: a config per
scale, one finding and one check measured on embedded data (scikit-learn's 8x8 digits), a docs
page that asks for each paper number's source, and tests (the declaration check, a smoke run).
After ``pip install -e NAME``, ``paperzoo reproduce NAME --scale smoke`` runs in seconds and
``paperzoo reproduce NAME`` gives the quick verdict (seeds 0-3, more where a finding is unclear). docs/your-paper.md
walks from here to a committed verdict.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["NAME_PATTERN", "new_package", "package_files"]

# A paper's name: lower case letters, digits and single hyphens, starting with a letter.
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")

_PYPROJECT = """[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "{name}: a paper reproduced with paperzoo's verdict protocol"
requires-python = ">=3.10"
dependencies = ["paperzoo>={version}"]

[project.optional-dependencies]
test = ["pytest>=7.4"]

# paperzoo finds the paper here: `paperzoo list` shows it beside the papers built in.
[project.entry-points."paperzoo.papers"]
{name} = "{package}.paper:Paper"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

_INIT = '''"""{name}: a paper reproduced with paperzoo (`paperzoo reproduce {name}`)."""

__version__ = "0.1.0"
'''

_PAPER = '''"""{name}: REPLACE with the paper's authors, year and title.

The template measures one finding and one check on scikit-learn's 8x8 digits (embedded: no
download): a one-hidden-layer MLP trained with Adam classifies held-out digits (finding), and its
parameter count is what its layer sizes give (check). Replace both with the paper's own claims;
docs/{name}.md names the source of every paper number.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from paperzoo.paper import (
    ClaimSpec,
    DataInfo,
    Experiment,
    NotRun,
    Outcome,
    RunContext,
    Trainer,
    TrainConfig,
    examples_sha256,
    seeded,
    stratified_split,
)


@dataclass(frozen=True)
class Config:
    hidden: int = 64  # width of the hidden layer
    steps: int = 1500  # Adam steps
    batch_size: int = 64
    lr: float = 1e-3
    n_test_per_class: int = 30  # held-out digits of each class (the test set)


def _params(hidden: int) -> int:
    """The MLP's parameter count from its layer sizes: 64 -> hidden -> 10, with biases."""
    return 64 * hidden + hidden + hidden * 10 + 10


class Paper(Experiment):
    name = "{name}"
    title = "REPLACE with the paper's title"
    claims = (
        ClaimSpec(
            "digits.mlp.test_acc",
            "a one-hidden-layer MLP classifies held-out 8x8 digits",
            0.97,  # the paper's number: docs/{name}.md names its table or figure
            {{"quick": ">= 0.9", "full": ">= 0.95"}},
        ),
        ClaimSpec(
            "mlp.n_params",
            "the MLP has the parameters its layer sizes give",
            _params(64),
            f"== {{_params(64)}}",
            kind="check",
        ),
    )
    configs = {{
        "smoke": Config(steps=300),
        "quick": Config(),
        "full": Config(steps=5000),
    }}
    full_not_run = (NotRun(("cpu",), "the full config fits a CPU; its run is not committed yet"),)

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = torch.tensor(digits.data, dtype=torch.float32) / 16.0  # (N, 64) in [0, 1]
        y = torch.tensor(digits.target, dtype=torch.long)  # (N,)
        # one fixed split for every seed: the seeds vary the initialisation and batch order
        x_tr, y_tr, x_te, y_te = stratified_split(x, y, cfg.n_test_per_class, seed=0)
        x_te, y_te = ctx.holdout(x_te), ctx.holdout(y_te)
        with seeded(ctx.seed):
            model = nn.Sequential(nn.Linear(64, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 10))
        trainer = Trainer(
            model,
            torch.optim.Adam(model.parameters(), lr=cfg.lr),
            lambda m, batch: F.cross_entropy(m(batch[0]), batch[1]),
            config=TrainConfig(
                steps=cfg.steps,
                batch_size=cfg.batch_size,
                seed=ctx.seed,
                progress=ctx.progress,
                desc="mlp",
            ),
            device=ctx.device,
            out_dir=ctx.out_dir / "runs" / "mlp",
        )
        trainer.fit((x_tr, y_tr), resume=True)
        model = trainer.model.eval()
        with ctx.final_evaluation(), torch.no_grad():
            pred = model(x_te.to(ctx.device)).argmax(dim=1).cpu()
            acc = float((pred == y_te).float().mean())
        n_params = sum(p.numel() for p in model.parameters())
        data = DataInfo(
            name="sklearn-digits",
            source="embedded:scikit-learn",
            n_train=len(y_tr),
            n_test=len(y_te),
            sha256=examples_sha256((x_tr, y_tr), (x_te, y_te)),
        )
        return Outcome(
            measured={{"digits.mlp.test_acc": acc, "mlp.n_params": n_params}},
            data=[data],
        )
'''

_DOCS = """# {name}

REPLACE with the paper's authors, year, title and a link to it.

## What is reproduced

| claim | paper's number | source in the paper (table, figure, page) | verified against the text? |
|---|---|---|---|
| `digits.mlp.test_acc` | 0.97 | REPLACE: e.g. Table 2, row "MLP" | REPLACE: yes, or why not (then mark the claim `unverified=`) |

Each number a target rests on is checked against the paper's own text. A number that could not
be is declared `unverified="why"` on its `ClaimSpec` and never counts at full scale; one read from
a maintained reimplementation's table of the paper's numbers is declared `quoted="where"`.

## Scales

- `smoke`: seconds, proves the pipeline (never counts).
- `quick`: about 5 CPU-minutes a seed at most; `paperzoo reproduce {name}` decides each finding
  by an interval over seeds 0-3, and adds seeds 4-7, then 8-15, while one is inconclusive.
- `full`: the paper's own setting (its data, model, optimiser and schedule).

## Deviations from the paper

REPLACE: every difference from the paper's setting, and why.

## Changed after seeing test results

None yet. A change made after a finding failed on seeds 0-3 is decided on validation seeds (100
and up) and listed here with its before and after.
"""

_TESTS = '''"""The paper's declaration and a smoke run, as paperzoo runs it."""

import json
import subprocess
import sys

from paperzoo.experiments import EXPERIMENTS
from paperzoo.experiments.plugins import paper_problem, plugin_errors
from paperzoo.registry import Registry

from {package}.paper import Paper


def test_the_paper_is_declared_and_registered():
    assert paper_problem("{name}", Paper, Registry("experiment")) is None
    assert "{name}" in EXPERIMENTS and not plugin_errors()


def test_a_smoke_run_measures_every_claim(tmp_path):
    out = tmp_path / "smoke"
    cmd = [sys.executable, "-m", "paperzoo", "reproduce", "{name}", "--scale", "smoke"]
    proc = subprocess.run([*cmd, "--out", str(out), "--quiet"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "results.json").read_text())
    assert {{c["id"]: c["verdict"] for c in result["claims"]}}["mlp.n_params"] == "holds"
    assert all(c["per_seed"][0] is not None for c in result["claims"])
'''

_README = """# {name}

A paper reproduced with [paperzoo](https://pypi.org/project/paperzoo/)'s verdict protocol.

```bash
pip install -e '.[test]'                                  # paperzoo finds the paper
paperzoo reproduce {name} --scale smoke                   # seconds: the pipeline runs
paperzoo reproduce {name} --out results/{name}-quick   # the quick verdict, by the seed rule
python -m pytest                                          # the declaration and a smoke run
```

What makes a finding count, and how to commit a verdict: paperzoo's docs/your-paper.md.
"""


def package_files(name: str) -> dict[str, str]:
    """The files of the package for paper ``name``: relative path -> text."""
    from paperzoo import __version__

    if not NAME_PATTERN.match(name):
        raise ValueError(
            f"paper name {name!r}: use lower case letters, digits and single hyphens, "
            "starting with a letter (e.g. my-paper)"
        )
    package = name.replace("-", "_")
    fields = {"name": name, "package": package, "dist": name, "version": __version__}
    return {
        "pyproject.toml": _PYPROJECT.format(**fields),
        "README.md": _README.format(**fields),
        f"src/{package}/__init__.py": _INIT.format(**fields),
        f"src/{package}/paper.py": _PAPER.format(**fields),
        f"docs/{name}.md": _DOCS.format(**fields),
        "tests/test_paper.py": _TESTS.format(**fields),
        ".gitignore": "runs/\n*.egg-info/\n__pycache__/\n",
    }


def new_package(name: str, folder: str | Path) -> list[Path]:
    """Write the package for paper ``name`` into ``folder`` (which must not exist, or be empty);
    the files written.

    Raises:
        ValueError: a name that is not a paper name, a name paperzoo already declares, or a
            folder that holds files (one line).
    """
    from paperzoo.experiments import EXPERIMENTS

    files = package_files(name)
    if name in EXPERIMENTS:
        raise ValueError(f"a paper named {name!r} is already declared; choose another name")
    root = Path(folder)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"{root} already exists and is not an empty directory")
    written = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
