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
on the data path is two integer comparisons and one index, and a range's test (every extent
read) a binary search in the zones' runs (`meta_runs`).
"""

import errno
import stat
from bisect import bisect_left

import numpy as np

from simfs.errors import FSError
from simfs.ondisk.constants import EXTENTS_FL, FIRST_INO, NDIR_BLOCKS, ROOT_INO
from simfs.ondisk.extent import MAX_DEPTH, check_node, root_max, root_of

EUCLEAN = errno.EUCLEAN       # 117: what ext4 answers for EFSCORRUPTED

_FILE_TYPES = frozenset((stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK, stat.S_IFCHR, stat.S_IFBLK,
                         stat.S_IFIFO, stat.S_IFSOCK))
#: inode flags of formats ext2 has not (extents, inline data, ...): ext4's iget refuses them
#: where the feature is off
_FOREIGN_FLAGS = {0x80000: "extents", 0x10000000: "inline data", 0x200000: "EA inode",
                  0x800: "encrypted", 0x40000000: "casefold", 0x100000: "verity",
                  0x40000: "huge file: i_blocks in blocks"}
_FOREIGN_MASK = sum(_FOREIGN_FLAGS)
_EXT4_FOREIGN_MASK = _FOREIGN_MASK & ~EXTENTS_FL      # with the extent feature


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


def zone_runs(meta: np.ndarray) -> tuple[list[int], list[int]]:
    """The runs of True in `meta`, sorted and disjoint: (their starts, their ends)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], meta, [False])).astype(np.int8)))
    return edges[0::2].tolist(), edges[1::2].tolist()


def zone_overlap(geo, descs) -> str:
    """The first two metadata zones that overlap ("" if none), as ext4_setup_system_zone
    builds its zones at mount: each group's superblock copy and descriptor table (with the
    reserved blocks), block bitmap, inode bitmap and inode table, any group's against any
    other's (flex_bg lets a group's tables lie anywhere). add_system_zone answers an overlap
    EFSCORRUPTED and the mount fails ("failed to initialize system zone")."""
    zones = []
    for g, d in enumerate(descs):
        n = geo.super_and_gdt_blocks(g)
        if n:
            zones.append((geo.group_start(g), n, f"group {g}'s superblock copy and descriptors"))
        zones += [(d.block_bitmap, 1, f"group {g}'s block bitmap"), (d.inode_bitmap, 1, f"group {g}'s inode bitmap"),
                  (d.inode_table, geo.inode_table_blocks, f"group {g}'s inode table")]
    zones.sort(key=lambda z: z[0])
    end, last = -1, None
    for z in zones:
        if z[0] < end:
            return f"{z[2]} at block {z[0]} overlaps {last[2]} at block {last[0]}"
        if z[0] + z[1] > end:
            end, last = z[0] + z[1], z
    return ""


class Checks:
    """The volume's checks on what it reads, and the channel that reports what fails them.

    `report(what, ino, block, func)` is the volume's error recorder (handed down: no layer
    calls up); until the volume sets it, reports are kept in `pending` (those found while
    the image is opened, recorded once it is)."""

    def __init__(self, geo, descs, max_size: int = 1 << 63, extent_max_size: int | None = None):
        self.geo = geo
        #: the largest extent-mapped file (ext4_max_size), with the extent feature
        self.extent_max_size = extent_max_size if extent_max_size is not None else max_size
        self.foreign = _EXT4_FOREIGN_MASK if getattr(geo, "extents", False) else _FOREIGN_MASK
        self.nblocks = geo.blocks_count
        self.first_data_block = geo.first_data_block
        self.meta = metadata_zones(geo, descs)
        self.is_meta = memoryview(self.meta)          # scalar index without numpy's overhead
        self.meta_starts, self.meta_ends = zone_runs(self.meta)
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

    def bad_range(self, b: int, n: int) -> bool:
        """True if blocks b..b+n-1 may not all be a file's (ext4_inode_block_valid): outside
        the file system, or a metadata zone's run starting before its end ends after b (the
        runs are disjoint and sorted: the last one starting before b + n ends latest). The
        same answer as `meta[b:b + n].any()`, without numpy's per-call overhead."""
        end = b + n
        if b < self.first_data_block or end > self.nblocks:
            return True
        if n <= 0:
            return False
        i = bisect_left(self.meta_starts, end)
        return i > 0 and self.meta_ends[i - 1] > b

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
        """Why an inode as read from the image cannot be true ("" if it can), as ext4's
        __ext4_iget and ext4_ind_check_inode judge it: its type, flags of formats ext2 has
        not, its size against what its map can address, the direct block pointers and the
        xattr block against the file system and the metadata zones. (A free inode's answer
        is unused.)"""
        fmt = inode.mode & 0o170000
        size = inode.size
        mapped = True
        extents = inode.flags & EXTENTS_FL
        if fmt == stat.S_IFREG or fmt == stat.S_IFDIR:
            limit = self.extent_max_size if extents else self.max_size
            if size > limit:
                return f"i_size {size} beyond what the block map addresses ({limit})"
        elif fmt == stat.S_IFLNK:
            fast = inode.blocks - (self.spb if inode.file_acl else 0) == 0 and not extents
            if size >= (60 if fast else self.bs) or size == 0:
                return f"symlink i_size {size}"
            mapped = not fast
        elif fmt in _FILE_TYPES:
            mapped = False                          # i_block holds a device number
        else:
            return f"bad file type (mode 0o{inode.mode:o})"
        if inode.flags & self.foreign:
            names = [n for f, n in _FOREIGN_FLAGS.items() if inode.flags & self.foreign & f]
            return f"flags 0x{inode.flags:x} ({', '.join(names)}: not supported here)"
        if inode.blocks > self.max_sectors:
            return f"i_blocks {inode.blocks} beyond the file system"
        nblocks, is_meta = self.nblocks, self.is_meta
        if mapped and extents:
            if fmt not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                return "extent flag on a device or fifo inode"
            why = self.extent_root_problem(inode.block)
            if why:
                return f"extent tree root: {why}"
        elif mapped:
            # the direct pointers only, as ext4_ind_check_inode: an indirect root is checked
            # where it is followed (bmap, truncate), so a file whose IND points into metadata
            # still stats and unlinks, its valid blocks freed (ext4_free_branches)
            for b in inode.block[:NDIR_BLOCKS]:
                if b and (b >= nblocks or is_meta[b]):
                    return f"i_block[] holds block number {b}, out of range"
        acl = inode.file_acl
        if acl and (acl >= nblocks or is_meta[acl]):
            return f"xattr block number {acl} out of range"
        return ""

    def extent_root_problem(self, words) -> str:
        """Why an extent root in i_block cannot be used (ext4_ext_check_inode), "" if it can."""
        node, why = root_of(words)
        if not why:
            why = check_node(node, node.depth, root_max(), 0, self.bad_range)
        if not why and node.depth > MAX_DEPTH:
            why = f"too large eh_depth {node.depth}"
        return why

    def entry_ino_problem(self, ino: int) -> str:
        """Why a directory entry's inode number cannot be (before the inode is read)."""
        if ino > self.inodes_count:
            return f"inode number {ino} beyond the inode count {self.inodes_count}"
        if ino < FIRST_INO and ino != ROOT_INO:
            return f"reserved inode {ino}"
        return ""
