"""A corrupted image is contained as the kernel's ext2/ext4 contain one (issue 38).

Each test makes an image with simfs's own mkfs and a few files, changes specific bytes of it
through the on-disk structures (a bitmap, an inode's block pointers or size, a directory
record), opens it again and drives the Volume. What must hold: a bitmap that disagrees with
its group descriptor is not allocated from (no file's data is overwritten: e2fsck finds no
multiply-claimed blocks); a block number beyond the file system or in a metadata zone is
answered EUCLEAN and never written through (the image file does not grow, the inode table
is unchanged); a bad directory entry is skipped, not the end of the listing; nothing waits
on a loop or a huge size; a mkdir refused for lack of space leaves nothing half-made; every
inconsistency is recorded in the superblock's error state (e2fsck and dumpe2fs are the
oracles), so the image is not marked clean and is refused read-write until checked.
"""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import time

import pytest

from simfs.errors import FSError, ImageError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.constants import STATE_ERROR, STATE_VALID, SUPERBLOCK_OFFSET
from simfs.ondisk.groupdesc import unpack_table
from simfs.ondisk.inode import Inode
from simfs.ondisk.mkfs import mkfs
from simfs.ondisk.superblock import Geometry, Superblock
from tests.corruption import FLEX_MKFS, desc_corrupted, flex_descriptor_corpus

EUCLEAN = errno.EUCLEAN
OPTS = VolumeOptions(disk="ideal")
ROOT = 2


class Image:
    """Raw access to an ext2 image through simfs's on-disk structures (no Volume)."""

    def __init__(self, path):
        self.path = str(path)
        with open(self.path, "rb") as f:
            f.seek(SUPERBLOCK_OFFSET)
            self.sb = Superblock(f.read(1024))
        self.geo = Geometry(self.sb)
        self.bs = self.geo.block_size
        self.descs = unpack_table(self.read(self.geo.first_data_block + 1, self.geo.gdt_blocks), self.geo.groups)

    def read(self, blk: int, n: int = 1) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(blk * self.bs)
            return f.read(n * self.bs)

    def write(self, offset: int, data: bytes) -> None:
        with open(self.path, "r+b") as f:
            f.seek(offset)
            f.write(data)

    def _inode_offset(self, ino: int) -> int:
        g, idx = divmod(ino - 1, self.geo.inodes_per_group)
        return self.descs[g].inode_table * self.bs + idx * self.geo.inode_size

    def inode(self, ino: int) -> Inode:
        off = self._inode_offset(ino)
        with open(self.path, "rb") as f:
            f.seek(off)
            return Inode.unpack(ino, f.read(self.geo.inode_size))

    def put_inode(self, inode: Inode) -> None:
        self.write(self._inode_offset(inode.ino), inode.pack())


def superblock(path) -> Superblock:
    return Image(path).sb


def e2fsck(path) -> str:
    r = subprocess.run(["e2fsck", "-fn", str(path)], capture_output=True, text=True)
    return r.stdout + r.stderr


def multiply_claimed(path) -> set[str]:
    """e2fsck's "Multiply-claimed block(s) in inode N: ..." lines."""
    return {line for line in e2fsck(path).splitlines() if line.startswith("Multiply-claimed block")}


def debugfs(path, request: str) -> str:
    return subprocess.run(["debugfs", "-R", request, str(path)], capture_output=True, text=True).stdout


def assert_error_recorded(path) -> None:
    """The inconsistency is on the image: error bit, and the error record dumpe2fs shows."""
    sb = superblock(path)
    assert sb.state & STATE_ERROR and sb.error_count >= 1 and sb.first_error_time and sb.last_error_time
    out = subprocess.run(["dumpe2fs", "-h", str(path)], capture_output=True, text=True).stdout
    assert "FS Error count:" in out and "First error time:" in out
    assert "EFSCORRUPTED" in out                     # the error code ext4 records for EUCLEAN


def populated(tmp_path, files: int = 20, size: int = 20000, name: str = "c.img") -> str:
    """An 8 MiB image (1 KiB blocks, 8 groups) with `files` files f0.. of `size` bytes, each
    filled with its own byte value, in the root directory; closed clean."""
    img = str(tmp_path / name)
    mkfs(img, 8 << 20, block_size=1024, blocks_per_group=1024)
    with Volume.open(img, OPTS) as v:
        for i in range(files):
            a = v.create(ROOT, b"f%d" % i, 0o644, 0, 0)
            v.write(a.st_ino, 0, bytes([i + 1]) * size)
    return img


def ino_of(v: Volume, name: bytes) -> int:
    return v.lookup(ROOT, name).st_ino


