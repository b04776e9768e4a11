"""simfs.ondisk codecs: superblock, geometry, group descriptors, inodes, directory records and
extended-attribute blocks.

Round trips (hypothesis) check that what is packed unpacks the same and that bytes a
structure does not interpret survive a rewrite; literal offsets from the ext2 layout check
that fields land where e2fsprogs and the kernel look for them; dumpe2fs reads back what mkfs
wrote; and Superblock.validate refuses each thing simfs cannot use, saying which.
"""

from __future__ import annotations

import os
import re
import stat
import struct
import subprocess
import uuid

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simfs.errors import ImageError
from simfs.ondisk import dirent, xattr
from simfs.ondisk.constants import (
    COMPAT, EXT2_MAGIC, FT_DIR, FT_REG, INCOMPAT, N_BLOCKS, RO_COMPAT, SUPERBLOCK_OFFSET, feature_names,
)
from simfs.ondisk.groupdesc import GroupDesc, pack_table, unpack_table
from simfs.ondisk.inode import Inode
from simfs.ondisk.mkfs import mkfs
from simfs.ondisk.superblock import Geometry, Superblock
from tests.helpers import needs_e2fsprogs

u8, u16, u32 = st.integers(0, 2**8 - 1), st.integers(0, 2**16 - 1), st.integers(0, 2**32 - 1)


