"""mballoc's preallocations, driven through Volume (policies/mballoc.py).

Properties under hypothesis, on top of test_allocators' random operations (which already check
that the bitmap is exactly what the files map and that e2fsck is clean): a preallocated block
is never in use and belongs to one preallocation only (so it is never handed out twice), the
allocator's per-group count of held blocks is exact, a file's last close leaves it no inode
preallocation, and once every file and directory is gone every block is free again. Then the
mechanisms one by one: small files share the locality group's preallocation, a file written
in order stays in few extents, a full disk gives up the preallocated blocks.
"""

import errno
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import initialize, invariant, rule

from policies.mballoc import GROUP_PREALLOC, MbState
from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from tests.volume.test_allocators import AllocatorMachine


def _pas(alloc):
    return [pa for pas in alloc.by_group.values() for pa in pas]


class MballocMachine(AllocatorMachine):
    alloc = "mballoc"

    @initialize()
    def setup(self):
        super().setup()
        self.fresh_free = self.vol.space.free_blocks

    @invariant()
    def preallocations_are_free_and_disjoint(self):
        if not hasattr(self, "vol"):
            return
        alloc, space = self.vol.placement.allocator, self.vol.space
        held = np.zeros(len(space.block_used), dtype=np.int32)
        per_group = {}
        for pa in _pas(alloc):
            blocks = pa.pstart + np.flatnonzero(pa.avail)
            assert pa.free == len(blocks) > 0
            used = blocks[space.block_used[blocks]]
            assert not len(used), f"preallocated blocks in use: {used[:5]}"
            held[blocks] += 1
            assert {self.vol.geo.group_of_block(int(b)) for b in blocks} == {pa.group}
            per_group[pa.group] = per_group.get(pa.group, 0) + pa.free
        assert held.max(initial=0) <= 1, "a block preallocated twice"
        assert {g: n for g, n in alloc.held.items() if n} == per_group

    @rule()
    def close_all(self):
        """Every writer closes: no inode preallocation is left, only the locality group's."""
        for ino, _ in self.files.values():
            self._release(ino)
            inode = self.vol.inodes.get(ino)
            assert inode.incore is None or not inode.incore["alloc"].pas
        alloc = self.vol.placement.allocator
        lg = {id(pa) for lst in alloc.lg for pa in lst}
        assert all(id(pa) in lg for pa in _pas(alloc))

    @rule()
    def remove_everything(self):
        """Freed blocks return: with every file and directory gone, the free count is the
        fresh image's again (what the preallocations hold is free on the image)."""
        for path in sorted(self.files):
            self.vol.unlink(self.dirs[path[:-1]], path[-1])
        self.files.clear()
        for path in sorted((p for p in self.dirs if p), key=len, reverse=True):
            self.vol.rmdir(self.dirs[path[:-1]], path[-1])
            del self.dirs[path]
        if self.vol.placement.delayed:
            self.vol.sync()
        assert self.vol.space.free_blocks == self.fresh_free


class MballocDelallocMachine(MballocMachine):
    alloc = "mballoc-delalloc"

    @rule()
    def sync(self):
        self.vol.sync()


def _case(cls):
    case = cls.TestCase
    case.settings = settings(max_examples=int(os.environ.get("SIMFS_ALLOC_EXAMPLES", "0")) or 12,
                             stateful_step_count=30, deadline=None,
                             suppress_health_check=list(HealthCheck), derandomize=True)
    return needs_e2fsprogs(case)


TestMballocProperties = _case(MballocMachine)
TestMballocDelallocProperties = _case(MballocDelallocMachine)


@pytest.fixture
def image(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 64 << 20, block_size=4096)
    return img


def _write(vol, parent, name, size, chunk=4096):
    ino = vol.create(parent, name, 0o644, 0, 0).st_ino
    vol.open_file(ino)
    for off in range(0, size, chunk):
        vol.write(ino, off, b"x" * min(chunk, size - off))
    vol.release_file(ino, True)
    return ino


def test_small_files_share_the_locality_group_preallocation(image):
    """Files of at most 16 blocks in different directories go one after another into the
    locality group's 512-block preallocation (ext4_mb_use_group_pa)."""
    with Volume.open(image, VolumeOptions(alloc="mballoc")) as vol:
        dirs = [vol.mkdir(vol.root_ino, b"d%d" % i, 0o755, 0, 0).st_ino for i in range(4)]
        inos = [_write(vol, dirs[i % 4], b"f%d" % i, 3 * 4096) for i in range(12)]
        runs = [vol.extents(ino)["runs"] for ino in inos]
        assert all(len(r) == 1 for r in runs)
        starts = [r[0][1] for r in runs]
        assert starts == list(range(starts[0], starts[0] + 3 * 12, 3))
        assert starts[0] % GROUP_PREALLOC == 0          # cr0: an aligned buddy of order 9
    assert_fsck_clean(image)


