"""simfs.fs.directory: linear ext2 directories and the bounded in-memory name index.

Directories are driven directly (add, remove, replace, lookup, entries) on a directory of a
small 1 KiB-block volume, against a dict model; after every change the blocks themselves
are decoded (the index is only a CPU shortcut: the blocks are the truth). Also: the blocks a
lookup reads (what the model charges), growth by whole blocks only when no record has room,
space reuse after deletions, readdir positions that survive deletions of other entries,
corrupt blocks and holes as EIO, and the index's bound.
"""

from __future__ import annotations

import errno
import stat

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk import dirent
from simfs.ondisk.constants import FT_DIR, FT_REG, FT_SYMLINK, INDEX_FL
from simfs.ondisk.inode import Inode
from simfs.ondisk.mkfs import mkfs

BS = 1024


@pytest.fixture
def vol(tmp_path):
    img = tmp_path / "d.img"
    mkfs(img, 8 << 20, block_size=BS)
    with Volume.open(img, VolumeOptions(disk="ideal")) as v:
        yield v


def new_dir(vol, name=b"d"):
    ino = vol.mkdir(vol.root_ino, name, stat.S_IFDIR | 0o755, 0, 0).st_ino
    vol.hold(ino)                                        # pinned: this in-core inode stays the one
    return vol.inodes.get(ino)


def stored(vol, ino) -> Inode:
    """The inode as its inode-table block holds it (not the in-core copy), once the changes
    made so far are packed into the block (as before a commit)."""
    vol.inodes.pack()
    geo = vol.geo
    off = (ino - 1) % geo.inodes_per_group % geo.inodes_per_block * geo.inode_size
    return Inode.unpack(ino, vol.cache.peek(vol.inodes.block_of(ino))[off:off + geo.inode_size])