def mem_mkfs(size=4 << 20, **kw) -> dict[int, bytes]:
    """mkfs into memory: block number -> bytes written."""
    blocks: dict[int, bytes] = {}
    bs = kw.get("block_size", 4096)

    def writer(b, data):
        for i in range(0, len(data), bs):
            blocks[b + i // bs] = bytes(data[i:i + bs])
    mkfs(None, size, writer=writer, **kw)
    return blocks


def raw_super(blocks, bs) -> bytes:
    return blocks[1][:1024] if bs == 1024 else blocks[0][SUPERBLOCK_OFFSET:SUPERBLOCK_OFFSET + 1024]


# superblock -------------------------------------------------------------------------------------
SB_FIELDS = [(n, f) for n, f in vars(Superblock).items() if hasattr(f, "offset")]


def test_superblock_fields_sit_at_the_ext2_offsets():
    # offsets from the ext2 layout (e2fsprogs lib/ext2fs/ext2_fs.h), written independently here
    want = {"inodes_count": 0, "blocks_count": 4, "r_blocks_count": 8, "free_blocks_count": 12,
            "free_inodes_count": 16, "first_data_block": 20, "log_block_size": 24, "blocks_per_group": 32,
            "inodes_per_group": 40, "mtime": 44, "wtime": 48, "mnt_count": 52, "max_mnt_count": 54,
            "magic": 56, "state": 58, "errors": 60, "lastcheck": 64, "checkinterval": 68, "rev_level": 76,
            "first_ino": 84, "inode_size": 88, "feature_compat": 92, "feature_incompat": 96,
            "feature_ro_compat": 100, "uuid": 104, "volume_name": 120, "last_mounted": 136,
            "reserved_gdt_blocks": 206, "hash_seed": 236, "def_hash_version": 252, "mkfs_time": 264,
            "min_extra_isize": 348, "want_extra_isize": 350, "flags": 352}
    for name, off in want.items():
        assert getattr(Superblock, name).offset == off, name
    sb = Superblock()
    sb.magic = EXT2_MAGIC
    sb.inode_size = 256
    sb.uuid = bytes(range(16))
    assert sb.pack()[56:58] == b"\x53\xef" and sb.pack()[88:90] == b"\x00\x01"
    assert sb.pack()[104:120] == bytes(range(16))


@settings(max_examples=80, deadline=None)
@given(st.binary(min_size=1024, max_size=1024), st.data())
def test_superblock_round_trip_keeps_unknown_bytes(raw, data):
    sb = Superblock(raw)
    changed = {}
    for name, f in data.draw(st.lists(st.sampled_from(SB_FIELDS), unique_by=lambda t: t[0], max_size=12)):
        if hasattr(f, "st"):
            size = f.st.size
            signed = f.st.format[-1].islower()
            lo, hi = (-(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1) if signed else (0, 2 ** (8 * size) - 1)
            v = data.draw(st.integers(lo, hi))
            span = size
        else:
            v = data.draw(st.binary(min_size=f.length, max_size=f.length))
            span = f.length
        setattr(sb, name, v)
        changed[name] = (v, f.offset, span)
    back = Superblock(sb.pack())
    touched = set()
    for name, (v, off, span) in changed.items():
        assert getattr(back, name) == v, name
        touched.update(range(off, off + span))
    assert all(back.raw[i] == raw[i] for i in range(1024) if i not in touched)


def test_short_byte_fields_are_padded_and_long_ones_cut():
    sb = Superblock()
    sb.volume_name = b"abc"
    assert sb.volume_name == b"abc" + bytes(13)
    sb.volume_name = b"x" * 20
    assert sb.volume_name == b"x" * 16 and sb.raw[136] == 0     # last_mounted untouched


@pytest.mark.parametrize("bs", [1024, 4096])
def test_mkfs_superblock_validates_and_derives_the_geometry(bs):
    blocks = mem_mkfs(8 << 20, block_size=bs, blocks_per_group=1024 if bs == 1024 else None)
    sb = Superblock(raw_super(blocks, bs))
    sb.validate("img", 8 << 20)
    geo = Geometry(sb)
    assert sb.block_size == bs and geo.block_size == bs
    assert geo.first_data_block == (1 if bs == 1024 else 0)
    assert geo.blocks_count == (8 << 20) // bs
    assert geo.groups == (8 if bs == 1024 else 1)
    assert sb.inodes_count == geo.groups * geo.inodes_per_group
    assert geo.ptrs_per_block == bs // 4 and geo.inodes_per_block == bs // 256


def _valid_sb(bs=1024) -> Superblock:
    return Superblock(raw_super(mem_mkfs(2 << 20, block_size=bs), bs))


REFUSALS = [
    ("magic", 0x1234, "bad magic 0x1234"),
    ("rev_level", 0, "revision 0 is not supported"),
    ("log_block_size", 7, "unsupported block size"),
    ("log_block_size", 3, "unsupported block size 8192"),
    ("log_frag_size", 2, "fragment size differs"),
    ("inode_size", 100, r"corrupt superblock \(inode size 100\)"),
    ("inode_size", 2048, r"inode size 2048"),                  # larger than a 1 KiB block
    ("blocks_per_group", 1020, "blocks per group 1020"),      # not a multiple of 8
    ("blocks_per_group", 8 * 1024 + 8, "blocks per group"),
    ("inodes_per_group", 0, "inodes per group 0"),
    ("first_data_block", 0, "first data block 0"),
    ("inodes_count", 17, r"inode count 17 != "),
    ("feature_incompat", 0x2 | 0x10, r"unsupported incompatible feature\(s\): meta_bg"),
    ("feature_incompat", 0x2 | 0x40 | 0x80 | 0x200 | 0x8000, r"feature\(s\): 64bit, inline_data"),
    ("feature_incompat", 0x2 | 0x80000000, "FEATURE_0x80000000"),
    ("feature_ro_compat", 0x1 | 0x8 | 0x10, r"read-only-compatible feature\(s\): uninit_bg"),
    ("feature_ro_compat", 0x1 | 0x400, "metadata_csum"),
]


@pytest.mark.parametrize("field,value,words", REFUSALS, ids=[f"{f}={v:#x}" for f, v, _ in REFUSALS])
def test_validate_refuses_what_simfs_cannot_use(field, value, words):
    sb = _valid_sb()
    sb.validate("img")                                       # the unchanged superblock is fine
    setattr(sb, field, value)
    with pytest.raises(ImageError, match=r"^img: .*" + words):
        sb.validate("img")


def test_validate_refuses_a_short_image_and_accepts_unknown_compat_features():
    sb = _valid_sb()
    with pytest.raises(ImageError, match="image is shorter"):
        sb.validate("img", sb.blocks_count * 1024 - 1)
    sb.validate("img", sb.blocks_count * 1024)
    sb.feature_compat |= 0x4 | 0x20 | 0x8000                 # has_journal, dir_index, an unknown bit
    sb.validate("img")


def test_feature_names():
    assert feature_names(0x2 | 0x40, INCOMPAT) == ["filetype", "extent"]
    assert feature_names(0x3, RO_COMPAT) == ["sparse_super", "large_file"]
    assert feature_names(0x8 | 0x100000, COMPAT) == ["ext_attr", "FEATURE_0x100000"]
    assert feature_names(0, COMPAT) == []
    sb = _valid_sb()
    assert sb.feature_list() == ["ext_attr", "filetype", "sparse_super", "large_file"]


@needs_e2fsprogs
def test_dumpe2fs_reads_what_mkfs_wrote(tmp_path):
    img = tmp_path / "d.img"
    u, seed = uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321), uuid.UUID(int=42)
    mkfs(img, 6 << 20, block_size=1024, blocks_per_group=1024, uuid=str(u), hash_seed=str(seed), label=b"unit")
    out = subprocess.run(["dumpe2fs", str(img)], capture_output=True, text=True, check=True).stdout
    with open(img, "rb") as f:
        f.seek(SUPERBLOCK_OFFSET)
        sb = Superblock(f.read(1024))
        geo = Geometry(sb)
        f.seek(2 * 1024)
        descs = unpack_table(f.read(geo.gdt_blocks * 1024), geo.groups)

    def field(name):
        return re.search(rf"^{re.escape(name)}:\s+(.*)$", out, re.M).group(1).strip()
    assert int(field("Inode count")) == sb.inodes_count
    assert int(field("Block count")) == sb.blocks_count
    assert int(field("Reserved block count")) == sb.r_blocks_count
    assert int(field("Blocks per group")) == sb.blocks_per_group
    assert int(field("Inodes per group")) == sb.inodes_per_group
    assert int(field("Inode size")) == sb.inode_size
    assert field("Filesystem UUID") == str(u) == sb.uuid_str
    assert field("Directory Hash Seed") == str(seed)
    assert field("Filesystem volume name") == "unit"
    assert field("Filesystem features").split() == sb.feature_list()
    groups = re.findall(r"^Group (\d+):.*?Block bitmap at (\d+).*?Inode bitmap at (\d+).*?Inode table at (\d+)-"
                        r".*?(\d+) free blocks, (\d+) free inodes, (\d+) directories", out, re.M | re.S)
    assert len(groups) == geo.groups == len(descs) == 6
    for (g, bb, ib, it, fb, fi, nd), d in zip(groups, descs):
        assert (int(bb), int(ib), int(it), int(fb), int(fi), int(nd)) == \
            (d.block_bitmap, d.inode_bitmap, d.inode_table, d.free_blocks, d.free_inodes, d.used_dirs), g
    backups = [int(g) for g in re.findall(r"^Group (\d+):.*\n\s+Backup superblock", out, re.M)]
    assert backups == [g for g in range(1, geo.groups) if geo.has_super(g)] == [1, 3, 5]


# geometry -------------------------------------------------------------------------------------------
def test_sparse_super_groups_are_0_1_and_powers_of_3_5_7():
    sb = _valid_sb()
    geo = Geometry(sb)
    powers = {1} | {b ** k for b in (3, 5, 7) for k in range(1, 8)}
    assert [g for g in range(400) if geo.has_super(g)] == sorted({0} | {p for p in powers if p < 400})
    sb.feature_ro_compat &= ~1
    assert all(Geometry(sb).has_super(g) for g in range(50))


def test_group_arithmetic():
    sb = _valid_sb()
    sb.blocks_count, sb.blocks_per_group, sb.first_data_block = 10_001, 1024, 1
    geo = Geometry(sb)
    assert geo.groups == 10 and geo.group_start(3) == 3073 and geo.group_blocks(9) == 10_001 - 9217
    assert geo.group_of_block(3073) == 3 and geo.group_of_block(3072) == 2
    assert geo.gdt_block(0) == 2 and geo.gdt_block(31) == 2 and geo.gdt_block(32) == 3
    assert geo.group_of_inode(1) == 0 and geo.group_of_inode(geo.inodes_per_group + 1) == 1
    assert geo.super_and_gdt_blocks(2) == 0 and geo.super_and_gdt_blocks(3) == 1 + geo.gdt_blocks


# group descriptors ------------------------------------------------------------------------------------
desc_st = st.builds(GroupDesc, u32, u32, u32, u16, u16, u16, u16, st.binary(min_size=12, max_size=12))


@given(st.lists(desc_st, min_size=1, max_size=40), st.sampled_from([1024, 4096]))
def test_group_descriptor_table_round_trip(descs, bs):
    raw = pack_table(descs, bs)
    assert len(raw) % bs == 0 and len(raw) >= 32 * len(descs) and not raw[32 * len(descs):].strip(b"\0")
    back = unpack_table(raw, len(descs))
    assert [d.pack() for d in back] == [d.pack() for d in descs]
    d = descs[0]
    assert struct.unpack_from("<IIIHHHH", raw) == (d.block_bitmap, d.inode_bitmap, d.inode_table,
                                                  d.free_blocks, d.free_inodes, d.used_dirs, d.flags)


# inodes ---------------------------------------------------------------------------------------------
SEC = st.integers(-2**31, 2**34 - 2**31 - 1)                  # what the extra epoch bits reach
NS = st.integers(0, 10**9 - 1)


def ns_time(big: bool):
    if big:
        return st.builds(lambda s, n: s * 10**9 + n, SEC, NS)
    return st.builds(lambda s: s * 10**9, st.integers(-2**31, 2**31 - 1))


@st.composite
def inodes(draw, size):
    big = size > 128
    i = Inode(draw(st.integers(1, 2**32 - 1)), size)
    i.raw[:] = draw(st.binary(min_size=size, max_size=size))     # junk the codec must keep or overwrite
    i.mode = draw(u16)
    i.uid, i.gid = draw(u32), draw(u32)
    i.size = draw(st.integers(0, 2**64 - 1))
    i.atime_ns, i.ctime_ns, i.mtime_ns = (draw(ns_time(big)) for _ in range(3))
    i.crtime_ns = draw(ns_time(big)) if big else 0
    i.dtime, i.links, i.flags, i.generation = draw(u32), draw(u16), draw(u32), draw(u32)
    i.blocks = draw(st.integers(0, 2**48 - 1))
    i.file_acl = draw(st.integers(0, 2**48 - 1))
    i.block = draw(st.lists(u32, min_size=N_BLOCKS, max_size=N_BLOCKS))
    return i


ATTRS = ("mode", "uid", "gid", "size", "atime_ns", "ctime_ns", "mtime_ns", "crtime_ns", "dtime", "links",
         "flags", "generation", "blocks", "file_acl", "block")


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([128, 256]).flatmap(lambda size: inodes(size)))
def test_inode_round_trip_keeps_the_fields_it_does_not_interpret(inode):
    raw0 = bytes(inode.raw)
    packed = inode.pack()
    back = Inode.unpack(inode.ino, packed)
    assert {a: getattr(back, a) for a in ATTRS} == {a: getattr(inode, a) for a in ATTRS}
    for lo, hi in ((36, 40), (112, 116), (124, 128)):          # osd1, faddr, checksum: not ours
        assert packed[lo:hi] == raw0[lo:hi]
    if len(packed) > 128:
        assert packed[160:] == raw0[160:]                         # past the extra fields we write


