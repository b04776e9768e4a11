"""readdirplus charges no inode reads (the fidelity contract, issue 41): a `find` that needs
no stat lists a cold directory from its directory blocks alone, as the kernel's own readdir
does (getdents gives names, inode numbers and d_type); `ls -l`, which stats every entry,
pays the inode-table reads."""

from __future__ import annotations

import pytest

from tests.conftest import run

pytestmark = pytest.mark.mount

FILES = 300         # inode-table blocks well past the one holding the directory's own inode


def _phase(m, name: str) -> dict:
    return next(p for p in m.stats()["time"]["phases"] if p["name"] == name)["counters"]


def test_find_reads_no_inode_but_ls_l_does(simfs_factory):
    m = simfs_factory()
    d = m.mnt / "d"
    d.mkdir()
    for i in range(FILES):
        (d / f"f{i:03d}").touch()
    m.remount()                                     # cold: nothing cached, no reference held
    run(["stat", d])                                # the directory's own inode, outside the phases
    (m.mnt / ".simfs" / "mark").write_text("find")
    out = run(["find", d]).stdout                   # d_type suffices: no stat, no lookup
    assert out.count("\n") == FILES + 1
    (m.mnt / ".simfs" / "mark").write_text("ls")
    out = run(["ls", "-l", d]).stdout               # lstat of every entry
    assert out.count("\n") == FILES + 1             # and the "total" line
    find, ls = _phase(m, "find"), _phase(m, "ls")
    assert find.get("disk_requests_dir", 0) > 0     # it did read the directory, cold
    assert find.get("disk_requests_inode", 0) == 0, find
    assert ls.get("disk_requests_inode", 0) > 0, ls
