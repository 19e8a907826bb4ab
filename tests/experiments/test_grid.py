import json

import pytest

from paperzoo.engine.distributed import DistInfo
from paperzoo.experiments.grid import rank_slice, read_record, shard_slice, write_record


def test_shards_and_ranks_partition_the_grid() -> None:
    items = [f"m{i}" for i in range(11)]
    assert shard_slice(items, None) == items
    shards = [shard_slice(items, (k, 3)) for k in range(3)]
    assert sorted(x for s in shards for x in s) == sorted(items)
    assert shards[1] == ["m1", "m4", "m7", "m10"]
    ranks = [rank_slice(shards[1], DistInfo(rank=r, world_size=2)) for r in range(2)]
    assert ranks == [["m1", "m7"], ["m4", "m10"]]
    assert rank_slice(items, DistInfo()) == items


def test_records_round_trip_and_corrupt_ones_name_the_file(tmp_path) -> None:
    path = tmp_path / "models" / "a" / "result.json"
    path.parent.mkdir(parents=True)
    write_record(path, {"acc": 0.5}, indent=1)
    assert read_record(path) == {"acc": 0.5} and path.read_text().endswith("\n")
    write_record(path, {"acc": 0.25})
    assert path.read_text() == json.dumps({"acc": 0.25})
    path.write_text("{not json")
    with pytest.raises(ValueError, match="delete it to redo"):
        read_record(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        read_record(path)
