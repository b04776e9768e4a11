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

import os
import re
import shutil
import stat
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
    into a fallocated range split it); stale bytes under the unwritten extents and after f's."""
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


@pytest.mark.parametrize("alloc", ["mballoc", "mballoc-delalloc"])
def test_writes_into_unwritten_extents_convert_them_as_ext4_does(fallocated, tmp_path, alloc):
    """A write in the middle splits the extent in three (unwritten, written, unwritten); one at
    the start of `a`'s unwritten part goes into the written extent before it (the fast path)."""
    img, head = fallocated
    f_ext, a_ext = extents(img, "/f"), extents(img, "/a")
    mid = os.urandom(5000)
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        f, a = ino_of(vol, b"f"), ino_of(vol, b"a")
        free = vol.space.free_blocks
        for ino in (f, a):
            vol.hold(ino)
        assert vol.write(f, 5 * BS + 100, mid) == len(mid)       # blocks 5 and 6, partly
        assert vol.write(a, 2 * BS, b"x" * 10) == 10             # block 2, its first bytes
        want_f = bytearray(256 << 10)
        want_f[5 * BS + 100:5 * BS + 100 + len(mid)] = mid
        want_a = head + b"x" * 10 + bytes(14 * BS - 10)
        assert vol.read(f, 0, 1 << 20) == want_f               # before write-back, too
        assert vol.read(a, 0, 1 << 20) == want_a
        for ino in (f, a):
            vol.drop(ino)
        assert vol.space.free_blocks == free                   # nothing allocated: converted
    assert_fsck_clean(img)
    p, q = f_ext[0][2], a_ext[0][2]
    assert extents(img, "/f") == [(0, 5, p, True), (5, 2, p + 5, False), (7, 9, p + 7, True)]
    assert extents(img, "/a") == [(0, 3, q, False), (3, 13, q + 3, True)]
    assert kernel_reads(img, tmp_path, "f", "a") == [bytes(want_f), want_a]
    with Volume.open(img, VolumeOptions(read_only=True)) as vol:
        assert vol.read(ino_of(vol, b"f"), 0, 1 << 20) == want_f


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
