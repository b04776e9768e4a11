"""A deterministic corpus of named corruptions of a small populated ext2 image.

The corpus is the test suite's model of "an image a user hands the daemon": each entry changes a
few bytes of one structure (superblock, group descriptors, bitmaps, inode table, directory
blocks, indirect blocks) of a pristine image and names what it did. It is independent of simfs
on purpose: the offsets below are ext2's own (Documentation/filesystems/ext2.rst, e2fsprogs'
ext2_fs.h), read by a parser of its own, so a bug in simfs/ondisk cannot hide in the oracle.

`Layout(image_bytes)` finds the structures; `corpus(layout)` returns the corruptions, the same
list for the same image (seeded randomness only). A corruption is applied to a bytearray copy.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from typing import Callable

# ext2 offsets ---------------------------------------------------------------------------------
SB_OFF = 1024                       # the superblock, 1024 bytes at byte 1024 whatever the block size
SB = {                              # field: (offset in the superblock, struct format)
    "inodes_count": (0, "I"), "blocks_count": (4, "I"), "r_blocks_count": (8, "I"),
    "free_blocks_count": (12, "I"), "free_inodes_count": (16, "I"), "first_data_block": (20, "I"),
    "log_block_size": (24, "I"), "log_frag_size": (28, "I"), "blocks_per_group": (32, "I"),
    "frags_per_group": (36, "I"), "inodes_per_group": (40, "I"), "mnt_count": (52, "H"),
    "max_mnt_count": (54, "h"), "magic": (56, "H"), "state": (58, "H"), "errors": (60, "H"),
    "rev_level": (76, "I"), "first_ino": (84, "I"), "inode_size": (88, "H"),
    "block_group_nr": (90, "H"), "feature_compat": (92, "I"), "feature_incompat": (96, "I"),
    "feature_ro_compat": (100, "I"), "reserved_gdt_blocks": (206, "H"),
    "def_hash_version": (252, "B"),
}
GD_SIZE = 32                        # a group descriptor: 32 bytes, in the block after the superblock's
GD = {"block_bitmap": (0, "I"), "inode_bitmap": (4, "I"), "inode_table": (8, "I"),
      "free_blocks": (12, "H"), "free_inodes": (14, "H"), "used_dirs": (16, "H"), "flags": (18, "H")}
INO = {                             # an inode's first 128 bytes
    "mode": (0, "H"), "size_lo": (4, "I"), "dtime": (20, "I"), "links": (26, "H"),
    "blocks_lo": (28, "I"), "flags": (32, "I"), "generation": (100, "I"), "file_acl": (104, "I"),
    "size_high": (108, "I"),
}
I_BLOCK = 40                        # i_block[15]: 15 little-endian u32 from byte 40
N_DIRECT, IND, DIND, TIND = 12, 12, 13, 14
S_IFMT, S_IFDIR, S_IFREG, S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000
FT_UNKNOWN, FT_REG, FT_DIR, FT_CHR, FT_LNK = 0, 1, 2, 3, 7
EXT4_EXTENTS_FL, EXT2_INDEX_FL, EXT2_IMMUTABLE_FL, EXT2_APPEND_FL = 0x80000, 0x1000, 0x10, 0x20


def _get(buf, off: int, fmt: str) -> int:
    return struct.unpack_from("<" + fmt, buf, off)[0]


def _put(buf, off: int, fmt: str, value: int) -> None:
    struct.pack_into("<" + fmt, buf, off, value)


@dataclass
class FileInfo:
    """Where one file of the image lives: its inode, its data blocks in order, its block-map
    blocks (single, double indirect; and the second-level blocks under the double)."""
    path: str
    ino: int
    mode: int
    size: int
    data: list[int] = field(default_factory=list)
    ind: int = 0
    dind: int = 0
    dind_children: list[int] = field(default_factory=list)


class Layout:
    """The structures of an unmounted ext2 image (revision 1, no extents), parsed read-only."""

    def __init__(self, img: bytes):
        self.img = img
        self.sb = {k: _get(img, SB_OFF + o, f) for k, (o, f) in SB.items()}
        self.bs = 1024 << self.sb["log_block_size"]
        self.blocks = self.sb["blocks_count"]
        self.groups = -(-(self.blocks - self.sb["first_data_block"]) // self.sb["blocks_per_group"])
        self.gdt_block = self.sb["first_data_block"] + 1
        self.gd = [{k: _get(img, self.gd_off(g) + o, f) for k, (o, f) in GD.items()}
                   for g in range(self.groups)]
        self.isz = self.sb["inode_size"]
        self.files: dict[str, FileInfo] = {}
        self.dirent_at: dict[str, tuple[int, int, int]] = {}   # path -> (block, offset, length)
        self._walk(2, "/")

    # addresses -------------------------------------------------------------------------------
    def gd_off(self, group: int) -> int:
        return self.gdt_block * self.bs + group * GD_SIZE

    def inode_off(self, ino: int) -> int:
        g, i = divmod(ino - 1, self.sb["inodes_per_group"])
        return self.gd[g]["inode_table"] * self.bs + i * self.isz

    def block(self, n: int) -> bytes:
        return self.img[n * self.bs:(n + 1) * self.bs]

    def ptrs(self, n: int) -> list[int]:
        return list(struct.unpack_from(f"<{self.bs // 4}I", self.img, n * self.bs))

    def inode_table_blocks(self, group: int) -> int:
        return -(-self.sb["inodes_per_group"] * self.isz // self.bs)

    # files -------------------------------------------------------------------------------------
    def _file(self, path: str, ino: int) -> FileInfo:
        off = self.inode_off(ino)
        size = _get(self.img, off + 4, "I") | _get(self.img, off + 108, "I") << 32
        mode = _get(self.img, off, "H")
        blk = list(struct.unpack_from("<15I", self.img, off + I_BLOCK))
        f = FileInfo(path, ino, mode, size)
        if (mode & S_IFMT) == S_IFLNK and size < 60:
            return f                                    # a fast symlink: the target is in i_block
        nblocks = -(-size // self.bs)
        f.data = [b for b in blk[:N_DIRECT] if b]
        f.ind, f.dind = blk[IND], blk[DIND]
        if f.ind:
            f.data += [b for b in self.ptrs(f.ind) if b]
        if f.dind:
            f.dind_children = [b for b in self.ptrs(f.dind) if b]
            for c in f.dind_children:
                f.data += [b for b in self.ptrs(c) if b]
        assert len(f.data) <= nblocks
        return f

    def entries(self, dir_block: int):
        """(offset in the block, inode, rec_len, name_len, file_type, name) of every record."""
        buf, off = self.block(dir_block), 0
        while off < self.bs:
            ino, rec_len, name_len, ftype = struct.unpack_from("<IHBB", buf, off)
            yield off, ino, rec_len, name_len, ftype, bytes(buf[off + 8:off + 8 + name_len])
            off += rec_len

    def _walk(self, ino: int, path: str) -> None:
        f = self.files[path] = self._file(path, ino)
        if (f.mode & S_IFMT) != S_IFDIR:
            return
        for b in f.data:
            for off, child, _, name_len, _, name in self.entries(b):
                if child and name not in (b".", b".."):
                    cpath = path.rstrip("/") + "/" + name.decode()
                    if cpath not in self.files:
                        self.dirent_at[cpath] = (b, off, 8 + name_len)
                        self._walk(child, cpath)

    # bitmaps -------------------------------------------------------------------------------------
    def block_bit(self, n: int) -> tuple[int, int]:
        """(byte offset in the image, bit) of block n's bit in its group's block bitmap."""
        g, i = divmod(n - self.sb["first_data_block"], self.sb["blocks_per_group"])
        return self.gd[g]["block_bitmap"] * self.bs + i // 8, i % 8

    def inode_bit(self, ino: int) -> tuple[int, int]:
        g, i = divmod(ino - 1, self.sb["inodes_per_group"])
        return self.gd[g]["inode_bitmap"] * self.bs + i // 8, i % 8

    def free_inode(self) -> int:
        """The highest inode of group 0 that is not in use (no one will allocate it first)."""
        for ino in range(self.sb["inodes_per_group"], self.sb["first_ino"], -1):
            off, bit = self.inode_bit(ino)
            if not self.img[off] >> bit & 1:
                return ino
        raise AssertionError("no free inode in group 0")


@dataclass
class Corruption:
    """A named change to the image; `victim` is what the drive deletes (the corrupted file,
    where deleting it is a test of its own; otherwise an undamaged file)."""
    name: str
    apply: Callable[[bytearray, Layout], None]
    victim: str = "/d1/d2/b"


# the base image's population (made through a simfs mount; tests/mount/test_corruption_corpus.py) --
BIGDIR_FILES = 150


def population() -> list[tuple[str, object]]:
    """(path, what): "dir", bytes (a regular file), ("symlink", target), ("link", existing path).
    Sizes on 1 KiB blocks: 12 direct blocks, a single indirect (/ind), a double indirect (/dind,
    /sparse), a directory of several blocks (/bigdir), a fast and a slow symbolic link."""
    rnd = random.Random(20261128)

    def data(n: int) -> bytes:
        return rnd.randbytes(n)

    out: list[tuple[str, object]] = [
        ("/d1", "dir"), ("/d1/d2", "dir"), ("/d1/d2/d3", "dir"), ("/bigdir", "dir"),
        ("/small.txt", b"hello, corrupted world\n" * 4),
        ("/d1/a", data(1024)), ("/d1/d2/b", data(5000)), ("/d1/d2/d3/c", data(3000)),
        ("/direct", data(12 * 1024)), ("/ind", data(200 * 1024)), ("/dind", data(600 * 1024)),
        ("/sparse", ("sparse", 3 << 20, data(2048))),
        ("/d1/fastlink", ("symlink", "../small.txt")),
        ("/slowlink", ("symlink", "d1/d2/" + "x" * 70 + "/../../../small.txt")),
        ("/d1/d2/hard", ("link", "/small.txt")),
    ]
    for i in range(BIGDIR_FILES):
        out.append((f"/bigdir/entry-{i:04d}-{'n' * (i % 17)}", data(i % 5 * 300)))
    return out


# the corpus -------------------------------------------------------------------------------------
def _sb(field_name: str, value):
    o, f = SB[field_name]

    def apply(buf, L):
        v = value(L) if callable(value) else value
        _put(buf, SB_OFF + o, f, v & ((1 << (8 * struct.calcsize(f))) - 1) if f.isupper() else v)
    return apply


def _gd(group: int, field_name: str, value):
    o, f = GD[field_name]

    def apply(buf, L):
        _put(buf, L.gd_off(group) + o, f, value(L) if callable(value) else value)
    return apply


def _ino(path: str, field_name: str, value):
    o, f = INO[field_name]

    def apply(buf, L):
        ino = path if isinstance(path, int) else L.files[path].ino
        v = value(L) if callable(value) else value
        _put(buf, L.inode_off(ino) + o, f, v)
    return apply


def _iblock(path: str, index: int, value):
    def apply(buf, L):
        _put(buf, L.inode_off(L.files[path].ino) + I_BLOCK + 4 * index, "I",
             value(L) if callable(value) else value)
    return apply


def _size(path: str, size: int):
    def apply(buf, L):
        off = L.inode_off(L.files[path].ino)
        _put(buf, off + 4, "I", size & 0xFFFFFFFF)
        _put(buf, off + 108, "I", size >> 32)
    return apply


def _ptr(block_of, index: int, value):
    """Entry `index` of a block-map block (block_of(L) gives its number) set to value."""
    def apply(buf, L):
        _put(buf, block_of(L) * L.bs + 4 * index, "I", value(L) if callable(value) else value)
    return apply


def _both(*fs):
    def apply(buf, L):
        for f in fs:
            f(buf, L)
    return apply


def _random_bytes(where, length: int, seed: int):
    """`length` seeded random bytes at where(L) (an image offset)."""
    def apply(buf, L):
        off = where(L)
        buf[off:off + length] = random.Random(seed).randbytes(length)
    return apply


def _fill(where, length, byte: int):
    def apply(buf, L):
        off = where(L)
        n = length(L) if callable(length) else length
        buf[off:off + n] = bytes([byte]) * n
    return apply


def _clear_block_bits(blocks_of):
    """Mark blocks free in their bitmap (the descriptors' and superblock's counts unchanged:
    the bitmap disagrees with them, as a kernel sees when it loads the bitmap)."""
    def apply(buf, L):
        for b in blocks_of(L):
            off, bit = L.block_bit(b)
            buf[off] &= ~(1 << bit) & 0xFF
    return apply


def _set_block_bits(blocks_of):
    def apply(buf, L):
        for b in blocks_of(L):
            off, bit = L.block_bit(b)
            buf[off] |= 1 << bit
    return apply


def _clear_inode_bits(inos_of):
    def apply(buf, L):
        for i in inos_of(L):
            off, bit = L.inode_bit(i)
            buf[off] &= ~(1 << bit) & 0xFF
    return apply


def _dirent(dir_path: str, which, field_name: str, value, block_index: int = 0):
    """Change one field of a directory record: which = a name (bytes) or a record index.
    Fields: inode (u32 @0), rec_len (u16 @4), name_len (u8 @6), file_type (u8 @7)."""
    o, f = {"inode": (0, "I"), "rec_len": (4, "H"), "name_len": (6, "B"), "file_type": (7, "B")}[field_name]

    def apply(buf, L):
        blk = L.files[dir_path].data[block_index]
        recs = list(L.entries(blk))
        rec = next(r for r in recs if r[5] == which) if isinstance(which, bytes) else recs[which]
        _put(buf, blk * L.bs + rec[0] + o, f, value(L) if callable(value) else value)
    return apply


def _last_entry(dir_path: str, field_name: str, value, block_index: int = 0):
    def apply(buf, L):
        n = len(list(L.entries(L.files[dir_path].data[block_index])))
        _dirent(dir_path, n - 1, field_name, value, block_index)(buf, L)
    return apply


def corpus(L: Layout) -> list[Corruption]:
    """The corruptions of the image L describes: names unique, order and content fixed."""
    c: list[Corruption] = []

    def add(name, apply, victim="/d1/d2/b"):
        c.append(Corruption(name, apply, victim))

    beyond = L.blocks + 100                             # past the end of the file system
    itab0 = lambda L: L.gd[0]["inode_table"]            # noqa: E731
    itab1 = lambda L: L.gd[1]["inode_table"] + 1        # noqa: E731
    bbm0 = lambda L: L.gd[0]["block_bitmap"]            # noqa: E731
    file_block = lambda path, i=0: (lambda L: L.files[path].data[i])   # noqa: E731
    ind_of = lambda path: (lambda L: L.files[path].ind)                 # noqa: E731
    dind_of = lambda path: (lambda L: L.files[path].dind)               # noqa: E731
    dind_child = lambda path, i=0: (lambda L: L.files[path].dind_children[i])  # noqa: E731

    # superblock ------------------------------------------------------------------------------
    add("sb-magic-zero", _sb("magic", 0))
    add("sb-inodes-count-plus-one", _sb("inodes_count", lambda L: L.sb["inodes_count"] + 1))
    add("sb-blocks-count-double", _sb("blocks_count", lambda L: L.blocks * 2))
    add("sb-blocks-count-short", _sb("blocks_count", lambda L: L.blocks - 300))
    add("sb-blocks-count-zero", _sb("blocks_count", 0))
    add("sb-free-blocks-zero", _sb("free_blocks_count", 0))
    add("sb-free-blocks-all", _sb("free_blocks_count", lambda L: L.blocks - 1))
    add("sb-free-inodes-zero", _sb("free_inodes_count", 0))
    add("sb-reserved-blocks-all", _sb("r_blocks_count", lambda L: L.blocks))
    add("sb-first-data-block-zero", _sb("first_data_block", 0))
    add("sb-log-block-size-4k", _sb("log_block_size", 2))
    add("sb-log-block-size-huge", _sb("log_block_size", 30))
    add("sb-log-frag-size-differs", _sb("log_frag_size", 3))
    add("sb-blocks-per-group-zero", _sb("blocks_per_group", 0))
    add("sb-blocks-per-group-plus-8", _sb("blocks_per_group", lambda L: L.sb["blocks_per_group"] + 8))
    add("sb-inodes-per-group-zero", _sb("inodes_per_group", 0))
    add("sb-inodes-per-group-doubled-with-count",
        _both(_sb("inodes_per_group", lambda L: L.sb["inodes_per_group"] * 2),
              _sb("inodes_count", lambda L: L.sb["inodes_count"] * 2)))
    add("sb-state-errors", _sb("state", 2))
    add("sb-state-not-clean", _sb("state", 0))
    add("sb-errors-panic", _sb("errors", 3))
    add("sb-rev-level-zero", _sb("rev_level", 0))
    add("sb-rev-level-five", _sb("rev_level", 5))
    add("sb-first-ino-zero", _sb("first_ino", 0))
    add("sb-first-ino-beyond-inodes", _sb("first_ino", lambda L: L.sb["inodes_count"] + 5))
    add("sb-inode-size-zero", _sb("inode_size", 0))
    add("sb-inode-size-odd", _sb("inode_size", 129))
    add("sb-inode-size-block", _sb("inode_size", lambda L: L.bs * 2))
    add("sb-incompat-unknown-bit", _sb("feature_incompat", lambda L: L.sb["feature_incompat"] | 0x80000000))
    add("sb-incompat-extents", _sb("feature_incompat", lambda L: L.sb["feature_incompat"] | 0x40))
    add("sb-incompat-no-filetype", _sb("feature_incompat", lambda L: L.sb["feature_incompat"] & ~0x2))
    add("sb-rocompat-unknown-bit", _sb("feature_ro_compat", lambda L: L.sb["feature_ro_compat"] | 0x80000000))
    add("sb-rocompat-no-large-file", _sb("feature_ro_compat", lambda L: L.sb["feature_ro_compat"] & ~0x2))
    add("sb-compat-journal-without-one", _sb("feature_compat", lambda L: L.sb["feature_compat"] | 0x4))
    add("sb-reserved-gdt-huge", _sb("reserved_gdt_blocks", 4000))
    add("sb-hash-version-bogus", _sb("def_hash_version", 99))
    add("sb-zeroed", _fill(lambda L: SB_OFF, 1024, 0))
    for seed in (1, 2, 3):
        add(f"sb-random-head-seed{seed}", _random_bytes(lambda L: SB_OFF, 104, seed))

    # group descriptors ---------------------------------------------------------------------------
    add("gd0-block-bitmap-zero", _gd(0, "block_bitmap", 0))
    add("gd0-block-bitmap-superblock", _gd(0, "block_bitmap", 1))
    add("gd0-block-bitmap-in-inode-table", _gd(0, "block_bitmap", lambda L: L.gd[0]["inode_table"] + 2))
    add("gd0-block-bitmap-beyond-fs", _gd(0, "block_bitmap", beyond))
    add("gd0-block-bitmap-on-file-data", _gd(0, "block_bitmap", lambda L: L.files["/direct"].data[0]))
    add("gd0-inode-bitmap-is-block-bitmap", _gd(0, "inode_bitmap", lambda L: L.gd[0]["block_bitmap"]))
    add("gd0-inode-bitmap-beyond-fs", _gd(0, "inode_bitmap", 0x7FFFFFFF))
    add("gd0-inode-table-zero", _gd(0, "inode_table", 0))
    add("gd0-inode-table-in-data", _gd(0, "inode_table", lambda L: L.files["/dind"].data[0]))
    add("gd0-inode-table-runs-off-fs", _gd(0, "inode_table", lambda L: L.blocks - 3))
    add("gd1-inode-table-is-gd0s", _gd(1, "inode_table", lambda L: L.gd[0]["inode_table"]))
    add("gd1-block-bitmap-is-gd0s", _gd(1, "block_bitmap", lambda L: L.gd[0]["block_bitmap"]))
    add("gd0-free-blocks-zero", _gd(0, "free_blocks", 0))
    add("gd1-free-blocks-plus-500", _gd(1, "free_blocks", lambda L: L.gd[1]["free_blocks"] + 500))
    add("gd0-free-inodes-zero", _gd(0, "free_inodes", 0))
    add("gd0-free-inodes-all", _gd(0, "free_inodes", lambda L: L.sb["inodes_per_group"]))
    add("gd0-used-dirs-huge", _gd(0, "used_dirs", 60000))
    add("gd0-flags-uninit", _gd(0, "flags", 0x3))
    for seed in (1, 2):
        add(f"gd-random-seed{seed}", _random_bytes(lambda L: L.gd_off(0), 2 * GD_SIZE, seed))

    # block bitmaps -------------------------------------------------------------------------------
    add("bbm-4-bytes-of-file-data-free",                 # issue 38 item 2
        _clear_block_bits(lambda L: L.files["/dind"].data[100:132]))
    add("bbm-inode-table-free", _clear_block_bits(lambda L: range(itab0(L), itab0(L) + L.inode_table_blocks(0))))
    add("bbm-bitmaps-free", _clear_block_bits(lambda L: [bbm0(L), L.gd[0]["inode_bitmap"]]))
    add("bbm-superblock-and-gdt-free", _clear_block_bits(lambda L: [1, L.gdt_block]))
    add("bbm-indirect-blocks-free",
        _clear_block_bits(lambda L: [L.files["/ind"].ind, L.files["/dind"].dind] + L.files["/dind"].dind_children))
    add("bbm-directory-blocks-free", _clear_block_bits(lambda L: L.files["/bigdir"].data + L.files["/"].data))
    add("bbm-group0-all-free", _fill(lambda L: bbm0(L) * L.bs, lambda L: L.sb["blocks_per_group"] // 8, 0))
    add("bbm-group1-all-used", _fill(lambda L: L.gd[1]["block_bitmap"] * L.bs,
                                     lambda L: L.sb["blocks_per_group"] // 8, 0xFF))
    add("bbm-group1-tail-padding-free",               # the bits past the file system's last block
        _fill(lambda L: L.gd[1]["block_bitmap"] * L.bs + (L.blocks - 1 - L.sb["blocks_per_group"]) // 8 + 1,
              lambda L: L.bs - (L.blocks - 1 - L.sb["blocks_per_group"]) // 8 - 1, 0))
    add("bbm-free-blocks-marked-used", _set_block_bits(lambda L: range(L.blocks - 400, L.blocks - 200)))
    for seed in (1, 2, 3):
        add(f"bbm-random-seed{seed}", _random_bytes(lambda L: bbm0(L) * L.bs, 64, seed))

    # inode bitmaps -------------------------------------------------------------------------------
    add("ibm-file-inode-free", _clear_inode_bits(lambda L: [L.files["/small.txt"].ino]))
    add("ibm-dir-inode-free", _clear_inode_bits(lambda L: [L.files["/d1"].ino]))
    add("ibm-root-inode-free", _clear_inode_bits(lambda L: [2]))
    add("ibm-reserved-inodes-free", _clear_inode_bits(lambda L: range(1, 11)))
    add("ibm-bigdir-inodes-free", _clear_inode_bits(
        lambda L: [f.ino for p, f in L.files.items() if p.startswith("/bigdir/")][:40]))
    add("ibm-group0-all-used", _fill(lambda L: L.gd[0]["inode_bitmap"] * L.bs,
                                     lambda L: L.sb["inodes_per_group"] // 8, 0xFF))
    for seed in (1, 2):
        add(f"ibm-random-seed{seed}", _random_bytes(lambda L: L.gd[0]["inode_bitmap"] * L.bs, 32, seed))

    # inode table: a regular file ---------------------------------------------------------------
    F = "/direct"
    add("ino-size-7eib", _size(F, 7 << 60), victim=F)                    # issue 38 item 5
    add("ino-size-zero", _size(F, 0))
    add("ino-size-64mib-sparse", _size(F, (64 << 20) + 123))
    add("ino-size-beyond-maxbytes", _size(F, 1 << 40), victim=F)
    add("ino-links-zero", _ino(F, "links", 0), victim=F)
    add("ino-links-65535", _ino(F, "links", 65535))
    add("ino-mode-zero", _ino(F, "mode", 0), victim=F)
    add("ino-mode-dir-on-file-data", _ino(F, "mode", S_IFDIR | 0o755), victim=F)
    add("ino-mode-bad-type", _ino(F, "mode", 0o170644), victim=F)
    add("ino-mode-symlink-slow", _ino(F, "mode", S_IFLNK | 0o777))
    add("ino-block0-zero", _iblock(F, 0, 0))
    add("ino-block0-superblock", _iblock(F, 0, 1), victim=F)
    add("ino-block0-gdt", _iblock(F, 0, lambda L: L.gdt_block), victim=F)
    add("ino-block0-block-bitmap", _iblock(F, 0, bbm0), victim=F)
    add("ino-block0-inode-table", _iblock(F, 0, itab0), victim=F)   # issue 38 item 3
    add("ino-block5-inode-table-group1", _iblock(F, 5, itab1), victim=F)
    add("ino-block0-last-block-plus-one", _iblock(F, 0, lambda L: L.blocks), victim=F)
    add("ino-block0-beyond-fs", _iblock(F, 0, beyond), victim=F)
    add("ino-block0-0x7fffffff", _iblock(F, 0, 0x7FFFFFFF), victim=F)
    add("ino-block0-0xffffffff", _iblock(F, 0, 0xFFFFFFFF), victim=F)
    add("ino-block0-another-files-data", _iblock(F, 0, file_block("/ind", 3)))
    add("ino-blocks-zero", _ino(F, "blocks_lo", 0))
    add("ino-blocks-huge", _ino(F, "blocks_lo", 0xFFFFFFF0))
    add("ino-flags-extents", _ino(F, "flags", EXT4_EXTENTS_FL), victim=F)
    add("ino-flags-index-on-file", _ino(F, "flags", EXT2_INDEX_FL))
    add("ino-flags-immutable", _ino(F, "flags", EXT2_IMMUTABLE_FL))
    add("ino-flags-all-ones", _ino(F, "flags", 0xFFFFFFFF), victim=F)
    add("ino-dtime-on-live-file", _ino(F, "dtime", 1_700_000_000))
    add("ino-file-acl-beyond-fs", _ino(F, "file_acl", beyond), victim=F)
    add("ino-file-acl-inode-table", _ino(F, "file_acl", itab0), victim=F)
    add("ino-file-acl-on-file-data", _ino(F, "file_acl", file_block("/ind", 7)))
    add("ino-zeroed", _fill(lambda L: L.inode_off(L.files[F].ino), lambda L: L.isz, 0), victim=F)
    add("ino-random-seed1", _random_bytes(lambda L: L.inode_off(L.files[F].ino), 128, 1), victim=F)

    # inode table: indirect files -----------------------------------------------------------------
    add("ind-pointer-0x7fffffff", _iblock("/ind", IND, 0x7FFFFFFF), victim="/ind")
    add("ind-pointer-beyond-fs", _iblock("/ind", IND, beyond), victim="/ind")
    add("ind-pointer-inode-table", _iblock("/ind", IND, itab0), victim="/ind")
    add("ind-pointer-gdt", _iblock("/ind", IND, lambda L: L.gdt_block), victim="/ind")
    add("ind-pointer-own-data-block", _iblock("/ind", IND, file_block("/ind", 0)))
    add("dind-pointer-beyond-fs", _iblock("/dind", DIND, beyond), victim="/dind")
    add("dind-pointer-is-ind", _iblock("/dind", DIND, ind_of("/dind")))
    add("dind-pointer-inode-bitmap", _iblock("/dind", DIND, lambda L: L.gd[0]["inode_bitmap"]), victim="/dind")
    add("tind-pointer-beyond-fs", _iblock("/dind", TIND, beyond), victim="/dind")
    add("sparse-size-7eib", _size("/sparse", 7 << 60))

    # inode table: directories and links ------------------------------------------------------------
    D = "/d1"
    add("dir-size-zero", _size(D, 0), victim=D)
    add("dir-size-not-block-multiple", _size(D, 1000))
    add("dir-size-64mib", _size(D, 64 << 20))
    add("dir-size-7eib", _size("/bigdir", 7 << 60))
    add("dir-block0-zero", _iblock(D, 0, 0), victim=D)
    add("dir-block0-beyond-fs", _iblock(D, 0, beyond), victim=D)
    add("dir-block0-inode-table", _iblock(D, 0, itab0), victim=D)
    add("dir-block0-0x7fffffff", _iblock(D, 0, 0x7FFFFFFF), victim=D)
    add("dir-mode-regular", _ino(D, "mode", S_IFREG | 0o644), victim=D)
    add("dir-links-zero", _ino(D, "links", 0))
    add("bigdir-block1-is-d1s-block", _iblock("/bigdir", 1, file_block(D)))
    add("bigdir-block2-beyond-fs", _iblock("/bigdir", 2, beyond), victim="/bigdir")
    add("bigdir-block1-is-bigdirs-block0", _iblock("/bigdir", 1, file_block("/bigdir", 0)))
    add("root-mode-regular", _ino(2, "mode", S_IFREG | 0o755))
    add("root-size-zero", _size("/", 0))
    add("root-block0-inode-table", _iblock("/", 0, itab0))
    add("root-links-zero", _ino(2, "links", 0))
    add("root-zeroed", _fill(lambda L: L.inode_off(2), lambda L: L.isz, 0))
    add("lost+found-mode-zero", _ino("/lost+found", "mode", 0))
    add("fastlink-size-200", _size("/d1/fastlink", 200), victim="/d1/fastlink")
    add("fastlink-size-zero", _size("/d1/fastlink", 0))
    add("slowlink-block-beyond-fs", _iblock("/slowlink", 0, beyond), victim="/slowlink")
    add("slowlink-size-5000", _size("/slowlink", 5000), victim="/slowlink")

    # directory blocks ------------------------------------------------------------------------------
    add("de-root-dot-rec-len-zero", _dirent("/", b".", "rec_len", 0))
    add("de-root-dot-rec-len-odd", _dirent("/", b".", "rec_len", 13))
    add("de-root-rec-len-past-block", _dirent("/", b"..", "rec_len", lambda L: L.bs))
    add("de-root-last-rec-len-short", _last_entry("/", "rec_len", 12))
    add("de-root-name-len-past-record", _dirent("/", 2, "name_len", 255))
    add("de-root-dotdot-inode-beyond", _dirent("/", b"..", "inode", 99999))
    add("de-d1-dot-inode-zero", _dirent("/d1", b".", "inode", 0))
    add("de-d1-dotdot-is-d3", _dirent("/d1", b"..", "inode", lambda L: L.files["/d1/d2/d3"].ino))
    add("de-bigdir-unused-inode-early",                                   # issue 38 item 4
        _dirent("/bigdir", 3, "inode", lambda L: L.free_inode()))
    add("de-bigdir-inode-beyond-count", _dirent("/bigdir", 5, "inode", lambda L: L.sb["inodes_count"] + 7))
    add("de-bigdir-inode-0xffffffff", _dirent("/bigdir", 6, "inode", 0xFFFFFFFF))
    add("de-bigdir-inode-one", _dirent("/bigdir", 7, "inode", 1))
    add("de-bigdir-inode-reserved-7", _dirent("/bigdir", 8, "inode", 7))
    add("de-bigdir-name-len-zero", _dirent("/bigdir", 9, "name_len", 0))
    add("de-bigdir-type-dir-for-file", _dirent("/bigdir", 10, "file_type", FT_DIR))
    add("de-bigdir-type-bogus", _dirent("/bigdir", 11, "file_type", 9))
    add("de-d1-file-type-symlink-for-dir", _dirent("/d1", b"d2", "file_type", FT_LNK))
    add("de-d3-entry-is-d1-cycle", _dirent("/d1/d2/d3", b"c", "inode", lambda L: L.files["/d1"].ino))
    add("de-bigdir-name-with-slash", _name_byte("/bigdir", 4, 3, ord("/")))
    add("de-bigdir-name-with-nul", _name_byte("/bigdir", 14, 2, 0))
    add("de-bigdir-duplicate-name", _dup_name("/bigdir", 12, 13))
    add("de-bigdir-block1-zeroed", _fill(lambda L: L.files["/bigdir"].data[1] * L.bs, lambda L: L.bs, 0))
    add("de-bigdir-block1-ones", _fill(lambda L: L.files["/bigdir"].data[1] * L.bs, lambda L: L.bs, 0xFF))
    add("de-bigdir-block2-mid-rec-len-zero", _dirent("/bigdir", 5, "rec_len", 0, block_index=2))
    add("de-bigdir-block2-rec-len-loops-back",
        _dirent("/bigdir", 6, "rec_len", 4, block_index=2))
    add("de-bigdir-block2-rec-len-runs-off",          # issue 51 item 9: later blocks still found
        _rec_len_past_block("/bigdir", 6, block_index=2))
    for seed in (1, 2, 3):
        add(f"de-bigdir-random-seed{seed}",
            _random_bytes(lambda L, s=seed: L.files["/bigdir"].data[1 + s % 3] * L.bs + 100, 48, seed))

    # indirect blocks ---------------------------------------------------------------------------------
    add("indblk-entry-0x7fffffff", _ptr(ind_of("/ind"), 5, 0x7FFFFFFF), victim="/ind")
    add("indblk-entry-beyond-fs", _ptr(ind_of("/ind"), 5, beyond), victim="/ind")
    add("indblk-entry-inode-table", _ptr(ind_of("/ind"), 5, itab0), victim="/ind")
    add("indblk-entry-block-bitmap", _ptr(ind_of("/ind"), 0, bbm0), victim="/ind")
    add("indblk-entry-superblock", _ptr(ind_of("/ind"), 1, 1), victim="/ind")
    add("indblk-entry-self-loop", _ptr(ind_of("/ind"), 2, ind_of("/ind")))
    add("indblk-entry-other-files-data", _ptr(ind_of("/ind"), 3, file_block("/direct", 2)))
    add("indblk-zeroed", _fill(lambda L: L.files["/ind"].ind * L.bs, lambda L: L.bs, 0))
    add("indblk-random-seed1", _random_bytes(lambda L: L.files["/ind"].ind * L.bs, 256, 1), victim="/ind")
    add("dindblk-entry-self-loop", _ptr(dind_of("/dind"), 0, dind_of("/dind")), victim="/dind")
    add("dindblk-entry-is-ind-of-other", _ptr(dind_of("/dind"), 1, ind_of("/ind")))
    add("dindblk-entry-beyond-fs", _ptr(dind_of("/dind"), 0, beyond), victim="/dind")
    add("dindblk-entry-0x7fffffff", _ptr(dind_of("/dind"), 1, 0x7FFFFFFF), victim="/dind")
    add("dindblk-child-points-to-dind", _ptr(dind_child("/dind"), 0, dind_of("/dind")), victim="/dind")
    add("dindblk-child-entry-inode-table", _ptr(dind_child("/dind"), 4, itab0), victim="/dind")
    add("dindblk-all-ones", _fill(lambda L: L.files["/dind"].dind * L.bs, lambda L: L.bs, 0xFF), victim="/dind")
    add("sparse-dind-entry-beyond-fs", _ptr(dind_of("/sparse"), 2, beyond), victim="/sparse")
    add("sparse-child-entry-gdt", _ptr(dind_child("/sparse"), 0, lambda L: L.gdt_block), victim="/sparse")

    names = [x.name for x in c]
    assert len(names) == len(set(names)), "corruption names must be unique"
    return c


def _rec_len_past_block(dir_path: str, record: int, block_index: int = 0):
    """Record `record`'s rec_len runs 4 bytes past the end of its block: ext4's search walks off
    the block there (no rec_len of 0 met) and goes on to the next block."""
    def apply(buf, L):
        blk = L.files[dir_path].data[block_index]
        off = list(L.entries(blk))[record][0]
        _put(buf, blk * L.bs + off + 4, "H", L.bs - off + 4)
    return apply


def _dup_name(dir_path: str, keep: int, copy_to: int):
    """Record copy_to gets record keep's name (same length: names differ only in their digits)."""
    def apply(buf, L):
        blk = L.files[dir_path].data[0]
        recs = list(L.entries(blk))
        a, b = recs[keep], recs[copy_to]
        n = min(a[3], b[3])
        base = blk * L.bs
        buf[base + b[0] + 8:base + b[0] + 8 + n] = buf[base + a[0] + 8:base + a[0] + 8 + n]
        _put(buf, base + b[0] + 6, "B", n)
    return apply


