"""The reading verbs in-process (simfs.inprocess.verbs: tar-read, du, grep, dd, cat, mmap-fill) and
the kernel model's read-ahead (simfs.inprocess.readahead.ReadAhead), without FUSE.

The READ sequences asserted here are the ones mounted runs showed (Linux 6.18, simfs's FUSE
layer): a 1 MiB dd keeps 32-page windows one window ahead; tar's 1 KiB-then-record reads of a
35-page file are READs of 4, 8, 16 and 7 pages; grep's 96 KiB reads of the same file 32 and 3;
cat (POSIX_FADV_SEQUENTIAL) 64-page windows. The verbs against the real tools on a mount:
experiments/verbcheck.py and tests/mount.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict

import pytest

from experiments.workload import generate_tree
from simfs.inprocess import verbs
from simfs.inprocess.kernel import PAGE, Kernel
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import copy_tree_into

UUID = "00000000-0000-0000-0000-00000000abcd"
BIG = 3 << 20                   # a fresh file for dd
MID = 35 * PAGE - 1 * 1000      # 35 pages, the last partial (as the mounted tar/grep file)


class Reads:
    """A Volume that notes every read (inode, offset, size) and every call's name."""

    def __init__(self, vol):
        self._vol = vol
        self.reads: list[tuple[int, int, int]] = []
        self.calls: dict[str, int] = defaultdict(int)

    def __getattr__(self, name):
        attr = getattr(self._vol, name)
        if callable(attr) and not name.startswith("peek"):
            def counted(*a, **kw):
                self.calls[name] += 1
                return attr(*a, **kw)
            return counted
        return attr

    def read(self, ino, offset, size):
        self.calls["read"] += 1
        self.reads.append((ino, offset, size))
        return self._vol.read(ino, offset, size)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    d = tmp_path_factory.mktemp("verbs_read")
    src = d / "src"
    generate_tree(src / "tree", seed=7, files=120)
    (src / "tree" / "empty").write_bytes(b"")
    (src / "tree" / ("long" * 30)).write_bytes(b"x" * 5000)          # a @LongLink name
    os.link(src / "tree" / ("long" * 30), src / "tree" / "hardlink")
    os.symlink("empty", src / "tree" / "sym")
    img = d / "pristine.img"
    mkfs(img, 128 << 20, block_size=4096, uuid=UUID)
    vol = Volume.open(img, VolumeOptions(alloc="ext2", dirorder="hash", writeback="async"))
    copy_tree_into(vol, src)
    for name, size in ((b"big", BIG), (b"mid", MID)):
        ino = vol.create(vol.root_ino, name, 0o644, 0, 0).st_ino
        vol.hold(ino)
        data = os.urandom(size)
        for off in range(0, size, 1 << 20):
            vol.write(ino, off, data[off:off + (1 << 20)])
        vol.drop(ino)
    vol.close()
    return d, img, src


def _run(image, verb, where, name="run.img", dirorder="hash", **params):
    d, pristine, _ = image
    img = d / name
    shutil.copyfile(pristine, img)
    vol = Volume.open(img, VolumeOptions(alloc="ext2", dirorder=dirorder, writeback="async",
                                         disk="sas10k"))
    rv = Reads(vol)
    k = Kernel(rv)
    out = verbs.VERBS[verb](k, verbs.split(where), **params)
    vol.close()
    return out, rv, vol, k