def contents_intact(img, files: int, size: int) -> None:
    contents_intact_from(img, 0, files, size)


def contents_intact_from(img, first: int, files: int, size: int) -> None:
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as v:
        for i in range(first, files):
            ino = ino_of(v, b"f%d" % i)
            assert v.read(ino, 0, size + 1) == bytes([i + 1]) * size, f"f{i} was overwritten"


# item 2: bitmaps checked against the group descriptors -------------------------------------
def test_block_bitmap_that_disagrees_with_its_descriptor_is_not_allocated_from(tmp_path):
    img = populated(tmp_path)
    raw = Image(img)
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as v:
        first = v.filemap.bmap(v.inodes.get(ino_of(v, b"f3")), 0)
    d = raw.descs[0]
    byte = (first - raw.geo.group_start(0)) // 8
    raw.write(d.block_bitmap * raw.bs + byte, bytes(4))     # 32 blocks of f3, f4 now read as free
    assert "Block bitmap differences" in e2fsck(img)
    with Volume.open(img, OPTS) as v:
        a = v.create(ROOT, b"big", 0o644, 0, 0)
        assert v.write(a.st_ino, 0, b"\xee" * 300_000) == 300_000
        blocks = [b for _, b in v.filemap.blocks(v.inodes.get(a.st_ino))]
        assert all(v.geo.group_of_block(b) != 0 for b in blocks)     # not from the corrupt group
    out = e2fsck(img)
    assert "Multiply-claimed" not in out and "multiply-claimed" not in out, out
    contents_intact(img, 20, 20000)
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as v:
        assert v.read(ino_of(v, b"big"), 0, 400_000) == b"\xee" * 300_000
    assert_error_recorded(img)


def test_block_bitmap_that_frees_the_metadata_zone_refuses_allocation(tmp_path):
    """The free count agrees (it was changed too), but group 1's inode table reads as free:
    ext4_valid_block_bitmap fails, and the kernel answers every allocation EUCLEAN."""
    img = populated(tmp_path, files=4)
    raw = Image(img)
    d = raw.descs[1]
    start = raw.geo.group_start(1)
    bitmap = bytearray(raw.read(d.block_bitmap))
    lo = d.inode_table - start
    n = raw.geo.inode_table_blocks
    for b in range(lo, lo + n):
        bitmap[b >> 3] &= ~(1 << (b & 7))
    raw.write(d.block_bitmap * raw.bs, bytes(bitmap))
    d.free_blocks += n
    raw.write((raw.geo.first_data_block + 1) * raw.bs + 32, d.pack())
    before = raw.read(d.inode_table, n)
    with Volume.open(img, OPTS) as v:
        a = v.create(ROOT, b"g", 0o644, 0, 0)                # an inode, no block: fine
        with pytest.raises(FSError) as e:
            v.write(a.st_ino, 0, b"x" * 40000)
        assert e.value.errno == EUCLEAN
        with pytest.raises(FSError) as e:
            v.mkdir(ROOT, b"nd", 0o755, 0, 0)
        assert e.value.errno == EUCLEAN
        assert v.read(ino_of(v, b"f1"), 0, 20001) == b"\x02" * 20000     # reads go on
    assert Image(img).read(d.inode_table, n) == before
    out = e2fsck(img)
    assert "Multiply-claimed" not in out and "zero-length" not in out
    assert_error_recorded(img)


def test_allocation_for_a_file_of_a_group_whose_bitmap_frees_its_metadata_is_euclean(tmp_path):
    """ext4_valid_block_bitmap fails for the file's own group: the allocation is refused
    (EUCLEAN), as the kernel refuses it; nothing lands in the inode table."""
    img = populated(tmp_path, files=4)
    raw = Image(img)
    d = raw.descs[0]
    bitmap = bytearray(raw.read(d.block_bitmap))
    lo = d.inode_table - raw.geo.group_start(0)
    bitmap[lo >> 3] &= ~(1 << (lo & 7))                        # the first inode-table block: free
    raw.write(d.block_bitmap * raw.bs, bytes(bitmap))
    table = raw.read(d.inode_table, raw.geo.inode_table_blocks)
    with Volume.open(img, OPTS) as v:
        ino = ino_of(v, b"f1")
        with pytest.raises(FSError) as e:
            v.write(ino, 20000, b"more" * 1000)                # needs new blocks
        assert e.value.errno == EUCLEAN
        with pytest.raises(FSError) as e:
            v.mkdir(ROOT, b"nd", 0o755, 0, 0)                  # root is in group 0 too
        assert e.value.errno == EUCLEAN
        assert v.read(ino, 0, 20000) == b"\x02" * 20000         # reads go on
    assert b"more" not in Image(img).read(d.inode_table, raw.geo.inode_table_blocks) and b"more" not in table
    out = subprocess.run(["e2fsck", "-fn", img], capture_output=True, text=True).stdout
    assert "zero-length" not in out and "Multiply-claimed" not in out
    assert_error_recorded(img)


