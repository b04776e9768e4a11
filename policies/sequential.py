"""Simple sequential allocation: the next free block after the last one handed out anywhere.

Seed 000 (B. Evans, freebsd-fs, 2010): the 1997 ext2fs layout "was completely broken
(essentially sequential, ignoring cylinder groups), but this was actually an optimization for
the relatively small file sets tested by the benchmark ... Simple sequential allocation should
be used unless the allocation policy and implementation are very good." This is that policy:
one volume-wide cursor, no groups, no per-file goal. Files written one after another (tar x,
cp -r) come out back to back in creation order, each one contiguous when the volume is fresh.

Inode placement (decided here, `sequential` placer): the same idea for inodes, the next free
inode after the last one handed out, volume-wide and wrapping. A tree unpacked in order then
has its inodes in creation order, packed into consecutive inode-table blocks, just as its data
is packed into consecutive blocks; groups play no part. (The alternative, the parent's group,
would put everything in group 0 until it fills, which is the same thing with extra rules.)

The cursors live in the policy objects (one per mounted volume); after a remount they start
again at the beginning of the volume, like an in-core rotor.
"""

from .base import BlockAllocator, BlockRequest, InodePlacer, NoSpace, SpaceView


class Sequential(BlockAllocator):
    name = "sequential"
    summary = ("next free block after the last one allocated anywhere on the volume, ignoring "
               "groups (seed 000's 'simple sequential allocation')")
    placer = "sequential"

    def __init__(self):
        self.last = -1          # last block handed out; -1: none since mount

    def allocate(self, space: SpaceView, req: BlockRequest, state) -> int:
        geo = space.geometry
        start = max(self.last + 1, geo.first_data_block)
        b = space.first_free_block(start, geo.blocks_count)
        if b < 0:
            b = space.first_free_block(geo.first_data_block, start)
        if b < 0:
            raise NoSpace()
        self.last = b
        return b


class SequentialInodes(InodePlacer):
    name = "sequential"
    summary = "next free inode after the last one allocated anywhere on the volume, ignoring groups"

    def __init__(self):
        self.last = 0           # last inode number handed out; 0: none since mount

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        used = space.inode_used
        n = len(used)
        for lo, hi in ((self.last, n), (0, self.last)):
            if lo < hi:
                seg = used[lo:hi]
                i = int(seg.argmin())
                if not seg[i]:
                    self.last = lo + i + 1
                    return self.last
        raise NoSpace()
