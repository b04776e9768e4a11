"""Where mballoc puts blocks (policies/mballoc.py), stated from fs/ext4/mballoc.c.

ext4_mb_normalize_request, checked on hypothesis-chosen requests: the goal window holds the
request's first block (the kernel BUG()s otherwise), its size is the size class of the file's
end (16 KiB ... 1 MiB from offset 0, then 2, 4, 8 MiB aligned to their size), clipped to the
block group, to the file's neighbouring extents and to the inode's other preallocations,
and with a left (right) neighbour adjacent the goal is the block after (before) it. Then
through a Volume (ext4 profile, nodelalloc): a file written in order is served from its
inode preallocation (lblk -> pa_pstart + lblk - pa_lstart), whose window is the normalised
one, and small files follow one another in the locality group's preallocation.
"""

from __future__ import annotations

import stat

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.mballoc import PA, normalize
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs

KIB = 1024
#: s_mb_group_prealloc and s_mb_stream_request's defaults (fs/ext4/mballoc.h), stated, not imported
GROUP_PREALLOC, STREAM_REQUEST = 512, 16


def size_class(end_bytes: int, lblk: int, bsbits: int) -> tuple[int, int]:
    """(start block, blocks) of the window ext4_mb_normalize_request chooses for a file whose
    end is `end_bytes`, for a request at lblk (a request under 8 MiB long)."""
    for kib in (16, 32, 64, 128, 256, 512, 1024):
        if end_bytes <= kib * KIB:
            return 0, (kib * KIB) >> bsbits
    for limit, align in ((4 << 20, 2 << 20), (8 << 20, 4 << 20), (1 << 62, 8 << 20)):
        if end_bytes <= limit:
            blocks = align >> bsbits
            return lblk // blocks * blocks, blocks
    raise AssertionError


@st.composite
def requests(draw):
    bs = draw(st.sampled_from([1024, 4096]))
    bpg = draw(st.sampled_from([bs * 8, 1024, 256]))     # (smaller groups than a size class, too)
    lblk = draw(st.integers(0, 40_000))
    length = draw(st.integers(1, 64))
    isize = draw(st.integers(0, (lblk + length + 3000) * bs))
    return bs, bpg, lblk, length, isize


