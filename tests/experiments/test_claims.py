"""Every registered experiment declares its claims under the verdict protocol (DESIGN.md,
"Verdicts"): a kind per claim, at least one finding per paper, and every finding judged against
an explicit comparison at every scale (never "reported")."""

from __future__ import annotations

import re

import pytest

from paperzoo.experiments import EXPERIMENTS, SCALES

NAMES = sorted(EXPERIMENTS.names())
# A comparison: an order relation with a number, "within P% of x", or a boolean target.
_COMPARISON = re.compile(r"^(>=|<=|==|>|<)\s*[-+0-9.]|^within\s|^is (true|false)$")
# Findings left out of full scale because full runs the paper's own setting with other claims
# (claim-id prefixes): obfuscated-gradients' MNIST part (full is its CIFAR-10 part, cifar10.*);
# coordconv's conv-regressor training fit, which full judges as a premise check (``*_premise``).
_NOT_AT_FULL = {
    "obfuscated-gradients": ("defense.", "diagnostics."),
    "coordconv": ("quadrant.regression.conv.train_rmse_px",),
}


def _defined_experiments() -> dict[str, type]:
    """Every concrete ``Experiment`` subclass defined in a module of paperzoo.papers, and every
    class an installed package declares as a paper (its ``paperzoo.papers`` entry point), by its
    ``name``."""
    import importlib
    import inspect
    import pkgutil
    from importlib import metadata

    import paperzoo.papers as pkg
    from paperzoo.experiments.base import Experiment
    from paperzoo.experiments.plugins import GROUP

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and not hasattr(obj, "__origin__")  # Python 3.10: list[int] passes isclass
                and issubclass(obj, Experiment)
                and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)
            ):
                assert obj.name not in found, f"two experiments named {obj.name}"
                found[obj.name] = obj
    for ep in metadata.entry_points(group=GROUP):
        obj = ep.load()
        assert found.setdefault(obj.name, obj) is obj, f"two experiments named {obj.name}"
    return found


def test_every_paper_is_covered() -> None:
    """Every experiment a paper module defines is registered, under its own ``name``, and the
    registry holds nothing else."""
    defined = _defined_experiments()
    assert sorted(defined) == NAMES, (sorted(defined), NAMES)
    for name in NAMES:
        exp = EXPERIMENTS.create(name)
        assert type(exp) is defined[name] and exp.name == name, name


@pytest.mark.parametrize("name", NAMES)
def test_claims_follow_the_verdict_protocol(name: str) -> None:
    claims = EXPERIMENTS.create(name).claims
    assert claims, name
    assert len({c.id for c in claims}) == len(claims), "duplicate claim ids"
    assert all(c.kind in ("finding", "check") for c in claims), [
        (c.id, c.kind) for c in claims if c.kind not in ("finding", "check")
    ]
    findings = [c for c in claims if c.kind == "finding"]
    assert findings, f"{name} declares no finding"
    for c in findings:
        targets = c.targets()
        # Every finding has a target at every scale it is declared at (DESIGN.md); a finding
        # declared at some scales only (the paper's own setting, full only) must include full.
        assert set(targets) == set(c.scales), (c.id, targets)
        assert "full" in targets or c.id.startswith(_NOT_AT_FULL.get(name, ())), (c.id, targets)
        reported = [s for s, t in targets.items() if t.strip().lower() == "reported"]
        assert not reported, (c.id, reported)
        for t in targets.values():
            assert _COMPARISON.match(t.strip().lower()), (c.id, t)
    # A paper's quick run judges at least one finding (the 4-seed headline is about quick).
    assert any(c.applies("quick") for c in findings), name


def test_a_claim_declared_at_some_scales_only():
    from paperzoo.experiments.base import ClaimSpec

    c = ClaimSpec("x", "s", 0.0, "<= 0.05", scales=("full",))
    assert c.scales == ("full",) and c.targets() == {"full": "<= 0.05"}
    assert c.applies("full") and not c.applies("quick") and not c.applies("smoke")
    with pytest.raises(ValueError, match="declared at"):
        c.target_at("quick")
    # Scales are kept in SCALES order; a mapping covers the claim's own scales only.
    m = ClaimSpec("y", "s", None, {"quick": ">= 0.1", "full": ">= 0.2"}, scales=("full", "quick"))
    assert m.scales == ("quick", "full") and m.target_at("quick") == ">= 0.1"
    assert ClaimSpec("z", "s", None, {"full": ">= 0.2"}, scales=("full",)).targets() == {
        "full": ">= 0.2"
    }
    with pytest.raises(ValueError, match="per-scale targets"):
        ClaimSpec("w", "s", None, {"quick": ">= 0.1", "full": ">= 0.2"}, scales=("full",))
    with pytest.raises(ValueError, match="scales must be"):
        ClaimSpec("v", "s", None, ">= 0", scales=())
    with pytest.raises(ValueError, match="scales must be"):
        ClaimSpec("u", "s", None, ">= 0", scales=("huge",))
    with pytest.raises(ValueError, match="finding needs a target"):
        ClaimSpec("t", "s", None, "reported", scales=("full",))
    # Default: every scale, as before.
    assert ClaimSpec("d", "s", None, ">= 0").scales == SCALES


