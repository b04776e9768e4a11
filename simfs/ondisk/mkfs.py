"""mkfs: write a fresh ext2 revision-1 file system (or the ext4 profile) into a (sparse) image file.

The layout follows mke2fs: superblock and descriptor-table copies in groups 0, 1 and powers
of 3, 5, 7 (sparse_super), then block bitmap, inode bitmap and inode table in every group, or
with flex_bg those of each flex group packed at its start; root directory (inode 2) and
lost+found (inode 11, 16 KiB or 12 blocks like mke2fs).
"""

import os
import stat
import time
import uuid as _uuid

import numpy as np

from simfs.errors import ImageError
from simfs.ondisk.constants import (
    DYNAMIC_REV, ERRORS_CONTINUE, EXT2_MAGIC, EXTENTS_FL, FIRST_INO, FLAGS_SIGNED_HASH,
    GROUP_DESC_SIZE, HASH_HALF_MD4, LOST_FOUND_INO, OS_LINUX, ROOT_INO, STATE_VALID, SUPERBLOCK_OFFSET,
)
from simfs.ondisk.dirent import new_dir_block, put, empty_block
from simfs.ondisk.extent import extent_root
from simfs.ondisk.features import choose
from simfs.ondisk.flexbg import DEFAULT_GROUPS_PER_FLEX, flexbg_tables
from simfs.ondisk.groupdesc import GroupDesc, pack_table
from simfs.ondisk.inode import Inode
from simfs.ondisk.superblock import Geometry, Superblock


