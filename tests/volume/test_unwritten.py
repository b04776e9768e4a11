"""Unwritten extents (fallocate) in images the kernel's ext4 wrote, with the kernel as oracle.

The kernel's ext4 (read-write loop mount) fallocates files; the blocks under their unwritten
extents, and the free blocks right after them, are then filled with stale bytes on the image,
as blocks a deleted file left would be. The kernel (read-only loop mount) reads those extents
as zeros and maps nothing past an extent's length; simfs must read the same bytes. Writes
into an unwritten extent convert the written blocks (ext4_ext_convert_to_initialized), with
both kinds of allocator; the kernel then reads the file back byte for byte, debugfs shows the
split extents, and `e2fsck -fn` stays clean, also after truncate and unlink.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.fs.volume import Volume, VolumeOptions
from tests.conftest import SimfsMount
from tests.helpers import assert_fsck_clean, can_loop_mount, kernel_mount, needs_e2fsprogs

BS = 4096
NO_JOURNAL = "^has_journal,^metadata_csum,^64bit"
STALE = b"\xab" * BS
pytestmark = [needs_e2fsprogs, pytest.mark.serial,
              pytest.mark.skipif(shutil.which("fallocate") is None, reason="util-linux fallocate missing")]


def extents(img, path: str) -> list[tuple[int, int, int, bool]]:
    """debugfs `ex`: the file's leaf extents as (first logical, length, first physical, unwritten)."""
    out = subprocess.run(["debugfs", "-R", f"ex {path}", str(img)], capture_output=True, text=True,
                         check=True).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*\d+/\s*\d+\s+\d+/\s*\d+\s+(\d+) -\s+\d+\s+(\d+) -\s+\d+\s+(\d+)\s*(Uninit)?", line)
        if m:
            rows.append((int(m[1]), int(m[3]), int(m[2]), bool(m[4])))
    return rows


def free_after(img, blk: int, n: int) -> int:
    """How many of the n blocks from blk are free (debugfs testb), counted up to the first used one."""
    out = subprocess.run(["debugfs", "-R", f"testb {blk} {n}", str(img)], capture_output=True, text=True,
                         check=True).stdout
    k = 0
    for line in out.splitlines():
        if "not in use" not in line:
            break
        k += 1
    return k


def stale(img, blk: int, n: int) -> None:
    """Old contents in blocks blk..blk+n-1 of the image (what a deleted file left there)."""
    with open(img, "r+b") as f:
        f.seek(blk * BS)
        f.write(STALE * n)


@pytest.fixture
def fallocated(tmp_path):
    """An image the kernel wrote: `f` is one 64 KiB unwritten extent then a hole up to 256 KiB;
    `a` is 8 KiB written then 56 KiB unwritten, physically contiguous (the kernel's write
    into a fallocated range split it); `g` is 64 KiB unwritten past its size of 0
    (fallocate -n); `h` is 64 KiB fallocated with blocks 5 and 15 written, four extents that
    fill the root; stale bytes under the unwritten extents and after f's."""
    if can_loop_mount():
        pytest.skip(can_loop_mount())
    img = tmp_path / "u.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", str(BS), "-O", NO_JOURNAL, str(img)], check=True)
    head = os.urandom(2 * BS)
    with kernel_mount(img, tmp_path / "rw", rw=True, fstype="ext4") as mnt:
        subprocess.run(["fallocate", "-l", "64K", str(mnt / "a")], check=True)
        with open(mnt / "a", "r+b") as f:
            f.write(head)
        (mnt / "g").touch()
        subprocess.run(["fallocate", "-n", "-l", "64K", str(mnt / "g")], check=True)
        subprocess.run(["fallocate", "-l", "64K", str(mnt / "h")], check=True)
        with open(mnt / "h", "r+b") as f:
            f.seek(5 * BS)
            f.write(b"5" * BS)
            f.seek(15 * BS)
            f.write(b"F" * BS)
        subprocess.run(["fallocate", "-l", "64K", str(mnt / "f")], check=True)
        os.truncate(mnt / "f", 256 << 10)
    f_ext = extents(img, "/f")
    assert f_ext == [(0, 16, f_ext[0][2], True)], f_ext
    a_ext = extents(img, "/a")
    assert [(s, n, u) for s, n, _, u in a_ext] == [(0, 2, False), (2, 14, True)], a_ext
    assert a_ext[1][2] == a_ext[0][2] + 2, a_ext           # contiguous: a write at 2 merges left
    p = f_ext[0][2]
    past = free_after(img, p + 16, 48)
    assert past > 0, "no free block after f's extent to fill with stale bytes"
    stale(img, p, 16 + past)
    stale(img, a_ext[1][2], 14)
    (_, n, q, unwritten), = extents(img, "/g")
    assert n == 16 and unwritten
    stale(img, q, 16)
    h = extents(img, "/h")
    assert [(s, n, u) for s, n, _, u in h] == [(0, 5, True), (5, 1, False), (6, 9, True), (15, 1, False)], h
    stale(img, h[0][2], 5)
    stale(img, h[2][2], 9)
    assert_fsck_clean(img)
    return img, head


