"""Hash-tree (dir_index) directories kept by the volume, with e2fsck -fn (its pass 2 checks
every htree: limits, counts, hash order, that each name sits in the leaf its hash picks),
debugfs (`htree_dump`, `ls`) and the kernel's own ext4 driver (read-only loop mount) as oracles.
"""

import csv
import errno
import os
import re
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from simfs.errors import FSError
from simfs.fs.htree import wanted as htree_wanted
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.constants import INDEX_FL
from simfs.ondisk.mkfs import mkfs
from simfs.ondisk.superblock import Superblock
from tests.helpers import assert_fsck_clean, fill_volume, kernel_mount, needs_e2fsprogs

pytestmark = needs_e2fsprogs


def mke2fs(img, bs: int, size: str = "32M", inodes: int = 0, seed: str = "") -> None:
    """An ext2 image as mke2fs makes it by default (dir_index among its features); `seed` a
    UUID for both the file system's UUID and its hash seed (else random)."""
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext2", "-O", "dir_index", "-b", str(bs),
                    *(["-N", str(inodes)] if inodes else []), *(["-U", seed, "-E", f"hash_seed={seed}"] if seed else []),
                    str(img), size], check=True, capture_output=True)


def opts(**kw) -> VolumeOptions:
    return VolumeOptions(htree=True, disk="ideal", **kw)


def make_dir(img, names, bs: int = 1024, size: str = "32M", inodes: int = 0) -> dict[bytes, int]:
    """A new image whose directory /d holds names (created in that order): name -> inode."""
    mke2fs(img, bs, size, inodes)
    with Volume.open(img, opts()) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        return {n: vol.create(d, n, 0o644, 0, 0).st_ino for n in names}


def debugfs(img, cmd: str) -> bytes:
    return subprocess.run(["debugfs", "-R", cmd, str(img)], capture_output=True, check=True).stdout


def debugfs_names(img, path: str) -> set[bytes]:
    """The live names debugfs lists (`ls -p`: /ino/mode/uid/gid/name/size/). debugfs also lists
    a block's empty first record (inode 0: ext4 cannot merge the first entry of a block into a
    previous one when it is deleted, so it clears its inode): not a name."""
    return {f[5] for f in (line.split(b"/") for line in debugfs(img, f"ls -p {path}").splitlines()
                           if line.count(b"/") >= 7) if f[1] != b"0"}


def levels(img, path: str) -> int:
    for line in debugfs(img, f"htree_dump {path}").decode("latin-1").splitlines():
        if "Indirect levels:" in line:
            return int(line.split(":")[1])
    raise AssertionError(f"debugfs htree_dump {path}: not an htree")


_CHARS = b"abcdefghijklmnopqrstuvwxyz0123456789_.-~\xc3\xa9\xff"
NAMES = st.one_of(st.lists(st.sampled_from(_CHARS), min_size=1, max_size=24),
                  st.lists(st.sampled_from(_CHARS), min_size=200, max_size=255)).map(bytes).filter(
                      lambda n: n not in (b".", b".."))
OPS = st.lists(st.one_of(st.tuples(st.just("add"), NAMES), st.tuples(st.just("rm"), st.integers(0, 1 << 16))),
               min_size=1, max_size=400)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops=OPS, dirorder=st.sampled_from(["hash", "linear"]))
def test_inserts_and_deletes_keep_a_valid_htree(tmp_path, ops, dirorder):
    """Any sequence of creates and unlinks in one directory (1 KiB blocks: splits after a few
    dozen names) leaves a directory e2fsck -fn accepts, debugfs lists exactly the live names,
    and lookups and readdir find them; past one block it is an htree."""
    img = tmp_path / "img"
    mke2fs(img, 1024)
    model: dict[bytes, int] = {}
    with Volume.open(img, opts(dirorder=dirorder)) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        grew = False
        for op, arg in ops:
            if op == "add":
                if arg in model:
                    with pytest.raises(FSError) as e:
                        vol.create(d, arg, 0o644, 0, 0)
                    assert e.value.errno == errno.EEXIST
                    continue
                model[arg] = vol.create(d, arg, 0o644, 0, 0).st_ino
            elif model:
                name = sorted(model)[arg % len(model)]
                vol.unlink(d, name)
                del model[name]
            grew = grew or vol.inodes.get(d).size > 1024
        for name, ino in model.items():
            assert vol.lookup(d, name).st_ino == ino
        for op, arg in ops:
            if op == "add" and arg not in model:
                with pytest.raises(FSError) as e:
                    vol.lookup(d, arg)
                assert e.value.errno == errno.ENOENT
        listed = [name for name, _, _ in vol.readdir(d)]
        dflags = vol.inodes.get(d).flags
    assert sorted(listed) == sorted([b".", b".."] + list(model))
    assert bool(dflags & INDEX_FL) == grew
    assert_fsck_clean(img)
    assert debugfs_names(img, "/d") == set(model) | {b".", b".."}