def _lost_found_blocks(block_size: int) -> int:
    """lost+found is 16 KiB, or 12 blocks with 1K blocks, like mke2fs."""
    return min(12, max(2, 16384 // block_size)) if block_size == 1024 else max(2, 16384 // block_size)


def plan(size_bytes: int, *, block_size: int = 4096, blocks_per_group: int | None = None,
         inode_size: int = 256, bytes_per_inode: int | None = None, inodes_per_group: int | None = None,
         reserved_ratio: float = 0.05, label: bytes = b"", profile: str = "ext2",
         features: str | None = None, groups_per_flex: int | None = None) -> tuple[int, int, int, int]:
    """(blocks, blocks per group, groups, inodes per group) for these arguments, or ImageError
    saying which argument is wrong; writes nothing, so callers can check before creating a file.
    The limits are mke2fs's, and the first group must hold its metadata, root and lost+found
    (an image that does not was e2fsck-corrupt)."""
    if block_size not in (1024, 4096):
        raise ImageError(f"block size must be 1024 or 4096, not {block_size}")
    _features(profile, features, inode_size, groups_per_flex)
    if inode_size not in (128, 256):
        raise ImageError(f"inode size must be 128 or 256, not {inode_size}")
    if not 0 <= reserved_ratio <= 0.5:
        raise ImageError(f"reserved blocks must be 0 to 50 percent (as mke2fs -m), not {reserved_ratio * 100:g}")
    if len(label) > 16:
        raise ImageError(f"the label is {len(label)} bytes; ext2 keeps at most 16")
    if bytes_per_inode is not None and not 1024 <= bytes_per_inode <= 64 << 20:
        raise ImageError(f"bytes per inode must be from 1024 to 64M (as mke2fs -i), not {bytes_per_inode}")
    bpg = 8 * block_size if blocks_per_group is None else blocks_per_group
    if bpg % 8 or not (256 <= bpg <= 8 * block_size):
        raise ImageError(f"blocks per group must be a multiple of 8 from 256 to {8 * block_size}, not {bpg}")
    first = 1 if block_size == 1024 else 0
    blocks = size_bytes // block_size
    if blocks < 64 + first:
        raise ImageError(f"image too small: {size_bytes} bytes (need at least {(64 + first) * block_size})")
    if blocks > 2**32 - 1:
        raise ImageError(f"image too large for ext2 without the 64bit feature: {size_bytes} bytes "
                         f"(at most {(2**32 - 1) * block_size} with {block_size}-byte blocks)")
    groups = -(-(blocks - first) // bpg)
    if bytes_per_inode is None:
        bytes_per_inode = 8192 if blocks * block_size < 512 * 2**20 else 16384
    ipb = block_size // inode_size
    gdt_blocks = -(-groups * GROUP_DESC_SIZE // block_size)
    # group 0 holds the superblock, descriptors, bitmaps, root and lost+found besides its
    # inode table, which also fits one bitmap block; whole table blocks, a multiple of 8
    group0 = min(bpg, blocks - first)
    spare = 1 + gdt_blocks + 2 + 1 + _lost_found_blocks(block_size)
    step = max(ipb, 8)
    max_ipg = min(8 * block_size, (group0 - spare) * ipb) // step * step
    if max_ipg < 16:
        raise ImageError(f"the first group ({group0} blocks) cannot hold {gdt_blocks} descriptor blocks, "
                         f"the bitmaps, root, lost+found and an inode table: give a larger size or more "
                         f"blocks per group")
    if inodes_per_group is not None and not 16 <= inodes_per_group <= max_ipg:
        raise ImageError(f"inodes per group must be from 16 to {max_ipg} with {group0} blocks in the first "
                         f"group, {block_size}-byte blocks and {inode_size}-byte inodes, not {inodes_per_group}")
    if inodes_per_group is None:
        total = max(blocks * block_size // bytes_per_inode, 16 * groups)
        inodes_per_group = -(-total // groups)
    inodes_per_group = min(-(-inodes_per_group // step) * step, max_ipg)
    overhead = 1 + gdt_blocks + 2 + -(-inodes_per_group * inode_size // block_size)
    last = blocks - first - (groups - 1) * bpg
    if groups > 1 and last < overhead + 50:   # mke2fs drops a uselessly small last group
        groups -= 1
        blocks = first + groups * bpg
    if inodes_per_group * groups > 2**32 - 1:
        raise ImageError(f"too many inodes ({inodes_per_group} x {groups} groups); "
                         f"give a larger bytes per inode")
    return blocks, bpg, groups, inodes_per_group


def mkfs(path, size_bytes: int, *, block_size: int = 4096, blocks_per_group: int | None = None,
         inode_size: int = 256, bytes_per_inode: int | None = None, inodes_per_group: int | None = None,
         uuid: bytes | str | None = None, hash_seed: bytes | str | None = None, label: bytes = b"",
         reserved_ratio: float = 0.05, now: int | None = None, uid: int | None = None,
         gid: int | None = None, profile: str = "ext2", features: str | None = None,
         groups_per_flex: int | None = None, writer=None) -> Superblock:
    """Create the file system; returns its superblock.

    `profile` ("ext2" or "ext4", simfs.ondisk.features) and `features` (mke2fs -O edits of
    it) choose the feature set; `groups_per_flex` is mke2fs -G (16 by default with flex_bg).
    `writer(blkno, data)` receives every block mkfs writes, in order (the timing layer charges
    them); by default blocks are written straight into the image, which is made sparse.
    """
    blocks, bpg, groups, ipg = plan(size_bytes, block_size=block_size, blocks_per_group=blocks_per_group,
                                    inode_size=inode_size, bytes_per_inode=bytes_per_inode,
                                    inodes_per_group=inodes_per_group, reserved_ratio=reserved_ratio,
                                    label=label, profile=profile, features=features,
                                    groups_per_flex=groups_per_flex)
    feats = _features(profile, features, inode_size, groups_per_flex)
    now = int(time.time()) if now is None else now
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    sb = _superblock(blocks, bpg, groups, ipg, block_size, inode_size, reserved_ratio, now, feats,
                     groups_per_flex, uuid, hash_seed, label)
    geo = Geometry(sb)
    used, descs = _layout(geo)
    inode_used = np.zeros(ipg * groups, dtype=bool)
    inode_used[: FIRST_INO - 1] = True           # inodes 1..10 are reserved
    inode_used[LOST_FOUND_INO - 1] = True
    dirs = _root_and_lost_found(geo, used, now, uid, gid, extents=feats.has("extent"))
    for g, d in enumerate(descs):
        start, n = geo.group_start(g), geo.group_blocks(g)
        d.free_blocks = int(n - used[start:start + n].sum())
        d.free_inodes = int(ipg - inode_used[g * ipg:(g + 1) * ipg].sum())
    descs[0].used_dirs = 2
    sb.free_blocks_count = sum(d.free_blocks for d in descs)
    sb.free_inodes_count = sum(d.free_inodes for d in descs)
    own = writer is None
    if own:
        fd = _create_image(path, blocks * block_size)
        writer = lambda blkno, data: write_sparse(fd, data, blkno * block_size)  # noqa: E731
    try:
        _write(writer, sb, geo, descs, used, inode_used, dirs)
    finally:
        if own:
            os.close(fd)
    return sb


def _features(profile: str, edits: str | None, inode_size: int, groups_per_flex: int | None):
    """The feature set, or ImageError: -G only with flex_bg and a power of two (as mke2fs);
    extra_isize dropped with 128-byte inodes, which have no room for it (as mke2fs drops it)."""
    feats = choose(profile, edits)
    if groups_per_flex is not None:
        if not feats.has("flex_bg"):
            raise ImageError("flex_bg is not enabled, so the flex group size may not be given")
        if groups_per_flex < 1 or groups_per_flex & (groups_per_flex - 1) or groups_per_flex > 1 << 30:
            raise ImageError(f"the flex group size must be a power of 2, not {groups_per_flex}")
    if inode_size == 128:
        feats.set("extra_isize", False)
    return feats


def _superblock(blocks, bpg, groups, ipg, block_size, inode_size, reserved_ratio, now, feats,
                groups_per_flex, uuid, hash_seed, label) -> Superblock:
    sb = Superblock()
    sb.inodes_count = ipg * groups
    sb.blocks_count = blocks
    sb.r_blocks_count = int(blocks * reserved_ratio)
    sb.first_data_block = 1 if block_size == 1024 else 0
    sb.log_block_size = sb.log_frag_size = block_size.bit_length() - 11
    sb.blocks_per_group = sb.frags_per_group = bpg
    sb.inodes_per_group = ipg
    sb.wtime = sb.lastcheck = sb.mkfs_time = now
    sb.max_mnt_count = -1
    sb.magic = EXT2_MAGIC
    sb.state = STATE_VALID
    sb.errors = ERRORS_CONTINUE
    sb.creator_os = OS_LINUX
    sb.rev_level = DYNAMIC_REV
    sb.first_ino = FIRST_INO
    sb.inode_size = inode_size
    sb.feature_compat = feats.compat
    sb.feature_incompat = feats.incompat
    sb.feature_ro_compat = feats.ro_compat
    if feats.has("flex_bg"):
        sb.log_groups_per_flex = (groups_per_flex or DEFAULT_GROUPS_PER_FLEX).bit_length() - 1
    sb.uuid = _as_uuid(uuid)
    sb.hash_seed = _as_uuid(hash_seed)
    sb.def_hash_version = HASH_HALF_MD4
    sb.flags = FLAGS_SIGNED_HASH
    sb.volume_name = label
    if inode_size > 128:
        sb.min_extra_isize = sb.want_extra_isize = 32
    return sb


def _layout(geo) -> tuple[np.ndarray, list[GroupDesc]]:
    """The blocks in use (superblock copies, descriptor tables, bitmaps, inode tables) and each
    group's descriptor with its tables' places: in the group after its descriptors, or with
    flex_bg packed at the start of the flex group (simfs.ondisk.flexbg)."""
    used = np.zeros(geo.blocks_count, dtype=bool)
    used[: geo.first_data_block] = True
    for g in range(geo.groups):
        start = geo.group_start(g)
        used[start:start + geo.super_and_gdt_blocks(g)] = True
    if geo.flex_bg:
        tables = flexbg_tables(geo, used)
    else:
        tables = []
        for g in range(geo.groups):
            b = geo.group_start(g) + geo.super_and_gdt_blocks(g)
            tables.append((b, b + 1, b + 2))
            used[b:b + 2 + geo.inode_table_blocks] = True
    return used, [GroupDesc(block_bitmap=bb, inode_bitmap=ib, inode_table=it, free_inodes=geo.inodes_per_group)
                  for bb, ib, it in tables]


class _Dirs:
    """root and lost+found: their inodes and the blocks of their directories."""

    def __init__(self, root, lpf, blocks):
        self.root, self.lpf, self.blocks = root, lpf, blocks


def _root_and_lost_found(geo, used, now: int, uid: int, gid: int, extents: bool) -> _Dirs:
    """Root (inode 2) and lost+found (inode 11) in the first free blocks (after group 0's
    tables, or the flex group's), extent-mapped with the extent feature as mke2fs makes them."""
    block_size, inode_size = geo.block_size, geo.inode_size
    lpf_nblocks = _lost_found_blocks(block_size)
    free = np.flatnonzero(~used[: geo.blocks_count])[: 1 + lpf_nblocks]   # the first free blocks
    root_blk, lpf_blks = int(free[0]), [int(b) for b in free[1:]]
    used[free] = True
    spb = block_size // 512
    root = Inode(ROOT_INO, inode_size)
    root.mode = stat.S_IFDIR | 0o755
    root.uid, root.gid = uid, gid
    root.size, root.links, root.blocks = block_size, 3, spb
    lpf = Inode(LOST_FOUND_INO, inode_size)
    lpf.mode = stat.S_IFDIR | 0o700
    lpf.uid, lpf.gid = 0, 0
    lpf.size, lpf.links, lpf.blocks = block_size * lpf_nblocks, 2, spb * lpf_nblocks
    for inode in (root, lpf):
        inode.atime_ns = inode.ctime_ns = inode.mtime_ns = inode.crtime_ns = now * 10**9
    if extents:
        root.flags = lpf.flags = EXTENTS_FL
        root.block = extent_root([root_blk])
        lpf.block = extent_root(lpf_blks)
    else:
        root.block[0] = root_blk
        lpf.block[:lpf_nblocks] = lpf_blks
    root_dir = new_dir_block(block_size, ROOT_INO, ROOT_INO)
    put(root_dir, 12, ROOT_INO, 12, b"..", 2)
    put(root_dir, 24, LOST_FOUND_INO, block_size - 24, b"lost+found", 2)
    blocks = [(root_blk, bytes(root_dir)),
              (lpf_blks[0], bytes(new_dir_block(block_size, LOST_FOUND_INO, ROOT_INO)))]
    blocks += [(b, bytes(empty_block(block_size))) for b in lpf_blks[1:]]
    return _Dirs(root, lpf, blocks)


def _write(writer, sb, geo, descs, used, inode_used, dirs: _Dirs) -> None:
    """Every block mkfs makes, group by group, then the two directories' inodes and blocks."""
    block_size, ipg = geo.block_size, geo.inodes_per_group
    gdt = pack_table(descs, block_size)
    zero_itable = bytes(geo.inode_table_blocks * block_size)
    for g, d in enumerate(descs):
        start, n = geo.group_start(g), geo.group_blocks(g)
        if geo.has_super(g):
            sb.block_group_nr = g
            if block_size == 1024:
                writer(start, sb.pack())
            else:  # block 0 of a 4K group: superblock at byte 1024
                blk = bytearray(block_size)
                blk[SUPERBLOCK_OFFSET:SUPERBLOCK_OFFSET + 1024] = sb.pack()
                writer(start, bytes(blk))
            writer(start + 1, gdt)
        writer(d.block_bitmap, bitmap_bytes(used[start:start + n], block_size))
        writer(d.inode_bitmap, bitmap_bytes(inode_used[g * ipg:(g + 1) * ipg], block_size))
        writer(d.inode_table, zero_itable)
    sb.block_group_nr = 0
    tables: dict[int, bytearray] = {}        # inode-table blocks holding root and lost+found
    for inode in (dirs.root, dirs.lpf):
        blk = descs[0].inode_table + (inode.ino - 1) // geo.inodes_per_block
        off = ((inode.ino - 1) % geo.inodes_per_block) * geo.inode_size
        tables.setdefault(blk, bytearray(block_size))[off:off + geo.inode_size] = inode.pack()
    for blk, table in sorted(tables.items()):
        writer(blk, bytes(table))
    for blk, data in dirs.blocks:
        writer(blk, data)


def write_sparse(fd: int, data: bytes, offset: int) -> None:
    """pwrite into a freshly truncated image, skipping all-zero pieces (the zeroed inode
    tables): they already read as zeros, and a 64G image would otherwise allocate ~1G."""
    if data.strip(b"\0"):
        os.pwrite(fd, data, offset)


def bitmap_bytes(used: np.ndarray, block_size: int) -> bytes:
    """A bitmap block: bit i (LSB first) set when item i is used; padding bits set, as mke2fs does."""
    bits = np.ones(block_size * 8, dtype=bool)
    bits[: len(used)] = used
    return np.packbits(bits, bitorder="little").tobytes()


def _as_uuid(value) -> bytes:
    if value is None:
        return os.urandom(16)
    if isinstance(value, str):
        return _uuid.UUID(value).bytes
    if len(value) != 16:
        raise ImageError("a UUID has 16 bytes")
    return bytes(value)


def _create_image(path, size: int) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        raise ImageError(f"{path}: cannot create image: {e.strerror}") from None
    try:
        os.ftruncate(fd, size)
    except OSError as e:        # e.g. EFBIG: larger than the host file system allows
        os.close(fd)
        raise ImageError(f"{path}: cannot make a {size}-byte image: {e.strerror}") from None
    return fd
