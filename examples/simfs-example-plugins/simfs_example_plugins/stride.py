"""`stride`: every file's next block `stride` blocks after its previous one.

A file's first block is the first free block of its inode's group; each later data block is
the first free block at or after prev + stride (wrapping to the start of the volume), so a
file written alone on a fresh volume takes 1 block in every 8 - the "1 used, 7 free" layout
FreeBSD's 2010 ext2fs produced by accident (seed 000) - and the files written after it fill
the gaps, interleaved. Reading any one file back then defeats clustering and read-ahead: it
is a teaching allocator, for showing what the layout costs on a rotating disk
(``simfs layout`` draws the columns, ``simfs frag -v`` lists a run per block).

Indirect, directory, symlink and xattr blocks go to the first free block of the inode's
group. The stride is a class attribute: subclass to change it, and use the subclass by its
module path (``-o alloc=mymodule:Stride4``)::

    class Stride4(Stride):
        name = "stride-4"
        stride = 4
"""

from policies.base import BlockAllocator, BlockRequest, NoSpace, SpaceView


class Stride(BlockAllocator):
    name = "stride"
    summary = ("each data block `stride` (8) blocks after the file's previous one, first free at or "
               "after that, wrapping (seed 000's 1-used-7-free layout, on purpose); example plug-in")
    placer = "parent-group"      # inodes: first free inode in the parent directory's group
    stride = 8

    def allocate(self, space: SpaceView, req: BlockRequest, state) -> int:
        geo = space.geometry
        if req.kind == "data" and req.prev_phys:
            goal = req.prev_phys + self.stride
        else:
            goal = geo.group_start(req.inode_group)
        goal = min(max(goal, geo.first_data_block), geo.blocks_count - 1)
        b = space.first_free_block(goal, geo.blocks_count)      # read-only queries only
        if b < 0:
            b = space.first_free_block(geo.first_data_block, goal)
        if b < 0:
            raise NoSpace()
        return b
