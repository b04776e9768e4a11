"""The ext2 superblock, its validation, and the geometry derived from it."""

import uuid as _uuid

from simfs.errors import ImageError
from simfs.ondisk.constants import (
    COMPAT, EXT2_MAGIC, GROUP_DESC_SIZE, INCOMPAT, INCOMPAT_EXTENT, INCOMPAT_FLEX_BG, RO_COMPAT,
    RO_COMPAT_HUGE_FILE, RO_COMPAT_SPARSE_SUPER, SUPERBLOCK_SIZE, SUPPORTED_INCOMPAT,
    SUPPORTED_RO_COMPAT, feature_names,
)
from simfs.ondisk.rawstruct import Bytes, Field


class Superblock:
    """The 1024-byte superblock; fields read and write through to `raw`."""

    inodes_count = Field(0, "I")
    blocks_count = Field(4, "I")
    r_blocks_count = Field(8, "I")
    free_blocks_count = Field(12, "I")
    free_inodes_count = Field(16, "I")
    first_data_block = Field(20, "I")
    log_block_size = Field(24, "I")
    log_frag_size = Field(28, "I")
    blocks_per_group = Field(32, "I")
    frags_per_group = Field(36, "I")
    inodes_per_group = Field(40, "I")
    mtime = Field(44, "I")
    wtime = Field(48, "I")
    mnt_count = Field(52, "H")
    max_mnt_count = Field(54, "h")
    magic = Field(56, "H")
    state = Field(58, "H")
    errors = Field(60, "H")
    minor_rev_level = Field(62, "H")
    lastcheck = Field(64, "I")
    checkinterval = Field(68, "I")
    creator_os = Field(72, "I")
    rev_level = Field(76, "I")
    def_resuid = Field(80, "H")
    def_resgid = Field(82, "H")
    first_ino = Field(84, "I")
    inode_size = Field(88, "H")
    block_group_nr = Field(90, "H")
    feature_compat = Field(92, "I")
    feature_incompat = Field(96, "I")
    feature_ro_compat = Field(100, "I")
    uuid = Bytes(104, 16)
    volume_name = Bytes(120, 16)
    last_mounted = Bytes(136, 64)
    reserved_gdt_blocks = Field(206, "H")
    desc_size = Field(254, "H")          # s_desc_size: 0 or 32 without 64bit
    hash_seed = Bytes(236, 16)
    def_hash_version = Field(252, "B")
    mkfs_time = Field(264, "I")
    min_extra_isize = Field(348, "H")
    want_extra_isize = Field(350, "H")
    flags = Field(352, "I")
    log_groups_per_flex = Field(0x174, "B")     # s_log_groups_per_flex (flex_bg)
    # the error record ext4 keeps (ext4_super_block s_error_count .. s_last_error_func), which
    # e2fsck and dumpe2fs read for ext2 images too and e2fsck clears when it has checked
    error_count = Field(0x194, "I")
    first_error_time = Field(0x198, "I")
    first_error_ino = Field(0x19C, "I")
    first_error_block = Field(0x1A0, "Q")
    first_error_func = Bytes(0x1A8, 32)
    first_error_line = Field(0x1C8, "I")
    last_error_time = Field(0x1CC, "I")
    last_error_ino = Field(0x1D0, "I")
    last_error_line = Field(0x1D4, "I")
    last_error_block = Field(0x1D8, "Q")
    last_error_func = Bytes(0x1E0, 32)
    mount_opts = Bytes(512, 64)      # s_mount_opts: dumpe2fs shows it as "Mount options"
    first_error_errcode = Field(0x27A, "B")
    last_error_errcode = Field(0x27B, "B")

    #: in s_mount_opts once an image was mounted data-less (simfs.blockio.imagefile): sticky
    DATALESS_MARK = b"simfs_dataless"

    @property
    def dataless(self) -> bool:
        """Whether files of this image may have lost their data to a data-less mount."""
        return self.DATALESS_MARK in self.mount_opts.rstrip(b"\0").split(b",")

    def mark_dataless(self) -> None:
        if not self.dataless:
            opts = [o for o in self.mount_opts.rstrip(b"\0").split(b",") if o]
            self.mount_opts = b",".join(opts + [self.DATALESS_MARK])[:63]

    def record_error(self, when: int, func: str, ino: int = 0, block: int = 0, errcode: int = 0) -> None:
        """Count a detected inconsistency in the superblock's error record, first and last, as
        ext4's save_error_info does (the error bit of s_state is the caller's)."""
        name = func.encode("ascii", "replace")[:32]
        self.error_count = min(self.error_count + 1, 0xFFFFFFFF)
        if not self.first_error_time:
            self.first_error_time, self.first_error_ino, self.first_error_block = when, ino, block
            self.first_error_func, self.first_error_line, self.first_error_errcode = name, 0, errcode
        self.last_error_time, self.last_error_ino, self.last_error_block = when, ino, block
        self.last_error_func, self.last_error_line, self.last_error_errcode = name, 0, errcode

    def __init__(self, raw: bytes | bytearray | None = None):
        self.raw = bytearray(raw if raw is not None else bytes(SUPERBLOCK_SIZE))
        assert len(self.raw) == SUPERBLOCK_SIZE

    def pack(self) -> bytes:
        return bytes(self.raw)

    @property
    def block_size(self) -> int:
        return 1024 << self.log_block_size

    @property
    def uuid_str(self) -> str:
        return str(_uuid.UUID(bytes=self.uuid))

    @property
    def group_count(self) -> int:
        return -(-(self.blocks_count - self.first_data_block) // self.blocks_per_group)

    def validate(self, image_name: str = "image", image_size: int | None = None) -> None:
        """Refuse what simfs cannot use, with a message that names the reason."""
        if self.magic != EXT2_MAGIC:
            raise ImageError(f"{image_name}: not an ext2 file system (bad magic 0x{self.magic:04x})")
        if self.rev_level != 1:
            raise ImageError(f"{image_name}: ext2 revision {self.rev_level} is not supported "
                             "(simfs needs revision 1, 'dynamic')")
        if self.log_block_size > 6 or self.block_size not in (1024, 2048, 4096):
            raise ImageError(f"{image_name}: unsupported block size {self.block_size}")
        bs = self.block_size
        if self.log_frag_size != self.log_block_size:
            raise ImageError(f"{image_name}: fragment size differs from block size")
        if self.inode_size not in (128, 256, 512, 1024) or self.inode_size > bs:
            raise ImageError(f"{image_name}: corrupt superblock (inode size {self.inode_size})")
        if not (8 <= self.blocks_per_group <= 8 * bs) or self.blocks_per_group % 8:
            raise ImageError(f"{image_name}: corrupt superblock (blocks per group {self.blocks_per_group})")
        if not (1 <= self.inodes_per_group <= 8 * bs):
            raise ImageError(f"{image_name}: corrupt superblock (inodes per group {self.inodes_per_group})")
        if self.first_data_block != (1 if bs == 1024 else 0):
            raise ImageError(f"{image_name}: corrupt superblock (first data block {self.first_data_block})")
        if self.inodes_count != self.inodes_per_group * self.group_count:
            raise ImageError(f"{image_name}: corrupt superblock (inode count {self.inodes_count} != "
                             f"{self.inodes_per_group} x {self.group_count} groups)")
        if image_size is not None and self.blocks_count * bs > image_size:
            raise ImageError(f"{image_name}: image is shorter ({image_size} bytes) than its file system "
                             f"({self.blocks_count} blocks of {bs})")
        bad_incompat = self.feature_incompat & ~SUPPORTED_INCOMPAT
        if bad_incompat:
            names = ", ".join(feature_names(bad_incompat, INCOMPAT))
            raise ImageError(f"{image_name}: unsupported incompatible feature(s): {names}")
        bad_ro = self.feature_ro_compat & ~SUPPORTED_RO_COMPAT
        if bad_ro:
            names = ", ".join(feature_names(bad_ro, RO_COMPAT))
            raise ImageError(f"{image_name}: unsupported read-only-compatible feature(s): {names} "
                             "(simfs writes, so it refuses these)")
        if self.desc_size not in (0, GROUP_DESC_SIZE):
            raise ImageError(f"{image_name}: corrupt superblock (group descriptor size {self.desc_size} "
                             "without the 64bit feature)")
        if self.feature_incompat & INCOMPAT_FLEX_BG and self.log_groups_per_flex > 31:
            raise ImageError(f"{image_name}: corrupt superblock (log groups per flex "
                             f"{self.log_groups_per_flex})")

    def feature_list(self) -> list[str]:
        return (feature_names(self.feature_compat, COMPAT) + feature_names(self.feature_incompat, INCOMPAT)
                + feature_names(self.feature_ro_compat, RO_COMPAT))


def _is_power_of(n: int, base: int) -> bool:
    while n > 1 and n % base == 0:
        n //= base
    return n == 1


class Geometry:
    """Where everything of each group lives, derived from the superblock (no I/O)."""

    def __init__(self, sb: Superblock, desc_blocks_of=None):
        self.block_size = sb.block_size
        self.blocks_count = sb.blocks_count
        self.first_data_block = sb.first_data_block
        self.blocks_per_group = sb.blocks_per_group
        self.inodes_per_group = sb.inodes_per_group
        self.inode_size = sb.inode_size
        self.inodes_count = sb.inodes_count
        self.groups = sb.group_count
        self.sparse_super = bool(sb.feature_ro_compat & RO_COMPAT_SPARSE_SUPER)
        self.gdt_blocks = -(-self.groups * GROUP_DESC_SIZE // self.block_size)
        self.reserved_gdt_blocks = sb.reserved_gdt_blocks
        self.inodes_per_block = self.block_size // self.inode_size
        self.inode_table_blocks = -(-self.inodes_per_group * self.inode_size // self.block_size)
        self.ptrs_per_block = self.block_size // 4
        self.sectors_per_block = self.block_size // 512
        self.flex_bg = bool(sb.feature_incompat & INCOMPAT_FLEX_BG)
        #: groups whose bitmaps and inode tables are packed together (ext4's flex group); 1
        #: without flex_bg. The allocators' flex-group scans read this, the metadata's place
        #: is always read from the descriptors.
        self.groups_per_flex = 1 << sb.log_groups_per_flex if self.flex_bg else 1
        self.extents = bool(sb.feature_incompat & INCOMPAT_EXTENT)   # new files extent-mapped
        self.huge_file = bool(sb.feature_ro_compat & RO_COMPAT_HUGE_FILE)

    def group_start(self, g: int) -> int:
        return self.first_data_block + g * self.blocks_per_group

    def group_blocks(self, g: int) -> int:
        """Number of blocks in group g (the last one may be short)."""
        return min(self.blocks_per_group, self.blocks_count - self.group_start(g))

    def group_of_block(self, b: int) -> int:
        return (b - self.first_data_block) // self.blocks_per_group

    def group_of_inode(self, ino: int) -> int:
        return (ino - 1) // self.inodes_per_group

    def has_super(self, g: int) -> bool:
        """sparse_super: backups only in groups 0, 1 and powers of 3, 5 and 7."""
        if not self.sparse_super or g <= 1:
            return True
        return _is_power_of(g, 3) or _is_power_of(g, 5) or _is_power_of(g, 7)

    def super_and_gdt_blocks(self, g: int) -> int:
        """Blocks taken at the start of group g by the superblock copy and descriptor table."""
        if not self.has_super(g):
            return 0
        return 1 + self.gdt_blocks + self.reserved_gdt_blocks

    def table_bounds(self, g: int) -> tuple[int, int]:
        """[lo, hi): where group g's bitmaps and inode table may lie, as ext4_check_descriptors
        allows: inside the group after its superblock copy and descriptors, or with flex_bg
        anywhere after the primary descriptor table."""
        if self.flex_bg:
            return self.first_data_block + self.super_and_gdt_blocks(0), self.blocks_count
        start = self.group_start(g)
        return start + self.super_and_gdt_blocks(g), start + self.group_blocks(g)

    def gdt_block(self, g: int) -> int:
        """Block holding group g's descriptor in the primary table."""
        return self.first_data_block + 1 + (g * GROUP_DESC_SIZE) // self.block_size