def test_inode_fields_sit_at_the_ext2_offsets():
    i = Inode(12, 256)
    i.mode, i.uid, i.gid = stat.S_IFREG | 0o640, 0x12345, 0x6789A
    i.size, i.links, i.blocks, i.flags = 0x1_2345_6789, 3, 0x1_0000_0008, 0x80
    i.atime_ns, i.ctime_ns, i.mtime_ns = 1_700_000_000 * 10**9 + 5, 2**31 * 10**9 + 999, -1 * 10**9
    i.block = list(range(100, 115))
    i.generation, i.file_acl, i.dtime = 77, 0x2_0000_0500, 0
    raw = i.pack()
    H, I = (lambda o: struct.unpack_from("<H", raw, o)[0]), (lambda o: struct.unpack_from("<I", raw, o)[0])
    assert H(0) == stat.S_IFREG | 0o640 and H(2) == 0x2345 and H(120) == 0x1     # uid low / high
    assert H(24) == 0x789A and H(122) == 0x6                                       # gid low / high
    assert I(4) == 0x2345_6789 and I(108) == 1                                     # size low / high
    assert H(26) == 3 and I(28) == 8 and H(116) == 1 and I(32) == 0x80             # links, blocks, flags
    assert I(8) == 1_700_000_000 and I(140) == 5 << 2                              # atime + nanoseconds
    assert I(12) == 2**31 and I(132) == (999 << 2) | 1                             # past 2038: epoch bit 1
    assert I(16) == 0xFFFF_FFFF and I(136) == 0                                    # before 1970
    assert [I(40 + 4 * k) for k in range(15)] == list(range(100, 115))
    assert I(100) == 77 and I(104) == 0x500 and H(118) == 2                        # file_acl low / high
    assert H(128) == 32                                                            # i_extra_isize