def _pages(rv):
    return [(off // PAGE, size // PAGE) for _, off, size in rv.reads]


def test_registry():
    assert {"tar-read", "du", "grep", "dd", "mmap-fill", "cat", "find"} <= set(verbs.VERBS)


def test_dd_windows_stay_one_ahead(image):
    out, rv, _, _ = _run(image, "dd", "big")
    assert out == {"reads": 4, "bytes": BIG}
    assert all(size == 32 for _, size in _pages(rv))
    assert [p for p, _ in _pages(rv)] == list(range(0, BIG // PAGE, 32))
    # the first 1 MiB read (256 pages) already read the window after it: 9 READs
    d, pristine, _ = image
    shutil.copyfile(pristine, d / "dd1.img")
    vol = Volume.open(d / "dd1.img", VolumeOptions(alloc="ext2", dirorder="hash"))
    rv = Reads(vol)
    k = Kernel(rv)
    f = k.open(k.root, [b"big"])
    assert k.read(f, 0, 1 << 20) == 1 << 20
    assert _pages(rv) == [(32 * i, 32) for i in range(9)]
    k.read(f, 1 << 20, 1 << 20)
    assert _pages(rv)[9:] == [(32 * i, 32) for i in range(9, 17)]
    vol.close()


def _reads_of(image, name, sizes, fadvise=False):
    d, pristine, _ = image
    shutil.copyfile(pristine, d / "ra.img")
    vol = Volume.open(d / "ra.img", VolumeOptions(alloc="ext2", dirorder="hash"))
    rv = Reads(vol)
    k = Kernel(rv)
    f = k.open(k.root, [name])
    if fadvise:
        k.fadvise_sequential(f)
    pos = 0
    for s in sizes:
        pos += k.read(f, pos, s)
    vol.close()
    return _pages(rv)


def test_readahead_ramp_small_first_read(image):
    # tar: 1 KiB to fill its record, then 10 KiB records: windows 4, 8, 16, then the rest
    sizes = [1024] + [10240] * 15
    assert _reads_of(image, b"mid", sizes) == [(0, 4), (4, 8), (12, 16), (28, 7)]


def test_readahead_grep_and_cat(image):
    assert _reads_of(image, b"mid", [98304] * 3) == [(0, 32), (32, 3)]
    assert _reads_of(image, b"big", [131072] * 8, fadvise=True) == [(64 * i, 64) for i in range(5)]


def test_random_read_after_gap_reads_just_the_request(image):
    # a small read far from the last one, with nothing cached before it: no window
    pages = _reads_of(image, b"big", [4096])
    assert pages == [(0, 4)]
    d, pristine, _ = image
    shutil.copyfile(pristine, d / "rnd.img")
    vol = Volume.open(d / "rnd.img", VolumeOptions(alloc="ext2", dirorder="hash"))
    rv = Reads(vol)
    k = Kernel(rv)
    f = k.open(k.root, [b"big"])
    k.read(f, 0, 4096)
    k.read(f, 400 * PAGE, 2 * PAGE)
    assert _pages(rv) == [(0, 4), (400, 2)]
    vol.close()


def _image_files(image) -> dict[int, int]:
    """inode -> size of every regular file under /tree in the image (hard links once)."""
    d, pristine, _ = image
    shutil.copyfile(pristine, d / "walk.img")
    vol = Volume.open(d / "walk.img", VolumeOptions())
    sizes = {}

    def walk(ino):
        st = vol.opendir_state()
        for name, eino, _ in vol.readdir(ino, 0, state=st):
            if name in (b".", b".."):
                continue
            a = vol.peek_attr(eino)
            if a.st_mode & 0o170000 == 0o040000:
                walk(eino)
            elif a.st_mode & 0o170000 == 0o100000:
                sizes[eino] = a.st_size
        vol.release_state(st)

    walk(vol.lookup(vol.root_ino, b"tree").st_ino)
    vol.close()
    return sizes


def test_tar_reads_every_byte_once(image):
    out, rv, _, _ = _run(image, "tar-read", "tree")
    per_ino: dict[int, list] = defaultdict(list)
    for ino, off, size in rv.reads:
        per_ino[ino].append((off, size))
    for ino, chunks in per_ino.items():
        chunks.sort()
        pos = 0
        for off, size in chunks:
            assert off == pos, "a READ overlaps or skips"
            pos += size
    sizes = _image_files(image)
    total = sum(sizes.values())
    assert out["bytes"] == total
    read = sum(size for _, _, size in rv.reads)
    assert total <= read < total + PAGE * len(sizes)
    assert set(per_ino) <= set(sizes)
    assert out["links"] >= 1 and out["other"] >= 1


def test_du_and_grep_visit_everything(image):
    _, _, src = image
    ndirs = sum(1 for _ in os.walk(src / "tree"))
    out, rv, _, _ = _run(image, "du", "tree")
    assert out["dirs"] == ndirs and out["statfs"]
    assert rv.calls.get("read", 0) == 0
    out, rv, _, _ = _run(image, "grep", "tree")
    assert out["dirs"] == ndirs
    files = sum(len([n for n in fs if not os.path.islink(os.path.join(r, n))])
                for r, _, fs in os.walk(src / "tree"))
    assert out["files"] == files
    # each file's reads end with one that returns nothing: one more read than the 96 KiB pieces
    assert out["reads"] >= files


def test_verbs_are_deterministic(image):
    for verb, where, params in (("tar-read", "tree", {}), ("du", "tree", {}),
                                ("grep", "tree", {}), ("dd", "big", {}), ("cat", "mid", {}),
                                ("mmap-fill", "newfile", {"size": 1 << 20})):
        snaps = []
        for i in range(2):
            _, _, vol, _ = _run(image, verb, where, name=f"det{i}.img", **params)
            snaps.append(vol.stats_snapshot())
        assert snaps[0] == snaps[1], verb
        assert snaps[0]["now"] > 0


@pytest.mark.parametrize("dirorder", ["linear", "inode"])
def test_tree_verbs_other_orders(image, dirorder):
    out, _, _, _ = _run(image, "tar-read", "tree", dirorder=dirorder)
    base, _, _, _ = _run(image, "tar-read", "tree")
    assert out["bytes"] == base["bytes"] and out["dirs"] == base["dirs"]


def test_mmap_fill_pwrite(image):
    out, rv, vol, _ = _run(image, "mmap-fill", "newfile", size=(1 << 20) + 100)
    assert out == {"created": True, "pages": 257, "bytes": (1 << 20) + 100}
    assert rv.calls["write"] == 257 and rv.calls["fsync"] == 1
    assert rv.calls["setattr"] == 1
    assert rv.calls["getxattr"] == 258          # ftruncate's killpriv check, then one per pwrite
