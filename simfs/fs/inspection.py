"""Looking inside a volume without disturbing it (extents, block owners, filefrag's counts) and
as e2fsck reads it (a scan).

`Volume.extents` is an observation for `simfs frag`, `simfs layout` and the experiments: nothing
is charged or cached. On it: `block_owners` (what every block is and which inode owns it:
`simfs layout`'s map, the experiments' block maps) and filefrag's two ways of counting a file's
extents with its "perfection" figure (`simfs frag`, the experiments' extent counts).
`metadata_scan` is the opposite: it reads what e2fsck reads, through the cache and clock, so its
cost is simulated time (seed 003's fsck).
"""

import errno
import stat
from dataclasses import dataclass

import numpy as np

from simfs.errors import FSError
from simfs.ondisk.constants import DIND_BLOCK, EXTENTS_FL, IND_BLOCK, NDIR_BLOCKS, TIND_BLOCK


class Inspection:
    """Inspection of `simfs.fs.volume.Volume` (a mixin)."""

    def extents(self, ino: int) -> dict:
        """Where an inode's blocks are, for `simfs frag` and `simfs layout`: an observation,
        not an I/O the tool would do, so nothing is charged or cached (like peek_attr).

        runs: [(lblk, phys, n)], maximal runs of logically and physically consecutive data
        blocks in logical order; leaf_extents: an extent-mapped file's extents as its leaves
        hold them, [(lblk, phys, n, unwritten)] (empty for a block-mapped file); indirect:
        [(level, phys)] with level "IND"/"DIND"/"TIND", in the order debugfs's `stat` lists
        them; delalloc: [(lblk, n)] runs of blocks a delayed allocator has not placed yet;
        xattr_block: the extended-attribute block or 0. Fast symlinks and device inodes have
        no runs."""
        if not 1 <= ino <= self.geo.inodes_count or not self.space.inode_in_use[ino - 1]:
            raise FSError(errno.ENOENT)
        inode = self.inodes.peek(ino)
        geo = self.geo
        lblks, physs, indirect = [], [], []
        mapped = inode.has_block_map and not inode.is_fast_symlink(geo.block_size)
        runs, leaves = [], []
        if mapped and inode.flags & EXTENTS_FL:
            runs, indirect, leaves = self.filemap.ext.runs(inode)
        elif mapped:
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
                "inode_flags": inode.flags,     # what FS_IOC_GETFLAGS shows filefrag
                "block_size": geo.block_size, "runs": runs, "leaf_extents": leaves, "indirect": indirect,
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



# Who owns each block ------------------------------------------------------------------------------
# Kinds of block, as `simfs layout` colours them and the experiments' block maps count them.
FREE, SUPER, BITMAP, ITABLE, DIR, INDIRECT, XATTR, UNOWNED, DATA = range(9)
KIND_NAMES = {FREE: "free", SUPER: "superblock + descriptors", BITMAP: "bitmaps",
              ITABLE: "inode tables", DIR: "directories", INDIRECT: "indirect blocks",
              XATTR: "xattr blocks", UNOWNED: "used, no owner", DATA: "file data"}


@dataclass
class BlockOwners:
    """What every block of a volume is: `kind` (FREE ... DATA) and `ino`, the inode whose
    data, directory or indirect block it is (0 for the rest; an extended-attribute block may
    be shared, so it has none). SUPER covers the blocks before the first group, the superblock
    and descriptor copies with the reserved descriptor blocks; UNOWNED is a used block that no
    inode examined claims (none after a clean unmount when every inode was examined)."""

    block_size: int
    blocks_count: int
    first_data_block: int
    blocks_per_group: int
    groups: int
    group_starts: list
    inodes_count: int
    kind: np.ndarray                       # uint8 per block
    ino: np.ndarray                        # uint32 per block

    def claim(self, e: dict) -> None:
        """Mark one inode's blocks, from its `Volume.extents`."""
        data = DIR if stat.S_ISDIR(e["mode"]) else DATA
        ino = e["ino"]
        for _, phys, n in e["runs"]:
            self.kind[phys:phys + n] = data
            self.ino[phys:phys + n] = ino
        for _, phys in e["indirect"]:
            self.kind[phys] = INDIRECT
            self.ino[phys] = ino
        if e["xattr_block"]:
            self.kind[e["xattr_block"]] = XATTR


