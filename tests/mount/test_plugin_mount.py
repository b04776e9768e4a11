"""Plug-ins through a real mount (issue 12): the example package's allocator, directory order
and disk model, found through their entry points, unpack a tree that e2fsck then finds
clean; a class given as package.module:Class works with no entry point; a bad one is one
line and exit status 2, with nothing mounted.

The example package (examples/simfs-example-plugins) is installed by `make venv`; the tests
that need its entry points are skipped, with the reason, where it is not installed.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import textwrap

import pytest

from tests.conftest import fuse_mounts, manifest, run, run_simfs

pytestmark = pytest.mark.mount


def _example_installed() -> bool:
    try:
        importlib.metadata.distribution("simfs-example-plugins")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_example = pytest.mark.skipif(not _example_installed(),
                                   reason="example plug-ins not installed (make venv installs "
                                          "examples/simfs-example-plugins)")


@pytest.fixture
def small_tree(tmp_path):
    """A small tree (a few directories, files of 0 B to 200 KiB) and its tarball."""
    src = tmp_path / "src"
    for d in range(4):
        sub = src / f"dir{d}" / "sub"
        sub.mkdir(parents=True)
        for f in range(12):
            size = (f * 7919 + d * 104729) % (200 << 10) if f % 5 else 0
            (src / f"dir{d}" / f"file{f}.c").write_bytes(bytes((f + d + i) & 255 for i in range(size)))
        (sub / "notes.txt").write_text("x" * (d * 3000))
    os.symlink("dir0/file1.c", src / "link")
    tar = tmp_path / "src.tar"
    run(["tar", "cf", tar, "-C", src, "."])
    return src, tar


@needs_example
def test_simfs_lists_the_plugins():
    out = run_simfs("policies").stdout
    rows = {ln.split()[0].lstrip("*"): ln for ln in out.splitlines() if ln.startswith("  ")}
    assert "example plug-in" in rows["stride"] and "inodes: parent-group" in rows["stride"]
    assert "newest-first" in rows
    assert "x25-m" in run_simfs("disks").stdout
    show = run_simfs("disks", "show", "x25-m").stdout
    assert "read_latency" in show and "[read]" in show and "random_read_4k" in show


@needs_example
def test_mount_with_plugins_unpacks_a_tree_and_fsck_is_clean(simfs_factory, small_tree):
    src, tar = small_tree
    m = simfs_factory("alloc=stride,dirorder=newest-first,disk=x25-m", size="64M")
    run(["tar", "xf", tar, "-C", m.mnt])
    assert manifest(m.mnt) == manifest(src)
    members = [p.rstrip("/") for p in run(["tar", "tf", tar]).stdout.split()]
    created = [p.split("/")[2] for p in members if p.startswith("./dir0/") and p.count("/") == 2]
    assert os.listdir(m.mnt / "dir0") == created[::-1]      # readdir order: newest first
    st = m.stats()["time"]
    assert (st["alloc"], st["dirorder"], st["disk"]) == ("stride", "newest-first", "x25-m")
    assert st["total"]["disk_time"]["seek"] == 0 and st["total"]["disk_time"]["overhead"] > 0
    runs = json.loads(run_simfs("frag", "--json", m.mnt / "dir0" / "file9.c").stdout)["runs"]
    assert len(runs) > 4 and all(b[1] - a[1] == 8 for a, b in zip(runs, runs[1:]))
    m.umount()
    m.assert_clean()


def test_a_class_by_module_path_needs_no_entry_point(simfs_factory, small_tree, tmp_path, monkeypatch):
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "lastfit.py").write_text(textwrap.dedent('''
        from policies.base import BlockAllocator, NoSpace

        class LastFit(BlockAllocator):
            name = "last-fit"
            summary = "the highest free block of the volume"

            def allocate(self, space, req, state):
                free = (~space.block_used).nonzero()[0]
                if not len(free):
                    raise NoSpace()
                return int(free[-1])
    '''))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(mods), os.environ.get("PYTHONPATH")) if p))
    src, tar = small_tree
    m = simfs_factory("alloc=lastfit:LastFit,disk=ideal", size="64M")
    run(["tar", "xf", tar, "-C", m.mnt])
    assert manifest(m.mnt) == manifest(src)
    assert m.stats()["time"]["alloc"] == "last-fit"
    m.umount()
    m.assert_clean()


@pytest.mark.parametrize("option,expect", [
    ("alloc=nosuch_pkg.module:Cls", "allocator 'nosuch_pkg.module:Cls': cannot import module 'nosuch_pkg.module'"),
    ("alloc=policies.base:Nothing", "module 'policies.base' has no attribute 'Nothing'"),
    ("alloc=policies.base:BlockRequest", "is not a subclass of policies.base.BlockAllocator"),
    ("disk=nosuch_pkg:Model", "disk model 'nosuch_pkg:Model': cannot import module"),
])
def test_a_bad_module_path_is_one_line_and_exit_2(tmp_path, option, expect):
    image = tmp_path / "a.img"
    run_simfs("mkfs", "-q", image, "--size", "32M")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_simfs("mount", image, mnt, "-o", option, check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("simfs mount: ") and expect in r.stderr
    assert os.path.realpath(mnt) not in fuse_mounts()
