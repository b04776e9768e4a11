"""Real tools on a mounted simfs: tar, diff -r, cp -a, find, mv, rm -rf, dd, shared mmap.

After each scenario: umount, e2fsck -fn clean, mount again, contents still verify
(`SimfsMount.remount` + `manifest`); the fixture's teardown unmounts and checks once more.
"""

import os
import random
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, manifest, run, sha256_file

pytestmark = pytest.mark.mount

MiB = 1 << 20


def _find(root: Path) -> list[str]:
    out = run(["find", root, "-mindepth", "1", "-printf", r"%P %y\n"]).stdout
    return sorted(out.splitlines())


def test_tree_tar_diff_cp_find_mv_rm(simfs_mount, source_tree, source_tarball, source_manifest):
    m = simfs_mount
    src, summary = source_tree
    assert summary.files >= 2000 and summary.largest_file > MiB
    assert summary.symlinks and summary.hardlinks and summary.empty_dirs and summary.longest_path > 200

    # unpack with real tar, compare with diff -r and the manifest
    dest = m.mnt / "src"
    dest.mkdir()
    run(["tar", "xf", source_tarball, "-C", dest])
    run(["diff", "-r", "--no-dereference", src, dest])
    assert manifest(dest) == source_manifest
    m.remount()
    assert manifest(dest) == source_manifest

    # find sees the same names and types
    assert _find(dest) == _find(src)

    # cp -a inside the mount
    free_before = os.statvfs(m.mnt)
    copy = m.mnt / "copy"
    run(["cp", "-a", dest, copy])
    run(["diff", "-r", "--no-dereference", src, copy])
    assert manifest(copy) == source_manifest

    # mv across directories: a whole subdirectory and a single file
    subdirs = sorted(p for p in copy.iterdir() if p.is_dir() and not p.is_symlink())
    assert len(subdirs) >= 2
    a, b = subdirs[0], subdirs[-1]
    before_a = manifest(a)
    run(["mv", a, b / "moved_here"])
    assert not a.exists()
    assert manifest(b / "moved_here") == before_a
    files = sorted(p for p in (b / "moved_here").rglob("*") if p.is_file() and not p.is_symlink())
    f = files[0]
    digest = sha256_file(f)
    run(["mv", f, copy / "moved_file"])
    assert sha256_file(copy / "moved_file") == digest and not f.exists()

    # rm -rf gives every block and inode back
    run(["rm", "-rf", copy])
    assert not copy.exists()
    free_after = os.statvfs(m.mnt)
    assert free_after.f_bfree == free_before.f_bfree
    assert free_after.f_ffree == free_before.f_ffree

    st = m.stats()        # counts since the last mount: cp -a, mv, rm -rf
    assert st["ops"]["create"] >= summary.files
    assert st["counters"]["inodes_freed"] >= summary.files
    assert st["counters"]["blocks_freed"] > 0
    assert st["unexpected_exceptions"] == 0

    m.remount()
    assert not copy.exists()
    assert manifest(dest) == source_manifest


def test_dd_64mib_sha256(simfs_mount, tmp_path):
    m = simfs_mount
    data = random.Random(64).randbytes(64 * MiB)
    src = tmp_path / "random.bin"
    src.write_bytes(data)
    want = sha256_file(src)
    del data
    target = m.mnt / "big.bin"
    run(["dd", f"if={src}", f"of={target}", "bs=1M", "conv=fsync", "status=none"])
    assert target.stat().st_size == 64 * MiB
    assert sha256_file(target) == want
    st = os.stat(target)
    assert st.st_blocks * 512 >= 64 * MiB        # allocation is real
    m.remount()
    assert sha256_file(target) == want
    run(["dd", f"if={target}", "of=/dev/null", "bs=64k", "status=none"])


MMAP_FALLBACK = r"""
import mmap, os, random, sys
path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
page = mmap.PAGESIZE
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.ftruncate(fd, size)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
order = list(range(size // page))
random.Random(seed).shuffle(order)
for p in order:
    m[p * page:(p + 1) * page] = (p.to_bytes(8, "little") + seed.to_bytes(8, "little")) * (page // 16)
m.flush()
m.close()
os.close(fd)
"""


def _expected_page(p: int, seed: int, page: int) -> bytes:
    return (p.to_bytes(8, "little") + seed.to_bytes(8, "little")) * (page // 16)


def test_mmap_shared_shuffled_64mib(simfs_mount, tmp_path):
    """ftruncate 64 MiB, MAP_SHARED, write every page in a shuffled order, msync, unmap;
    the contents verify after umount + mount."""
    m = simfs_mount
    size, seed = 64 * MiB, 7
    target = m.mnt / "mapped.bin"
    tool = REPO / "tests" / "tools" / "mmap_writer.py"
    if tool.exists():
        run([sys.executable, tool, target, size, "--order", "shuffled", "--seed", seed])
        m.remount()
        run([sys.executable, tool, target, size, "--order", "shuffled", "--seed", seed, "--verify"])
        assert target.stat().st_size == size
    else:
        script = tmp_path / "mmap_writer.py"
        script.write_text(MMAP_FALLBACK)
        run([sys.executable, script, target, size, seed])
        m.remount()
        import mmap as _mmap
        page = _mmap.PAGESIZE
        with open(target, "rb") as f:
            for p in range(size // page):
                assert f.read(page) == _expected_page(p, seed, page), f"page {p} differs"
    assert os.stat(target).st_blocks * 512 >= size
