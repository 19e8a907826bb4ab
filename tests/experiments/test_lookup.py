"""paperzoo.experiments.lookup: the papers are read from the entry point group on the first
look-up, not on import, and every paper (the ten too) comes through it."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from paperzoo.experiments import lookup, plugins
from paperzoo.registry import Registry


def test_importing_paperzoo_imports_no_paper_and_listing_no_training_code() -> None:
    code = (
        "import sys\n"
        "import paperzoo, paperzoo.experiments, paperzoo.paper\n"
        "assert not [m for m in sys.modules if m.startswith('paperzoo.papers.')], 'a paper'\n"
        "assert not [m for m in sys.modules if m.startswith('paperzoo.models.')], 'a model'\n"
        "from paperzoo.cli import main\n"
        "main(['list'])\n"
        "heavy = [m for m in sys.modules if m.endswith('.training') or m.startswith(\n"
        "    ('paperzoo.metrics.', 'paperzoo.optim.', 'paperzoo.adversarial.defenses'))\n"
        "    or m.startswith('paperzoo.adversarial.attacks.') and not m.endswith(('.base', '.bpda'))]\n"
        "assert not heavy, heavy\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_ten_are_entry_points_of_paperzoos_own_distribution() -> None:
    own = {
        ep.name: ep.value
        for ep in metadata.distribution("paperzoo").entry_points
        if ep.group == plugins.GROUP
    }
    assert len(own) == 10 and set(own) <= set(lookup.EXPERIMENTS.names())
    for name, value in own.items():
        assert value.startswith("paperzoo.papers."), value
        assert lookup.EXPERIMENTS.get(name).__module__.startswith(value.split(":")[0]), name


def test_without_paperzoos_entry_points_one_warning_says_to_install_it(monkeypatch, caplog):
    monkeypatch.setattr(plugins, "_entry_points", lambda: [])
    monkeypatch.setattr(lookup, "EXPERIMENTS", Registry("experiment", populate=lookup._load_papers))
    with caplog.at_level("WARNING", logger="paperzoo.experiments.lookup"):
        assert lookup.EXPERIMENTS.names() == []
    (line,) = [r.getMessage() for r in caplog.records]
    assert "pip install -e ." in line