def test_freeing_blocks_a_bitmap_calls_free_is_reported_not_a_crash(tmp_path):
    img = populated(tmp_path, files=2)
    raw = Image(img)
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as v:
        ino = ino_of(v, b"f1")
    inode = raw.inode(ino)
    inode.block[0] = raw.inode(ino_of_raw(img, b"f0")).block[0]     # shares f0's first block
    raw.put_inode(inode)
    with Volume.open(img, OPTS) as v:
        v.unlink(ROOT, b"f0")
        v.unlink(ROOT, b"f1")                # its first block is free already: reported, skipped
        assert v.sb.state & STATE_ERROR
    assert_error_recorded(img)


def ino_of_raw(img, name: bytes) -> int:
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as v:
        return ino_of(v, name)


# item 3: block numbers range-checked ---------------------------------------------------------
@pytest.mark.parametrize("where", ["beyond", "huge", "inode_table", "descriptors", "bitmap"])
def test_direct_block_number_out_of_range_is_euclean_and_never_written(tmp_path, where):
    img = populated(tmp_path, files=3)
    raw = Image(img)
    ino = ino_of_raw(img, b"f1")
    bad = {"beyond": raw.geo.blocks_count + 100, "huge": 0x7FFFFFFF, "inode_table": raw.descs[0].inode_table,
           "descriptors": raw.geo.first_data_block + 1, "bitmap": raw.descs[0].block_bitmap}[where]
    inode = raw.inode(ino)
    inode.block[2] = bad
    raw.put_inode(inode)
    size = os.path.getsize(img)
    table = raw.read(raw.descs[0].inode_table, raw.geo.inode_table_blocks)
    gdt = raw.read(raw.geo.first_data_block + 1)
    claimed = multiply_claimed(img)                  # the corruption's own (a pointer into metadata)
    with Volume.open(img, OPTS) as v:         # refused whole, as ext4_ind_check_inode at iget
        for op in (lambda: v.lookup(ROOT, b"f1"), lambda: v.getattr(ino), lambda: v.read(ino, 2 * 1024, 100),
                   lambda: v.write(ino, 2 * 1024 + 10, b"overwrite" * 50), lambda: v.unlink(ROOT, b"f1")):
            with pytest.raises(FSError) as e:
                op()
            assert e.value.errno == EUCLEAN
        assert v.read(ino_of(v, b"f2"), 0, 1024) == b"\x03" * 1024          # the others still read
        v.sync()
    assert os.path.getsize(img) == size
    if where in ("inode_table", "descriptors"):
        after = Image(img)
        now_table = after.read(raw.descs[0].inode_table, raw.geo.inode_table_blocks)
        assert b"overwrite" not in now_table and b"overwrite" not in after.read(raw.geo.first_data_block + 1)
        assert len(now_table) == len(table) and len(gdt) == raw.bs
    assert multiply_claimed(img) <= claimed
    assert_error_recorded(img)


def test_indirect_block_numbers_are_checked_at_every_level(tmp_path):
    img = populated(tmp_path, files=2, size=300_000)    # 1 KiB blocks: IND and DIND in use
    raw = Image(img)
    ino = ino_of_raw(img, b"f0")
    inode = raw.inode(ino)
    ind, dind = inode.block[12], inode.block[13]
    p = raw.bs // 4
    raw.write(ind * raw.bs + 5 * 4, struct.pack("<I", 0x7FFFFFFF))               # lblk 12 + 5
    ind2 = struct.unpack_from("<I", raw.read(dind), 0)[0]
    raw.write(ind2 * raw.bs + 3 * 4, struct.pack("<I", raw.descs[0].inode_table))   # lblk 12 + p + 3
    inode2 = raw.inode(ino_of_raw(img, b"f1"))
    inode2.block[13] = raw.geo.blocks_count + 7                                   # a bad DIND itself
    raw.put_inode(inode2)
    size = os.path.getsize(img)
    with Volume.open(img, OPTS) as v:
        for lblk in (12 + 5, 12 + p + 3):
            for op in (lambda: v.read(ino, lblk * 1024, 10), lambda: v.write(ino, lblk * 1024, b"zz")):
                with pytest.raises(FSError) as e:
                    op()
                assert e.value.errno == EUCLEAN
        with pytest.raises(FSError) as e:                # once met, the damage stays (while in core):
            v.read(ino, 0, 1024)                         # no short read that looks like EOF
        assert e.value.errno == EUCLEAN
        # a bad i_block[13]: the inode stats (ext4_ind_check_inode checks the direct pointers
        # only), its direct blocks read, a block under the DIND is refused where it is followed
        f1 = v.lookup(ROOT, b"f1").st_ino
        assert v.read(f1, 0, 1024) == b"\x02" * 1024
        with pytest.raises(FSError) as e:
            v.read(f1, (12 + p) * 1024, 10)
        assert e.value.errno == EUCLEAN
        v.unlink(ROOT, b"f0")                         # the bad pointers are not freed
        v.unlink(ROOT, b"f1")
    assert os.path.getsize(img) == size
    assert "Multiply-claimed" not in e2fsck(img)
    assert_error_recorded(img)