def test_the_runner_judges_only_the_claims_declared_at_the_run_scale(tmp_path):
    from paperzoo.experiments.base import ClaimSpec, Experiment, Outcome, RunContext
    from paperzoo.experiments.runner import build_result

    class Toy(Experiment):
        name = "toy"
        title = "toy"
        claims = (
            ClaimSpec("everywhere", "s", None, ">= 0"),
            ClaimSpec("full.only", "s", 0.0, "<= 0.05", scales=("full",)),
        )
        configs = {s: None for s in SCALES}

        def run(self, cfg, ctx):  # pragma: no cover - not called
            raise AssertionError

    quick = build_result(Toy(), Outcome(measured={"everywhere": 1.0}), RunContext(), 1.0)
    assert [c.id for c in quick.claims] == ["everywhere"]
    full_ctx = RunContext(scale="full", out_dir=tmp_path)
    both = {"everywhere": 1.0, "full.only": 0.01}
    full = build_result(Toy(), Outcome(measured=both), full_ctx, 1.0)
    assert [(c.id, c.holds_on) for c in full.claims] == [("everywhere", 1), ("full.only", 1)]
    # A value for a claim not declared at the run's scale is not judged, and a note names it.
    extra = build_result(Toy(), Outcome(measured=both), RunContext(), 1.0)
    assert [c.id for c in extra.claims] == ["everywhere"]
    assert any("not declared at quick" in n and "full.only" in n for n in extra.notes)
    # A claim left out where it is declared is "not measured", the reason naming what was reported.
    missing = build_result(Toy(), Outcome(measured={"everywhere": 1.0}), full_ctx, 1.0)
    (claim,) = [c for c in missing.claims if c.id == "full.only"]
    assert claim.per_seed == [None] and claim.verdict == "not measured"
    assert claim.why_not_measured == [
        "the run reported no metric full.only; it reported: everywhere"
    ]


def test_a_misspelt_metric_is_not_measured_and_the_run_writes_its_report(tmp_path, monkeypatch):
    """A run whose ``measured`` misspells a claim id ends normally: results.json and report.md
    are written, the claim is "not measured" with the reason, and the CLI's summary says why."""
    import json

    from paperzoo.experiments.base import ClaimSpec, Experiment, Outcome, RunContext
    from paperzoo.experiments.runner import run_experiment

    class Typo(Experiment):
        name = "typo-paper"
        title = "a paper with a misspelt metric"
        claims = (
            ClaimSpec("cal.ece_ratio", "label smoothing lowers calibration error", None, "< 1"),
            ClaimSpec("acc", "accuracy is above chance", None, ">= 0.1", kind="check"),
        )
        configs = {s: None for s in SCALES}

        def run(self, cfg, ctx):
            return Outcome(measured={"cal.ece_ration": 0.5, "acc": 0.9})

    monkeypatch.setitem(EXPERIMENTS._factories, Typo.name, Typo)
    out = tmp_path / "run"
    result = run_experiment("typo-paper", RunContext(scale="smoke", out_dir=out))
    why = "the run reported no metric cal.ece_ratio; it reported: acc, cal.ece_ration"
    (claim,) = [c for c in result.claims if c.id == "cal.ece_ratio"]
    assert claim.verdict_text == f"not measured ({why})"
    stored = json.loads((out / "results.json").read_text())
    (raw,) = [c for c in stored["claims"] if c["id"] == "cal.ece_ratio"]
    assert raw["verdict"] == "not measured" and raw["why_not_measured"] == [why]
    report = (out / "report.md").read_text()
    assert why in report and "cal.ece_ration" in report


