"""Where mke2fs puts the bitmaps and inode tables of a flex_bg file system.

e2fsprogs lib/ext2fs/alloc_tables.c (ext2fs_allocate_group_table, flexbg_offset), group by
group: the block bitmaps of a flex group's groups one after another from the first free block
of its first group, the inode bitmaps `table_offset` blocks (the flex group's size) after its
first block bitmap, the inode tables as far after its first inode bitmap; each search starts
where the previous group's table ended and skips what is in use (a backup superblock) if the
tables outgrow the first group.
"""

import numpy as np

from simfs.errors import ImageError

DEFAULT_GROUPS_PER_FLEX = 16        # mke2fs's flex_bg size (-G)


def _free_run(used: np.ndarray, first_data: int, start: int, finish: int, num: int) -> int | None:
    """ext2fs_get_free_blocks2: the first b from start (wrapping to the first data block when
    finish < start) with blocks b..b+num-1 free, stopping at finish; None if there is none."""
    nblocks = len(used)
    b = start or first_data
    finish = finish or start
    for _ in range(nblocks + 1):
        if b + num - 1 >= nblocks:
            if finish > start:
                return None
            b = first_data
        if not used[b:b + num].any():
            return b
        b += 1
        if b == finish:
            return None
    return None


def _flexbg_offset(geo, used, group: int, start_blk: int, rem_grp: int, elem: int) -> int:
    """Where to look for a table of `elem` blocks of `group` (flexbg_offset)."""
    fs = geo.groups_per_flex
    first = geo.first_data_block
    size = min(rem_grp * elem, geo.blocks_per_group // 4)
    if start_blk and start_blk < geo.blocks_count:
        b = _free_run(used, first, start_blk, start_blk + size, elem)
        if b is not None:
            return b
    start = geo.group_start(fs * (group // fs))
    last_grp = min(group | (fs - 1), geo.groups - 1)
    last_blk = geo.group_start(last_grp) + geo.group_blocks(last_grp) - 1
    for lo, n in ((start, size), (start, elem), (0, elem)):
        b = _free_run(used, first, lo, last_blk, n)
        if b is not None:
            return b
    return 0


def _take(geo, used, start: int, last_blk: int, n: int, what: str, g: int) -> int:
    b = _free_run(used, geo.first_data_block, start, last_blk, n)
    if b is None:
        raise ImageError(f"no room for the {what} of group {g}: give a larger size or fewer inodes")
    used[b:b + n] = True
    return b


def flexbg_tables(geo, used: np.ndarray) -> list[tuple[int, int, int]]:
    """(block bitmap, inode bitmap, inode table) of every group, marked in `used`, which holds
    the superblock copies and descriptor tables already."""
    fs = geo.groups_per_flex
    itb = geo.inode_table_blocks
    out: list[tuple[int, int, int]] = []
    for g in range(geo.groups):
        last_grp = min(g | (fs - 1), geo.groups - 1)
        rem = last_grp - g + 1
        last_blk = geo.group_start(last_grp) + geo.group_blocks(last_grp) - 1
        table_offset = fs
        if g % fs == 0 and last_grp == geo.groups - 1:       # the last flex group: contiguous
            table_offset = last_grp & (fs - 1)
            table_offset = fs if table_offset == 0 else table_offset + 1
        prev = out[-1] if g % fs else None
        start = _flexbg_offset(geo, used, g, prev[0] + 1 if prev else 0, rem, 1)
        bb = _take(geo, used, start, last_blk, 1, "block bitmap", g)
        start = _flexbg_offset(geo, used, g, prev[1] + 1 if prev else bb + table_offset, rem, 1)
        ib = _take(geo, used, start, last_blk, 1, "inode bitmap", g)
        start = _flexbg_offset(geo, used, g, prev[2] + itb if prev else ib + table_offset, rem, itb)
        it = _take(geo, used, start, last_blk, itb, "inode table", g)
        out.append((bb, ib, it))
    return out
