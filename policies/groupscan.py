"""Shared pieces of the group-based allocators: bitmap views, scans and the group rehash.

Every replica here works on one group's block bitmap at a time, as the kernels do (they read
the group's bitmap block). `group_bits` gives that bitmap as a bool array of exactly
`blocks_per_group` bits (True = in use); the tail of a short last group is padded with True,
as mke2fs pads the on-disk bitmap, so byte-wise scans see whole bytes. Scans use numpy on
these arrays; nothing here loops over bits in Python.
"""

from typing import Callable, Optional

import numpy as np


def group_bits(space, g: int) -> np.ndarray:
    """Group g's block bitmap: bool[blocks_per_group], padded with True past the last block."""
    geo = space.geometry
    start = geo.group_start(g)
    bpg = geo.blocks_per_group
    n = geo.group_blocks(g)
    if n == bpg:
        return space.block_used[start:start + bpg]
    bits = np.ones(bpg, dtype=bool)
    bits[:n] = space.block_used[start:start + n]
    return bits


def first_free(bits: np.ndarray, start: int, end: int) -> int:
    """Lowest clear bit in bits[start:end] (an index into bits), or -1."""
    start = max(start, 0)
    end = min(end, len(bits))
    if start >= end:
        return -1
    if not bits[start]:         # the goal itself, most of the time: no scan of the rest
        return start
    seg = bits[start:end]
    i = int(seg.argmin())
    return start + i if not seg[i] else -1


def _bytes64(bits: np.ndarray, first_byte: int, end_byte: int) -> np.ndarray:
    """Bitmap bytes [first_byte, end_byte) as uint64 words: the eight bools of one byte."""
    end_byte = min(end_byte, len(bits) // 8)
    if first_byte >= end_byte:
        return np.zeros(0, dtype=np.uint64)
    seg = bits[first_byte * 8:end_byte * 8]
    return np.ascontiguousarray(seg).view(np.uint64)


def first_zero_byte(bits: np.ndarray, first_byte: int, end_byte: int) -> int:
    """Index of the first all-free (0x00) bitmap byte in [first_byte, end_byte), or -1: one
    argmin over the bytes as words (a whole group's 4 KiB bitmap costs about as much as the
    few numpy calls of any scan, so there is nothing to gain by stopping early)."""
    words = _bytes64(bits, first_byte, end_byte)
    if not len(words):
        return -1
    i = int(words.argmin())
    return first_byte + i if words[i] == 0 else -1


def free_runs(bits: np.ndarray, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the maximal runs of clear bits inside bits[start:end], with the
    bits outside the window counted as used. Indices are into bits."""
    start = max(start, 0)
    end = min(end, len(bits))
    if start >= end:
        e = np.zeros(0, dtype=np.int64)
        return e, e
    free = np.empty(end - start + 2, dtype=np.int8)
    free[0] = free[-1] = 0
    np.logical_not(bits[start:end], out=free[1:-1].view(bool))
    d = np.diff(free)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return starts + start, ends - starts


def cdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cmod(a: int, b: int) -> int:
    """C remainder (sign of the dividend)."""
    return a - b * cdiv(a, b)


def hashalloc(ngroups: int, cg: int, pref: int, try_group: Callable[[int, int], Optional[int]]):
    """ffs_hashalloc / ext2_hashalloc (sys/ufs/ffs/ffs_alloc.c, sys/fs/ext2fs/ext2_alloc.c):
    1) the preferred group with `pref`; 2) quadratic rehash, cg += 1, 2, 4, ... (cumulative
    offsets +1, +3, +7, ...) with pref 0; 3) brute force from icg+2 over the remaining
    ngroups-2 groups with pref 0. Returns the first non-None result of try_group(cg, pref)."""
    icg = cg
    r = try_group(cg, pref)
    if r is not None:
        return r
    i = 1
    while i < ngroups:
        cg += i
        if cg >= ngroups:
            cg -= ngroups
        r = try_group(cg, 0)
        if r is not None:
            return r
        i *= 2
    cg = (icg + 2) % ngroups
    for _ in range(2, ngroups):
        r = try_group(cg, 0)
        if r is not None:
            return r
        cg += 1
        if cg == ngroups:
            cg = 0
    return None


def data_start(space, g: int) -> int:
    """First block of group g after its superblock copy, descriptors, bitmaps and inode table
    (FFS's cgdmin: the start of the group's data area)."""
    geo = space.geometry
    d = space.descs[g]
    start = geo.group_start(g)
    end = start + geo.super_and_gdt_blocks(g)
    for b in (d.block_bitmap, d.inode_bitmap):
        if start <= b < start + geo.blocks_per_group:
            end = max(end, b + 1)
    if start <= d.inode_table < start + geo.blocks_per_group:
        end = max(end, d.inode_table + geo.inode_table_blocks)
    return min(end, geo.group_start(g) + geo.group_blocks(g))


def first_clear_wrapping(bits, start: int, wrap_end: int) -> int:
    """The first clear bit at or after `start`, else the first in [0, wrap_end); -1 if none
    (the scan of ffs_mapsearch and ext2_mapsearch)."""
    b = first_free(bits, start, len(bits))
    return b if b >= 0 else first_free(bits, 0, wrap_end)
