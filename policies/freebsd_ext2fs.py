"""FreeBSD ext2fs block allocation as of 2010, with its two defects, and the fix (about 2012).

Replicates sys/fs/ext2fs/ext2_balloc.c `ext2_balloc`, and sys/fs/ext2fs/ext2_alloc.c
`ext2_blkpref`, `ext2_alloc`, `ext2_hashalloc`, `ext2_alloccg`, `ext2_mapsearch`,
`ext2_valloc`, `ext2_dirpref`, `ext2_nodealloccg` (2010: rodrigc/bz-vimage, $FreeBSD:
ext2_alloc.c,v 1.3 2011/01/19; fixed: rayddteam/freebsd-pi r234858, 2012), following
docs/reference/allocation-policies.md §1.3-1.4:

    per inode (in-core, zeroed when the inode is read in): nab = i_next_alloc_block,
                                                           nag = i_next_alloc_goal
    ext2_balloc(lbn):   if lbn == nab+1: nab += 1; nag += 1
    ext2_blkpref:       nag if nab == lbn and nag != 0;
                        else the nearest non-zero earlier pointer in the same map
                        (the previous block itself, not +1);
                        else the indirect block holding the pointer, else the inode group's first block
    ext2_alloc(pref):   cg = dtog(pref) or the inode's group; ext2_hashalloc(cg, pref, ext2_alloccg)
                        2010: records nothing;  fixed: nab = lbn; nag = bno    (defect A)
    ext2_alloccg(cg, pref): pref itself if free; else
        2010:  first all-free bitmap BYTE in [start, end) then [0, start): take its bit 0  (defect B)
        fixed: first run of >= 8 free bits, starting right after a byte's highest used bit
               (run search) in [start, end), then [0, start)
        with start = dtogd(dtogd(pref))/8 (dtogd applied twice, as the code does) and
        end = nbytes - start (the `end` bug, kept in both versions); then ext2_mapsearch:
        the first byte != 0xFF from `start`, wrapping, and its lowest clear bit.

Seed 000's "1 block used, 7 free" comes out of these rules, not out of a special case: with
the goal never recorded, `nag` is the logical block number (balloc's increments from 0), so
ext2_blkpref prefers physical block == lbn, in group 0 and normally in use; the byte scan then
takes bit 0 of the next all-free byte, i.e. one block in every eight. When group 0 is full the
rehash visits groups 1, 3, 7, ... (seed 000's dumpe2fs: groups 0-1 full, 2 empty, 3 striped).

Where the request fields are used: a direct block's pointer map is i_db (slot = lbn,
map_prev = nearest earlier non-zero i_db[]); a block under an indirect block uses that block
(map_prev within it, map_block = its address, standing for ext2_balloc's blocknr argument).
For new indirect blocks the 2010 code passes no map (`ext2_blkpref(ip, lbn, 0, NULL, 0)`);
the fixed code passes i_db / the parent indirect block. Known simplifications: the 2012 code
passes the indirect buffer's *logical* number (b_lblkno) as blocknr, which only matters when
the goal and map rules both fail; its run search reads bytes as signed char (fls of a byte
with bit 7 set); here bytes are unsigned, as §1.4 describes it.
"""

import random

import numpy as np

from .base import BlockAllocator, BlockRequest, InodePlacer, NoSpace, SpaceView
from .ffs_dirpref import ffs_dirpref
from .groupscan import (cdiv, cmod, first_clear_wrapping, first_zero_byte, free_runs, group_bits,
                        hashalloc)

AFPDIR = 64                       # sys/fs/ext2fs/fs.h: expected files per directory
AVFILESIZ = 16384                 # AVGDIRSIZE = AVFILESIZ * AFPDIR


class NextAlloc:
    """In-core i_next_alloc_block / i_next_alloc_goal (zero when the inode is read in)."""

    __slots__ = ("nab", "nag")

    def __init__(self):
        self.nab = 0
        self.nag = 0


