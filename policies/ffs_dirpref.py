"""FFS inode placement: ffs_valloc, ffs_dirpref and ffs_nodealloccg (sys/ufs/ffs/ffs_alloc.c,
FreeBSD 2010, rodrigc/bz-vimage; the same in the 2013-2015 code), on ext2 groups.

ffs_valloc
    ipref = ffs_dirpref(parent) for a directory, else the parent's inode number;
    cg = ino_to_cg(ipref); fs_contigdirs[cg] += 1 for a directory (cap 255), -= 1 for a file;
    ffs_hashalloc(cg, ipref, ffs_nodealloccg).
ffs_dirpref
    parent is the root: from a random cg (arc4random), the cg with the fewest directories
    among those with nifree >= avg and nbfree >= avg; otherwise the first cg from the
    parent's, wrapping, with ndir < maxndir, nifree >= minifree, nbfree >= minbfree and
    fs_contigdirs[cg] < maxcontigdirs (limits from fs_avgfilesize = 16384 and
    fs_avgfpdir = 64, newfs's defaults); backstop: the first cg with nifree >= avg.
ffs_nodealloccg
    ipref if free, else the first free inode from the byte holding cg_irotor, wrapping;
    cg_irotor = the inode taken.

FFS numbers inodes from 0 (cg * ipg + index); ext2 from 1, so ext2 inode = FFS index + 1 and
FFS's "ipref = parent" is the parent's own (always used) slot. Random choices use a seeded
generator (deterministic runs). ffs_freefile lowers cg_irotor when an inode below it is
freed; the placer does not see frees, so its rotor only moves forward (the scan wraps).
"""

import random

from .base import InodePlacer, NoSpace, SpaceView
from .groupscan import hashalloc

AVGFILESIZE = 16384     # fs_avgfilesize (newfs -g default)
AVGFPDIR = 64           # fs_avgfpdir (newfs -h default)
ROOT_INO = 2


def ffs_dirpref(space: SpaceView, parent_ino: int, contigdirs: list[int], rng: random.Random,
                avgfilesize: int = AVGFILESIZE, avgfpdir: int = AVGFPDIR) -> int:
    """ffs_dirpref / ext2_dirpref: the group for a new directory under parent_ino."""
    geo = space.geometry
    ng = geo.groups
    ipg = geo.inodes_per_group
    nifree, nbfree, ndirs = space.group_free_inodes, space.group_free_blocks, space.group_used_dirs
    # fs_cstotal: the volume's totals (the sums of the groups' counts), no pass over the groups
    avgifree = space.free_inodes // ng
    avgbfree = space.free_blocks // ng
    avgndir = space.used_dirs // ng

    def order(pref: int):
        return range(pref, pref + ng)          # cg = i % ng: pref .. ng - 1, then 0 .. pref - 1

    if parent_ino == ROOT_INO:          # VV_ROOT: force first-level directories apart
        prefcg = rng.randrange(2**32) % ng
        mincg, minndir = prefcg, ipg
        for i in order(prefcg):
            cg = i % ng
            nd = ndirs(cg)
            if nd < minndir and nifree(cg) >= avgifree and nbfree(cg) >= avgbfree:
                mincg, minndir = cg, nd
        return mincg
    maxndir = min(avgndir + ipg // 16, ipg)
    minifree = max(avgifree - avgifree // 4, 1)
    minbfree = max(avgbfree - avgbfree // 4, 1)
    cgsize = geo.block_size * geo.blocks_per_group
    dirsize = avgfilesize * avgfpdir
    curdirsize = (cgsize - avgbfree * geo.block_size) // avgndir if avgndir else 0
    dirsize = max(dirsize, curdirsize)
    maxcontigdirs = min(avgbfree * geo.block_size // dirsize, 255) if dirsize > 0 else 0
    if avgfpdir > 0:
        maxcontigdirs = min(maxcontigdirs, ipg // avgfpdir)
    maxcontigdirs = maxcontigdirs or 1
    prefcg = geo.group_of_inode(parent_ino)
    for i in order(prefcg):
        cg = i % ng
        if ndirs(cg) < maxndir and nifree(cg) >= minifree and nbfree(cg) >= minbfree \
                and contigdirs[cg] < maxcontigdirs:
            return cg
    for i in order(prefcg):             # backstop when there is a deficit in space
        cg = i % ng
        if nifree(cg) >= avgifree:
            return cg
    return prefcg                       # both loops failed: the C code falls out with cg == prefcg


class FfsDirpref(InodePlacer):
    name = "ffs-dirpref"
    summary = ("FFS ffs_valloc: ffs_dirpref for directories (fs_contigdirs, avgfilesize 16384, "
               "avgfpdir 64), files next to the parent's inode via cg_irotor")

    def __init__(self, seed: int = 1982):
        self.rng = random.Random(seed)      # stands for arc4random(); seeded: deterministic
        self.contigdirs: list[int] | None = None
        self.irotor: list[int] | None = None

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        geo = space.geometry
        if self.contigdirs is None:
            self.contigdirs = [0] * geo.groups
            self.irotor = [0] * geo.groups
        ipg = geo.inodes_per_group
        if is_dir:
            ipref = ffs_dirpref(space, parent_ino, self.contigdirs, self.rng) * ipg
        else:
            ipref = parent_ino - 1          # FFS i_number of the parent
        if ipref >= geo.groups * ipg:
            ipref = 0
        cg = ipref // ipg
        if is_dir:
            if self.contigdirs[cg] < 255:
                self.contigdirs[cg] += 1
        elif self.contigdirs[cg] > 0:
            self.contigdirs[cg] -= 1
        ino = hashalloc(geo.groups, cg, ipref, lambda g, p: self._nodealloccg(space, g, p))
        if ino is None:
            raise NoSpace()
        return ino

    def _nodealloccg(self, space, cg: int, ipref: int):
        if space.group_free_inodes(cg) == 0:
            return None
        ipg = space.geometry.inodes_per_group
        used = space.inode_used[cg * ipg:(cg + 1) * ipg]
        if ipref:
            r = ipref % ipg
            if not used[r]:
                return cg * ipg + r + 1
        start = self.irotor[cg] // 8
        for lo, hi in ((start * 8, ipg), (0, min((start + 1) * 8, ipg))):
            seg = used[lo:hi]
            if len(seg):
                i = int(seg.argmin())
                if not seg[i]:
                    self.irotor[cg] = lo + i
                    return cg * ipg + lo + i + 1
        return None
