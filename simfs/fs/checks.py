"""What a corrupted image may not make simfs do, checked as the kernel's ext2/ext4 check it.

simfs parses images users hand it, as root. A block number read from an inode or an indirect
block is used only if it lies inside the file system and outside the metadata zones (the
superblock copies, descriptor tables, bitmaps and inode tables: ext4's block_validity,
ext4_inode_block_valid); an inode is used only if its type, size and block count can be true
(ext4's __ext4_iget checks); a directory entry only if it names an inode that can be live.
Anything else is an inconsistency: it is reported (the volume records it in the superblock's
error state, as ext4's __ext4_error -> save_error_info does) and the operation gets EUCLEAN
("Structure needs cleaning"), or the bad part is skipped where the kernel skips it.

The metadata zones are computed once, as a numpy bool per block (`meta`); the per-block test
on the data path is two integer comparisons and one index.
"""

import errno
import stat

import numpy as np

from simfs.errors import FSError
from simfs.ondisk.constants import FIRST_INO, ROOT_INO

EUCLEAN = errno.EUCLEAN       # 117: what ext4 answers for EFSCORRUPTED

_FILE_TYPES = frozenset((stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK, stat.S_IFCHR, stat.S_IFBLK,
                         stat.S_IFIFO, stat.S_IFSOCK))


def metadata_zones(geo, descs) -> np.ndarray:
    """A bool per block: True for blocks before the first data block, each group's superblock
    copy and descriptor table (with its reserved blocks), bitmaps and inode table."""
    meta = np.zeros(geo.blocks_count, dtype=bool)
    meta[: geo.first_data_block] = True
    for g, d in enumerate(descs):
        start = geo.group_start(g)
        meta[start:start + geo.super_and_gdt_blocks(g)] = True
        meta[d.block_bitmap] = meta[d.inode_bitmap] = True
        meta[d.inode_table:d.inode_table + geo.inode_table_blocks] = True
    return meta


class Checks:
    """The volume's checks on what it reads, and the channel that reports what fails them.

    `report(what, ino, block, func)` is the volume's error recorder (handed down: no layer
    calls up); until the volume sets it, reports are kept in `pending` (those found while
    the image is opened, recorded once it is)."""

    def __init__(self, geo, descs, max_size: int = 1 << 63):
        self.geo = geo
        self.nblocks = geo.blocks_count
        self.first_data_block = geo.first_data_block
        self.meta = metadata_zones(geo, descs)
        self.is_meta = memoryview(self.meta)          # scalar index without numpy's overhead
        self.max_size = max_size
        self.max_sectors = geo.blocks_count * (geo.block_size // 512)
        self.bs = geo.block_size
        self.spb = geo.block_size // 512
        self.inodes_count = geo.inodes_count
        self.pending: list[tuple] = []
        self.report = self._keep

    def _keep(self, what: str, ino: int = 0, block: int = 0, func: str = "") -> None:
        self.pending.append((what, ino, block, func))

    # block numbers -----------------------------------------------------------------------
    def bad_block(self, b: int) -> bool:
        """True if b (non-zero) may not be used as a file's block."""
        return b >= self.nblocks or self.is_meta[b]

    def bad_blocks(self, ptrs: np.ndarray) -> np.ndarray:
        """bad_block over an array of non-zero block numbers."""
        out = ptrs >= self.nblocks
        inside = ~out
        out[inside] = self.meta[ptrs[inside]]
        return out

    def corrupt(self, what: str, ino: int = 0, block: int = 0, func: str = "") -> FSError:
        """Report an inconsistency; the EUCLEAN error to raise for the operation."""
        self.report(what, ino, block, func)
        return FSError(EUCLEAN, what)

    def block_error(self, ino: int, b: int, func: str = "bmap") -> FSError:
        where = "beyond the file system" if b >= self.nblocks else "in the metadata zones"
        return self.corrupt(f"inode {ino}: block number {b} {where}", ino, b, func)

    # inodes --------------------------------------------------------------------------------
    def inode_problem(self, inode) -> str:
        """Why an in-use inode cannot be true ("" if it can): its type, its size against what
        its kind of map can hold, its block count against the file system."""
        fmt = inode.mode & 0o170000
        size = inode.size
        if fmt == stat.S_IFREG:
            if size > self.max_size:
                return f"i_size {size} beyond the largest file ({self.max_size})"
        elif fmt == stat.S_IFDIR:
            bs = self.bs
            if size < bs or size % bs or size > self.max_size:
                return f"directory i_size {size} (not a whole number of blocks)"
            if size // bs * self.spb > inode.blocks:
                return f"directory i_size {size} beyond its i_blocks {inode.blocks}"
        elif fmt == stat.S_IFLNK:
            if size >= self.bs or (not inode.blocks and size >= 60):
                return f"symlink i_size {size}"
        elif fmt not in _FILE_TYPES:
            return f"bad file type (mode 0o{inode.mode:o})"
        if inode.blocks > self.max_sectors:
            return f"i_blocks {inode.blocks} beyond the file system"
        return ""

    def entry_ino_problem(self, ino: int) -> str:
        """Why a directory entry's inode number cannot be (before the inode is read)."""
        if ino > self.inodes_count:
            return f"inode number {ino} beyond the inode count {self.inodes_count}"
        if ino < FIRST_INO and ino != ROOT_INO:
            return f"reserved inode {ino}"
        return ""