class Ext2fs2010(BlockAllocator):
    name = "ext2fs-2010"
    summary = ("FreeBSD ext2fs 2010 (ext2_balloc/ext2_blkpref/ext2_alloccg): goal never recorded, "
               "aligned-byte scan; leaves 1 block used, 7 free (seed 000)")
    placer = "ext2fs-dirpref"
    fixed = False

    def new_inode_state(self) -> NextAlloc:
        return NextAlloc()

    # ext2_balloc -------------------------------------------------------------------------
    def allocate(self, space: SpaceView, req: BlockRequest, st: NextAlloc) -> int:
        geo = space.geometry
        if st is None:
            st = NextAlloc()
        if req.kind == "xattr":         # not in 2010 ext2fs; near the inode, like a first block
            return self._alloc(space, req, geo.group_start(req.inode_group), None)
        lbn = req.lblk
        if lbn == st.nab + 1:           # sequential: bump both (idempotent per lbn)
            st.nab += 1
            st.nag += 1
        if req.kind == "indirect" and not self.fixed:
            pref = self._blkpref(geo, req, st, None, 0)          # ext2_blkpref(ip, lbn, 0, NULL, 0)
        else:
            pref = self._blkpref(geo, req, st, req.map_prev, req.map_block)
        return self._alloc(space, req, pref, st)

    @staticmethod
    def _blkpref(geo, req: BlockRequest, st: NextAlloc, bap_prev, blocknr: int) -> int:
        """ext2_blkpref(ip, lbn, indx, bap, blocknr)."""
        if st.nab == req.lblk and st.nag != 0:
            return st.nag
        if bap_prev:                    # for (tmp = indx-1; tmp >= 0; tmp--) if (bap[tmp]) return bap[tmp]
            return bap_prev
        return blocknr if blocknr else req.inode_group * geo.blocks_per_group + geo.first_data_block

    def _alloc(self, space, req: BlockRequest, bpref: int, st) -> int:
        """ext2_alloc."""
        geo = space.geometry
        if bpref >= geo.blocks_count:
            bpref = 0
        cg = self._dtog(geo, bpref) if bpref else req.inode_group
        bno = hashalloc(geo.groups, cg, bpref, lambda g, p: self._alloccg(space, g, p))
        if bno is None:
            raise NoSpace()
        if self.fixed and st is not None:
            st.nab = req.lblk           # "set next_alloc fields as done in block_getblk"
            st.nag = bno
        return bno

    @staticmethod
    def _dtog(geo, b: int) -> int:
        return cdiv(b - geo.first_data_block, geo.blocks_per_group)

    @staticmethod
    def _dtogd(geo, b: int) -> int:
        return cmod(b - geo.first_data_block, geo.blocks_per_group)

    # ext2_alloccg ------------------------------------------------------------------------
    def _alloccg(self, space, cg: int, bpref: int):
        geo = space.geometry
        if space.group_free_blocks(cg) == 0:
            return None
        bits = group_bits(space, cg)
        nbytes = -(-geo.blocks_per_group // 8)
        if self._dtog(geo, bpref) != cg:
            bpref = 0
        if bpref != 0:
            bpref = self._dtogd(geo, bpref)
            if not bits[bpref]:
                return self._abs(geo, cg, bpref)
        start = cdiv(self._dtogd(geo, bpref), 8) if bpref else 0
        end = nbytes - start
        bno = self._scan(bits, start, end)
        if bno < 0:
            bno = self._mapsearch(geo, bits, bpref)
        return self._abs(geo, cg, bno) if bno >= 0 else None

    def _scan(self, bits: np.ndarray, start: int, end: int) -> int:
        """2010: "first try to get 8 contigous blocks": the first 0x00 byte, its bit 0."""
        for lo, hi in ((start, end), (0, start)):
            i = first_zero_byte(bits, lo, hi)
            if i >= 0:
                return i * 8
        return -1

    def _mapsearch(self, geo, bits: np.ndarray, bpref: int) -> int:
        """ext2_mapsearch: first byte != 0xFF from `start` to the end, then [0, start]; its
        lowest clear bit (= the first clear bit from the start of that byte)."""
        start = cdiv(self._dtogd(geo, bpref), 8) if bpref else 0
        return first_clear_wrapping(bits, start * 8, (start + 1) * 8)

    @staticmethod
    def _abs(geo, cg: int, bno: int) -> int:
        return cg * geo.blocks_per_group + geo.first_data_block + bno


class Ext2fs2010Fixed(Ext2fs2010):
    name = "ext2fs-2010-fixed"
    summary = ("FreeBSD ext2fs after the fix (~2012): goal recorded in ext2_alloc, run search "
               "for >= 8 free blocks in ext2_alloccg")
    fixed = True

    def _scan(self, bits: np.ndarray, start: int, end: int) -> int:
        """The fixed ext2_alloccg run search over bytes [start, end) (`retry:` with
        [0, start) if start != 0): the first maximal free run of >= 8 bits that crosses or
        fills a byte, counted from right after the highest used bit of the byte it starts
        in; a run is cut at the window's edges. Equivalent to the byte loop with fls/ffs."""
        windows = [(start, end)] + ([(0, start)] if start != 0 else [])
        for lo, hi in windows:
            if lo >= hi:
                continue
            starts, lengths = free_runs(bits, lo * 8, hi * 8)
            ok = np.flatnonzero(lengths >= 8)
            if len(ok):
                return int(starts[ok[0]])
        return -1


class Ext2fsDirpref(InodePlacer):
    """ext2_valloc: directories to ext2_dirpref's group, files to the parent's group;
    e2fs_contigdirs[cg] counts directories made in a row there; ext2_hashalloc over groups
    with ext2_nodealloccg, which takes the group's first free inode (ipref = cg*ipg + 1)."""

    name = "ext2fs-dirpref"
    summary = ("FreeBSD ext2fs ext2_valloc: ext2_dirpref (FFS-style) for directories, parent's "
               "group for files, first free inode of the group")

    def __init__(self, seed: int = 2010):
        self.rng = random.Random(seed)     # stands for arc4random(); seeded: deterministic
        self.contigdirs: list[int] | None = None

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        geo = space.geometry
        if self.contigdirs is None:
            self.contigdirs = [0] * geo.groups
        if is_dir:
            cg = self._dirpref(space, parent_ino)
            if self.contigdirs[cg] < 255:
                self.contigdirs[cg] += 1
        else:
            cg = geo.group_of_inode(parent_ino)
            if self.contigdirs[cg] > 0:
                self.contigdirs[cg] -= 1
        ino = hashalloc(geo.groups, cg, cg * geo.inodes_per_group + 1, lambda g, p: self._nodealloccg(space, g))
        if ino is None:
            raise NoSpace()
        return ino

    @staticmethod
    def _nodealloccg(space, cg: int):
        """ext2_nodealloccg: ipref is the group's first inode, else the first byte != 0xFF and
        its lowest clear bit: together, the first free inode of the group."""
        if space.group_free_inodes(cg) == 0:
            return None
        ipg = space.geometry.inodes_per_group
        seg = space.inode_used[cg * ipg:(cg + 1) * ipg]
        i = int(seg.argmin())
        return cg * ipg + i + 1 if not seg[i] else None

    def _dirpref(self, space, parent_ino: int) -> int:
        """ext2_dirpref is ffs_dirpref with AVGDIRSIZE = AVFILESIZ * AFPDIR (the same numbers)."""
        return ffs_dirpref(space, parent_ino, self.contigdirs, self.rng, AVFILESIZ, AFPDIR)


class Ext2fsLinuxIalloc(InodePlacer):
    """FreeBSD 5.x's GPL ext2fs inode allocation (sys/gnu/ext2fs/ext2_linux_ialloc.c v1.18,
    `ext2_new_inode`, from Linux 1.x fs/ext2/ialloc.c), the ~5.2 of seed 000: a directory
    goes to the group with the most free blocks among those with at least the average
    number of free inodes (the first such on ties), whatever its parent; a file to its
    parent's group, else a quadratic hash over the groups, else a linear search; the inode
    is the first zero bit of the group's inode bitmap."""

    name = "ext2fs-linux-ialloc"
    summary = ("FreeBSD 5.x GPL ext2fs ext2_new_inode: directories to the emptiest group with "
               "above-average free inodes; files to the parent's group")

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        geo = space.geometry
        ng = geo.groups
        cg = -1
        if is_dir:
            avefreei = sum(space.group_free_inodes(g) for g in range(ng)) // ng
            best = -1
            for g in range(ng):
                fi = space.group_free_inodes(g)
                if fi and fi >= avefreei:
                    fb = space.group_free_blocks(g)
                    if cg < 0 or fb > best:
                        cg, best = g, fb
        else:
            i = geo.group_of_inode(parent_ino)
            if space.group_free_inodes(i):
                cg = i
            else:
                j = 1
                while j < ng:                      # quadratic hash: i += 1, 2, 4, ...
                    i += j
                    if i >= ng:
                        i -= ng
                    if space.group_free_inodes(i):
                        cg = i
                        break
                    j <<= 1
                if cg < 0:
                    i = geo.group_of_inode(parent_ino)
                    for _ in range(ng):
                        i = i + 1 if i + 1 < ng else 0
                        if space.group_free_inodes(i):
                            cg = i
                            break
        if cg < 0:
            raise NoSpace()
        ino = space.first_free_inode(cg)
        if ino <= 0:
            raise NoSpace()
        return ino
