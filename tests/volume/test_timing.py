"""Simulated time: the buffer-cache model, clustering, read-ahead, write-back policies, determinism.

The seeds' effects must emerge from the model: one-block runs defeat clustering and
read-ahead, synchronous metadata makes the writer wait, a remount starts cold.
"""

import json

import pytest

import policies
from experiments.workload import generate_tree
from policies.base import BlockAllocator, NoSpace
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, copy_tree_into

MIB = 1 << 20


class OneInEight(BlockAllocator):
    """Test-only: every block 8 past the previous one, the layout seed 000 found."""

    name = "test-one-in-eight"

    def allocate(self, space, req, state):
        geo = space.geometry
        start = req.prev_phys + 8 if req.prev_phys else geo.group_start(req.inode_group)
        while start < geo.blocks_count:
            b = space.first_free_block(start, geo.blocks_count)
            if b < 0:
                break
            if not req.prev_phys or (b - req.prev_phys) % 8 == 0:
                return b
            start = req.prev_phys + 8 * (-(-(b - req.prev_phys) // 8))
        raise NoSpace()


@pytest.fixture
def one_in_eight(monkeypatch):
    monkeypatch.setitem(policies.ALLOCATORS, OneInEight.name, OneInEight)
    return OneInEight.name


def _image(tmp_path, size=600 * MIB, block_size=4096):
    img = tmp_path / "img"
    mkfs(img, size, block_size=block_size, uuid=bytes(range(16)), hash_seed=bytes(16), now=1_000_000_000)
    return img


def _write_file(vol, name, size, chunk=128 * 1024):
    ino = vol.create(vol.root_ino, name, 0o644, 0, 0).st_ino
    block = bytes(range(256)) * (chunk // 256)
    for off in range(0, size, chunk):
        vol.write(ino, off, block)
    return ino


def _cold_read_time(img, alloc, size, **opts):
    """Write a file, remount (cold cache), read it sequentially; simulated seconds of the read."""
    with Volume.open(img, VolumeOptions(alloc=alloc, **opts)) as vol:
        _write_file(vol, b"f", size)
    with Volume.open(img, VolumeOptions(alloc=alloc, **opts)) as vol:
        ino = vol.lookup(vol.root_ino, b"f").st_ino
        first = vol.filemap.bmap(vol.inodes.get(ino), 0)
        t0 = vol.clock.now
        for off in range(0, size, 128 * 1024):
            vol.read(ino, off, 128 * 1024)
        cold = vol.clock.now - t0
        reads = vol.counters.get("disk_reads", 0)
        t0 = vol.clock.now
        for off in range(0, size, 128 * 1024):
            vol.read(ino, off, 128 * 1024)
        warm = vol.clock.now - t0
        assert vol.counters.get("disk_reads", 0) == reads, "a warm re-read went to the disk"
        return cold, warm, first * 8, vol.disk


def test_cold_sequential_read_runs_at_the_zone_rate(tmp_path):
    cold, warm, lba, disk = _cold_read_time(_image(tmp_path), "first-free", 64 * MIB, disk="sata7200")
    rate = disk.layout.zone_rate(disk.layout.zone(lba))
    expected = 64 * MIB / rate
    assert abs(cold - expected) / expected < 0.15, (cold, expected)
    assert warm < cold / 100      # CPU only: no disk time


def test_one_block_runs_defeat_clustering_and_readahead(tmp_path, one_in_eight):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    contiguous, _, _, _ = _cold_read_time(_image(tmp_path / "a"), "first-free", 64 * MIB, disk="sata7200")
    scattered, _, _, _ = _cold_read_time(_image(tmp_path / "b"), one_in_eight, 64 * MIB, disk="sata7200")
    assert scattered >= 5 * contiguous, (scattered, contiguous)


def _unpack(img, tree, **opts):
    with Volume.open(img, VolumeOptions(**opts)) as vol:
        t0 = vol.clock.now
        copy_tree_into(vol, tree)
        vol.sync()
        elapsed = vol.clock.now - t0
        snap = vol.stats_snapshot()
    assert_fsck_clean(img)
    return elapsed, snap


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    dest = tmp_path_factory.mktemp("tree") / "src"
    generate_tree(dest, seed=3, files=600)
    return dest


def test_sync_metadata_makes_unpacking_slower_than_async(tmp_path, tree):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    t_sync, s_sync = _unpack(_image(tmp_path / "a", 200 * MIB), tree, writeback="sync", disk="wd1200jb")
    t_async, s_async = _unpack(_image(tmp_path / "b", 200 * MIB), tree, writeback="async", disk="wd1200jb")
    assert t_sync > 1.3 * t_async, (t_sync, t_async)
    assert s_sync["total"]["counters"]["disk_writes"] > s_async["total"]["counters"]["disk_writes"]


def test_same_workload_same_statistics(tmp_path, tree):
    runs = []
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        img = _image(tmp_path / sub, 200 * MIB)
        _, snap = _unpack(img, tree, writeback="softdep", disk="sata7200")
        with Volume.open(img, VolumeOptions(disk="sata7200")) as vol:
            for name, ino, _ in vol.readdir(vol.root_ino):
                if name not in (b".", b".."):
                    vol.getattr(ino)
            snap["reread"] = vol.stats_snapshot()
        runs.append(json.dumps(snap, sort_keys=True))
    assert runs[0] == runs[1]


def test_ideal_disk_costs_only_cpu(tmp_path, tree):
    elapsed, snap = _unpack(_image(tmp_path, 200 * MIB), tree, disk="ideal", cpu_op_us=0)
    assert elapsed == 0
    assert snap["total"]["disk_time"]["busy"] == 0
    assert snap["total"]["counters"]["disk_writes"] > 0


def test_fsync_waits_for_the_files_blocks(tmp_path):
    img = _image(tmp_path, 64 * MIB)
    with Volume.open(img, VolumeOptions(disk="sata7200", writeback="async")) as vol:
        ino = _write_file(vol, b"f", 4 * MIB)
        dirty_before = vol.cache.ndirty
        t0 = vol.clock.now
        vol.fsync(ino)
        assert vol.clock.now - t0 > 4 * MIB / 120e6       # at least the media time of 4 MiB
        assert vol.disk.busy_until <= vol.clock.now
        now = vol.clock.now                                 # nothing left in the drive's cache:
        assert vol.disk.flush(now) - now < 1e-3             # a FLUSH costs only its command overhead
        inode = vol.inodes.get(ino)
        mine = {b for _, b in vol.filemap.blocks(inode)} | {vol.inodes.block_of(ino)}
        assert not any(vol.cache.buffers[b].dirty for b in mine if b in vol.cache.buffers)
        assert vol.cache.ndirty < dirty_before


def test_data_before_a_map_block_is_read_before_the_map_block(tmp_path):
    """A cold 40 KiB read on 1 KiB blocks: blocks 0..11 are requested before the indirect block
    that maps block 12 (FreeBSD's bmap run ends at the map's edge and its read-ahead is not
    due on a file's first read), so with the indirect block laid out after block 11 nothing goes back a revolution."""
    img = _image(tmp_path, size=64 * MIB, block_size=1024)
    trace = tmp_path / "trace.csv"
    with Volume.open(img, VolumeOptions(alloc="first-free", disk="wd1200jb")) as vol:
        _write_file(vol, b"f", 40 * 1024, chunk=40 * 1024)
    with Volume.open(img, VolumeOptions(alloc="first-free", disk="wd1200jb", trace=str(trace))) as vol:
        ino = vol.lookup(vol.root_ino, b"f").st_ino
        inode = vol.inodes.get(ino)
        d0, ind = vol.filemap.bmap(inode, 0), inode.block[12]      # no map block read yet
        assert ind == vol.filemap.bmap(inode, 11) + 1, "first-free puts the indirect block after block 11"
        t0 = vol.clock.now
        vol.read(ino, 0, 40 * 1024)
        elapsed = vol.clock.now - t0
    from simfs.blockio.trace import read_trace
    c = read_trace(trace)
    rows = [(c["cause"][i], c["lba"][i] // 2, c["cache_hit"][i], c["rotation"][i])
            for i in range(len(c["op"])) if c["cause"][i] in ("data", "indirect")]
    causes = [r[0] for r in rows]
    assert causes.index("data") < causes.index("indirect"), rows
    assert rows[0][1] == d0
    assert all(r[2] for r in rows[1:]), f"only the first request may go to the media: {rows}"
    assert elapsed < 60 / 7200 + 0.03, elapsed     # no extra revolution
