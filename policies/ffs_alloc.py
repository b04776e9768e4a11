"""FFS cylinder-group block allocation on ext2 groups: `cg-2010`, `cg-2013` (and `cg`).

Replicates sys/ufs/ffs/ffs_balloc.c `ffs_balloc_ufs1` and sys/ufs/ffs/ffs_alloc.c
`ffs_blkpref_ufs1`, `ffs_alloc`, `ffs_hashalloc`, `ffs_alloccg`/`ffs_alloccgblk`,
`ffs_mapsearch`, `ffs_reallocblks_ufs1` and `ffs_clusteralloc`, in two versions
(docs/reference/allocation-policies.md §2.1, §4):

cg-2010 (FreeBSD ffs_alloc.c 1.160, 2010)
    ffs_blkpref(lbn, indx, bap): at a section start (indx % maxbpg == 0 or bap[indx-1] == 0):
    lbn < NDADDR + NINDIR -> cgbase(inode cg) + 1 (the first free block of the inode's group);
    else the first cg from startcg (inode cg + lbn/maxbpg, or the cg after bap[indx-1]'s),
    wrapping, with nbfree >= the average -> its cgbase + 1; otherwise bap[indx-1] + 1.
    Indirect blocks ask ffs_blkpref(lbn, 0, NULL): the section-start rule, so the first
    indirect goes to the first free block of the inode's group (on a fresh group right after
    d11, on an aged one into the first hole); deeper indirect blocks of the same
    ffs_balloc reuse that preference.
cg-2013 (r242520 Nov 2012 + r248623 Mar 2013, "metadata area")
    Indirect requests pass indx = -1/-2/-3: preference cgmeta(inode cg), except the first
    indirect (indx -1, lbn < NDADDR+NINDIR, di_db[11] != 0): di_db[11] + 1, i.e. inline after
    the last direct block; a child indirect block and data block 12 follow a just-allocated
    parent (pref = newb + 1); lbn == NDADDR prefers di_ib[0] + 1 if di_ib[0] is in the data
    area of the inode's group; section starts go to cgmeta for directories and cgdata
    otherwise; ffs_alloccgblk maps a preference in another group to this group's metadata or
    data area and moves cg_rotor only for data-area blocks. cgmeta(cg) = the first block after
    the inode table, cgdata(cg) = cgmeta + fs_metaspace (half of minfree 8%: bpg * 8 / 200).

Both: ffs_alloc -> ffs_hashalloc (quadratic rehash, then brute force) -> ffs_alloccgblk: the
preferred block if free, else the first free block at or after it in the group (wrapping,
ffs_mapsearch) and cg_rotor = that block; with no preference (rehash) the search starts at
cg_rotor. frag = 1 (an ext2 block is an FFS block), so "+ fs_frag" is +1. maxbpg is newfs's
default MAXBLKPG, "one indirect block worth of data blocks" = NINDIR.

Cluster reallocation (ffs_reallocblks) -- the policy side of a hook the volume will call:

    reallocate(space, req, state, cluster) -> list[int] | None

`cluster` is [(lblk, phys), ...] for logically consecutive delayed-write blocks that
cluster_write is about to extend (the last one being the new, non-contiguous block), and
`req` is a BlockRequest describing the cluster's first block (lblk, slot = its index in its
map, prev_phys = phys of lblk-1, map_block = the indirect block holding it or 0). Returns new
physical blocks for the whole cluster, contiguous and currently free, or None to refuse (the
ENOSPC of ffs_reallocblks: cluster spans groups; cg-2013 also when it crosses lbn 11 -> 12
(r242520); or no free run). Nothing is changed: the volume takes the returned blocks,
rewrites the pointers, then releases the old blocks (new blocks are found while the old
ones are still allocated, as in the kernel). Preference: ffs_blkpref(start_lbn, soff, sbap);
search: ffs_hashalloc with ffs_clusteralloc, the first run of len free blocks at or after
the preference within a group, never before it.
"""

from .base import BlockAllocator, BlockRequest, NoSpace, SpaceView
from .groupscan import cdiv, data_start, first_clear_wrapping, free_runs, group_bits, hashalloc

NDADDR = 12
MINFREE = 8             # newfs -m default (percent)


class FfsState:
    """Per-inode in-core hints: the preference carried within one ffs_balloc (lbn, pref)
    and di_db[11] as last allocated here (for the 2013 first-indirect rule)."""

    __slots__ = ("balloc_lbn", "balloc_pref", "db11")

    def __init__(self):
        self.balloc_lbn = -1
        self.balloc_pref = 0
        self.db11 = 0


