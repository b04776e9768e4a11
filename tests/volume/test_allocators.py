"""Every block allocator, driven through Volume by random operation sequences.

For each registered allocator: random create / write (at random offsets, into the indirect
and double-indirect ranges of a 1 KiB-block image) / truncate / unlink / mkdir / rmdir /
close (release) / remount sequences on a small image with 8 groups of 1024 blocks. The
volume itself asserts that no block is handed out twice (FreeSpace.take_block) and that no
metadata block is handed out (FileMap._alloc); here we also check, after every step, that
each group's free count equals its bitmap, that the bitmap is exactly metadata + the blocks
the files map, that file contents read back, and at the end that `e2fsck -fn` is clean.
"""

import errno
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import policies
from simfs.errors import FSError
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, needs_e2fsprogs

NAMES = st.sampled_from([b"a", b"b", b"c", b"d"])
NAMES_FIRST = b"a"
# offsets: direct blocks, the single-indirect range (lblk 12..267 at 1 KiB) and beyond
OFFSETS = st.one_of(st.integers(0, 12 * 1024), st.integers(12 * 1024, 268 * 1024),
                    st.integers(268 * 1024, 700 * 1024))
LENGTHS = st.one_of(st.integers(1, 4096), st.integers(4096, 40_000), st.integers(500_000, 1_500_000))