def test_deleting_every_name_leaves_the_leaves(tmp_path):
    """ext4 merges no leaves: after every name goes the directory keeps its size and its index
    (still valid), takes names again, and is empty for rmdir."""
    img = tmp_path / "img"
    names = [b"entry-%05d" % i for i in range(400)]
    make_dir(img, names)
    with Volume.open(img, opts()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        size = vol.inodes.get(d).size
        for n in names:
            vol.unlink(d, n)
        assert vol.inodes.get(d).size == size > 1024
        assert vol.inodes.get(d).flags & INDEX_FL
    assert_fsck_clean(img)
    with Volume.open(img, opts()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        vol.create(d, b"again", 0o644, 0, 0)
        assert vol.inodes.get(d).size == size
        vol.unlink(d, b"again")
        vol.rmdir(vol.root_ino, b"d")
    assert_fsck_clean(img)


def test_a_full_disk_leaves_the_tree_whole(tmp_path):
    """A split that finds no free block is ENOSPC with the directory unchanged; the names
    before it stay found, and the image stays clean. Moving the htree directory rewrites its
    ".." in the root block."""
    img = tmp_path / "img"
    names = [b"entry-%05d" % i for i in range(300)]
    make_dir(img, names, size="8M", inodes=4096)
    with Volume.open(img, opts()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        p = vol.mkdir(vol.root_ino, b"p", 0o755, 0, 0).st_ino
        fill_volume(vol)
        with pytest.raises(FSError) as e:
            for i in range(300, 4000):
                names.append(b"entry-%05d" % i)
                vol.create(d, names[-1], 0o644, 0, 0)
        assert e.value.errno == errno.ENOSPC
        failed = names.pop()
        with pytest.raises(FSError):
            vol.lookup(d, failed)
        assert all(vol.lookup(d, n) for n in names)
        vol.rename(vol.root_ino, b"d", p, b"d")
        assert vol.lookup(d, b"..").st_ino == p
    assert_fsck_clean(img)
    assert debugfs_names(img, "/p/d") == set(names) | {b".", b".."}


@pytest.mark.serial
def test_two_levels_read_by_the_kernel(tmp_path):
    """Past the root's limit (124 leaves of 1 KiB) the tree grows a level: e2fsck accepts it,
    debugfs shows indirect_levels 1, and the kernel's ext4 lists every name and looks them up."""
    img = tmp_path / "img"
    names = [b"a-rather-long-name-%06d.c" % i for i in range(7000)]
    make_dir(img, names, size="64M", inodes=16384)
    with Volume.open(img, opts()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        for n in names[::3]:
            vol.unlink(d, n)
        vol.rename(d, names[1], d, b"renamed")
        sub = vol.mkdir(d, b"sub", 0o755, 0, 0).st_ino
        vol.rename(d, b"sub", vol.root_ino, b"moved")        # ".." of a small directory
        assert vol.lookup(sub, b"..").st_ino == vol.root_ino
    live = set(names) - set(names[::3]) - {names[1]} | {b"renamed"}
    assert_fsck_clean(img)
    assert levels(img, "/d") == 1
    with kernel_mount(img, tmp_path / "k") as mnt:
        assert set(os.listdir(os.fsencode(mnt / "d"))) == live
        for n in sorted(live)[::50]:
            os.stat(os.path.join(os.fsencode(mnt / "d"), n))
        with pytest.raises(FileNotFoundError):
            os.stat(mnt / "d" / "a-rather-long-name-000000.c")


def test_ext2_stays_linear(tmp_path):
    """Without the option, or on an image without dir_index (simfs's own mkfs), a directory
    stays linear as ext2 keeps it, and a write clears an index the image had."""
    for make, options, htree in ((lambda p: mke2fs(p, 1024), VolumeOptions(disk="ideal"), True),
                                 (lambda p: mkfs(p, 32 << 20, block_size=1024), opts(), False)):
        img = tmp_path / "img"
        make(img)
        with Volume.open(img, options) as vol:
            d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
            for i in range(200):
                vol.create(d, b"name-%04d" % i, 0o644, 0, 0)
            assert vol.inodes.get(d).size > 1024 and not vol.inodes.get(d).flags & INDEX_FL
        assert_fsck_clean(img)
    img = tmp_path / "img"                              # an index made with htree, written without
    mke2fs(img, 1024)
    with Volume.open(img, opts()) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        for i in range(200):
            vol.create(d, b"name-%04d" % i, 0o644, 0, 0)
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        vol.create(d, b"linear", 0o644, 0, 0)
        assert not vol.inodes.get(d).flags & INDEX_FL
    assert_fsck_clean(img)


def test_readdir_reads_the_leaves_in_hash_order(tmp_path):
    """A cold readdir in hash order reads the root, then the leaves in the index's order
    (debugfs htree_dump's, the order ext4_htree_fill_tree reads them), not in block order."""
    img, trace = tmp_path / "img", tmp_path / "trace.csv"
    make_dir(img, [b"entry-%05d" % i for i in range(3000)])
    dump = debugfs(img, "htree_dump /d").decode()
    leaves = [int(p) for p in re.findall(r"^Reading directory block \d+, phys (\d+)$", dump, re.M)]
    with Volume.open(img, opts(dirorder="hash", trace=str(trace))) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        vol.mark("readdir")
        assert len(vol.readdir(d)) == 3002
        root = vol.filemap.bmap(vol.inodes.get(d), 0)
    with open(trace) as f:
        read = [int(r["lba"]) // 2 for r in csv.DictReader(f)
                if r["phase"] == "readdir" and r["op"] == "R" and r["cause"] == "dir"]
    assert read == [root] + leaves
    assert leaves != sorted(leaves)


def test_when_a_volume_keeps_htrees(tmp_path):
    """Never without dir_index (a warning if asked); by default only on ext4's layout."""
    sb = Superblock()
    for compat, incompat, asked, want in ((0, 0, True, False), (0, 0x40, None, False),
                                          (0x20, 0, None, False), (0x20, 0, True, True),
                                          (0x20, 0x40, None, True), (0x20, 0x200, None, True),
                                          (0x20, 0x40, False, False)):
        sb.feature_compat, sb.feature_incompat = compat, incompat
        assert htree_wanted(sb, asked) is want
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img, opts()) as vol:
        assert vol.dirs.htree is None and any("dir_index" in w for w in vol.warnings)


def dir_reads(vol) -> int:
    return vol.stats.phase.counters["disk_requests_dir"]


@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.long
def test_100k_entries(tmp_path):
    """100,000 names in one directory (4 KiB blocks): an htree e2fsck -fn accepts and the
    kernel's ext4 looks names up in (every 1000th, and a missing one); a cold lookup in it
    reads at most 3 directory blocks (root, node, leaf) where a linear one reads hundreds."""
    img = tmp_path / "img"
    names = [b"file_%06d.c" % i for i in range(100_000)]
    make_dir(img, names, 4096, "512M", inodes=120_000)
    assert_fsck_clean(img)
    assert levels(img, "/d") == 1
    reads = {}
    for htree in (True, False):                             # the index, and a linear scan of it
        with Volume.open(img, VolumeOptions(htree=htree, disk="ideal", read_only=True)) as vol:
            d = vol.lookup(vol.root_ino, b"d").st_ino
            for n in (names[0], names[54_321], names[-1]):
                vol.drop_caches()                           # a cold cache
                before = dir_reads(vol)
                vol.lookup(d, n)
                reads[htree, n] = dir_reads(vol) - before
    print("directory blocks read by a cold lookup:", reads)
    assert all(1 <= r <= 3 for (htree, _), r in reads.items() if htree)
    assert all(r > 100 for (htree, _), r in reads.items() if not htree)
    with kernel_mount(img, tmp_path / "k") as mnt:
        big = os.fsencode(mnt / "d")
        for n in names[::1000]:
            os.stat(os.path.join(big, n))
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(big, b"file_100000.c"))
