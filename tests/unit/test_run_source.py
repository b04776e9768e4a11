"""`simfs run JOB --source perl.tar` (issue 51, item 13): a tarball is a source wherever the job's
workload is a tree, unpacked as a job's [workload] kind = "tarball" is; anything else is refused
in one line, exit status 2. Parse and prepare only: nothing is mounted."""

from __future__ import annotations

import argparse
import tarfile
from pathlib import Path

import pytest

from experiments import jobcli, runner

REPO = Path(__file__).resolve().parents[2]
TREE_JOB = REPO / "examples" / "jobs" / "alloc-ab.toml"          # [workload] kind = "dir"
NO_TREE_JOB = REPO / "examples" / "jobs" / "fio-alloc.toml"      # [workload] kind = "none"


def _args(*argv) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    jobcli.add_arguments(p)
    return p.parse_args([str(x) for x in argv])


def _tarball(tmp_path: Path, mode: str = "w", name: str = "perl.tar") -> Path:
    tree = tmp_path / "perl"
    (tree / "lib").mkdir(parents=True)
    for i in range(3):
        (tree / "lib" / f"m{i}.pm").write_text(f"package M{i};\n1;\n")
    (tree / "README").write_text("perl\n")
    out = tmp_path / name
    with tarfile.open(out, mode) as t:
        t.add(tree, arcname=".")
    return out


@pytest.mark.parametrize("mode, name", [("w", "perl.tar"), ("w:gz", "perl.tar.gz")])
def test_a_tarball_source_is_unpacked_as_the_tree(tmp_path, mode, name, capsys):
    tar = _tarball(tmp_path, mode, name)
    loaded = jobcli._load(_args(TREE_JOB, "--source", tar))
    assert not isinstance(loaded, int), capsys.readouterr().err
    _, spec, _ = loaded
    assert spec == {"kind": "tree", "tarball": str(tar.resolve())}
    work = tmp_path / "work"
    work.mkdir()
    wl = runner.prepare_workload(spec, work)          # what the run does with it
    assert wl.files == 4 and (wl.path / "lib" / "m2.pm").read_text() == "package M2;\n1;\n"


def test_a_directory_source_is_still_copied(tmp_path):
    _tarball(tmp_path)
    _, spec, _ = jobcli._load(_args(TREE_JOB, "--source", tmp_path / "perl"))
    assert spec == {"kind": "tree", "path": str((tmp_path / "perl").resolve())}


@pytest.mark.parametrize("make, words", [
    (lambda d: (d / "notes.txt").write_text("not an archive\n") and d / "notes.txt", "not a directory or a tarball"),
    (lambda d: d / "missing.tar", "no such directory or tarball"),
])
def test_what_cannot_be_a_source_is_one_line(tmp_path, capsys, make, words):
    assert jobcli._load(_args(TREE_JOB, "--source", make(tmp_path))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("simfs run: --source ") and words in err, err


def test_a_job_without_a_tree_refuses_a_tarball_too(tmp_path, capsys):
    assert jobcli._load(_args(NO_TREE_JOB, "--source", _tarball(tmp_path))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no tree workload" in err, err


def test_experiment_run_takes_a_tarball_too(tmp_path):
    from experiments.cli import _source_problem
    assert _source_problem(_tarball(tmp_path)) is None
    assert "not a directory or a tarball" in _source_problem(Path(__file__))