def test_128_byte_inodes_keep_seconds_only():
    i = Inode(5, 128)
    i.mtime_ns = 1_600_000_000 * 10**9 + 123
    assert Inode.unpack(5, i.pack()).mtime_ns == 1_600_000_000 * 10**9


@given(st.integers(0, 4095), st.integers(0, 2**20 - 1))
def test_device_numbers_round_trip(major, minor):
    i = Inode(20, 128)
    i.mode = stat.S_IFCHR | 0o600
    i.set_rdev(os.makedev(major, minor))
    assert i.get_rdev() == os.makedev(major, minor)
    old = major < 256 and minor < 256
    assert bool(i.block[0]) == bool(old and (major or minor)) and (i.block[1] == 0) == (old or not (major or minor))
    assert not i.has_block_map


def test_fast_symlink_rule():
    i = Inode(30, 256)
    i.mode = stat.S_IFLNK | 0o777
    assert i.is_fast_symlink(4096)
    i.file_acl, i.blocks = 900, 8                                 # an xattr block only
    assert i.is_fast_symlink(4096) and not i.is_fast_symlink(1024)
    i.blocks = 16
    assert not i.is_fast_symlink(4096)
    i.mode = stat.S_IFREG | 0o644
    assert not i.is_fast_symlink(4096) and i.has_block_map