def rooms(vol, d) -> list[int]:
    """Per block of d, the largest record a new entry could take in it."""
    out = []
    for lidx in range(d.size // BS):
        best = 0
        for _, ino, rec_len, name, _ in dirent.iter_block(vol.cache.peek(vol.filemap.bmap(d, lidx))):
            best = max(best, rec_len if ino == 0 else rec_len - dirent.rec_len_for(len(name)))
        out.append(best)
    return out


def best_room(vol, d) -> int:
    """The largest record a block of d could take without growing."""
    return max(rooms(vol, d), default=0)


def on_disk(vol, d) -> dict[bytes, tuple[int, int]]:
    """Live entries decoded from the directory's blocks: name -> (ino, ftype)."""
    out = {}
    for lidx in range(d.size // BS):
        block = vol.cache.peek(vol.filemap.bmap(d, lidx))
        for _, ino, _, name, ft in dirent.iter_block(block):
            if ino:
                assert name not in out, f"{name!r} twice"
                out[name] = (ino, ft)
    return out


def reads(vol, fn):
    """How many blocks fn reads through the cache (hits and misses)."""
    c0 = vol.counters
    fn()
    c1 = vol.counters
    return sum(c1.get(k, 0) - c0.get(k, 0) for k in ("cache_hits", "cache_misses"))


def test_new_directory_has_dot_and_dotdot(vol):
    d = new_dir(vol)
    assert on_disk(vol, d) == {b".": (d.ino, FT_DIR), b"..": (2, FT_DIR)}
    assert d.size == BS and vol.dirs.is_empty(d)
    assert vol.dirs.lookup(d, b"..") == (2, FT_DIR)


def test_add_lookup_remove_replace(vol):
    dirs = vol.dirs
    d = new_dir(vol)
    dirs.add(d, b"alpha", 100, FT_REG)
    dirs.add(d, b"beta", 101, FT_SYMLINK)
    assert dirs.lookup(d, b"alpha") == (100, FT_REG) and dirs.lookup(d, b"gamma") is None
    assert not dirs.is_empty(d)
    assert dirs.replace(d, b"alpha", 200, FT_DIR) == 100
    assert dirs.remove(d, b"beta") == 101
    with pytest.raises(FSError) as e:
        dirs.remove(d, b"beta")
    assert e.value.errno == errno.ENOENT
    assert on_disk(vol, d) == {b".": (d.ino, FT_DIR), b"..": (2, FT_DIR), b"alpha": (200, FT_DIR)}
    dirs.set_parent(d, 77)
    assert on_disk(vol, d)[b".."] == (77, FT_DIR)
    dirs.forget(d.ino)                                   # rebuilt from the blocks
    assert dirs.lookup(d, b"alpha") == (200, FT_DIR) and dirs.lookup(d, b"..") == (77, FT_DIR)


def test_remove_merges_into_the_previous_record_or_clears_the_first(vol):
    dirs = vol.dirs
    d = new_dir(vol)
    names = [b"n%03d-%s" % (i, b"x" * 95) for i in range(20)]     # 108-byte records: 9 to a block
    for i, n in enumerate(names):
        dirs.add(d, n, 300 + i, FT_REG)
    assert d.size == 3 * BS
    first_of_block1 = names[9]
    phys1 = vol.filemap.bmap(d, 1)
    before = list(dirent.iter_block(vol.cache.peek(phys1)))
    assert before[0][3] == first_of_block1 and before[1][3] == names[10]
    dirs.remove(d, names[10])
    after = list(dirent.iter_block(vol.cache.peek(phys1)))
    assert after[0][:3] == (0, 309, before[0][2] + before[1][2])          # merged into the previous record
    dirs.remove(d, first_of_block1)
    after = list(dirent.iter_block(vol.cache.peek(phys1)))
    assert after[0][1] == 0 and after[0][3] == first_of_block1            # first of a block: inode 0
    assert vol.cache.is_dirty(phys1)


def test_growth_by_blocks_and_reuse_after_deletions(vol):
    dirs = vol.dirs
    d = new_dir(vol)
    name = lambda i: b"%03d" % i + b"y" * 97                              # noqa: E731  (108-byte records)
    for i in range(9):
        dirs.add(d, name(i), 400 + i, FT_REG)
    assert d.size == BS                                                   # 1000 bytes after ".." hold 9
    dirs.add(d, name(9), 409, FT_REG)
    assert d.size == 2 * BS and vol.dirs.lookup(d, name(9)) == (409, FT_REG)
    assert stored(vol, d.ino).size == 2 * BS
    dirs.remove(d, name(4))
    dirs.add(d, name(50), 450, FT_REG)                                    # fits where name(4) was
    assert d.size == 2 * BS
    pos = {n: p for p, n, _, _ in dirs.entries(d)}
    assert pos[name(50)] < BS                                             # in block 0
    for i in range(10, 18):                                               # fill block 1 (9 with name(9))
        dirs.add(d, name(i), 400 + i, FT_REG)
    assert d.size == 2 * BS
    dirs.add(d, b"z" * 255, 999, FT_REG)                                  # 264 bytes: no room anywhere
    assert d.size == 3 * BS
    assert len(on_disk(vol, d)) == 2 + 9 + 9 + 1


def test_entries_resume_at_positions_that_survive_deletions(vol):
    dirs = vol.dirs
    d = new_dir(vol)
    for i in range(40):
        dirs.add(d, b"e%02d-%s" % (i, b"q" * (i % 13)), 500 + i, FT_REG)
    listing = list(dirs.entries(d))
    positions = [p for p, *_ in listing]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert {n for _, n, _, _ in listing} == set(on_disk(vol, d))
    for k in (0, 5, 17, 41):
        assert list(dirs.entries(d, positions[k])) == listing[k:]
    victims = {listing[k][1] for k in (3, 6, 20, 21, 22, 40)}
    for n in victims:
        dirs.remove(d, n)
    rest = [e for e in listing if e[1] not in victims]
    assert list(dirs.entries(d)) == rest
    for k in (4, 19, 30):                                                 # a cookie from before the deletions
        p = listing[k][0]
        assert list(dirs.entries(d, p)) == [e for e in rest if e[0] >= p]


def test_a_linear_lookup_reads_up_to_the_block_that_holds_the_name(vol):
    dirs = vol.dirs
    d = new_dir(vol)
    for i in range(40):                                                   # 5 blocks of 108-byte records
        dirs.add(d, b"%03d" % i + b"w" * 97, 600 + i, FT_REG)
    assert d.size == 5 * BS and not dirs.indexed
    dirs.lookup(d, b"000" + b"w" * 97)                                    # build the index first
    assert reads(vol, lambda: dirs.lookup(d, b"000" + b"w" * 97)) == 1    # block 0
    assert reads(vol, lambda: dirs.lookup(d, b"020" + b"w" * 97)) == 3    # blocks 0..2
    assert reads(vol, lambda: dirs.lookup(d, b"nope")) == 5               # a miss scans everything
    dirs.indexed = True                                                   # hash order: root + leaf
    assert reads(vol, lambda: dirs.lookup(d, b"039" + b"w" * 97)) == 2
    assert reads(vol, lambda: dirs.lookup(d, b"000" + b"w" * 97)) == 1


def test_changing_an_indexed_directory_clears_the_index_flag(vol):
    d = new_dir(vol)
    d.flags |= INDEX_FL
    vol.inodes.put(d)
    vol.dirs.add(d, b"x", 700, FT_REG)
    assert stored(vol, d.ino).flags & INDEX_FL == 0 and not d.flags & INDEX_FL


def test_corrupt_block_and_hole_end_that_block_only(vol):
    """A record that breaks the block's chain hides the rest of that block, a hole is skipped
    (ext4_check_dir_entry, ext4_readdir): each reported as an inconsistency, the rest of the
    directory still found; nothing is added to the damaged block."""
    dirs = vol.dirs
    d = new_dir(vol)
    dirs.add(d, b"a" * 200, 800, FT_REG)
    phys = vol.filemap.bmap(d, 0)
    buf = vol.cache.bread(phys, "dir", d.ino)
    buf[12 + 4:12 + 6] = (0).to_bytes(2, "little")                       # ".." rec_len 0
    dirs.forget(d.ino)
    errors = vol.sb.error_count
    assert dirs.lookup(d, b".") == (d.ino, FT_DIR)            # before the break: found
    assert vol.sb.error_count == errors + 1
    for name in (b"a" * 200, b"c"):                           # the search meets rec_len 0:
        with pytest.raises(FSError) as e:                    # EUCLEAN (ext4_search_dir)
            dirs.lookup(d, name)
        assert e.value.errno == errno.EUCLEAN
    with pytest.raises(FSError) as e:                        # no room before the damage: no new
        dirs.add(d, b"b", 801, FT_REG)                       # block either (ext4_find_dest_de)
    assert e.value.errno == errno.EUCLEAN and not dirs.is_empty(d)
    assert vol.filemap.bmap(d, 1) == 0
    assert bytes(vol.cache.bread(phys, "dir", d.ino))[16:18] == (0).to_bytes(2, "little")
    d2 = new_dir(vol, b"d2")
    d2.size = 2 * BS                                                      # block 1 is a hole
    dirs.forget(d2.ino)
    assert dirs.lookup(d2, b"x") is None and dirs.lookup(d2, b"..") is not None
    assert vol.sb.error_count > errors + 1
    assert [e[1] for e in dirs.entries(d2)] == [b".", b".."]


def test_the_name_index_is_bounded(vol):
    dirs = vol.dirs
    dirs.capacity = 50
    ds = [new_dir(vol, b"b%d" % k) for k in range(4)]
    for k, d in enumerate(ds):
        for i in range(20):
            dirs.add(d, b"n%d" % i, 1000 + 100 * k + i, FT_REG)
    for d in ds:
        dirs.lookup(d, b"n0")
        assert dirs.indexed_entries == sum(len(i.names) for i in dirs.indexes.values())
        assert dirs.indexed_entries <= 50 or len(dirs.indexes) == 1
    assert list(dirs.indexes) == [ds[2].ino, ds[3].ino]                   # least recently used went first
    for k, d in enumerate(ds):                                            # evicted ones are read back
        assert dirs.lookup(d, b"n7") == (1000 + 100 * k + 7, FT_REG)
    dirs.capacity = 5                                                     # one directory over the bound stays
    dirs.lookup(ds[0], b"n1")
    assert list(dirs.indexes) == [ds[0].ino] and dirs.indexed_entries == 22


class DirMachine(RuleBasedStateMachine):
    """Random adds, removes, replaces and index drops on one directory against a dict."""

    def __init__(self):
        super().__init__()
        import tempfile
        self.tmp = tempfile.TemporaryDirectory()
        img = f"{self.tmp.name}/m.img"
        mkfs(img, 4 << 20, block_size=BS)
        self.vol = Volume.open(img, VolumeOptions(disk="ideal"))
        self.d = new_dir(self.vol)
        self.model = {b".": (self.d.ino, FT_DIR), b"..": (2, FT_DIR)}
        self.next_ino = 20

    def _ino(self) -> int:
        """Another inode number, within the inode count (an insertion checks the records it
        passes: one naming an inode past the count is EUCLEAN)."""
        self.next_ino = self.next_ino % self.vol.geo.inodes_count + 1
        return self.next_ino

    def teardown(self):
        self.vol.close()
        self.tmp.cleanup()

    names = st.one_of(st.sampled_from([b"a", b"bb", b"ccc", b"x" * 255, b"y" * 100, b"z" * 13]),
                      st.binary(min_size=1, max_size=120).filter(lambda n: b"/" not in n and b"\0" not in n
                                                                 and n not in (b".", b"..")))

    @rule(name=names, ft=st.sampled_from([FT_REG, FT_DIR, FT_SYMLINK]))
    def add(self, name, ft):
        if name in self.model:
            return
        ino = self._ino()
        size, room = self.d.size, best_room(self.vol, self.d)
        self.vol.dirs.add(self.d, name, ino, ft)
        self.model[name] = (ino, ft)
        # a new block only when no record had room for this one
        assert self.d.size == (size if room >= dirent.rec_len_for(len(name)) else size + BS)

    @precondition(lambda self: len(self.model) > 2)
    @rule(data=st.data())
    def remove(self, data):
        name = data.draw(st.sampled_from(sorted(n for n in self.model if n not in (b".", b".."))))
        assert self.vol.dirs.remove(self.d, name) == self.model.pop(name)[0]

    @precondition(lambda self: len(self.model) > 2)
    @rule(data=st.data())
    def replace(self, data):
        name = data.draw(st.sampled_from(sorted(n for n in self.model if n not in (b".", b".."))))
        ino = self._ino()
        assert self.vol.dirs.replace(self.d, name, ino, FT_REG) == self.model[name][0]
        self.model[name] = (ino, FT_REG)

    @rule()
    def drop_index(self):
        self.vol.dirs.forget(self.d.ino)

    @rule(name=names)
    def lookup(self, name):
        assert self.vol.dirs.lookup(self.d, name) == self.model.get(name)

    @invariant()
    def blocks_hold_the_model(self):
        assert on_disk(self.vol, self.d) == self.model
        assert {n: (i, f) for _, n, i, f in self.vol.dirs.entries(self.d)} == self.model
        assert self.vol.dirs.is_empty(self.d) == (len(self.model) == 2)
        idx = self.vol.dirs.indexes.get(self.d.ino)      # the index's per-block room, kept up
        if idx is not None:                               # to date by add and remove, is exact
            assert idx.free == rooms(self.vol, self.d)


DirMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=40, deadline=None,
                                        derandomize=True, suppress_health_check=list(HealthCheck))
TestDirectoryRandomWalk = DirMachine.TestCase