@pytest.mark.parametrize("level", ["slot", "ind", "dind"])
def test_bad_entry_past_the_end_of_the_file_is_reported_not_refused(tmp_path, level):
    """Issue 51 item 10: a garbage block number in an indirect slot that maps nothing inside
    i_size (i_block[12] of a small file, an entry of the IND or of a DIND's first IND). The kernel's ext4 reports it when it reads the indirect block
    (ext4_check_indirect_blockref) and, its read retried, returns the whole file; unlink frees
    what is valid (ext4_free_branches, ext4_clear_blocks skip the bad number). simfs: the file
    reads whole, the error is recorded, a write that reaches the bad entry is EUCLEAN, unlink
    works and e2fsck finds nothing multiply claimed."""
    size = {"slot": 5 * 1024, "ind": 20 * 1024, "dind": 300 * 1024}[level]   # 1 KiB blocks
    img = populated(tmp_path, files=3, size=size)
    raw = Image(img)
    ino = ino_of_raw(img, b"f1")
    inode = raw.inode(ino)
    p = raw.bs // 4
    if level == "slot":                                     # i_block[12] of a 5-block file
        inode.block[12] = 0x7FFFFF00                        # (iget checks the direct ones only)
        raw.put_inode(inode)
        table, entry, past = 0, 0, 12 * 1024
    elif level == "ind":
        table, entry, past = inode.block[12], 200, (12 + 200) * 1024       # maps lblk 212
    else:
        table = struct.unpack_from("<I", raw.read(inode.block[13]), 0)[0]  # DIND's first IND
        entry, past = p - 1, (12 + p + p - 1) * 1024
        assert (12 + p + p - 1) * 1024 >= size
    if table:
        raw.write(table * raw.bs + 4 * entry, struct.pack("<I", 0x7FFFFF00))
    with Volume.open(img, OPTS) as v:
        assert v.read(ino, 0, size + 1) == b"\x02" * size
        with pytest.raises(FSError) as e:
            v.write(ino, past, b"x")
        assert e.value.errno == EUCLEAN
        v.unlink(ROOT, b"f1")
        assert v.read(ino_of(v, b"f2"), 0, size + 1) == b"\x03" * size
    assert "Multiply-claimed" not in e2fsck(img)
    assert_error_recorded(img)
    contents_intact_from(img, 2, 3, size)


def test_indirect_root_in_the_inode_table_stats_and_unlinks_as_the_kernels(tmp_path):
    """i_block[12] pointing at the inode table (the corpus's ind-pointer-inode-table): e2fsck
    reads the inode table as the file's indirect block and takes the block numbers it finds
    there (i_size words, i_block words of other inodes) for the file's, blocks the bitmap
    calls free. ext4's iget checks the direct pointers only, so the kernel stats the file,
    refuses its data past the direct blocks, and unlinks it (ext4_free_branches skips the bad
    root). simfs must do the same: a file it refused to unlink stays, and the first new file
    to get one of those free blocks is "multiply-claimed" in e2fsck's report."""
    size = 200 * 1024
    img = populated(tmp_path, files=3, size=size)
    raw = Image(img)
    ino = ino_of_raw(img, b"f0")
    inode = raw.inode(ino)
    inode.block[12] = raw.descs[0].inode_table
    raw.put_inode(inode)
    assert "Block bitmap differences" in e2fsck(img)    # blocks e2fsck now gives f0, free in the bitmap
    with Volume.open(img, OPTS) as v:
        assert v.getattr(v.lookup(ROOT, b"f0").st_ino).st_size == size
        assert v.read(ino, 5 * 1024, 1024) == b"\x01" * 1024    # a direct block (no read-ahead)
        with pytest.raises(FSError) as e:
            v.read(ino, 12 * 1024, 10)
        assert e.value.errno == EUCLEAN
        v.unlink(ROOT, b"f0")
        a = v.create(ROOT, b"fill", 0o644, 0, 0).st_ino       # every free block, the ones e2fsck
        off = 0                                                # gave f0 among them
        with pytest.raises(FSError) as e:
            while True:
                off += v.write(a, off, b"\xee" * (64 << 10))
        assert e.value.errno == errno.ENOSPC
    out = e2fsck(img)
    assert "Multiply-claimed" not in out, out
    contents_intact_from(img, 1, 3, size)
    assert_error_recorded(img)