# directory records --------------------------------------------------------------------------------
names_st = st.binary(min_size=1, max_size=255).filter(lambda n: b"\0" not in n and b"/" not in n)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(u32.filter(bool), names_st, st.integers(0, 7), st.integers(0, 3)), min_size=1, max_size=12),
       st.booleans())
def test_dirent_block_round_trip(entries, filetype):
    bs = 4096
    need = sum(dirent.rec_len_for(len(n)) + 4 * slack for _, n, _, slack in entries)
    assume(need <= bs)
    buf = bytearray(b"\xff" * bs)
    off, want = 0, []
    for k, (ino, name, ft, slack) in enumerate(entries):
        rec = dirent.rec_len_for(len(name)) + 4 * slack
        if k == len(entries) - 1:
            rec = bs - off                                           # the last record takes the rest
        dirent.put(buf, off, ino, rec, name, ft if filetype else 0)
        want.append((off, ino, rec, name, ft if filetype else 0))
        off += rec
    assert list(dirent.iter_block(bytes(buf), filetype)) == want
    for o, _, rec, name, _ in want:                                  # put zeroes the slack
        assert not buf[o + 8 + len(name):o + rec].strip(b"\0")


def test_rec_len_for():
    assert [dirent.rec_len_for(n) for n in (1, 2, 4, 5, 8, 255)] == [12, 12, 12, 16, 16, 264]


def test_dirent_edits_and_new_blocks():
    b = dirent.new_dir_block(1024, 12, 2)
    assert list(dirent.iter_block(b)) == [(0, 12, 12, b".", FT_DIR), (12, 2, 1012, b"..", FT_DIR)]
    assert list(dirent.iter_block(dirent.new_dir_block(1024, 12, 2, filetype=False), False))[1][4] == 0
    dirent.set_rec_len(b, 0, 24)                 # "." swallows ".." (as a delete does)
    assert [r[:3] for r in dirent.iter_block(b[:24])] == [(0, 12, 24)]
    dirent.set_inode(b, 12, 99, FT_REG)
    assert b[12:16] == struct.pack("<I", 99) and b[19] == FT_REG
    dirent.set_inode(b, 12, 100)                 # the type is left alone
    assert b[19] == FT_REG
    assert list(dirent.iter_block(dirent.empty_block(4096))) == [(0, 0, 4096, b"", 0)]


@pytest.mark.parametrize("make, words", [
    (lambda: struct.pack("<IHBB", 5, 4, 1, 1) + bytes(1016), "rec_len 4"),
    (lambda: struct.pack("<IHBB", 5, 14, 1, 1) + bytes(1016), "rec_len 14"),
    (lambda: struct.pack("<IHBB", 5, 2048, 1, 1) + bytes(1016), "rec_len 2048"),
    (lambda: struct.pack("<IHBB", 5, 12, 9, 1) + bytes(1016), "rec_len 12"),        # name longer than the record
    (lambda: struct.pack("<IHBB", 5, 1020, 1, 1) + bytes(1016), "runs off"),   # a 4-byte tail
    (lambda: struct.pack("<IHBB", 5, 0, 1, 1) + bytes(1016), "rec_len 0"),           # would loop forever
])
def test_iter_block_refuses_corrupt_records(make, words):
    block = make()
    assert len(block) == 1024
    with pytest.raises(ValueError, match=words):
        list(dirent.iter_block(block))


