"""experiments.workload.describe: the generated tree as a stream of treedesc entries, equal to
what `treedesc.from_directory` reads back from the written tree (apart from data)."""

from __future__ import annotations

import os

import pytest

from experiments.workload import generate_tree
from experiments.workload.describe import describe
from simfs.inprocess.treedesc import from_directory


@pytest.mark.parametrize("seed,files,svn", [(1, 120, True), (1, 600, True), (5, 900, False),
                                            (2, 37, True)])
def test_describe_matches_written_tree(tmp_path, seed, files, svn):
    dest = tmp_path / "t"
    generate_tree(dest, seed=seed, files=files, svn=svn)
    root, *want = from_directory(str(dest))
    assert root.path == [] and root.kind == "dir"       # the "./" member: DEST's own metadata
    got = list(describe(seed, files, svn=svn, uid=os.getuid(), gid=os.getgid()))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w
    kinds = {e.kind for e in got}
    assert kinds == {"dir", "file", "symlink", "hardlink"}


def test_describe_counts(tmp_path):
    s = generate_tree(tmp_path / "t", seed=1, files=300, svn=True)
    ents = list(describe(1, 300, svn=True))
    assert sum(e.kind == "file" for e in ents) == s.files
    assert sum(e.kind == "hardlink" for e in ents) == s.hardlinks
    assert sum(e.kind == "dir" for e in ents) == s.dirs
    assert sum(e.kind == "symlink" for e in ents) == s.symlinks
    assert sum(e.size for e in ents if e.kind == "file") == s.total_bytes
