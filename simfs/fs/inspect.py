"""Looking inside a volume without disturbing it (extents) and as e2fsck reads it (a scan).

`extents` is an observation for `simfs frag`, `simfs layout` and the experiments: nothing is
charged or cached. `metadata_scan` is the opposite: it reads what e2fsck reads, through the
cache and clock, so its cost is simulated time (seed 003's fsck).
"""

import errno

import numpy as np

from simfs.errors import FSError
from simfs.ondisk.constants import DIND_BLOCK, IND_BLOCK, NDIR_BLOCKS, TIND_BLOCK


class Inspection:
    """Inspection of `simfs.fs.volume.Volume` (a mixin)."""

    def extents(self, ino: int) -> dict:
        """Where an inode's blocks are, for `simfs frag` and `simfs layout`: an observation,
        not an I/O the tool would do, so nothing is charged or cached (like peek_attr).

        runs: [(lblk, phys, n)], maximal runs of logically and physically consecutive data
        blocks in logical order; indirect: [(level, phys)] with level "IND"/"DIND"/"TIND",
        in the order debugfs's `stat` lists them; delalloc: [(lblk, n)] runs of blocks a
        delayed allocator has not placed yet; xattr_block: the extended-attribute block or 0.
        Fast symlinks and device inodes have no runs."""
        if not 1 <= ino <= self.geo.inodes_count or not self.space.inode_used[ino - 1]:
            raise FSError(errno.ENOENT)
        inode = self.inodes.peek(ino)
        geo = self.geo
        lblks, physs, indirect = [], [], []
        mapped = inode.has_block_map and not inode.is_fast_symlink(geo.block_size)
        if mapped:
            direct = np.array(inode.block[:NDIR_BLOCKS], dtype=np.int64)
            idx = np.flatnonzero(direct)
            lblks.append(idx)
            physs.append(direct[idx])
            p = geo.ptrs_per_block
            bases = (NDIR_BLOCKS, NDIR_BLOCKS + p, NDIR_BLOCKS + p + p * p)

            def walk(blk: int, level: int, base: int) -> None:
                ptrs = np.frombuffer(self.cache.peek(blk), dtype="<u4").astype(np.int64)
                nz = np.flatnonzero(ptrs)
                if level == 1:
                    lblks.append(base + nz)
                    physs.append(ptrs[nz])
                    return
                span = p ** (level - 1)
                for i in nz:
                    child = int(ptrs[i])
                    indirect.append(("IND" if level == 2 else "DIND", child))
                    walk(child, level - 1, base + int(i) * span)

            for level, slot, name in ((1, IND_BLOCK, "IND"), (2, DIND_BLOCK, "DIND"), (3, TIND_BLOCK, "TIND")):
                if inode.block[slot]:
                    indirect.append((name, inode.block[slot]))
                    walk(inode.block[slot], level, bases[level - 1])
        runs = []
        if lblks:
            lb = np.concatenate(lblks)
            ph = np.concatenate(physs)
            if len(lb):
                brk = np.flatnonzero((np.diff(lb) != 1) | (np.diff(ph) != 1)) + 1
                starts = np.concatenate([[0], brk])
                ends = np.concatenate([brk, [len(lb)]])
                runs = [(int(lb[s]), int(ph[s]), int(e - s)) for s, e in zip(starts, ends)]
        delalloc = self.delalloc.runs(inode)
        return {"ino": ino, "mode": inode.mode, "size": inode.size, "i_blocks": inode.blocks,
                "block_size": geo.block_size, "runs": runs, "indirect": indirect,
                "delalloc": delalloc, "xattr_block": inode.file_acl,
                "blocks_count": geo.blocks_count, "first_data_block": geo.first_data_block,
                "blocks_per_group": geo.blocks_per_group, "inodes_count": geo.inodes_count,
                "inodes_per_group": geo.inodes_per_group,
                # statfs's f_blocks: all blocks less the file system's own overhead
                "f_blocks": geo.blocks_count - geo.first_data_block - sum(
                    geo.super_and_gdt_blocks(g) + 2 + geo.inode_table_blocks for g in range(geo.groups))}

    def metadata_scan(self) -> dict:
        """Read what e2fsck reads, in its order, through the cache and clock: every group's
        bitmaps; pass 1, every inode-table block group by group and every file's indirect
        blocks; pass 2, every directory block in block order (seed 003's fsck). Returns how
        many inodes and directory blocks it saw; the cost is the clock's advance."""
        geo, cache = self.geo, self.cache
        for d in self.descs:
            cache.read_run(d.block_bitmap, 1, "bitmap", 0, wait=True)
            cache.read_run(d.inode_bitmap, 1, "bitmap", 0, wait=True)
        dir_blocks, inodes = set(), 0
        ipg = geo.inodes_per_group
        for g, d in enumerate(self.descs):
            cache.read_run(d.inode_table, geo.inode_table_blocks, "inode", 0, wait=True)
            for i in np.flatnonzero(self.space.inode_used[g * ipg:(g + 1) * ipg]):
                inode = self.inodes.peek(g * ipg + int(i) + 1)
                inodes += 1
                if not inode.has_block_map or inode.is_fast_symlink(geo.block_size):
                    continue
                for lblk, phys in self.filemap.blocks(inode):      # reads the indirect blocks
                    if inode.is_dir and isinstance(lblk, int):
                        dir_blocks.add(phys)
        blocks = sorted(dir_blocks)
        i = 0
        while i < len(blocks):
            j = i + 1
            while j < len(blocks) and blocks[j] == blocks[j - 1] + 1:
                j += 1
            cache.read_run(blocks[i], j - i, "dir", 0, wait=True)
            i = j
        return {"inodes": inodes, "dir_blocks": len(blocks)}

