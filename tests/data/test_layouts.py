import pytest

from paperzoo.data import DataError, DataRequired
from paperzoo.data.layouts import LAYOUTS, all_files, layout, register_layout, require


def test_every_real_data_set_declares_where_its_files_lie():
    for name in ("mnist", "fashion-mnist", "cifar10", "cifar100", "svhn", "dsprites"):
        lay = layout(name)
        assert lay.layout.startswith("DIR/") and lay.what
    with pytest.raises(KeyError, match="no file layout registered"):
        layout("no-such-data")
    with pytest.raises(ValueError, match="already registered"):
        register_layout("mnist", what="x", layout="DIR/x", downloadable=False, present=all_files())


def test_require_names_the_data_set_and_its_layout_on_one_line(tmp_path):
    with pytest.raises(DataRequired) as err:
        require("mnist", None)
    msg = str(err.value)
    assert "\n" not in msg and isinstance(err.value, DataError)
    assert msg.startswith("MNIST is the paper's data set") and "--data-root DIR" in msg
    assert "DIR/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]" in msg
    assert "--download" in msg and "--dataset" in msg
    with pytest.raises(DataRequired, match=f"--data-root {tmp_path} lacks them"):
        require("mnist", tmp_path)
    with pytest.raises(DataRequired, match="dSprites") as err:
        require("dsprites", tmp_path, download=True)  # no canonical download
    assert "--download" not in str(err.value)
    require("mnist", tmp_path / "new", download=True)  # --download will fetch them


def test_require_accepts_the_files_gzipped_or_not(tmp_path):
    d = tmp_path / "mnist"
    d.mkdir()
    stems = [f"{p}-{k}-ubyte" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")]
    for i, s in enumerate(stems):
        (d / (f"{s}.gz" if i % 2 else s)).write_bytes(b"")
    require("mnist", tmp_path)
    (d / stems[0]).unlink()
    with pytest.raises(DataRequired):
        require("mnist", tmp_path)
    assert set(LAYOUTS) >= {"mnist", "cifar10"}
