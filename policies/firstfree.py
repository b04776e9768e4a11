"""The simplest allocator: the lowest free block at or after the start of the inode's group."""

from .base import BlockAllocator, BlockRequest, InodePlacer, NoSpace, SpaceView


class FirstFree(BlockAllocator):
    name = "first-free"
    summary = ("lowest free block at or after the start of the inode's group, wrapping; "
               "a baseline, not a replica of any real file system")

    def allocate(self, space: SpaceView, req: BlockRequest, state) -> int:
        geo = space.geometry
        start = geo.group_start(req.inode_group)
        b = space.first_free_block(start, geo.blocks_count)
        if b < 0:
            b = space.first_free_block(geo.first_data_block, start)
        if b < 0:
            raise NoSpace()
        return b


class ParentGroup(InodePlacer):
    name = "parent-group"
    summary = "first free inode in the parent directory's group, then the following groups"

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        geo = space.geometry
        g0 = geo.group_of_inode(parent_ino)
        for i in range(geo.groups):
            g = (g0 + i) % geo.groups
            if space.group_free_inodes(g):
                ino = space.first_free_inode(g)
                if ino > 0:
                    return ino
        raise NoSpace()