def block_owners(vol, inos=None, each=None) -> BlockOwners:
    """Who owns each block of `vol`: the file system's own metadata from the group descriptors,
    then the blocks of every inode in use (or only of `inos`), in inode order, from
    `vol.extents` (an observation: nothing is charged). `each(extents)` is called for every
    inode examined, for callers that also want per-file figures."""
    geo = vol.geo
    n = geo.blocks_count
    kind = np.full(n, UNOWNED, dtype=np.uint8)
    kind[~vol.space.block_used] = FREE
    kind[: geo.first_data_block] = SUPER
    starts = []
    for g, d in enumerate(vol.descs):
        s = geo.group_start(g)
        starts.append(s)
        kind[s:s + geo.super_and_gdt_blocks(g)] = SUPER
        kind[d.block_bitmap] = BITMAP
        kind[d.inode_bitmap] = BITMAP
        kind[d.inode_table:d.inode_table + geo.inode_table_blocks] = ITABLE
    own = BlockOwners(block_size=geo.block_size, blocks_count=n, first_data_block=geo.first_data_block,
                      blocks_per_group=geo.blocks_per_group, groups=geo.groups, group_starts=starts,
                      inodes_count=geo.inodes_count, kind=kind, ino=np.zeros(n, dtype=np.uint32))
    if inos is None:
        inos = (int(i) + 1 for i in np.flatnonzero(vol.space.inode_used))
    for ino in inos:
        e = vol.extents(ino)
        own.claim(e)
        if each is not None:
            each(e)
    return own


def layout_counts(doc: dict) -> tuple[int, int]:
    """A file's part of the static layout score (Smith and Seltzer, "File System Aging",
    SIGMETRICS 1997; the score Conway et al. report beside their dynamic one): (data blocks after
    the file's first that lie right after the file's previous data block on disk, data blocks
    after its first). Holes do not break contiguity; unplaced delayed blocks do not count."""
    runs = doc["runs"]
    if not runs:
        return 0, 0
    blocks = sum(n for _, _, n in runs)
    follow = blocks - len(runs) + sum(1 for (_, p0, n0), (_, p1, _) in zip(runs, runs[1:]) if p1 == p0 + n0)
    return follow, blocks - 1


def static_layout_score(follow: int, blocks: int) -> float | None:
    """The share of a tree's blocks (after each file's first) that follow their file's
    previous block on disk; None when no file has a second block."""
    return follow / blocks if blocks else None


# filefrag's counting -------------------------------------------------------------------------------
# On an extents document (`Volume.extents`: runs, size, block_size, inode_flags; the geometry for
# perfection), as e2fsprogs 1.47's misc/filefrag.c counts a file of the Linux kernel's ext2 or
# ext4. `simfs frag` prints these; the experiments sum them over files.

def is_ext2(doc: dict) -> bool:
    """filefrag's `is_ext2`: a block-mapped file (no EXT4_EXTENTS_FL in the flags
    FS_IOC_GETFLAGS returns) on an ext2/3/4 file system; only such a file gets the indirect-block
    rule on the FIBMAP path, the cylinder-group line and the perfection clause."""
    return not doc.get("inode_flags", 0) & EXTENTS_FL


#: the lists of an extents document, which the mount's virtual xattr hands out in pages
PAGED_LISTS = ("runs", "leaf_extents", "indirect", "delalloc")


def fiemap_extents(doc: dict) -> tuple[int, list[dict]]:
    """filefrag's FIEMAP path: (extents found, rows). Rows are what the kernel reports: for a
    block-mapped file (ext2_fiemap) maximal runs of logically and physically consecutive
    blocks, flagged "merged"; for an extent-mapped one (ext4's iomap report) each leaf extent,
    "unwritten" if it is; the last one "last"; plus unplaced delayed blocks ("unknown_loc",
    "delalloc"), in logical order. A row is a new extent unless it continues the previous one
    physically (filefrag's `expected` / `expected_dense`: an indirect block between two runs
    makes two extents). Each row's "expected" is the block filefrag expected there, 0 when it
    continues. Units: blocks."""
    if doc.get("leaf_extents"):
        rows = [{"logical": l, "physical": p, "length": n, "flags": ["unwritten"] if u else []}
                for l, p, n, u in doc["leaf_extents"]]
    else:
        rows = [{"logical": l, "physical": p, "length": n, "flags": ["merged"]} for l, p, n in doc["runs"]]
    for lblk, n in doc.get("delalloc", []):
        rows.append({"logical": lblk, "physical": 0, "length": n, "flags": ["unknown_loc", "delalloc"]})
    rows.sort(key=lambda r: r["logical"])
    if rows:
        rows[-1]["flags"] = ["last"] + rows[-1]["flags"]
    total = 0
    last_phys = last_log = last_len = 0
    for r in rows:
        dense = last_phys + last_len
        expected = last_phys + r["logical"] - last_log
        if r["logical"] != 0 and r["physical"] != expected and r["physical"] != dense:
            total += 1
        else:
            expected = 0
            total = max(total, 1)
        r["expected"] = expected
        last_phys, last_log, last_len = r["physical"], r["logical"], r["length"]
    return total, rows