def kernel_reads(img, tmp_path, *names) -> list[bytes]:
    with kernel_mount(img, tmp_path / "ro", fstype="ext4") as mnt:
        out = [(mnt / n).read_bytes() for n in names]
    (tmp_path / "ro").rmdir()
    return out


def ino_of(vol, name: bytes) -> int:
    return vol.lookup(vol.root_ino, name).st_ino


def test_unwritten_extents_read_as_zeros_as_the_kernel_reads_them(fallocated, tmp_path):
    img, head = fallocated
    f_k, a_k = kernel_reads(img, tmp_path, "f", "a")
    assert f_k == bytes(256 << 10) and a_k == head + bytes(14 * BS)      # the oracle itself
    with Volume.open(img, VolumeOptions(read_only=True)) as vol:
        f, a = ino_of(vol, b"f"), ino_of(vol, b"a")
        assert vol.read(f, 0, 1 << 20) == f_k
        assert vol.read(a, 0, 1 << 20) == a_k
        for lblk in range(16, 64):                      # past the extent's length: a hole
            assert vol.filemap.bmap(vol.inodes.get(f), lblk, unwritten=True) == 0
    assert_fsck_clean(img)


#: (file, offset, bytes): into the middle of f, at the start of a's unwritten part (the fast
#: path), near f's end, into what is left unwritten between; into g past its size, then before
WRITES = [("f", 5 * BS + 100, os.urandom(5000)), ("a", 2 * BS, b"x" * 10), ("f", 13 * BS, b"y" * 10),
          ("f", 9 * BS + 7, b"z" * 3), ("g", 3 * BS, b"q" * 10), ("g", 0, os.urandom(5000))]


@pytest.mark.parametrize("alloc,kernel_opts,leaves", [("mballoc", "nodelalloc", 0), ("cg", "nodelalloc", 0),
                                                      ("mballoc-delalloc", "", 1)])
def test_writes_into_unwritten_extents_convert_them_as_the_kernel_does(fallocated, tmp_path, alloc,
                                                                       kernel_opts, leaves):
    """The same writes by simfs and by the kernel (a copy of the image, mounted read-write
    `nodelalloc` or with delayed allocation) leave the same leaf extents: under nodelalloc
    the kernel zeroes short unwritten parts instead of cutting them (EXT4_EXT_MAY_ZEROOUT,
    only inside i_size), under delayed allocation it cuts; both take the fast path into a
    contiguous written neighbour. Nothing is allocated but a leaf block for f's seven extents
    (no cluster reallocation moves a converted block); the kernel reads simfs's files back."""
    img, _ = fallocated
    oracle = tmp_path / "kernel.img"
    shutil.copyfile(img, oracle)
    with kernel_mount(oracle, tmp_path / "k", rw=True, fstype="ext4", options=kernel_opts) as mnt:
        for name, off, data in WRITES:
            fd = os.open(mnt / name, os.O_WRONLY)
            try:
                assert os.pwrite(fd, data, off) == len(data)
            finally:
                os.close(fd)
    want = kernel_reads(oracle, tmp_path, "f", "a", "g")
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        inos = {n: ino_of(vol, n.encode()) for n in ("f", "a", "g")}
        free = vol.space.free_blocks
        for ino in inos.values():
            vol.hold(ino)
        for name, off, data in WRITES:
            assert vol.write(inos[name], off, data) == len(data)
        assert [vol.read(inos[n], 0, 1 << 20) for n in ("f", "a", "g")] == want   # before write-back
        for ino in inos.values():
            vol.drop(ino)
        used = free - vol.space.free_blocks
    assert_fsck_clean(img)
    for name in ("f", "a", "g"):
        assert extents(img, "/" + name) == extents(oracle, "/" + name), name
    assert used == leaves
    assert kernel_reads(img, tmp_path, "f", "a", "g") == want


@pytest.mark.parametrize("alloc", ["mballoc", "mballoc-delalloc"])
def test_a_full_volume_zeroes_the_extent_it_cannot_cut(fallocated, alloc):
    """No free block, and h's root full: cutting block 10 out of h's unwritten 6..14 would
    need a leaf block. Under write-time allocation ext4 zeroes the whole extent and marks it
    written instead (ext4_split_extent_at's ENOSPC fallback, h lies inside i_size), merged with
    the written blocks either side; under delayed allocation the write fails with ENOSPC and
    nothing changes. The image stays clean either way."""
    img, _ = fallocated
    p = extents(img, "/h")[0][2]
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        fill = vol.create(vol.root_ino, b"fill", 0o644, 0, 0).st_ino
        off = 0
        for size in (1 << 20, BS):          # (delayed allocation gives back what it reserved)
            while True:
                try:
                    n = vol.write(fill, off, bytes(size))
                    vol.fsync(fill)
                except OSError as e:
                    assert e.errno == errno.ENOSPC
                    break
                off += n
                if n < size:
                    break
        assert vol.space.free_blocks - vol.space.reserved < 4
        h = ino_of(vol, b"h")
        before = vol.read(h, 0, 1 << 20)
        if alloc == "mballoc-delalloc":
            with pytest.raises(OSError) as e:
                vol.write(h, 10 * BS, b"t" * 10)
            assert e.value.errno == errno.ENOSPC
            want = before
        else:
            assert vol.write(h, 10 * BS, b"t" * 10) == 10
            want = bytearray(before)
            want[10 * BS:10 * BS + 10] = b"t" * 10
        assert vol.read(h, 0, 1 << 20) == want
    assert_fsck_clean(img)
    if alloc == "mballoc-delalloc":
        assert [(s, n, u) for s, n, _, u in extents(img, "/h")] == [(0, 5, True), (5, 1, False),
                                                                  (6, 9, True), (15, 1, False)]
    else:
        assert extents(img, "/h") == [(0, 5, p, True), (5, 11, p + 5, False)]
    with Volume.open(img, VolumeOptions(read_only=True)) as vol:
        assert vol.read(ino_of(vol, b"h"), 0, 1 << 20) == want


