"""``paperzoo.paper``, the surface a paper of your own writes against, keeps its shape: every
name, each function's signature, each class's fields and public methods. A change here breaks
packages built on it: make it only with a CHANGELOG entry, then update ``SURFACE``."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import paperzoo.paper as surface


def shape(obj: Any) -> Any:
    if inspect.isclass(obj):
        out = {}
        if dataclasses.is_dataclass(obj):
            out["fields"] = [f.name for f in dataclasses.fields(obj)]
        elif "__init__" in vars(obj):
            out["init"] = str(inspect.signature(obj.__init__))
        members = {}
        for k, v in sorted(vars(obj).items()):
            if k.startswith("_"):
                continue
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            if inspect.isfunction(v):
                members[k] = str(inspect.signature(v))
            elif isinstance(v, property):
                members[k] = "property"
        anns = [k for k in getattr(obj, "__annotations__", {}) if not k.startswith("_")]
        if anns and not dataclasses.is_dataclass(obj):
            out["attributes"] = anns
        out["members"] = members
        return out
    if callable(obj):
        return str(inspect.signature(obj))
    return repr(obj)


SURFACE = {
    "ENTRY_POINT_GROUP": "'paperzoo.papers'",
    "SCALES": "('smoke', 'quick', 'full')",
    "ClaimSpec": {
        "fields": [
            "id",
            "statement",
            "paper",
            "target",
            "kind",
            "scales",
            "unverified",
            "quoted",
            "diagnosis",
        ],
        "members": {
            "applies": "(self, scale: 'str') -> 'bool'",
            "diagnosis_at": "(self, scale: 'str') -> 'str | None'",
            "target_at": "(self, scale: 'str') -> 'str'",
            "targets": "(self) -> 'dict[str, str]'",
        },
    },
    "DataInfo": {
        "fields": ["name", "source", "n_train", "n_test", "sha256", "fold"],
        "members": {"to_dict": "(self) -> 'dict[str, object]'"},
    },
    "DistInfo": {
        "fields": ["rank", "world_size", "local_rank", "group"],
        "members": {"enabled": "property", "is_main": "property"},
    },
    "Experiment": {
        "attributes": [
            "name",
            "title",
            "claims",
            "datasets",
            "paper_data",
            "parts",
            "configs",
            "cuda_precision",
            "not_estimated",
            "order",
            "full_not_run",
            "options",
            "resume_state",
            "gpu_check",
            "cpu_capped_args",
            "plan_upper_bound",
        ],
        "members": {
            "check_options": "(self, ctx: 'RunContext') -> 'None'",
            "claims_at": "(self, ctx: 'RunContext') -> 'list[ClaimSpec]'",
            "config": "(self, scale: 'str') -> 'Any'",
            "dataset_name": "(self, ctx: 'RunContext') -> 'str | None'",
            "default_dataset": "(self, scale: 'str') -> 'str | None'",
            "full_cost": "(self, cfg: 'Any', plan: 'list[tuple[str, int]]') -> 'tuple[list[Any], str] | None'",
            "has_grid": "property",
            "loader_shared_memory": "(self, cfg: 'Any', ranks: 'int' = 1) -> 'int'",
            "loader_workers": "(self, cfg: 'Any') -> 'int'",
            "merge": "(self, results: 'list[dict[str, Any]]', ctx: 'RunContext') -> 'Outcome'",
            "part_prefix": "(self, ctx: 'RunContext') -> 'str | tuple[str, ...] | None'",
            "plan": "(self, cfg: 'Any', ctx: 'RunContext') -> 'list[tuple[str, int]]'",
            "require_data": "(self, ctx: 'RunContext') -> 'None'",
            "run": "(self, cfg: 'Any', ctx: 'RunContext') -> 'Outcome'",
            "seed_notes": "(self, details: 'list[dict[str, Any]]', seeds: 'list[int]') -> 'list[str]'",
            "setting_note": "(self, ctx: 'RunContext') -> 'str | None'",
            "uses_paper_data": "(self, ctx: 'RunContext') -> 'bool'",
        },
    },
    "Measured": "float | int | bool | None",
    "NotRun": {"fields": ["needs", "why", "part", "data"], "members": {"label": "property"}},
    "Option": {
        "fields": ["flag", "help", "parse", "unparse", "exclusive"],
        "members": {"argv": "(self, value: 'Any') -> 'list[str]'", "dest": "property"},
    },
    "Outcome": {
        "fields": ["measured", "data", "figures", "notes", "details", "why_not_measured"],
        "members": {},
    },
    "Piece": {
        "fields": ["what", "work", "count"],
        "members": {
            "bound": "property",
            "hours": "property",
            "kernels": "property",
            "total": "property",
        },
    },
    "PluginError": {"fields": ["package", "entry_point", "problem"], "members": {}},
    "RunContext": {
        "fields": [
            "scale",
            "seed",
            "device",
            "out_dir",
            "data_root",
            "download",
            "dataset",
            "quiet",
            "command",
            "options",
            "shard",
            "part",
            "max_steps",
            "precision",
            "dist",
            "restart",
            "tensorboard",
            "flags",
            "guard_test",
        ],
        "members": {
            "figure_path": "(self, name: 'str') -> 'tuple[Path, str]'",
            "final_evaluation": "(self) -> 'AbstractContextManager[None]'",
            "generator": "(self, *keys: 'int | str') -> 'torch.Generator'",
            "holdout": "(self, data: '_T', name: 'str' = 'test data') -> '_T'",
            "progress": "property",
            "save_figure": "(self, fig: 'Any', name: 'str', *, dpi: 'int' = 100) -> 'str'",
        },
    },
    "TrainConfig": {
        "fields": [
            "steps",
            "batch_size",
            "seed",
            "log_every",
            "eval_every",
            "checkpoint_every",
            "checkpoint_seconds",
            "keep_checkpoints",
            "grad_clip",
            "drop_last",
            "channels_last",
            "compile",
            "progress",
            "progress_seconds",
            "agree_seconds",
            "desc",
        ],
        "members": {},
    },
    "Trainer": {
        "init": "(self, model: 'nn.Module', optimizer: 'torch.optim.Optimizer | None', loss_fn: 'Callable[[nn.Module, Any], LossOutput]', *, config: 'TrainConfig', out_dir: 'str | Path | None' = None, lr_schedule: 'Callable[[int], float] | None' = None, eval_fn: 'Callable[[nn.Module], dict[str, float]] | None' = None, extra: 'dict[str, Extra] | None' = None, manual: 'bool' = False, device: 'str | torch.device' = 'cpu', local: 'bool' = False, tensorboard: 'bool | None' = None) -> 'None'",
        "members": {
            "checkpoint_dir": "property",
            "close": "(self) -> 'None'",
            "fit": "(self, data: 'DataSource', *, resume: 'bool' = False) -> 'History'",
            "load_state_dict": "(self, state: 'dict[str, Any]') -> 'None'",
            "resume": "(self) -> 'bool'",
            "save_checkpoint": "(self) -> 'None'",
            "state_dict": "(self) -> 'dict[str, Any]'",
        },
    },
    "Work": {
        "fields": ["flop", "kernels", "modules", "host", "loader", "params", "fixed"],
        "members": {
            "bound": "property",
            "flop_seconds": "property",
            "host_seconds": "property",
            "launch_seconds": "property",
            "seconds": "property",
            "with_host": "(self, *, host: 'float' = 0.0, loader: 'float' = 0.0) -> 'Work'",
        },
    },
    "added_later": "(default: 'Any', *, ran_before: 'Any') -> 'Any'",
    "declaration_problem": "(paper: 'type', name: 'str | None' = None) -> 'str | None'",
    "derive_seed": "(seed: 'int', *keys: 'int | str') -> 'int'",
    "examples_sha256": "(*pairs: 'tuple[Tensor, Tensor]') -> 'str'",
    "forward": "(model: 'nn.Module', inputs: 'Inputs') -> 'Work'",
    "papers": "() -> 'list[str]'",
    "plugin_errors": "() -> 'list[PluginError]'",
    "rank_slice": "(items: 'Sequence[T]', dist: 'DistInfo') -> 'list[T]'",
    "read_record": "(path: 'Path') -> 'dict[str, Any]'",
    "seeded": "(seed: 'int') -> 'Iterator[None]'",
    "shard_slice": "(items: 'Sequence[T]', shard: 'tuple[int, int] | None') -> 'list[T]'",
    "step": "(model: 'nn.Module', inputs: 'Inputs') -> 'Work'",
    "store_cost": "(name: 'str') -> 'dict[str, Any]'",
    "stratified_split": "(x: 'Tensor', y: 'Tensor', n_test_per_class: 'int', *, seed: 'int') -> 'tuple[Tensor, Tensor, Tensor, Tensor]'",
    "write_record": "(path: 'Path', record: 'dict[str, Any]', *, indent: 'int | None' = None) -> 'None'",
    "validation_split": "(labels: 'Tensor', n_val: 'int | None' = None, *, fraction: 'float | None' = None, generator: 'torch.Generator') -> 'tuple[Tensor, Tensor]'",
}


def test_the_surface_keeps_its_names_and_their_shapes() -> None:
    assert sorted(surface.__all__) == sorted(SURFACE)
    for name, expected in SURFACE.items():
        assert shape(getattr(surface, name)) == expected, name


def test_every_name_of_the_surface_is_documented() -> None:
    for name in surface.__all__:
        obj = getattr(surface, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"


def test_the_api_reference_documents_the_surface() -> None:
    from pathlib import Path

    import pytest

    makefile = Path(__file__).resolve().parents[1] / "Makefile"
    if not makefile.is_file():
        pytest.skip("an installed package: no Makefile beside the tests")
    block = makefile.read_text().split("API_MODULES :=", 1)[1].split("\ndocs:", 1)[0]
    assert "paperzoo.paper" in block.split()
