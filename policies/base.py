"""The interfaces between the volume and its policies.

A block allocator answers one question: which free block should hold this logical block of
this inode? It sees the free-space maps (read-only), a request describing the block and its
neighbours, and per-inode state it may keep. It never reads the image or the clock.

`decides` says *when* the volume asks: "write" (immediate allocation, as ext2/ext3/FFS do in
write()) or "flush" (delayed allocation, as ext4 does at write-back).
"""

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class NoSpace(Exception):
    """No block (or inode) is free where the policy may look."""


@dataclass(slots=True)
class BlockRequest:
    """What the volume knows when it needs a block.

    lblk        logical block of the file the block is for (for an indirect block: the
                data block whose mapping needed it)
    kind        "data", "dir", "symlink", "indirect" or "xattr"
    level       0 for a data block, 1/2/3 for single/double/triple indirect blocks
    slot        index of the pointer in its map (i_block[] or the indirect block): FFS's indx
    map_prev    nearest non-zero pointer before `slot` in the same map (0 if none): bap[indx-1..0]
    map_block   physical block of the indirect block holding the pointer (0: the inode)
    prev_phys   physical block of lblk-1, if mapped (0 otherwise)
    """

    ino: int
    inode_group: int
    lblk: int
    kind: str = "data"
    level: int = 0
    slot: int = 0
    map_prev: int = 0
    map_block: int = 0
    prev_phys: int = 0
    is_dir: bool = False


class SpaceView(Protocol):
    """The free-space maps as policies see them (see simfs.fs.freespace.FreeSpace)."""

    geometry: Any
    descs: list              # group descriptors (block_bitmap, inode_bitmap, inode_table, counts)
    block_used: np.ndarray   # bool per block, True = in use (metadata included)
    inode_used: np.ndarray   # bool per inode (index ino-1)
    free_blocks: int         # free blocks on the volume

    def group_free_blocks(self, g: int) -> int: ...
    def group_free_inodes(self, g: int) -> int: ...
    def group_used_dirs(self, g: int) -> int: ...
    def first_free_block(self, start: int, end: int) -> int: ...


class BlockAllocator:
    """Base class: subclasses set name/summary and implement allocate().

    `placer` names the inode-placement policy that belongs with this allocator (FFS dirpref
    with FFS, Orlov with Linux ext2); a mount may override it.
    """

    name = ""
    summary = ""
    decides = "write"
    placer = "parent-group"

    def new_inode_state(self) -> Any:
        return None

    def allocate(self, space: SpaceView, req: BlockRequest, state: Any) -> int:
        raise NotImplementedError

    def release(self, state: Any) -> None:
        """The file was truncated or its last writer closed it: drop what the allocator holds
        for it (ext2_discard_reservation). Default: nothing is held."""

    def reallocate(self, space: SpaceView, req: BlockRequest, state: Any,
                   cluster: list[tuple[int, int]]) -> list[int] | None:
        """Cluster reallocation (ffs_reallocblks): given [(lblk, phys), ...] of a delayed-write
        cluster about to be extended and `req` describing its first block, return new free,
        contiguous physical blocks for the whole cluster, or None to leave it as it is. The
        allocator changes nothing; the volume takes the new blocks, rewrites the pointers and
        frees the old ones. Default: refuse."""
        return None


class InodePlacer:
    """Chooses the inode number for a new file or directory."""

    name = ""
    summary = ""

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        raise NotImplementedError