def test_a_file_written_in_order_keeps_few_extents(image):
    """Per-inode preallocation: a 4 MiB file written 4 KiB at a time (a request per block,
    nodelalloc) ends in a handful of extents, not one per normalisation window."""
    with Volume.open(image, VolumeOptions(alloc="mballoc")) as vol:
        ino = _write(vol, vol.root_ino, b"big", 4 << 20)
        assert len(vol.extents(ino)["runs"]) <= 3
        state = vol.inodes.get(ino).incore
        assert state is None or not state["alloc"].pas      # closed: nothing kept
    assert_fsck_clean(image)


def test_a_full_disk_takes_the_preallocated_blocks(tmp_path):
    """No room outside the preallocations: they are discarded and the search runs again
    (ext4_mb_discard_preallocations), so the file system fills to the last block."""
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=1024, blocks_per_group=1024, inodes_per_group=64)
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        small = vol.create(vol.root_ino, b"small", 0o644, 0, 0).st_ino
        vol.open_file(small)
        vol.write(small, 0, b"s" * 1024)               # a locality-group preallocation, kept open
        assert any(pa.free for pa in _pas(vol.placement.allocator))
        big = vol.create(vol.root_ino, b"big", 0o644, 0, 0).st_ino
        vol.open_file(big)
        off = 0
        with pytest.raises(FSError) as e:
            while True:
                vol.write(big, off, b"b" * 8192)
                off += 8192
        assert e.value.errno == errno.ENOSPC
        assert vol.space.free_blocks - vol.space.reserved <= 1     # filled up
        vol.release_file(big, True)
        vol.release_file(small, True)
    assert_fsck_clean(img)


def test_state_keeps_extents_once():
    """Delayed allocation reports each placed block again (Placement.placed): kept once."""
    st = MbState()
    st.add(0, 100, 4)
    st.add(2, 102, 1)
    st.add(4, 104, 1)
    assert st.extents == [(0, 100, 5)]
    assert st.neighbours(7) == (4, 104, 0, 0)
    st.add(10, 200, 2)
    assert st.neighbours(7) == (4, 104, 10, 200)


def test_same_operations_same_layout(tmp_path):
    """Deterministic: the same operations on the same image give the same blocks."""
    layouts = []
    for k in range(2):
        img = tmp_path / f"img{k}"
        mkfs(img, 32 << 20, block_size=4096, uuid=bytes(16), hash_seed=bytes(16), now=1)
        with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
            d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
            inos = [_write(vol, d, b"f%d" % i, (i * 37 % 40 + 1) * 4096) for i in range(30)]
            layouts.append([vol.extents(i)["runs"] for i in inos])
    assert layouts[0] == layouts[1]



@pytest.mark.parametrize("closed", [True, False])
def test_delalloc_gives_a_closed_file_no_inode_preallocation(tmp_path, closed):
    """ext4_mb_group_or_file at write-back: six 80 KiB files (20 blocks, past
    s_mb_stream_request) closed before the sync get exactly their 20 blocks each, end to end
    (the kernel: 32770, 32790, 32810...); still open, each request is normalised to a 32-block
    window and the files lie 32 blocks apart."""
    image = tmp_path / "img"
    mkfs(image, 256 << 20, block_size=4096, profile="ext4")
    with Volume.open(image, VolumeOptions(alloc="mballoc-delalloc")) as vol:
        inos = []
        for i in range(6):
            ino = vol.create(vol.root_ino, b"f%d" % i, 0o644, 0, 0).st_ino
            vol.open_file(ino)
            vol.write(ino, 0, b"x" * (80 << 10))
            if closed:
                vol.release_file(ino, True)
            inos.append(ino)
        vol.sync()
        starts = [vol.extents(ino)["runs"][0][1] for ino in inos]
        assert all(len(vol.extents(ino)["runs"]) == 1 for ino in inos)
        step = 20 if closed else 32
        assert starts == list(range(starts[0], starts[0] + 6 * step, step))
        if not closed:
            for ino in inos:
                vol.release_file(ino, True)
    assert_fsck_clean(image)