def _name_byte(dir_path: str, record: int, at: int, byte: int):
    """Byte `at` of record `record`'s name in the directory's first block set to `byte`."""
    def apply(buf, L):
        blk = L.files[dir_path].data[0]
        off = list(L.entries(blk))[record][0]
        buf[blk * L.bs + off + 8 + at] = byte
    return apply


def corrupted(img: bytes, L: Layout, corruption: Corruption) -> bytearray:
    buf = bytearray(img)
    corruption.apply(buf, L)
    assert buf != img, f"{corruption.name} changed nothing"
    return buf


# flex_bg group descriptors (issue 51 item 11) -----------------------------------------------------
#: the base: an empty ext4-profile image whose eight groups' tables all lie in group 0 (one flex
#: group), made by simfs's mkfs with these arguments (the `simfs mkfs` options, the same in-process)
FLEX_MKFS = {"size": 8 << 20, "block_size": 1024, "blocks_per_group": 1024, "profile": "ext4",
             "uuid": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
             "hash_seed": "00000000-0000-0000-0000-000000000001"}


class GroupTables:
    """The superblock and group descriptors of an image (any profile without 64bit: 32-byte
    descriptors), read by the corpus's own parser; where each group's tables and copies lie."""

    def __init__(self, img: bytes):
        self.sb = {k: _get(img, SB_OFF + o, f) for k, (o, f) in SB.items()}
        self.bs = 1024 << self.sb["log_block_size"]
        self.blocks = self.sb["blocks_count"]
        self.groups = -(-(self.blocks - self.sb["first_data_block"]) // self.sb["blocks_per_group"])
        self.gdt_block = self.sb["first_data_block"] + 1
        self.gd = [{k: _get(img, self.gd_off(g) + o, f) for k, (o, f) in GD.items()} for g in range(self.groups)]
        self.itb = -(-self.sb["inodes_per_group"] * self.sb["inode_size"] // self.bs)

    def gd_off(self, group: int) -> int:
        return self.gdt_block * self.bs + group * GD_SIZE

    def group_start(self, group: int) -> int:
        return self.sb["first_data_block"] + group * self.sb["blocks_per_group"]


@dataclass
class DescCase:
    """A descriptor corruption and what the kernel's ext4 answered to a read-write loop mount
    of it ("refused" or "mounted"; recorded by tests/mount/test_corruption_corpus.py's
    test_flex_descriptor_kernel, which checks the record against the running kernel)."""
    name: str
    apply: Callable[[bytearray, GroupTables], None]
    kernel: str


def flex_descriptor_corpus() -> list[DescCase]:
    """Descriptors of a flex_bg image that point one group's bitmap or inode table at another
    group's tables, at a backup superblock or descriptor table, or at free blocks. The kernel
    refuses an overlap at mount (ext4_setup_system_zone: add_system_zone's "unexpected overlap",
    EFSCORRUPTED); tables moved to free blocks overlap nothing and mount."""
    it = lambda g: (lambda T: T.gd[g]["inode_table"])          # noqa: E731
    bb = lambda g: (lambda T: T.gd[g]["block_bitmap"])         # noqa: E731
    ib = lambda g: (lambda T: T.gd[g]["inode_bitmap"])         # noqa: E731
    plus = lambda f, n: (lambda T: f(T) + n)                   # noqa: E731
    start = lambda g, n=0: (lambda T: T.group_start(g) + n)    # noqa: E731
    cases = [
        DescCase("flex-gd1-inode-table-is-gd0s", _gd(1, "inode_table", it(0)), "refused"),
        DescCase("flex-gd1-block-bitmap-is-gd0s", _gd(1, "block_bitmap", bb(0)), "refused"),
        DescCase("flex-gd1-inode-bitmap-is-gd0s", _gd(1, "inode_bitmap", ib(0)), "refused"),
        DescCase("flex-gd2-block-bitmap-is-gd1s-inode-bitmap", _gd(2, "block_bitmap", ib(1)), "refused"),
        DescCase("flex-gd3-block-bitmap-in-gd0s-inode-table", _gd(3, "block_bitmap", plus(it(0), 5)), "refused"),
        DescCase("flex-gd4-inode-table-half-over-gd3s", _gd(4, "inode_table", plus(it(3), 16)), "refused"),
        DescCase("flex-gd7-inode-table-over-the-bitmaps", _gd(7, "inode_table", bb(0)), "refused"),
        DescCase("flex-gd1-block-bitmap-on-group1-backup-superblock", _gd(1, "block_bitmap", start(1)), "refused"),
        DescCase("flex-gd5-inode-bitmap-on-group5-backup-descriptors", _gd(5, "inode_bitmap", start(5, 1)), "refused"),
        DescCase("flex-gd6-inode-table-over-group7-backup", _gd(6, "inode_table", start(7, -10)), "refused"),
        DescCase("flex-gd2-inode-table-moved-to-free-blocks", _gd(2, "inode_table", start(5, 800)), "mounted"),
        DescCase("flex-gd1-block-bitmap-on-group2s-first-block", _gd(1, "block_bitmap", start(2)), "mounted"),
    ]
    assert len({c.name for c in cases}) == len(cases), "corruption names must be unique"
    return cases


def desc_corrupted(img: bytes, case: DescCase) -> bytearray:
    buf = bytearray(img)
    case.apply(buf, GroupTables(img))
    assert buf != img, f"{case.name} changed nothing"
    return buf
