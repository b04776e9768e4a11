"""Every question the file system asks its block allocator, in one place.

The allocator (a plug-in, see policies.base) decides *where*; this wrapper owns the per-inode
state the allocator keeps (created here and nowhere else, held in the in-core inode), turns
NoSpace into ENOSPC, and checks every answer: a block the allocator hands out must be a free
data block of the volume.

While a block bitmap is invalid (it calls its group's metadata, or blocks past the end, free:
the check ext4_valid_block_bitmap makes) every allocation is EUCLEAN, as the kernel answered
each one on such images (its allocator meets the group while it scans and fails); a group whose
bitmap merely disagrees with its free count is skipped (FreeSpace) without an error.
"""

import errno

from policies.base import BlockAllocator, BlockRequest, NoSpace
from simfs.errors import FSError


class Placement:
    def __init__(self, allocator: BlockAllocator, space, geometry):
        self.allocator = allocator
        self.space = space
        self.geo = geometry
        self.name = allocator.name
        self.delayed = allocator.decides == "flush"        # blocks placed at write-back
        self.max_run = getattr(allocator, "max_run", 1)

    def state(self, inode):
        """The allocator's state for this inode (created on first use, kept while in core)."""
        if inode.incore is None:
            inode.incore = {"alloc": self.allocator.new_inode_state()}
        return inode.incore["alloc"]

    def request(self, inode, lblk: int, **hints) -> BlockRequest:
        hints.setdefault("size", inode.size)        # i_size: mballoc's normalisation reads it
        return BlockRequest(ino=inode.ino, inode_group=self.geo.group_of_inode(inode.ino), lblk=lblk,
                            is_dir=inode.is_dir, **hints)

    def allocate(self, inode, req: BlockRequest) -> int:
        space = self.space
        if space.invalid_block_groups:
            g = min(space.invalid_block_groups)
            raise space.checks.corrupt(f"inode {inode.ino}: no allocation while the block bitmap of "
                                       f"group {g} is invalid", inode.ino, 0, "new_blocks")
        try:
            b = self.allocator.allocate(self.space, req, self.state(inode))
        except NoSpace:
            raise FSError(errno.ENOSPC) from None
        self._check(b)
        return b

    def allocate_run(self, inode, req: BlockRequest, count: int) -> list[int]:
        """Blocks for `count` logically consecutive blocks from req.lblk (delayed allocation)."""
        try:
            blocks = self.allocator.allocate_run(self.space, req, self.state(inode), count)
        except NoSpace:
            raise FSError(errno.ENOSPC, "delayed allocation found no room at write-back") from None
        for b in blocks:
            self._check(b)
        return blocks

    def reallocate(self, inode, req: BlockRequest, cluster: list[tuple[int, int]]) -> list[int] | None:
        new = self.allocator.reallocate(self.space, req, self.state(inode), cluster)
        for (_, old), b in zip(cluster, new or ()):
            if b != old:
                self._check(b)
        return new

    def placed(self, inode, lblk: int, phys: int) -> None:
        """Tell the allocator's state where a delayed block went (it keeps the file's extents)."""
        self.state(inode).add(lblk, phys, 1)

    def writing(self, inode) -> None:
        """A write to the file: it is open for writing until its writer's last close."""
        self.state(inode)
        inode.incore["writing"] = True

    def is_writing(self, inode) -> bool:
        """Whether the file was written since its last release (i_writecount > 0 for a
        request made at write-back)."""
        return bool(inode.incore is not None and inode.incore.get("writing"))

    def release(self, inode) -> None:
        """Last close or a shrinking truncate: the allocator drops what it holds for the file."""
        if inode.incore is not None:
            inode.incore["writing"] = False
            self.allocator.release(inode.incore["alloc"])

    def _check(self, b: int) -> None:
        geo = self.geo
        if not (geo.first_data_block <= b < geo.blocks_count) or self.space.is_metadata(b) \
                or self.space.block_used[b]:
            raise AssertionError(f"allocator {self.name} chose block {b}, which is not a free data block")
