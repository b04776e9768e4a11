"""Data-less images (-o dataless): the same work gives the same simulated time, counters and
metadata as a normal mount, on an e2fsck-clean image whose file data reads as zeros and is
not stored (the image file stays sparse)."""

import os
import re
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from simfs.ondisk.superblock import Superblock
from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from pathlib import Path

MIB = 1 << 20
pytestmark = needs_e2fsprogs


def _image(path, size=96 * MIB, block_size=4096):
    mkfs(path, size, block_size=block_size, uuid=bytes(range(16)), hash_seed=bytes(16),
         now=1_000_000_000, uid=0, gid=0)
    return path


def _fill(n: int, seed: int) -> bytes:
    """Non-zero file contents, different per file."""
    return bytes((seed + i) % 251 + 1 for i in range(251)) * (n // 251) + b"\x07" * (n % 251)


def _workload(vol) -> dict:
    """A mixed tree: a few hundred files (some large, with indirect blocks), directories,
    fast and slow symlinks, xattrs (in-inode and block), hard links, unlink, truncate,
    partial overwrites, fsync, cold re-reads. Returns {path: contents written}."""
    root = vol.root_ino
    written = {}
    dirs = [root]
    for d in range(6):
        dirs.append(vol.mkdir(dirs[d // 2], b"d%d" % d, 0o755, 0, 0).st_ino)
    files = []
    for i in range(300):
        parent = dirs[i % len(dirs)]
        size = (i * 7919) % 20000 if i % 50 else 3 * MIB + i * 1000     # a few with indirect blocks
        ino = vol.create(parent, b"f%03d" % i, 0o644, 0, 0).st_ino
        vol.hold(ino)
        data = _fill(size, i)
        for off in range(0, size, 65536):
            vol.write(ino, off, data[off:off + 65536])
        vol.drop(ino)
        files.append((parent, b"f%03d" % i, ino, data))
        if i % 40 == 0:
            vol.setxattr(ino, b"user.small", b"v%d" % i)
        if i % 60 == 1:
            vol.setxattr(ino, b"user.big", bytes([i % 256]) * 700)        # an xattr block
    vol.symlink(root, b"fast", b"d0/f000", 0, 0)
    vol.symlink(dirs[1], b"slow", b"../" * 40 + b"f001", 0, 0)           # a symlink block
    vol.link(files[3][2], root, b"hard")
    for parent, name, ino, data in files[::7]:
        vol.unlink(parent, name)
    for parent, name, ino, data in files[2::9]:
        if vol.space.inode_used[ino - 1] and vol.inodes.get(ino).links:
            vol.setattr(ino, size=len(data) // 3 + 5)                       # a partial last block
    vol.sync()
    vol.drop_caches()
    for parent, name, ino, data in files[5::11]:                          # cold reads, partial rewrite
        if vol.space.inode_used[ino - 1] and vol.inodes.get(ino).links and len(data) > 100:
            vol.hold(ino)
            vol.read(ino, 0, len(data))
            vol.write(ino, 50, b"x" * 30)
            vol.fsync(ino)
            vol.drop(ino)
    for parent, name, ino, data in files:
        try:
            vol.lookup(parent, name)
        except Exception:
            continue
        written[(parent, name)] = ino
    return written


def _run(img, **opts) -> tuple[float, dict, dict]:
    with Volume.open(img, VolumeOptions(cache=MIB, **opts)) as vol:
        files = _workload(vol)
        vol.sync()
        snap = vol.stats_snapshot()
        now = vol.clock.now
    return now, snap, files


def _debugfs(img, *cmds) -> str:
    r = subprocess.run(["debugfs", "-R", " ; ".join(cmds), str(img)] if len(cmds) == 1 else
                       ["debugfs", "-f", "-", str(img)], input="\n".join(cmds), capture_output=True,
                       text=True, check=True)
    return r.stdout


_TIMES = re.compile(r"^\s*(ctime|atime|mtime|crtime|dtime):.*$\n?", re.M)


def _metadata(img, paths) -> str:
    """debugfs's view of the tree, without time stamps: `ls -l` (names, inodes, modes,
    sizes) of every directory and `stat` (block maps, links, xattrs) of every path."""
    out = []
    for line in _debugfs(img, *[f"ls -l {p}" for p in ("/", *paths["dirs"])]).splitlines():
        f = line.split()
        out.append(" ".join(f[:6] + f[-1:]) if len(f) > 6 and f[0].isdigit() else line)   # no date
    out.append(_TIMES.sub("", _debugfs(img, *[f"stat {p}" for p in paths["all"]])))
    return "\n".join(out)


def _paths(img) -> dict:
    dirs = ["/d0", "/d1", "/d0/d2", "/d0/d3", "/d1/d4", "/d1/d5"]
    names = []
    for d in ["", *dirs]:
        for line in _debugfs(img, f"ls {d or '/'}").split():
            if not line.startswith("(") and line not in (".", "..") and not line.isdigit():
                names.append(f"{d}/{line}")
    return {"dirs": dirs, "all": sorted(names)}


def _groups(img) -> str:
    out = subprocess.run(["dumpe2fs", str(img)], capture_output=True, text=True, check=True).stdout
    return out[out.index("Group 0:"):]


@pytest.mark.parametrize("block_size", [4096, 1024])
def test_dataless_same_time_counters_and_metadata(tmp_path, block_size):
    normal = _image(tmp_path / "normal.img", block_size=block_size)
    dl = _image(tmp_path / "dl.img", block_size=block_size)
    t1, s1, files1 = _run(normal)
    t2, s2, files2 = _run(dl, dataless=True)
    assert t1 == t2 and t1 > 0
    assert s1 == s2                                  # every counter, phase and disk time
    assert files1 == files2
    assert_fsck_clean(normal)
    assert_fsck_clean(dl)
    paths = _paths(normal)
    assert len(paths["all"]) > 200 and paths == _paths(dl)
    meta = _metadata(normal, paths)
    assert "(IND)" in meta and "Extended attributes" in meta and "Fast link dest" in meta
    assert meta == _metadata(dl, paths)
    assert _groups(normal) == _groups(dl)
    from simfs.pictures.blockmap import block_owners             # `simfs layout` reads metadata only
    a, b = block_owners(normal), block_owners(dl)
    assert (a.owner == b.owner).all() and (a.ino == b.ino).all() and a.runs == b.runs
    used_normal, used_dl = os.stat(normal).st_blocks, os.stat(dl).st_blocks
    assert used_dl * 8 < used_normal, (used_dl, used_normal)
    assert os.stat(dl).st_size == os.stat(normal).st_size
    # the image remembers; a normal mount warns
    assert not Superblock(Path(normal).read_bytes()[1024:2048]).dataless
    assert Superblock(Path(dl).read_bytes()[1024:2048]).dataless
    assert "Mount options:            simfs_dataless" in subprocess.run(
        ["dumpe2fs", "-h", str(dl)], capture_output=True, text=True).stdout
    with Volume.open(dl, VolumeOptions(read_only=True)) as vol:
        assert any("data-less" in w for w in vol.warnings)


def test_dataless_data_reads_as_zeros(tmp_path):
    img = _image(tmp_path / "img")
    with Volume.open(img, VolumeOptions(cache=MIB, dataless=True)) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.hold(ino)
        vol.write(ino, 0, b"\xaa" * 300000)
        assert vol.read(ino, 0, 10) == b"\xaa" * 10         # still in the cache: what was written
        vol.drop_caches()
        assert vol.read(ino, 0, 300000) == bytes(300000)    # evicted: zeros, explicitly
        vol.write(ino, 10, b"\xbb" * 5)                     # a partial write reads the zeros back
        assert vol.read(ino, 0, 20) == bytes(10) + b"\xbb" * 5 + bytes(5)
        vol.drop(ino)
        vol.symlink(vol.root_ino, b"s", b"t" * 200, 0, 0)    # metadata: real
        vol.setxattr(ino, b"user.x", b"y" * 700)
    assert_fsck_clean(img)
    raw = subprocess.run(["debugfs", "-R", "cat /f", str(img)], capture_output=True).stdout   # the image
    assert raw == bytes(300000)
    with Volume.open(img, VolumeOptions(dataless=True)) as vol:
        ino = vol.lookup(vol.root_ino, b"f").st_ino
        assert vol.read(ino, 0, 300000) == bytes(300000)
        assert vol.readlink(vol.lookup(vol.root_ino, b"s").st_ino) == b"t" * 200
        assert vol.getxattr(ino, b"user.x") == b"y" * 700


def test_dataless_metadata_block_reused_as_data_reads_zeros(tmp_path):
    """A freed directory block that becomes file data: not written, but punched, so the
    image reads zeros there too (not the old directory entries)."""
    img = _image(tmp_path / "img")
    with Volume.open(img, VolumeOptions(dataless=True, alloc="first-free")) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        for i in range(200):                               # several directory blocks
            vol.create(d, b"n%0100d" % i, 0o644, 0, 0)
        vol.sync()
        dir_blocks = sorted(p for _, p in vol.filemap.blocks(vol.inodes.get(d)))
        for i in range(200):
            vol.unlink(d, b"n%0100d" % i)
        vol.rmdir(vol.root_ino, b"d")
        vol.sync()
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.write(ino, 0, b"\xcc" * (64 << 10))
        data_blocks = {p for _, p in vol.filemap.blocks(vol.inodes.get(ino))}
    assert set(dir_blocks) & data_blocks                     # the test reuses a block
    assert_fsck_clean(img)
    with open(img, "rb") as f:
        for b in dir_blocks:
            if b in data_blocks:
                assert os.pread(f.fileno(), 4096, b * 4096) == bytes(4096)


ops = st.lists(st.tuples(st.sampled_from(["create", "write", "truncate", "unlink", "mkdir", "xattr",
                                          "drop", "read"]),
                         st.integers(0, 7), st.integers(0, 300000)), min_size=1, max_size=25)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_dataless_property_random_ops(tmp_path_factory, seq):
    """Random sequences: dataless and normal give equal statistics and equal metadata."""
    tmp = tmp_path_factory.mktemp("p")
    out = []
    for opts in ({}, {"dataless": True}):
        img = _image(tmp / ("dl.img" if opts else "n.img"), size=32 * MIB)
        with Volume.open(img, VolumeOptions(cache=512 << 10, **opts)) as vol:
            for op, k, n in seq:
                name = b"f%d" % k
                try:
                    attr = vol.lookup(vol.root_ino, name)
                except Exception:
                    attr = None
                if op in ("create", "mkdir") and attr is None:
                    (vol.create if op == "create" else vol.mkdir)(vol.root_ino, name, 0o644, 0, 0)
                elif attr is None or attr.st_mode & 0o170000 == 0o040000:
                    continue
                elif op == "write":
                    vol.write(attr.st_ino, n, b"\x5a" * (n % 70000 + 1))
                elif op == "truncate":
                    vol.setattr(attr.st_ino, size=n)
                elif op == "unlink":
                    vol.unlink(vol.root_ino, name)
                elif op == "xattr":
                    vol.setxattr(attr.st_ino, b"user.a", b"q" * (n % 3000))
                elif op == "read":
                    vol.read(attr.st_ino, n // 2, n)
                elif op == "drop":
                    vol.drop_caches()
            vol.sync()
            maps = {}
            for name, ino, _ in vol.readdir(vol.root_ino):
                inode = vol.inodes.get(ino)
                maps[name] = (inode.size, inode.blocks, sorted(vol.filemap.blocks(inode), key=str))
            out.append((vol.clock.now, vol.stats_snapshot(), maps))
        assert_fsck_clean(img)
    assert out[0] == out[1]


def test_dataless_mount_reads_zeros_over_stored_data(tmp_path):
    """Zeros by rule, not because the image happens to hold them: data a normal mount
    stored reads as zeros through a data-less mount (and the image keeps it)."""
    img = _image(tmp_path / "img")
    with Volume.open(img) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.write(ino, 0, b"\xaa" * 100000)
    with Volume.open(img, VolumeOptions(dataless=True)) as vol:
        assert vol.read(ino, 0, 100000) == bytes(100000)
        assert vol.getattr(ino).st_size == 100000
    with Volume.open(img) as vol:
        assert vol.read(ino, 0, 100000) == b"\xaa" * 100000
        assert not vol.warnings          # the data-less mount dropped nothing: nothing to warn of


def test_only_dropped_data_marks_the_image_data_less(tmp_path):
    """The mark is what makes a later mount warn that file data reads as zeros: a data-less
    run that writes no file data (a find, a metadata-only change) leaves the image unmarked;
    the commit before the first dropped data block marks it."""
    img = _image(tmp_path / "img")
    with Volume.open(img, VolumeOptions()) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o100644, 0, 0).st_ino
        vol.write(ino, 0, b"kept" * 2048)
    with Volume.open(img, VolumeOptions(dataless=True)) as vol:
        vol.mkdir(vol.root_ino, b"d", 0o40755, 0, 0)
        assert vol.read(ino, 0, 4) == bytes(4)           # reads as zeros, drops nothing
        vol.commit()
    assert not Superblock(Path(img).read_bytes()[1024:2048]).dataless
    with Volume.open(img, VolumeOptions()) as vol:
        assert not vol.warnings and vol.read(ino, 0, 4) == b"kept"
    with Volume.open(img, VolumeOptions(dataless=True)) as vol:
        g = vol.create(vol.root_ino, b"g", 0o100644, 0, 0).st_ino
        vol.write(g, 0, b"dropped" * 1000)
        vol.commit()
        assert Superblock(Path(img).read_bytes()[1024:2048]).dataless
    assert_fsck_clean(img)