#: where the machines' images go: a tmpfs where there is one. Each step's checks and every
#: remount commit the image, and a commit fsyncs it and its journal; on a disk shared with other
#: work those fsyncs (and the unlinks) were two thirds of the time, and nothing here is about
#: the host's durability
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _payload(seed: int, n: int) -> bytes:
    return (seed.to_bytes(4, "little") * (n // 4 + 1))[:n]


class AllocatorMachine(RuleBasedStateMachine):
    alloc = "first-free"

    @initialize()
    def setup(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="simfs-alloc-", dir=SCRATCH)
        self.img = os.path.join(self.tmp.name, "img")
        mkfs(self.img, 8 << 20, block_size=1024, blocks_per_group=1024, inodes_per_group=64)
        self.vol = Volume.open(self.img, VolumeOptions(alloc=self.alloc))
        self.dirs = {(): self.vol.root_ino}          # path -> ino
        self.files = {}                               # path -> (ino, bytearray)

    def teardown(self):
        if hasattr(self, "vol"):
            self.vol.close()
            assert_fsck_clean(self.img)
            self.tmp.cleanup()

    def _file(self, data):
        """A file to work on: one of those made, else a new one in the root (so that no rule
        ever waits on a precondition: hypothesis gives up on a run whose next rule it cannot
        draw in three tries, as it did for a third of the runs when only `make` and `remount`
        were enabled at the start). None if none can be made (ENOSPC)."""
        if not self.files:
            self.make(data, NAMES_FIRST, False)
            if not self.files:
                return None
        return data.draw(st.sampled_from(sorted(self.files)))

    def _children(self, dpath):
        n = len(dpath) + 1
        return [p for p in list(self.dirs) + list(self.files) if len(p) == n and p[:-1] == dpath]

    # rules -------------------------------------------------------------------------------
    @rule(data=st.data(), name=NAMES, is_dir=st.booleans())
    def make(self, data, name, is_dir):
        dpath = data.draw(st.sampled_from(sorted(self.dirs)))
        path = dpath + (name,)
        if path in self.dirs or path in self.files:
            return
        try:
            if is_dir:
                self.dirs[path] = self.vol.mkdir(self.dirs[dpath], name, 0o755, 0, 0).st_ino
            else:
                self.files[path] = (self.vol.create(self.dirs[dpath], name, 0o644, 0, 0).st_ino, bytearray())
        except FSError as e:
            assert e.errno == errno.ENOSPC

    @rule(data=st.data(), offset=OFFSETS, length=LENGTHS, seed=st.integers(0, 2**32 - 1))
    def write(self, data, offset, length, seed):
        path = self._file(data)
        if path is None:
            return
        ino, model = self.files[path]
        payload = _payload(seed, length)
        try:
            done = self.vol.write(ino, offset, payload)
        except FSError as e:
            assert e.errno == errno.ENOSPC
            done = 0
        if done:
            if len(model) < offset:
                model.extend(bytes(offset - len(model)))
            model[offset:offset + done] = payload[:done]

    @rule(data=st.data(), size=st.integers(0, 400_000))
    def truncate(self, data, size):
        path = self._file(data)
        if path is None:
            return
        ino, model = self.files[path]
        try:
            self.vol.setattr(ino, size=size)
        except FSError as e:      # growing never allocates; shrinking never fails
            raise AssertionError(f"truncate to {size}: {e}")
        del model[size:]
        model.extend(bytes(size - len(model)))
        self._release(ino)

    @rule(data=st.data())
    def close(self, data):
        """Last close of a writer: the allocator drops what it holds (reservation windows)."""
        path = self._file(data)
        if path is not None:
            self._release(self.files[path][0])

    def _release(self, ino):
        inode = self.vol.inodes.get(ino)
        if inode.incore is not None:
            self.vol.placement.allocator.release(inode.incore["alloc"])

    @rule(data=st.data())
    def unlink(self, data):
        if not self.files:
            return
        path = data.draw(st.sampled_from(sorted(self.files)))
        self.vol.unlink(self.dirs[path[:-1]], path[-1])
        del self.files[path]

    @rule(data=st.data())
    def rmdir(self, data):
        if len(self.dirs) == 1:
            return
        path = data.draw(st.sampled_from(sorted(p for p in self.dirs if p)))
        if self._children(path):
            return
        self.vol.rmdir(self.dirs[path[:-1]], path[-1])
        del self.dirs[path]

    @rule()
    def remount(self):
        self.vol.close()
        assert_fsck_clean(self.img)
        self.vol = Volume.open(self.img, VolumeOptions(alloc=self.alloc))

    # invariants ----------------------------------------------------------------------------
    @invariant()
    def free_space_is_exact(self):
        if not hasattr(self, "vol"):
            return
        vol, space, geo = self.vol, self.vol.space, self.vol.geo
        if not hasattr(self, "meta"):
            self.meta = np.array([b < geo.first_data_block or space.is_metadata(b)
                                  for b in range(geo.blocks_count)], dtype=bool)
        expect = self.meta.copy()
        owners = {}
        for ino in sorted({vol.root_ino, 11, *self.dirs.values(), *(i for i, _ in self.files.values())}):
            inode = vol.inodes.get(ino)
            for _, b in vol.filemap.blocks(inode):
                assert not self.meta[b], f"inode {ino} maps metadata block {b}"
                assert b not in owners, f"block {b} mapped twice (inodes {owners[b]} and {ino})"
                owners[b] = ino
                expect[b] = True
        assert np.array_equal(space.block_used, expect), \
            f"bitmap differs from the mapped blocks at {np.flatnonzero(space.block_used != expect)[:10]}"
        for g in range(geo.groups):
            start = geo.group_start(g)
            n = geo.group_blocks(g)
            assert space.descs[g].free_blocks == n - int(space.block_used[start:start + n].sum()), f"group {g}"
        assert space.free_blocks == sum(d.free_blocks for d in space.descs)

    @invariant()
    def contents_read_back(self):
        if not hasattr(self, "vol"):
            return
        for path, (ino, model) in self.files.items():
            assert self.vol.getattr(ino).st_size == len(model), path
            assert self.vol.read(ino, 0, len(model) + 1) == bytes(model), path


# SIMFS_ALLOC_EXAMPLES=200 for a long local hunt (random, not derandomized)
EXAMPLES = int(os.environ.get("SIMFS_ALLOC_EXAMPLES", "0"))


def _machine_for(name):
    cls = type(f"Machine_{name}", (AllocatorMachine,), {"alloc": name})
    case = cls.TestCase
    aliased = name == "cg"              # the same code as cg-2013
    case.settings = settings(max_examples=EXAMPLES or (4 if aliased else 14), stateful_step_count=30,
                             deadline=None, suppress_health_check=list(HealthCheck),
                             derandomize=not EXAMPLES)
    return case


for _name in sorted(policies.ALLOCATORS):
    _cls_name = "TestRandomOps_" + _name.replace("-", "_")
    globals()[_cls_name] = needs_e2fsprogs(_machine_for(_name))
del _name, _cls_name


def test_every_allocator_is_registered_with_a_placer_and_summary():
    for name, cls in policies.ALLOCATORS.items():
        assert cls.name == name and cls.summary and cls.placer in policies.INODE_PLACERS
    for name, cls in policies.INODE_PLACERS.items():
        assert cls.name == name and cls.summary
    for name in ("sequential", "cg-2010", "cg-2013", "cg", "ext2", "ext2fs-2010", "ext2fs-2010-fixed"):
        assert name in policies.ALLOCATORS
    with pytest.raises(ValueError, match="choose one of: .*cg-2013"):
        policies.make_allocator("cg-1999")