def test_without_filetype_the_type_byte_is_ignored():
    """Without the filetype feature the byte after name_len is not part of it: Linux's ext2
    and ext4 read ext2_dir_entry_2's 8-bit name_len, e2fsprogs ext2fs_dirent_name_len masks
    the low byte (a set high byte made simfs read a 259-byte name, or call the block corrupt)."""
    buf = bytearray(struct.pack("<IHBB", 7, 1024, 3, 0) + b"abc" + bytes(1013))
    assert list(dirent.iter_block(buf, filetype=False)) == [(0, 7, 1024, b"abc", 0)]
    buf[7] = 1                                    # with filetype: the type; without: ignored
    assert list(dirent.iter_block(buf, filetype=True))[0][4] == 1
    assert list(dirent.iter_block(buf, filetype=False)) == [(0, 7, 1024, b"abc", 0)]


# extended attributes ------------------------------------------------------------------------------
xattr_names = st.one_of(
    st.builds(lambda p, s: p + s, st.sampled_from([b"user.", b"trusted.", b"security."]),
              st.binary(min_size=1, max_size=40)),
    st.sampled_from([b"system.posix_acl_access", b"system.posix_acl_default"]))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(xattr_names, st.binary(max_size=300), max_size=12), st.sampled_from([1024, 4096]))
def test_xattr_block_round_trip(attrs, bs):
    if xattr.space_needed(attrs) > bs:
        with pytest.raises(OverflowError):
            xattr.encode(attrs, bs)
        return
    block = xattr.encode(attrs, bs)
    assert len(block) == bs and xattr.decode(block) == attrs
    magic, refcount, nblocks, _, _ = struct.unpack_from("<IIIII", block)
    assert (magic, refcount, nblocks) == (0xEA020000, 1, 1)
    # entries in the kernel's order: name index, then name length, then name
    keys, off = [], 32
    while struct.unpack_from("<I", block, off)[0]:
        nlen, idx = block[off], block[off + 1]
        keys.append((idx, nlen, block[off + 16:off + 16 + nlen]))
        off += (16 + nlen + 3) & ~3
    assert keys == sorted(keys) and len(keys) == len(attrs)


def test_xattr_names_split_into_index_and_suffix():
    assert xattr.split_name(b"user.origin") == (1, b"origin")
    assert xattr.split_name(b"security.selinux") == (6, b"selinux")
    assert xattr.split_name(b"trusted.x") == (4, b"x")
    assert xattr.split_name(b"system.posix_acl_access") == (2, b"")
    assert xattr.split_name(b"user.") is None and xattr.split_name(b"os2.x") is None
    assert xattr.split_name(b"system.posix_acl_access2") is None
    assert xattr.join_name(6, b"selinux") == b"security.selinux"


def test_xattr_entry_hash_follows_the_kernel():
    # ext2_xattr_hash_entry by hand for name "ab", value b"\x01\0\0\0"
    h = 0
    for c in b"ab":
        h = ((h << 5) ^ (h >> 27) ^ c) & 0xFFFFFFFF
    h = ((h << 16) ^ (h >> 16) ^ 1) & 0xFFFFFFFF
    assert xattr.entry_hash(b"ab", b"\x01") == h
    # name bytes are (signed) char: a byte >= 0x80 mixes in as a negative number
    assert xattr.entry_hash(b"\xe9", b"") == (-0x17) & 0xFFFFFFFF
    assert xattr.entry_hash(b"\xe9", b"") != xattr.entry_hash(b"\x69", b"")


def test_xattr_decode_refuses_what_is_not_an_attribute_block():
    good = bytearray(xattr.encode({b"user.a": b"hello"}, 1024))
    with pytest.raises(ValueError, match="not an ext2 extended-attribute block"):
        xattr.decode(bytes(1024))
    two = bytearray(good)
    struct.pack_into("<I", two, 8, 2)                      # h_blocks != 1
    with pytest.raises(ValueError, match="not an ext2"):
        xattr.decode(two)
    far = bytearray(good)
    struct.pack_into("<H", far, 32 + 2, 1020)              # value runs off the block
    with pytest.raises(ValueError, match="corrupt"):
        xattr.decode(far)
    inum = bytearray(good)
    struct.pack_into("<I", inum, 32 + 4, 5)                # value in an inode (ea_inode): not ours
    with pytest.raises(ValueError, match="corrupt"):
        xattr.decode(inum)
