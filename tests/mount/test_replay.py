"""Record a mounted run with -o oplog= and replay it with `simfs replay` (issue 14).

Image A is mounted with -o oplog=LOG,stats=S1 and real tools run on it: tar xf of a generated
tree, find, cat of every file, rm -rf of a part, mv, ln -s, setxattr (setfattr where installed,
else the system call from Python), with a mark and a drop_caches between phases. B and C are
copies of A made before the mount.

* replay of LOG on B with the recorded options: the statistics are S1, field for field;
* replay on C with another allocator, write-back mode and disk: other figures for the same
  operations, and C is e2fsck-clean.

Budget: about 15 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import SimfsMount, e2fsck, make_image, run, run_simfs, tree_tarball

pytestmark = pytest.mark.mount

UUID = "00112233-4455-6677-8899-aabbccddeeff"
HASH_SEED = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def setxattr(path, name: str, value: bytes) -> None:
    if shutil.which("setfattr"):
        run(["setfattr", "-h", "-n", name, "-v", "0x" + value.hex(), path])
    else:
        os.setxattr(path, name, value, follow_symlinks=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("oplog")
    tar = tree_tarball(d, seed=7, files=300)
    a = make_image(d / "a.img", "128M", "--uuid", UUID, "--hash-seed", HASH_SEED)
    for name in ("b.img", "c.img"):
        run(["cp", "--sparse=always", a, d / name])
    mnt = d / "mnt"
    mnt.mkdir()
    m = SimfsMount(a, mnt)
    log, s1 = d / "run.log.gz", d / "s1.json"
    try:
        m.mount(f"oplog={log},stats={s1}")
        (mnt / ".simfs" / "mark").write_text("unpack")
        run(["tar", "xf", tar, "-C", mnt])
        (mnt / ".simfs" / "drop_caches").write_text("1")
        (mnt / ".simfs" / "mark").write_text("read")
        files = run(["find", ".", "-type", "f"], cwd=mnt).stdout.split()
        assert len(files) > 100
        run(["find", ".", "-type", "f", "-exec", "cat", "{}", "+"], cwd=mnt)
        (mnt / ".simfs" / "mark").write_text("change")
        dirs = sorted(p.name for p in mnt.iterdir() if p.is_dir() and p.name != "lost+found")
        run(["rm", "-rf", mnt / dirs[0]])
        run(["mv", mnt / dirs[1], mnt / "moved"])
        run(["ln", "-s", "moved", mnt / "link"])
        setxattr(mnt / "moved", "user.note", b"recorded \xff")
        m.umount()
    finally:
        m.force_cleanup()
    rc, out = e2fsck(a)
    assert rc == 0, out
    return d, log, json.loads(s1.read_text())


def test_replay_on_a_copy_gives_the_recorded_statistics(recorded):
    d, log, s1 = recorded
    r = run_simfs("replay", log, d / "b.img", "--stats", d / "s2.json", "--json")
    assert json.loads((d / "s2.json").read_text()) == s1, "replay differs from the mounted run"
    doc = json.loads(r.stdout)
    assert doc["time"] == s1 and doc["operations_replayed"] > 1000
    assert {p["name"] for p in s1["phases"]} >= {"unpack", "read", "change"}
    ops = s1["total"]["operations"]
    for op in ("create", "write", "read", "readdir", "lookup", "unlink", "rmdir", "rename",
               "symlink", "setxattr"):
        assert ops.get(op, {}).get("count", 0) > 0, op
    rc, out = e2fsck(d / "b.img")
    assert rc == 0, out


def test_replay_with_another_configuration(recorded):
    d, log, s1 = recorded
    r = run_simfs("replay", log, d / "c.img", "-o", "alloc=cg,writeback=async,disk=wd1200jb", "--json")
    t = json.loads(r.stdout)["time"]
    assert (t["alloc"], t["writeback"], t["disk"]) == ("cg", "async", "wd1200jb")
    assert t["now"] != s1["now"] and t["total"]["disk_time"] != s1["total"]["disk_time"]
    count = lambda doc: {k: v["count"] for k, v in doc["total"]["operations"].items()}  # noqa: E731
    assert count(t) == count(s1), "the same operations"
    rc, out = e2fsck(d / "c.img")
    assert rc == 0, out
    # the tree replay left: what tar, rm -rf, mv and ln -s made (data is filler)
    ls = subprocess.run(["debugfs", "-R", "ls -l /", str(d / "c.img")], capture_output=True, text=True)
    assert " moved" in ls.stdout and " link" in ls.stdout