@settings(max_examples=300, deadline=None, derandomize=True)
@given(requests())
def test_normalised_window_without_neighbours_is_the_size_class(r):
    bs, bpg, lblk, length, isize = r
    bsbits = bs.bit_length() - 1
    start, size, goal = normalize(lblk, length, isize, bs, bpg, (0, 0, 0, 0), [], 1 << 30, 1)
    cls_start, cls_size = size_class(max((lblk + length) * bs, isize), lblk, bsbits)
    want_start = max(cls_start, lblk // bpg * bpg)    # not before the request's group
    want_size = min(cls_size - (want_start - cls_start), bpg)
    assert start <= lblk < start + size, "the window holds the request"
    assert (start, size) == (want_start, want_size)
    assert goal is None                               # no neighbour: no exact goal


@st.composite
def with_neighbours(draw):
    bs, bpg, lblk, length, isize = draw(requests())
    lleft = pleft = lright = pright = 0
    if lblk and draw(st.booleans()):
        lleft = draw(st.integers(max(0, lblk - 3000), lblk - 1))
        pleft = draw(st.integers(100, 1 << 20))
    if draw(st.booleans()):
        lright = draw(st.integers(lblk + 1, lblk + 3000))
        pright = draw(st.integers(3000, 1 << 20))
    pas = []
    for _ in range(draw(st.integers(0, 3))):
        ls = draw(st.integers(max(0, lblk - 3000), lblk + 3000))
        n = draw(st.integers(1, 600))
        if not ls <= lblk < ls + n:                   # a preallocation never covers the request
            pas.append(PA(ls, 0, n, 0))               # (it would have served it)
    return bs, bpg, lblk, length, isize, (lleft, pleft, lright, pright), pas


@settings(max_examples=400, deadline=None, derandomize=True)
@given(with_neighbours())
def test_normalised_window_keeps_clear_of_neighbours_and_preallocations(r):
    bs, bpg, lblk, length, isize, nb, pas = r
    lleft, pleft, lright, pright = nb
    blocks_count = 1 << 21
    start, size, goal = normalize(lblk, length, isize, bs, bpg, nb, pas, blocks_count, 1)
    end = start + size
    if (start, size, goal) == (lblk, length, None):
        return                                        # given up: the request as it came
    assert start <= lblk < end, "the window holds the request"
    assert 0 < size <= bpg, "a group's worth at most"
    assert start >= lblk // bpg * bpg, "not before the request's group"
    if pleft:
        assert start > lleft, "the window overlaps the left neighbour"
    if pright:
        assert end <= lright, "the window overlaps the right neighbour"
    for pa in pas:
        assert end <= pa.lstart or start >= pa.lstart + len(pa.avail), "overlaps a preallocation"
    if pleft and lleft + 1 == start:
        assert goal == pleft + 1, "merge to the left: the block after the left neighbour"
    elif pright and lright == end and pright - size >= 1:
        assert goal == pright - size, "merge to the right: the window ends at the right neighbour"
    else:
        assert goal is None
    # the window is the size class cut down, never grown past it
    cls_start, cls_size = size_class(max((lblk + length) * bs, isize), lblk, bs.bit_length() - 1)
    assert start >= cls_start and end <= cls_start + cls_size


def test_normalisation_is_not_bypassed_when_the_window_holds_the_request():
    """The pinned survivor of issue 54: the window found (here 64 KiB from offset 0 for a
    40 KiB file) is used, not the one-block request."""
    assert normalize(5, 1, 40 * KIB, 1024, 8192, (0, 0, 0, 0), [], 1 << 16, 1) == (0, 64, None)
    assert normalize(5, 1, 40 * KIB, 1024, 8192, (4, 700, 0, 0), [], 1 << 16, 1) == (5, 59, 701)
    assert normalize(5, 1, 40 * KIB, 1024, 8192, (0, 0, 9, 900), [], 1 << 16, 1) == (0, 9, 891)


# through a volume -------------------------------------------------------------------------------
def _image(tmp_path, bs=1024):
    img = tmp_path / "ext4.img"
    mkfs(img, 32 << 20, block_size=bs, profile="ext4", uuid=bytes(16), hash_seed=bytes(16), now=1)
    return img


def _runs(vol, ino):
    return vol.extents(ino)["runs"]


def windows(blocks: int, bs: int) -> list[tuple[int, int]]:
    """The inode preallocations (lstart, blocks) of a file written in order from offset 0,
    a request a block (nodelalloc): blocks 0-15 come from the locality group (the file is
    small: at most s_mb_stream_request blocks), then each window starts at the first block
    not mapped (the left neighbour clips the size class) and ends where the class of the
    file's end ((lblk + 1) blocks) ends."""
    out = []
    lblk = STREAM_REQUEST
    while lblk < blocks:
        cls_start, cls_size = size_class((lblk + 1) * bs, lblk, bs.bit_length() - 1)
        out.append((lblk, cls_start + cls_size - lblk))
        lblk = cls_start + cls_size
    return out


@settings(max_examples=10, deadline=None, derandomize=True)
@given(blocks=st.integers(STREAM_REQUEST + 1, 1300), chunk=st.sampled_from([1, 3, 8]))
def test_a_file_written_in_order_is_served_from_its_preallocations(tmp_path_factory, blocks, chunk):
    """Each preallocation is the normalised window (windows() above); every block inside it
    lands at pa_pstart + (lblk - pa_lstart); on a fresh image each window is placed right
    after the one before (the exact goal after the left neighbour, EXT4_MB_HINT_TRY_GOAL),
    so blocks 16.. are one run (up to the locality group's preallocation, right after the
    first 512 blocks), and blocks 0-15 another (the locality group's)."""
    img = _image(tmp_path_factory.mktemp("mb"))
    bs = 1024
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        ino = vol.create(vol.root_ino, b"f", stat.S_IFREG | 0o644, 0, 0).st_ino
        vol.open_file(ino)
        seen = []
        for lb in range(0, blocks, chunk):
            vol.write(ino, lb * bs, b"x" * (min(chunk, blocks - lb) * bs))
            for pa in vol.inodes.get(ino).incore["alloc"].pas:
                if (pa.lstart, len(pa.avail), pa.pstart) not in seen:
                    seen.append((pa.lstart, len(pa.avail), pa.pstart))
        assert [(ls, n) for ls, n, _ in seen] == windows(blocks, bs)
        inode = vol.inodes.get(ino)
        for ls, n, ps in seen:
            for lb in range(ls, min(ls + n, blocks)):
                assert vol.filemap.bmap(inode, lb) == ps + lb - ls, f"lblk {lb} not from its preallocation"
        if blocks <= GROUP_PREALLOC:                # (further on, the locality group's
            runs = _runs(vol, ino)                    # preallocation is in the way)
            assert [(r[0], r[2]) for r in runs] == [(0, STREAM_REQUEST), (STREAM_REQUEST, blocks - STREAM_REQUEST)]
        vol.release_file(ino, True)
        assert not vol.inodes.get(ino).incore["alloc"].pas, "the last close discards them"


def test_small_files_follow_one_another_in_the_locality_group(tmp_path):
    """Files of at most 16 blocks, written whole one after another: each starts where the
    previous ended, inside one 512-block locality-group preallocation (aligned in its group:
    cr0 found a free buddy of order 9), until it is used up and a new one is made."""
    img = _image(tmp_path)
    sizes = [1, 16, 3, 7, 16, 2, 9, 16, 16, 5, 11, 1, 16, 8, 4] * 5
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        geo = vol.geo
        starts = []
        for i, n in enumerate(sizes):
            ino = vol.create(vol.root_ino, b"s%d" % i, stat.S_IFREG | 0o644, 0, 0).st_ino
            vol.open_file(ino)
            vol.write(ino, 0, b"y" * (n * 1024))
            vol.release_file(ino, True)
            runs = _runs(vol, ino)
            assert len(runs) == 1 and runs[0][2] == n
            starts.append(runs[0][1])

        def aligned(b):
            return (b - geo.group_start(geo.group_of_block(b))) % GROUP_PREALLOC == 0

        used = 0
        pa_start = starts[0]
        assert aligned(pa_start)
        for s, n in zip(starts, sizes):
            if used + n > GROUP_PREALLOC:             # this one did not fit: a new preallocation
                assert aligned(s) and s != pa_start
                pa_start, used = s, 0
            assert s == pa_start + used, "not where the previous file ended"
            used += n
        assert pa_start != starts[0], "the sizes fill more than one preallocation"


@settings(max_examples=25, deadline=None, derandomize=True)
@given(run=st.integers(2, 6), gap=st.integers(1, 3), count=st.integers(17, 300), lblk=st.integers(0, 50))
def test_one_write_back_never_hands_a_block_out_twice(tmp_path_factory, run, gap, count, lblk):
    """mballoc-delalloc places a delayed extent with as many ext4_mb_new_blocks requests as it
    takes; the space the volume hands in does not show what the earlier requests of the same
    call found, so the allocator must (its `pending` blocks): on a map of short free runs,
    every block of the answer is distinct and free, one per logical block."""
    from tests.unit.placement_helpers import fresh_space
    from policies import BlockRequest, make_allocator
    space = fresh_space(tmp_path_factory.mktemp("mbd"), groups=4, bpg=1024)
    first = space.geometry.first_data_block
    pattern = np.array(([False] * run + [True] * gap) * (len(space.block_used) // (run + gap) + 1))
    space.block_used[first:] |= pattern[:len(space.block_used) - first]
    alloc = make_allocator("mballoc-delalloc")
    st_ = alloc.new_inode_state()
    req = BlockRequest(ino=12, inode_group=1, lblk=lblk, size=(lblk + count) * 1024)
    got = alloc.allocate_run(space, req, st_, count)
    assert len(got) == count and len(set(got)) == count, "a block handed out twice in one call"
    assert not space.block_used[got].any(), "a block in use handed out"


@pytest.mark.parametrize("kind", ["dir", "indirect"])
def test_non_data_blocks_are_not_stream_allocated(tmp_path, kind):
    """ext4_mb_group_or_file returns at once for a request without EXT4_MB_HINT_DATA: a large
    directory's (or a tree block's) search starts at its goal's group, never at the group the
    last stream allocation used (s_mb_last_group), however large the inode."""
    from tests.unit.placement_helpers import fresh_space
    from policies import BlockRequest, make_allocator
    space = fresh_space(tmp_path, groups=8, bpg=1024, profile="ext4")
    alloc = make_allocator("mballoc")
    alloc.last_group = 5
    req = BlockRequest(ino=12, inode_group=0, lblk=40, kind=kind, is_dir=kind == "dir", size=200 * 1024,
                       prev_phys=space.geometry.group_start(0) + 700)
    b = alloc.allocate(space, req, alloc.new_inode_state())
    assert space.geometry.group_of_block(b) == 0