class Cg2010(BlockAllocator):
    name = "cg-2010"
    summary = ("FFS cylinder groups, FreeBSD 2010 ffs_blkpref/ffs_hashalloc/ffs_alloccgblk: prev+1, "
               "new section every maxbpg blocks in an above-average group; first indirect at the "
               "group's first free block")
    placer = "ffs-dirpref"
    version = 2010

    def __init__(self):
        self.rotor: list[int] | None = None      # cg_rotor per group (group-relative)

    def new_inode_state(self) -> FfsState:
        return FfsState()

    # geometry helpers ---------------------------------------------------------------------
    @staticmethod
    def _dtog(geo, b: int) -> int:
        return cdiv(b - geo.first_data_block, geo.blocks_per_group)

    def _cgmeta(self, space, cg: int) -> int:
        return data_start(space, cg)

    def _cgdata(self, space, cg: int) -> int:
        geo = space.geometry
        metaspace = geo.blocks_per_group * MINFREE // 200
        return min(data_start(space, cg) + metaspace, geo.group_start(cg) + geo.group_blocks(cg) - 1)

    @staticmethod
    def _free_total(space) -> int:
        total = getattr(space, "free_blocks", None)
        if total is None:
            total = sum(space.group_free_blocks(g) for g in range(space.geometry.groups))
        return total

    # ffs_balloc ---------------------------------------------------------------------------
    def allocate(self, space: SpaceView, req: BlockRequest, st: FfsState) -> int:
        geo = space.geometry
        if st is None:
            st = FfsState()
        if self.rotor is None:
            self.rotor = [0] * geo.groups
        lbn = req.lblk
        if req.kind == "xattr":            # UFS2 extattr block: ffs_blkpref(lbn 0, indx 0, di_extb)
            return self._alloc(space, req, self._blkpref(space, req, 0, 0, 0))
        if req.kind == "indirect":
            return self._indirect(space, req, st)
        carried = st.balloc_lbn == lbn and st.balloc_pref
        st.balloc_lbn = -1
        if self.version >= 2013 and carried and not lbn > NDADDR:
            pref = st.balloc_pref           # data block 12 right after its new indirect block
        else:
            prev = req.prev_phys if req.slot > 0 else 0       # bap[indx-1]
            pref = self._blkpref(space, req, lbn, req.slot, prev)
        b = self._alloc(space, req, pref)
        if req.map_block == 0 and req.slot == NDADDR - 1:
            st.db11 = b
        return b

    def _indirect(self, space, req: BlockRequest, st: FfsState) -> int:
        lbn = req.lblk
        top = req.map_block == 0
        carried = not top and st.balloc_lbn == lbn and st.balloc_pref
        if self.version >= 2013:
            if carried:
                pref = st.balloc_pref                   # "parent indirect has just been allocated"
            else:
                indx = -(req.slot - NDADDR + 1) if top else -1
                pref = self._blkpref(space, req, lbn, indx, 0, st)
            b = self._alloc(space, req, pref)
            st.balloc_lbn, st.balloc_pref = lbn, b + 1  # pref = newb + fs_frag
            return b
        pref = st.balloc_pref if carried else self._blkpref(space, req, lbn, 0, 0)
        b = self._alloc(space, req, pref)
        st.balloc_lbn, st.balloc_pref = lbn, pref
        return b

    # ffs_blkpref --------------------------------------------------------------------------
    def _blkpref(self, space, req: BlockRequest, lbn: int, indx: int, prev: int, st=None) -> int:
        geo = space.geometry
        nindir = geo.ptrs_per_block
        maxbpg = nindir
        inocg = req.inode_group
        if self.version >= 2013:
            if indx < 0:
                pref = self._cgmeta(space, inocg)
                if indx == -1 and lbn < NDADDR + nindir:
                    db11 = self._db11(req, st)
                    if db11:
                        pref = db11 + 1
                return pref
            if lbn == NDADDR:
                ib0 = req.map_block
                end = geo.group_start(inocg) + geo.group_blocks(inocg)
                if ib0 and self._cgdata(space, inocg) <= ib0 < end:
                    return ib0 + 1
        if indx % maxbpg == 0 or prev == 0:
            if self.version >= 2013 and req.is_dir:
                return self._cgmeta(space, inocg)
            if lbn < NDADDR + nindir:
                if self.version >= 2013:
                    return self._cgdata(space, inocg)
                return geo.group_start(inocg) + 1
            ncg = geo.groups
            if indx == 0 or prev == 0:
                startcg = inocg + lbn // maxbpg
            else:
                startcg = self._dtog(geo, prev) + 1
            startcg %= ncg
            avgbfree = self._free_total(space) // ncg
            for cg in list(range(startcg, ncg)) + list(range(0, startcg + 1)):
                if space.group_free_blocks(cg) >= avgbfree:
                    if self.version >= 2013:
                        return self._cgdata(space, cg)
                    return geo.group_start(cg) + 1
            return 0
        return prev + 1

    @staticmethod
    def _db11(req: BlockRequest, st) -> int:
        """di_db[NDADDR-1] for the first-indirect rule. The request's map_prev is the nearest
        non-zero i_db[]; it is di_db[11] exactly when that slot is mapped, which we know when
        this inode's state saw lbn 11 allocated (or when the volume passes prev_phys = bmap(11))."""
        if req.lblk == NDADDR and req.prev_phys:
            return req.prev_phys
        if st is not None and st.db11 and req.map_prev == st.db11:
            return st.db11
        return 0

    # ffs_alloc / ffs_alloccgblk -------------------------------------------------------------
    def _alloc(self, space, req: BlockRequest, bpref: int) -> int:
        geo = space.geometry
        if self.rotor is None:
            self.rotor = [0] * geo.groups
        if bpref >= geo.blocks_count or bpref < geo.first_data_block:
            bpref = 0
        cg = self._dtog(geo, bpref) if bpref else req.inode_group
        b = hashalloc(geo.groups, cg, bpref, lambda g, p: self._alloccgblk(space, g, p))
        if b is None:
            raise NoSpace()
        return b

    def _alloccgblk(self, space, cg: int, bpref: int):
        geo = space.geometry
        if space.group_free_blocks(cg) == 0:
            return None
        bits = group_bits(space, cg)
        base = geo.group_start(cg)
        if self.version >= 2013:
            if bpref == 0:
                rel = self.rotor[cg]
            elif self._dtog(geo, bpref) != cg:      # map bpref to the same zone of this cg
                pcg = self._dtog(geo, bpref)
                zone = self._cgmeta if bpref < self._cgdata(space, pcg) else self._cgdata
                rel = zone(space, cg) - base
            else:
                rel = bpref - base
            if not bits[rel]:
                return base + rel
            b = self._mapsearch(bits, rel)
            if b < 0:
                return None
            if b >= self._cgdata(space, cg) - base:  # rotor only for data-zone blocks
                self.rotor[cg] = b
            return base + b
        if bpref == 0 or self._dtog(geo, bpref) != cg:
            rel = self.rotor[cg]
        else:
            rel = bpref - base
            if not bits[rel]:
                return base + rel
        b = self._mapsearch(bits, rel)
        if b < 0:
            return None
        self.rotor[cg] = b
        return base + b

    @staticmethod
    def _mapsearch(bits, rel: int) -> int:
        """ffs_mapsearch for a full block: the first free block at or after rel, wrapping."""
        return first_clear_wrapping(bits, rel, rel + 1)

    # ffs_reallocblks --------------------------------------------------------------------------
    def reallocate(self, space: SpaceView, req: BlockRequest, state, cluster: list[tuple[int, int]]):
        """ffs_reallocblks_ufs1: new contiguous blocks for the cluster, or None (see module doc)."""
        geo = space.geometry
        if not cluster:
            return None
        if self.rotor is None:
            self.rotor = [0] * geo.groups
        n = len(cluster)
        start_lbn = cluster[0][0]
        end_lbn = start_lbn + n - 1
        if any(lb != start_lbn + i for i, (lb, _) in enumerate(cluster)):
            return None                                     # "non-logical cluster"
        if self.version >= 2013 and start_lbn < NDADDR <= end_lbn:
            return None                                     # r242520: keep the first indirect inline
        if self._dtog(geo, cluster[0][1]) != self._dtog(geo, cluster[-1][1]):
            return None                                     # latest allocation moved to a new cg
        prev = req.prev_phys if req.slot > 0 else 0
        pref = self._blkpref(space, req, start_lbn, req.slot, prev, state)
        if pref >= geo.blocks_count:
            pref = 0
        cg = self._dtog(geo, pref) if pref >= geo.first_data_block else 0
        b = hashalloc(geo.groups, cg, pref, lambda g, p: self._clusteralloc(space, g, p, n))
        if b is None:
            return None
        return list(range(b, b + n))

    def _clusteralloc(self, space, cg: int, bpref: int, length: int):
        """ffs_clusteralloc: the first run of `length` free blocks at or after bpref in cg."""
        geo = space.geometry
        if space.group_free_blocks(cg) < length:
            return None
        bits = group_bits(space, cg)
        base = geo.group_start(cg)
        rel = bpref - base if bpref and self._dtog(geo, bpref) == cg else 0
        starts, lengths = free_runs(bits, rel, len(bits))
        ok = lengths >= length
        if not ok.any():
            return None
        return base + int(starts[ok.argmax()])


class Cg2013(Cg2010):
    name = "cg-2013"
    summary = ("FFS cylinder groups after r242520/r248623 (2012-13): first indirect inline after "
               "di_db[11], metadata area for other indirect and directory blocks, realloc refuses "
               "clusters crossing lbn 11/12")
    version = 2013


class Cg(Cg2013):
    name = "cg"
    summary = "alias of cg-2013: FFS cylinder-group allocation as FreeBSD has done it since 2013"