# item 4: a bad directory entry does not end the listing ---------------------------------------
def _dir_with_names(tmp_path, n: int):
    img = str(tmp_path / "d.img")
    mkfs(img, 8 << 20, block_size=1024, blocks_per_group=1024)
    with Volume.open(img, OPTS) as v:
        d = v.mkdir(ROOT, b"d", 0o755, 0, 0).st_ino
        for i in range(n):
            v.create(d, b"name-%04d" % i, 0o644, 0, 0)
    return img, d


def _entry_offsets(raw: Image, dino: int):
    """(file offset, inode, rec_len, name) of each live entry of directory dino."""
    with Volume.open(raw.path, VolumeOptions(disk="ideal", read_only=True)) as v:
        d = v.inodes.get(dino)
        blocks = [v.filemap.bmap(d, lidx) for lidx in range(d.size // raw.bs)]
    out = []
    for blk in blocks:
        data = raw.read(blk)
        off = 0
        while off < raw.bs:
            eino, rec_len, name_len, _ = struct.unpack_from("<IHBB", data, off)
            assert rec_len >= 8
            if eino:
                out.append((blk * raw.bs + off, eino, rec_len, data[off + 8:off + 8 + name_len]))
            off += rec_len
    return out


def _listing(v: Volume, d: int) -> list[bytes]:
    return [name for name, _, _ in v.readdir(d)]


@pytest.mark.parametrize("bad", ["unused", "beyond_count", "reserved"])
def test_entry_naming_an_impossible_inode_is_not_the_end(tmp_path, bad):
    """Every name is listed as ext2 lists it (an unused or reserved inode's name too: its lookup
    is EUCLEAN); one past the inode count is left out; the listing goes on either way. A new
    name goes in beside an unused or reserved inode's, not past one beyond the inode count
    (ext4_find_dest_de checks every record it passes: EUCLEAN)."""
    img, d = _dir_with_names(tmp_path, 200)
    raw = Image(img)
    entries = _entry_offsets(raw, d)
    victim = entries[40]                      # an early entry: most names come after it
    ino = {"unused": raw.geo.inodes_count - 3, "beyond_count": raw.geo.inodes_count + 50, "reserved": 7}[bad]
    raw.write(victim[0], struct.pack("<I", ino))
    good = sorted(e[3] for e in entries if e[3] not in (b".", b"..") and (e != victim or bad != "beyond_count"))
    for order in ("linear", "hash"):
        with Volume.open(img, VolumeOptions(disk="ideal", dirorder=order, force=True)) as v:
            names = _listing(v, d)
            assert sorted(n for n in names if n not in (b".", b"..")) == good
            with pytest.raises(FSError) as e:
                v.lookup(d, victim[3])
            assert e.value.errno == EUCLEAN
            with pytest.raises(FSError) as e:
                v.unlink(d, victim[3])
            assert e.value.errno == EUCLEAN
            if bad == "beyond_count":
                with pytest.raises(FSError) as e:
                    v.create(d, b"new-one", 0o644, 0, 0)
                assert e.value.errno == EUCLEAN
                continue
            v.create(d, b"new-one", 0o644, 0, 0)             # the directory still works
            v.unlink(d, b"new-one")
    assert_error_recorded(img)


@pytest.mark.parametrize("damage", ["runs-off", "zero"])
def test_record_that_breaks_the_chain_fails_lookups_only_where_the_kernels_do(tmp_path, damage):
    """Issue 51 item 9: one bad record in a middle block. The listing skips only the rest of
    that block (ext4_readdir). A lookup searches block after block, each damaged block as
    ext4_search_dir walks it: a rec_len that runs off the block ends that block's search and
    the names of every later block are found ("runs-off"); a rec_len of 0 fails every lookup
    that reaches the block, EUCLEAN ("zero"). Names before the damage are found either way; a
    new name needs room before the damage (ext4_find_dest_de), and the directory is not
    empty for rmdir (ext4_empty_dir)."""
    img, d = _dir_with_names(tmp_path, 200)
    raw = Image(img)
    entries = _entry_offsets(raw, d)
    blocks = sorted({e[0] // raw.bs for e in entries}, key=lambda b: min(e[0] for e in entries if e[0] // raw.bs == b))
    bad = blocks[len(blocks) // 2]                           # a middle block of the directory
    in_bad = [e for e in entries if e[0] // raw.bs == bad]
    victim = in_bad[len(in_bad) // 2]
    voff = victim[0] % raw.bs
    rec_len = raw.bs - voff + 4 if damage == "runs-off" else 0
    raw.write(victim[0] + 4, struct.pack("<H", rec_len))
    lost = {e[3] for e in in_bad if e[0] >= victim[0]}
    kept = sorted(e[3] for e in in_bad if e[0] < victim[0])
    rank = {b: i for i, b in enumerate(blocks)}
    before = [e[3] for e in entries if rank[e[0] // raw.bs] < rank[bad] and e[3] not in (b".", b"..")]
    after = [e[3] for e in entries if rank[e[0] // raw.bs] > rank[bad]]
    assert kept and lost and before and len(after) > 40
    with Volume.open(img, OPTS) as v:
        assert set(_listing(v, d)) == {e[3] for e in entries} - lost
        for name in before + kept:
            v.lookup(d, name)
        for name in after + sorted(lost) + [b"name-9999"]:
            if damage == "runs-off" and name in after:
                v.lookup(d, name)                            # found past the damaged block
                continue
            with pytest.raises(FSError) as e:               # the bad record's own name: its
                v.lookup(d, name)                           # check fails
            hidden = damage == "runs-off" and name != victim[3]
            assert e.value.errno == (errno.ENOENT if hidden else EUCLEAN), name
        if damage == "runs-off":
            v.unlink(d, after[1])                            # a later block's name goes
        with pytest.raises(FSError) as e:                    # no room before the damage
            v.create(d, b"new", 0o644, 0, 0)
        assert e.value.errno == EUCLEAN
        for name in before + kept:
            v.unlink(d, name)
        with pytest.raises(FSError) as e:                    # the hidden names are still there
            v.rmdir(ROOT, b"d")
        assert e.value.errno == errno.ENOTEMPTY
    assert Image(img).read(bad)[voff + 4:voff + 6] == struct.pack("<H", rec_len)
    assert_error_recorded(img)


def test_name_len_past_rec_len_ends_its_block_only(tmp_path):
    img, d = _dir_with_names(tmp_path, 60)
    raw = Image(img)
    entries = _entry_offsets(raw, d)
    victim = entries[10]
    raw.write(victim[0] + 6, bytes([250]))                  # name_len 250 > rec_len
    with Volume.open(img, OPTS) as v:
        names = set(_listing(v, d))
        later_blocks = {e[3] for e in entries if e[0] // raw.bs != victim[0] // raw.bs}
        assert later_blocks <= names and entries[5][3] in names
    assert_error_recorded(img)


# issue 51 item 11: overlapping flex_bg descriptors refused at open, as the kernel refuses them --
@pytest.fixture(scope="module")
def flex_base(tmp_path_factory) -> bytes:
    """The corpus's empty ext4-profile image (tests/corruption.py FLEX_MKFS): eight groups,
    every group's tables in group 0."""
    img = tmp_path_factory.mktemp("flex") / "base.img"
    args = dict(FLEX_MKFS)
    mkfs(str(img), args.pop("size"), now=1_700_000_000, uid=0, gid=0, **args)
    return img.read_bytes()


@pytest.mark.parametrize("case", flex_descriptor_corpus(), ids=lambda c: c.name)
def test_flex_descriptors_are_refused_where_the_kernel_refuses(tmp_path, flex_base, case):
    """Each corruption's recorded kernel answer (a read-write loop mount of the same bytes by
    ext4: ext4_setup_system_zone refuses any overlap) is simfs's: refused at open with one
    line naming the overlap, the image untouched, or opened read-write."""
    img = tmp_path / "c.img"
    buf = bytes(desc_corrupted(flex_base, case))
    img.write_bytes(buf)
    if case.kernel == "refused":
        with pytest.raises(ImageError) as e:
            Volume.open(str(img), OPTS)
        assert "corrupt group descriptor" in str(e.value) and "overlaps" in str(e.value)
        assert "\n" not in str(e.value)
        assert img.read_bytes() == buf
    else:
        assert case.kernel == "mounted"
        with Volume.open(str(img), OPTS) as v:
            v.statfs()


# item 5: nothing waits forever ---------------------------------------------------------------
def test_huge_i_size_is_euclean_not_an_endless_read(tmp_path):
    img = populated(tmp_path, files=2)
    raw = Image(img)
    ino = ino_of_raw(img, b"f0")
    inode = raw.inode(ino)
    inode.size = 7 << 60                                  # 7 EiB
    raw.put_inode(inode)
    with Volume.open(img, OPTS) as v:
        for op in (lambda: v.getattr(ino), lambda: v.read(ino, 0, 4096), lambda: v.lookup(ROOT, b"f0")):
            with pytest.raises(FSError) as e:
                op()
            assert e.value.errno == EUCLEAN
        assert v.read(ino_of(v, b"f1"), 0, 10) == b"\x02" * 10
    assert_error_recorded(img)


@pytest.mark.timeout(60)
def test_indirect_blocks_pointing_at_one_block_end_quickly(tmp_path):
    """A triple-indirect tree whose every pointer names the same block: a walk that follows
    each one would read p**3 blocks (a hang); freeing the file ends at once."""
    img = populated(tmp_path, files=2, size=2000)
    raw = Image(img)
    with Volume.open(img, OPTS) as v:               # a free data block to hold the loop
        a = v.create(ROOT, b"loop", 0o644, 0, 0)
        v.write(a.st_ino, 0, b"L" * 1024)
        ino = a.st_ino
        blk = v.filemap.bmap(v.inodes.get(ino), 0)
    raw.write(blk * raw.bs, struct.pack("<I", blk) * (raw.bs // 4))   # every pointer: itself
    inode = raw.inode(ino)
    inode.block[12] = inode.block[13] = inode.block[14] = blk
    inode.size = 1 << 30
    raw.put_inode(inode)
    t = time.monotonic()
    with Volume.open(img, OPTS) as v:
        v.read(ino, (12 + 256 + 256 * 256 + 5) * 1024, 10)      # the block itself: in range
        v.fsync(ino)                                 # walks the map: bounded
        v.unlink(ROOT, b"loop")
    assert time.monotonic() - t < 20
    assert "Multiply-claimed" not in e2fsck(img)
    assert_error_recorded(img)


@pytest.mark.timeout(60)
def test_a_loop_of_dotdot_entries_is_euclean_for_rename(tmp_path):
    img = str(tmp_path / "l.img")
    mkfs(img, 8 << 20, block_size=1024, blocks_per_group=1024)
    with Volume.open(img, OPTS) as v:
        a = v.mkdir(ROOT, b"a", 0o755, 0, 0).st_ino
        b = v.mkdir(a, b"b", 0o755, 0, 0).st_ino
        v.mkdir(ROOT, b"c", 0o755, 0, 0)
    raw = Image(img)
    dot_a = [e for e in _entry_offsets(raw, a) if e[3] == b".."][0]
    raw.write(dot_a[0], struct.pack("<I", b))                # a's parent is b, b's parent is a
    with Volume.open(img, OPTS) as v:
        with pytest.raises(FSError) as e:
            v.rename(ROOT, b"c", b, b"c")
        assert e.value.errno == EUCLEAN
    assert_error_recorded(img)


# item 6: a mkdir refused for lack of space leaves nothing half-made ----------------------------
@pytest.mark.parametrize("op", ["mkdir", "create", "symlink"])
def test_enospc_leaves_nothing_half_made(tmp_path, op):
    img = str(tmp_path / "f.img")
    mkfs(img, 2 << 20, block_size=1024, blocks_per_group=1024)
    with Volume.open(img, OPTS) as v:
        d = v.mkdir(ROOT, b"d", 0o755, 0, 0).st_ino
        a = v.create(ROOT, b"fill", 0o644, 0, 0)
        try:
            v.write(a.st_ino, 0, b"f" * (4 << 20))
        except FSError:
            pass
        i = 0
        try:                       # fill the directory's last block too: a new name needs a block
            while True:
                v.create(d, b"n%03d-" % i + b"x" * 200, 0o644, 0, 0)
                i += 1
        except FSError as e:
            assert e.errno == errno.ENOSPC
        if v.space.free_blocks:    # leave none at all
            b = v.create(ROOT, b"fill2", 0o644, 0, 0)
            v.write(b.st_ino, 0, b"f" * (v.space.free_blocks * 1024))
        assert v.statfs().f_bfree == 0
        long = b"/" + b"t" * 300
        with pytest.raises(FSError) as e:
            if op == "mkdir":
                v.mkdir(d, b"newdir" + b"y" * 200, 0o755, 0, 0)
            elif op == "create":
                v.create(d, b"newfile" + b"y" * 200, 0o644, 0, 0)
            else:
                v.symlink(ROOT, b"link", long, 0, 0)
        assert e.value.errno == errno.ENOSPC
        used = int(v.space.inode_used.sum())
    r = subprocess.run(["e2fsck", "-fn", img], capture_output=True, text=True)
    assert r.returncode == 0 and "zero-length" not in r.stdout, r.stdout
    assert used == Image(img).sb.inodes_count - Image(img).sb.free_inodes_count


def test_enospc_mkdir_with_no_block_for_the_new_directory(tmp_path):
    """The directory's own block cannot be had: the inode taken for it is given back whole."""
    img = str(tmp_path / "g.img")
    mkfs(img, 2 << 20, block_size=1024, blocks_per_group=1024)
    with Volume.open(img, OPTS) as v:
        a = v.create(ROOT, b"fill", 0o644, 0, 0)
        assert v.write(a.st_ino, 0, b"f" * (4 << 20)) < 4 << 20      # the disk is full
        assert v.statfs().f_bfree == 0
        with pytest.raises(FSError) as e:
            v.mkdir(ROOT, b"nd", 0o755, 0, 0)
        assert e.value.errno == errno.ENOSPC
    r = subprocess.run(["e2fsck", "-fn", img], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


# the error state -------------------------------------------------------------------------------
def test_error_state_stays_and_is_refused_read_write_like_any_unclean_image(tmp_path):
    img = populated(tmp_path, files=2)
    raw = Image(img)
    ino = ino_of_raw(img, b"f0")
    inode = raw.inode(ino)
    inode.block[0] = 0x7FFFFFFF
    raw.put_inode(inode)
    with Volume.open(img, OPTS) as v:
        with pytest.raises(FSError):
            v.read(ino, 0, 10)
    sb = superblock(img)
    assert sb.state & STATE_ERROR and sb.state & STATE_VALID       # unmounted, but with errors
    assert sb.first_error_ino == ino and sb.first_error_func.rstrip(b"\0") == b"iget"
    with pytest.raises(ImageError, match="errors recorded"):
        Volume.open(img, OPTS)
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as v:
        assert v.read(ino_of(v, b"f1"), 0, 3) == b"\x02" * 3
    r = subprocess.run(["e2fsck", "-p", img], capture_output=True, text=True)
    assert r.returncode != 0 and "clean," not in r.stdout         # -p checks it: not skipped
    subprocess.run(["e2fsck", "-fy", img], capture_output=True, text=True)
    sb = superblock(img)                                          # e2fsck read and cleared the record
    assert not sb.state & STATE_ERROR and sb.error_count == 0 and sb.first_error_time == 0
    with Volume.open(img, OPTS):
        pass                                                      # and it mounts again


def test_bitmap_padding_fast_symlink_size_zero_and_unlinked_root_are_refused(tmp_path):
    """Three more iget/bitmap checks the kernel makes (found by the corruption corpus)."""
    img = str(tmp_path / "p.img")
    mkfs(img, (8 << 20) - 1024, block_size=1024, blocks_per_group=1024)   # the last group is short
    with Volume.open(img, OPTS) as v:
        v.create(ROOT, b"f", 0o644, 0, 0)
        link = v.symlink(ROOT, b"fast", b"target", 0, 0).st_ino
    raw = Image(img)
    last = raw.geo.groups - 1
    d = raw.descs[last]
    n = raw.geo.group_blocks(last)
    bitmap = bytearray(raw.read(d.block_bitmap))
    bitmap[n // 8 + 1:] = bytes(raw.bs - n // 8 - 1)       # padding past the end cleared
    raw.write(d.block_bitmap * raw.bs, bytes(bitmap))
    inode = raw.inode(link)
    inode.size = 0
    raw.put_inode(inode)
    with Volume.open(img, OPTS) as v:
        with pytest.raises(FSError) as e:
            v.write(ino_of(v, b"f"), 0, b"x" * 5000)
        assert e.value.errno == EUCLEAN
        with pytest.raises(FSError) as e:
            v.lookup(ROOT, b"fast")
        assert e.value.errno == EUCLEAN
    root = Image(img).inode(ROOT)
    root.links = 0
    Image(img).put_inode(root)
    with pytest.raises(ImageError, match="corrupt root inode"):
        Volume.open(img, VolumeOptions(disk="ideal", force=True))