def _map_boundary_blocks(lblk: int, ppb: int) -> int:
    """How many indirect blocks the ext2 map starts at logical block lblk (filefrag's
    is_ext2 rule: 1 at every new indirect block, 2 where a double-indirect tree starts ...)."""
    if lblk < NDIR_BLOCKS:
        return 0
    n = lblk - NDIR_BLOCKS
    k = int(n % ppb == 0)
    if n >= ppb and (n - ppb) % (ppb * ppb) == 0:
        k += 1
    if n >= ppb + ppb * ppb and (n - ppb - ppb * ppb) % (ppb ** 3) == 0:
        k += 1
    return k


def fibmap_extents(doc: dict) -> tuple[list[dict], int]:
    """filefrag's FIBMAP path: (extents, data blocks). Block by block; in a block-mapped file,
    where the ext2 map needs new indirect blocks the expected next block moves past them
    (filefrag's `is_ext2` rule), so indirect blocks placed inline do not fragment; an
    extent-mapped file gets no such rule (its map blocks are not among its data). A hole
    starts a new extent. Each extent's "expected" is where filefrag expected it to start, from
    the extent before it (0 for the first, and where it starts there)."""
    bs, size = doc["block_size"], doc["size"]
    ppb = bs // 4 if is_ext2(doc) else 0
    bmap = {}
    for lblk, phys, n in doc["runs"]:
        for j in range(n):
            bmap[lblk + j] = phys + j
    extents = []
    count = 0
    last_block = 0
    expected = 0
    for i in range(-(-size // bs)):
        if last_block and ppb:
            last_block += _map_boundary_blocks(i, ppb)
        block = bmap.get(i, 0)
        if not block:
            continue
        count += 1
        if not extents or block != last_block + 1 or extents[-1]["logical"] + extents[-1]["length"] != i:
            if len(extents) >= 2:
                prev, cur = extents[-2], extents[-1]
                expected = prev["physical"] + (cur["logical"] - prev["logical"])
                cur["expected"] = 0 if expected == cur["physical"] else expected
            extents.append({"logical": i, "physical": block, "length": 0, "expected": 0})
        extents[-1]["length"] += 1
        last_block = block
    if len(extents) >= 2:
        prev, cur = extents[-2], extents[-1]
        expected = prev["physical"] + (cur["logical"] - prev["logical"])
        cur["expected"] = 0 if expected == cur["physical"] else expected
    return extents, count


def perfection(doc: dict, count: int) -> int:
    """filefrag's "perfection would be M extents": count / (8 * block size - f_files / 8 /
    cylgroups - 3) + 1, cylgroups = f_blocks / (8 * block size) rounded up, with integer
    arithmetic as in its C (e2fsprogs 1.47 never increments the block count it divides, so it
    always says 1; simfs passes the data blocks)."""
    bs = doc["block_size"]
    cylgroups = -(-doc["f_blocks"] // (bs * 8)) if doc["f_blocks"] else 0
    per_cyl = bs * 8 - (doc["inodes_count"] // 8 // max(cylgroups, 1)) - 3
    return count // per_cyl + 1


def data_extents(doc: dict) -> int:
    """Extents of the data alone, as filefrag counts an extent-mapped file (ext4's, where no
    map block sits among the data): runs of logically consecutive blocks that continue
    physically, or continue after nothing but this file's own indirect blocks - wherever the
    allocator put them. Unplaced delayed blocks are one extent per run. So an ext2 file whose
    data is contiguous counts as one extent however its map blocks lie (seed 004 compares
    delayed allocation with ext4's 30-40)."""
    maps = {phys for _, phys in doc.get("indirect", ())}
    n = len(doc.get("delalloc", ()))
    end_log = end_phys = None
    for lblk, phys, length in doc["runs"]:
        cont = lblk == end_log and phys >= end_phys and all(b in maps for b in range(end_phys, phys))
        if not cont:
            n += 1
        end_log, end_phys = lblk + length, phys + length
    return n


def frag_counts(doc: dict) -> dict:
    """Both of filefrag's counts and its minimum, and the data extents, for scripts, tests and
    the experiments."""
    n_fiemap, _ = fiemap_extents(doc)
    extents, count = fibmap_extents(doc)
    return {"extents": n_fiemap, "extents_bmap": len(extents), "data_extents": data_extents(doc),
            "data_blocks": count, "perfection": perfection(doc, count), "runs_count": len(doc["runs"])}
