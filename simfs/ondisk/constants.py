"""ext2 revision-1 constants: magic numbers, feature flags, file types, reserved inodes."""

import stat

EXT2_MAGIC = 0xEF53
SUPERBLOCK_OFFSET = 1024
SUPERBLOCK_SIZE = 1024
GROUP_DESC_SIZE = 32

ROOT_INO = 2
LOST_FOUND_INO = 11
FIRST_INO = 11
BAD_BLOCKS_INO = 1

NDIR_BLOCKS = 12
IND_BLOCK, DIND_BLOCK, TIND_BLOCK = 12, 13, 14
N_BLOCKS = 15

MAX_NAME_LEN = 255
LINK_MAX = 32000  # ext2's EXT2_LINK_MAX

STATE_VALID = 1     # s_state: cleanly unmounted
STATE_ERROR = 2     # s_state: errors detected
ERRORS_CONTINUE = 1  # s_errors: what to do when an error is detected
ERRORS_RO = 2
ERRORS_PANIC = 3
OS_LINUX = 0
DYNAMIC_REV = 1

# s_flags
FLAGS_SIGNED_HASH = 0x1
FLAGS_UNSIGNED_HASH = 0x2

# directory hash versions (s_def_hash_version)
HASH_LEGACY, HASH_HALF_MD4, HASH_TEA = 0, 1, 2

# inode flags
INDEX_FL = 0x1000
HUGE_FILE_FL = 0x40000       # i_blocks counts file-system blocks (huge_file): not written by simfs
EXTENTS_FL = 0x80000         # i_block holds an extent tree (simfs.ondisk.extent)

# features ------------------------------------------------------------------------------
COMPAT = {
    0x0001: "dir_prealloc", 0x0002: "imagic_inodes", 0x0004: "has_journal",
    0x0008: "ext_attr", 0x0010: "resize_inode", 0x0020: "dir_index",
    0x0040: "lazy_bg", 0x0080: "exclude_inode", 0x0100: "exclude_bitmap",
    0x0200: "sparse_super2", 0x0400: "fast_commit", 0x0800: "stable_inodes",
    0x1000: "orphan_file",
}
INCOMPAT = {
    0x0001: "compression", 0x0002: "filetype", 0x0004: "needs_recovery",
    0x0008: "journal_dev", 0x0010: "meta_bg", 0x0040: "extent", 0x0080: "64bit",
    0x0100: "mmp", 0x0200: "flex_bg", 0x0400: "ea_inode", 0x1000: "dirdata",
    0x2000: "metadata_csum_seed", 0x4000: "large_dir", 0x8000: "inline_data",
    0x10000: "encrypt", 0x20000: "casefold",
}
RO_COMPAT = {
    0x0001: "sparse_super", 0x0002: "large_file", 0x0004: "btree_dir",
    0x0008: "huge_file", 0x0010: "uninit_bg", 0x0020: "dir_nlink",
    0x0040: "extra_isize", 0x0080: "has_snapshot", 0x0100: "quota",
    0x0200: "bigalloc", 0x0400: "metadata_csum", 0x0800: "replica",
    0x1000: "read-only", 0x2000: "project", 0x4000: "shared_blocks",
    0x8000: "verity", 0x10000: "orphan_present",
}

COMPAT_EXT_ATTR = 0x0008
COMPAT_DIR_INDEX = 0x0020
INCOMPAT_FILETYPE = 0x0002
INCOMPAT_EXTENT = 0x0040
INCOMPAT_FLEX_BG = 0x0200
RO_COMPAT_SPARSE_SUPER = 0x0001
RO_COMPAT_LARGE_FILE = 0x0002
RO_COMPAT_HUGE_FILE = 0x0008
RO_COMPAT_DIR_NLINK = 0x0020
RO_COMPAT_EXTRA_ISIZE = 0x0040

# What simfs understands. Compat features may be ignored by definition; an incompat or
# ro_compat feature outside these sets makes the image unusable for writing.
SUPPORTED_INCOMPAT = INCOMPAT_FILETYPE | INCOMPAT_EXTENT | INCOMPAT_FLEX_BG
SUPPORTED_RO_COMPAT = (RO_COMPAT_SPARSE_SUPER | RO_COMPAT_LARGE_FILE | RO_COMPAT_HUGE_FILE
                       | RO_COMPAT_DIR_NLINK | RO_COMPAT_EXTRA_ISIZE)



def feature_names(mask: int, table: dict) -> list[str]:
    """Names of the bits set in mask, unknown bits as FEATURE_X0xNN like e2fsprogs."""
    out = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            out.append(table.get(bit, f"FEATURE_0x{bit:x}"))
        bit <<= 1
    return out


def ext4_max_size(block_size: int, huge_file: bool) -> int:
    """The largest extent-mapped file (fs/ext4/super.c ext4_max_size): 2^32 - 1 blocks (the
    extent's 32-bit first block), and without huge_file no more than 2^32 - 1 sectors."""
    bits = block_size.bit_length() - 1
    res = ((1 << 32) - 1) << bits
    if not huge_file:
        res = min(res, (((1 << 32) - 1) >> (bits - 9)) << bits)
    return res


# directory entry file types ---------------------------------------------------------------
FT_UNKNOWN, FT_REG, FT_DIR, FT_CHR, FT_BLK, FT_FIFO, FT_SOCK, FT_SYMLINK = range(8)

_FT_OF_MODE = {
    stat.S_IFREG: FT_REG, stat.S_IFDIR: FT_DIR, stat.S_IFCHR: FT_CHR, stat.S_IFBLK: FT_BLK,
    stat.S_IFIFO: FT_FIFO, stat.S_IFSOCK: FT_SOCK, stat.S_IFLNK: FT_SYMLINK,
}


def file_type_of_mode(mode: int) -> int:
    return _FT_OF_MODE.get(stat.S_IFMT(mode), FT_UNKNOWN)


def ext2_max_size(block_size: int, huge_file: bool = False) -> int:
    """The largest file (bytes) Linux accepts on ext2 with large_file and without huge_file
    (fs/ext2/super.c ext2_max_size; ext4_max_bitmap_size, which mounts ext2 images, is the same
    for them): the block tree's reach, unless the file's data and indirect blocks would pass
    2^32 - 1 sectors in i_blocks (4 KiB blocks), in which case that bound less the indirect
    blocks needed to address it. A larger i_size makes the kernel call the inode corrupt.
    With huge_file i_blocks has 48 bits (ext4_max_bitmap_size): the tree's reach."""
    bits = block_size.bit_length() - 1
    ppb = 1 << (bits - 2)
    upper = (1 << 48) - 1 if huge_file else ((1 << 32) - 1) >> (bits - 9)
    res = NDIR_BLOCKS + ppb + ppb ** 2 + ppb ** 3
    meta = 1 + (1 + ppb) + (1 + ppb + ppb ** 2)
    if res + meta > upper:
        res = upper
        upper -= NDIR_BLOCKS + ppb
        meta = 1
        if upper < ppb * ppb:
            meta += 1 + -(-upper // ppb)
        else:
            meta += 1 + ppb
            upper -= ppb * ppb
            meta += 1 + -(-upper // ppb) + -(-upper // (ppb * ppb))
        res -= meta
    return res << bits

