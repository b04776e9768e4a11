"""`simfs ctl MNT drop-caches` starts the next phase cold everywhere (issue 51, item 4): a tar
read-back after it charges what the same read-back charges after a fresh mount, although the
host kernel still references the inodes the first pass looked up (it keeps them whatever simfs
drops; with entry and attribute timeouts 0 it asks simfs anyway, and simfs reads each such
inode's block again at its first use).

Exact: inode-table requests, disk reads, blocks read and seeks. The one thing the host decides
is when its FORGETs for the first pass come, and a FORGET changes nothing charged.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import run_simfs

pytestmark = pytest.mark.mount

COMPARED = ("disk_requests_inode", "disk_reads", "blocks_read", "seeks", "cache_misses")


def _readback(m, name: str) -> dict:
    run_simfs("ctl", m.mnt, "mark", name)
    subprocess.run(["tar", "-cf", "/dev/zero", "-C", str(m.mnt), "tree"], check=True)
    run_simfs("ctl", m.mnt, "mark", name + "-end")
    phase = [p for p in m.stats()["time"]["phases"] if p["name"] == name][-1]
    return {k: phase["counters"].get(k, 0) for k in COMPARED}


def test_drop_caches_reads_back_as_a_fresh_mount(simfs_factory, tmp_path):
    from experiments.workload import generate_tree
    generate_tree(tmp_path / "src", seed=4, files=300)
    m = simfs_factory("writeback=async", size="256M")
    (m.mnt / "tree").mkdir()
    subprocess.run(["tar", "-C", str(tmp_path / "src"), "-cf", str(tmp_path / "src.tar"), "."], check=True)
    subprocess.run(["tar", "-xpf", str(tmp_path / "src.tar"), "-C", str(m.mnt / "tree")], check=True)
    _readback(m, "warm")                                  # the kernel now references every inode
    run_simfs("ctl", m.mnt, "drop-caches")
    dropped = _readback(m, "after-drop")
    m.umount()
    m.mount()
    fresh = _readback(m, "fresh")
    assert fresh["disk_requests_inode"] > 10
    assert dropped == fresh
