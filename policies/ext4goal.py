"""ext4's goal block for a request, shared by `mballoc` and `delayed`.

A goal only steers the search; what is found there is the allocator's business. The chain is
ext4's:

* xattr blocks: the first block of the inode's group (fs/ext4/xattr.c ext4_xattr_block_set);
* the block after lblk - 1 when that is mapped: on extent-mapped files the volume hands
  ext4_ext_find_goal's answer (the nearest extent extrapolated to lblk, or the leaf's block)
  in this form, and on block-mapped files it is fs/ext4/indirect.c ext4_find_near's first rule;
* ext4_find_near's others: the nearest pointer before the slot in the same map, else the
  indirect block holding it;
* fs/ext4/balloc.c ext4_inode_to_goal_block: the first block of the inode's group - with flex
  groups of EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME (4) or more, of its flex group's first group for
  directories and special files and of the second for regular files - plus the colour
  (current->pid % 16) sixteenths of the group, which delayed allocation leaves out.
"""

from .base import BlockRequest
from .mbsearch import FLEX_SIZE_DIR_ALLOC_SCHEME


def inode_goal(geo, req: BlockRequest, pid: int | None = None) -> int:
    """ext4_inode_to_goal_block; pid None: delayed allocation (no colour)."""
    g = req.inode_group
    flex = getattr(geo, "groups_per_flex", 1)
    if flex >= FLEX_SIZE_DIR_ALLOC_SCHEME:
        g &= ~(flex - 1)
        if not req.is_dir and req.kind != "symlink" and g + 1 < geo.groups:
            g += 1                                   # S_ISREG: the second group
    start = geo.group_start(g)
    return start if pid is None else start + (pid % 16) * (geo.group_blocks(g) // 16)


def find_goal(geo, req: BlockRequest, pid: int | None = None) -> int:
    """The goal block for req (clamped to the volume's data blocks)."""
    if req.kind == "xattr":
        goal = geo.group_start(req.inode_group)
    elif req.prev_phys:
        goal = req.prev_phys + 1
    else:
        goal = req.map_prev or req.map_block or inode_goal(geo, req, pid)
    return clamp(geo, goal)


def clamp(geo, goal: int) -> int:
    """A goal inside the volume's data blocks (ext4_ext_find_goal's and ext4_find_near's
    callers check it against the block count the same way)."""
    return min(max(goal, geo.first_data_block), geo.blocks_count - 1)
