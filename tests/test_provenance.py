import subprocess

import pytest

from paperzoo.provenance import code_identity, cpu_model, git_commit, host_identity, source_sha256


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with a package directory ``src/pkg`` in its first commit."""
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return pkg


def test_the_commit_of_a_checkout_and_its_local_changes(checkout):
    head = git_commit(checkout)
    assert head is not None and len(head) == 12 and "+" not in head
    (checkout / "a.py").write_text("x = 2\n")
    assert git_commit(checkout) == f"{head}+dirty"
    (checkout / "a.py").write_text("x = 1\n")
    (checkout.parent.parent / "notes.txt").write_text("outside the package\n")
    assert git_commit(checkout) == head  # only the package's own files matter
    (checkout / "new.py").write_text("y = 1\n")  # an untracked module runs too
    assert git_commit(checkout) == f"{head}+dirty"


def test_no_commit_outside_a_checkout(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    assert git_commit(tmp_path) is None


def test_the_source_digest_follows_the_code(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "data.txt").write_text("not code\n")
    before = source_sha256(tmp_path)
    (tmp_path / "data.txt").write_text("still not code\n")
    assert source_sha256(tmp_path) == before
    (tmp_path / "a.py").write_text("x = 2\n")
    assert source_sha256(tmp_path) != before
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("")
    assert source_sha256(tmp_path) != before


def test_this_package_is_identified():
    ident = code_identity()
    assert len(ident["source_sha256"]) == 64
    assert ident["commit"] is None or len(ident["commit"].split("+")[0]) == 12


def test_the_host_names_the_cpu_and_its_cores(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 2.0GHz\n")
    assert cpu_model(info) == "Test CPU @ 2.0GHz"
    assert cpu_model(tmp_path / "absent")  # falls back to the platform's name, never empty
    host = host_identity("cpu")
    assert host.endswith(" cores") and int(host.rsplit(", ", 1)[1].split()[0]) >= 1


def test_results_record_the_host_and_aggregates_keep_it(tmp_path):
    from paperzoo.cli import main
    from paperzoo.verdict import load_result

    out = tmp_path / "agg"
    args = ["reproduce", "coordconv", "--scale", "smoke", "--seeds", "0-1", "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    for run in (out / "seed-0", out / "seed-1", out):
        assert load_result(run).host == host_identity("cpu")  # the aggregate names it once
    assert host_identity("cpu") in (out / "report.md").read_text()