def test_truncate_and_unlink_free_unwritten_blocks(fallocated, tmp_path):
    img, _ = fallocated
    f_ext, a_ext = extents(img, "/f"), extents(img, "/a")
    with Volume.open(img, VolumeOptions()) as vol:
        free = vol.space.free_blocks
        vol.setattr(ino_of(vol, b"f"), size=6 * BS + 1)        # keeps 7 blocks, unwritten
        assert vol.space.free_blocks == free + 9
        vol.unlink(vol.root_ino, b"a")
        assert vol.space.free_blocks == free + 9 + 16
    assert_fsck_clean(img)
    p = f_ext[0][2]
    assert extents(img, "/f") == [(0, 7, p, True)]
    assert kernel_reads(img, tmp_path, "f") == [bytes(6 * BS + 1)]
    assert a_ext                                            # (a was there to be freed)


@pytest.mark.mount
def test_real_tools_through_a_mount_read_zeros_and_write_into_the_extent(fallocated, tmp_path):
    """cat reads the unwritten extent as zeros through FUSE; dd conv=notrunc writes into its
    middle (delayed allocation); after unmount the kernel reads the same bytes."""
    img, _ = fallocated
    m = SimfsMount(img, tmp_path / "fuse", "alloc=mballoc-delalloc")
    m.mnt.mkdir()
    try:
        m.mount()
        cat = subprocess.run(["cat", str(m.mnt / "f")], capture_output=True, check=True).stdout
        assert cat == bytes(256 << 10)
        subprocess.run(["dd", "if=/dev/urandom", f"of={m.mnt / 'f'}", "bs=4096", "seek=3", "count=2",
                        "conv=notrunc", "status=none"], check=True)
        want = (m.mnt / "f").read_bytes()
        assert want[:3 * BS] == bytes(3 * BS) and want[5 * BS:] == bytes(len(want) - 5 * BS)
        assert any(want[3 * BS:5 * BS])
        m.umount()
    finally:
        m.force_cleanup()
    assert_fsck_clean(img)
    p = extents(img, "/f")[0][2]
    assert extents(img, "/f") == [(0, 3, p, True), (3, 2, p + 3, False), (5, 11, p + 5, True)]
    assert kernel_reads(img, tmp_path, "f") == [want]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(writes=st.lists(st.tuples(st.integers(0, 20 * BS), st.integers(1, 3 * BS)), min_size=1, max_size=8),
       alloc=st.sampled_from(["mballoc", "mballoc-delalloc", "ext2", "cg"]), keep_size=st.booleans())
def test_random_writes_into_fallocated_ranges_read_back_as_the_kernel_reads(tmp_path_factory, writes, alloc,
                                                                           keep_size):
    """Writes anywhere in and past a file fallocated as 16 blocks (with `keep_size`, past its
    end: fallocate -n): simfs reads the byte model, e2fsck is clean, the kernel reads the same
    bytes."""
    if can_loop_mount():
        pytest.skip(can_loop_mount())
    tmp = tmp_path_factory.mktemp("uw")
    img = tmp / "r.img"
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", str(BS), "-O", NO_JOURNAL, str(img)], check=True)
    with kernel_mount(img, tmp / "rw", rw=True, fstype="ext4") as mnt:
        (mnt / "f").touch()
        subprocess.run(["fallocate", *(["-n"] if keep_size else []), "-l", "64K", str(mnt / "f")], check=True)
    (first, n, p, unwritten), = extents(img, "/f")
    assert first == 0 and n == 16 and unwritten
    stale(img, p, 16)
    model = bytearray(0 if keep_size else 16 * BS)
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        ino = ino_of(vol, b"f")
        vol.hold(ino)
        for i, (off, size) in enumerate(writes):
            data = bytes([i + 1]) * size
            assert vol.write(ino, off, data) == size
            model.extend(bytes(max(0, off + size - len(model))))
            model[off:off + size] = data
        assert vol.read(ino, 0, 1 << 20) == model
        vol.drop(ino)
    assert_fsck_clean(img)
    assert kernel_reads(img, tmp, "f") == [bytes(model)]