# -- malformed targets fail at declaration; full findings are one-sided -------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_target_parses_strictly(name: str) -> None:
    from paperzoo.verdict import validate_target

    for c in EXPERIMENTS.create(name).claims:
        for target in c.targets().values():
            validate_target(target)  # numbers as float() reads them (">= 1.2.3" is refused)


@pytest.mark.parametrize("target", [">= 1.2.3", "about 0.9", "within 2 % of x", ">= ", "< 1e"])
def test_a_malformed_target_fails_when_the_claim_is_declared(target: str) -> None:
    from paperzoo.experiments.base import ClaimSpec

    with pytest.raises(ValueError, match="cannot parse"):
        ClaimSpec("x.y", "s", 1.0, target)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"target": None}, TypeError, "claim cal.ece: target must be a string such as '>= 0.9'"),
        ({"target": ">= 1.2.3"}, ValueError, "claim cal.ece: cannot parse claim target '>= 1.2.3'"),
        (
            {"target": {"quick": "< 1", "full": None}},
            TypeError,
            "claim cal.ece: every target must be a string",
        ),
        ({"target": "< 1", "scales": "full"}, TypeError, "claim cal.ece: scales is a tuple"),
        ({"target": "< 1", "paper": [0.1]}, TypeError, "claim cal.ece: paper"),
        ({"target": "< 1", "statement": None}, TypeError, "claim cal.ece: statement"),
    ],
)
def test_a_declaration_mistake_is_one_line_naming_the_claim(kwargs, error, message) -> None:
    from paperzoo.paper import ClaimSpec

    args = {"id": "cal.ece", "statement": "s", "paper": None} | kwargs
    with pytest.raises(error) as info:
        ClaimSpec(**args)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_full_findings_are_one_sided() -> None:
    """``within P% of x`` is two-sided: an error, bound or accuracy better than the paper's
    would fail. At full scale findings compare one way; ``within`` is for checks (counts)."""
    two_sided = [
        f"{n}: {c.id} ({c.target_at('full')})"
        for n in NAMES
        for c in EXPERIMENTS.create(n).claims
        if c.kind == "finding" and c.applies("full") and "within" in c.target_at("full")
    ]
    assert not two_sided


# -- paper numbers: unverified, or quoted by a maintained reimplementation -----------------------


def test_a_paper_number_is_quoted_or_unverified_not_both() -> None:
    from paperzoo.experiments.base import ClaimSpec

    q = ClaimSpec("x", "s", 1.0, ">= 0.99", quoted="a reimplementation's README")
    assert q.quoted == "a reimplementation's README" and q.unverified is None
    with pytest.raises(ValueError, match="not both"):
        ClaimSpec("x", "s", 1.0, ">= 0.99", quoted="README", unverified="not read")
    with pytest.raises(ValueError, match="quoted needs a source"):
        ClaimSpec("x", "s", 1.0, ">= 0.99", quoted=" ")


def test_ggnn_table_1_numbers_are_quoted_and_the_rest_stay_unverified() -> None:
    """The GG-NN column of Table 1 is quoted in DGL's GG-NN example ("Reported Accuracy");
    Table 2 and the RNN/LSTM baselines are not quoted anywhere read, so they stay unverified."""
    claims = {c.id: c for c in EXPERIMENTS.create("ggnn").claims}
    table1 = [f"babi.task{n}.ggnn.test_acc" for n in (4, 15, 16, 18)]
    table1.append("babi.task19.ggsnn.test_acc")
    for cid in table1:
        c = claims[cid]
        assert c.unverified is None and "dmlc/dgl" in (c.quoted or ""), cid
    assert [claims[c].paper for c in table1] == [1.0, 1.0, 1.0, 1.0, 0.99]
    rest = [c for c in claims.values() if c.kind == "finding" and c.id not in table1]
    assert rest and all(c.unverified and c.quoted is None for c in rest)


def test_list_shows_a_quoted_paper_number() -> None:
    from paperzoo.catalogue import list_catalogue, render_catalogue

    catalogue = list_catalogue()
    ggnn = next(p for p in catalogue["papers"] if p["name"] == "ggnn")
    task4 = next(c for c in ggnn["claims"] if c["id"] == "babi.task4.ggnn.test_acc")
    assert task4["unverified"] is None and task4["quoted"].startswith("dmlc/dgl")
    assert all("quoted" in c for p in catalogue["papers"] for c in p["claims"])
    lines = render_catalogue(catalogue).splitlines()
    i = next(i for i, t in enumerate(lines) if "babi.task4.ggnn.test_acc" in t)
    assert lines[i + 1].strip().startswith("paper number quoted (dmlc/dgl")
