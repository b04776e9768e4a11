"""seed 004's fill through the modelled page cache (`mmap-fill --writes mmap`): the image it
leaves (e2fsck clean, every page allocated once), the write-back pattern's fingerprint on the
layout (immediate allocation fragments past the dirty limits, not below them; delayed keeps
file order), the data-extent count, and determinism."""

from __future__ import annotations

import os

import pytest

from simfs.inprocess import verbs
from simfs.fs.inspection import frag_counts
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean
from pathlib import Path

MiB = 1 << 20
SIZE = 24 * MiB                 # 6144 pages


def _fill(tmp_path, alloc: str, ram: str, name: str = "a", dataless: bool = False):
    img = tmp_path / f"{name}.img"
    mkfs(str(img), 256 * MiB, block_size=4096, inode_size=256, uuid="00000000-0000-0000-0000-000000000004",
         hash_seed="00000000-0000-0000-0000-00000000a54d", now=1262304000)
    opts = VolumeOptions(alloc=alloc, writeback="sync", disk="sata7200", dataless=dataless)
    out = verbs.run(str(img), opts, "mmap-fill", "big", size=SIZE, writes="mmap",
                    pagecache=f"linux-2.6.29,ram={ram}")
    with Volume.open(str(img), VolumeOptions(read_only=True, disk="ideal")) as vol:
        ino = vol.lookup(vol.root_ino, b"big").st_ino
        counts = frag_counts(vol.extents(ino))
        assert vol.getattr(ino).st_size == SIZE
        assert vol.read(ino, SIZE - 4096, 8192) == bytes(4096)
    return img, out, counts


@pytest.mark.parametrize("alloc", ["ext2", "delayed"])
def test_fill_past_the_limits_leaves_a_clean_image(tmp_path, alloc):
    img, out, counts = _fill(tmp_path, alloc, "64M")      # the file is 3x the 10 % limit
    assert_fsck_clean(img)
    assert counts["data_blocks"] == SIZE // 4096
    res = out["result"]
    assert res["pages_by_dirtier"] + res["pages_by_background"] > 0    # written back during the fill
    assert sum(res[k] for k in ("pages_by_dirtier", "pages_by_background", "pages_by_kupdate",
                                "pages_by_sync")) == SIZE // 4096
    if alloc == "ext2":         # sparse sweeps: many short extents
        assert counts["extents_bmap"] > SIZE // 4096 // 20
    else:                       # preallocation windows keep file order: at most one per 8 MiB window
        assert counts["data_extents"] <= SIZE // (8 * MiB) + 2


def test_a_file_that_fits_under_the_thresholds_is_written_whole_at_msync(tmp_path):
    _, out, counts = _fill(tmp_path, "ext2", "4G")
    assert out["result"]["pages_by_sync"] == SIZE // 4096
    assert counts["data_extents"] <= 2 and counts["extents_bmap"] <= 2


def test_more_ram_fragments_less(tmp_path):
    small = _fill(tmp_path, "ext2", "48M", "s")[2]["extents_bmap"]
    large = _fill(tmp_path, "ext2", "256M", "l")[2]["extents_bmap"]
    assert small > large


def test_same_fill_same_result_and_dataless_changes_no_figure(tmp_path):
    a = _fill(tmp_path, "ext2", "64M", "a")
    b = _fill(tmp_path, "ext2", "64M", "b", dataless=True)
    assert a[1]["time"] == b[1]["time"] and a[2] == b[2] and a[1]["result"] == b[1]["result"]


def test_data_extents_skip_only_the_files_own_map_blocks():
    doc = {"runs": [(0, 100, 12), (12, 113, 5), (17, 200, 3)], "indirect": [("IND", 112)],
           "delalloc": [], "size": 20 * 4096, "block_size": 4096, "f_blocks": 0, "inodes_count": 0}
    from simfs.fs.inspection import data_extents
    assert data_extents(doc) == 2           # 0-16 continue past the IND block; 17 jumps
    doc["indirect"] = []
    assert data_extents(doc) == 3


VM = "/proc/sys/vm/"


@pytest.mark.skipif(not os.access(VM + "dirty_ratio", os.W_OK), reason="needs root to change vm.dirty_*")
def test_the_hosts_dirty_settings_change_nothing(tmp_path):
    """The host's page cache never holds the modelled pages: the same fill with the host's
    vm.dirty_* thresholds far apart gives identical figures."""
    keys = ("dirty_ratio", "dirty_background_ratio", "dirty_expire_centisecs")
    saved = {k: Path(VM + k).read_text().strip() for k in keys}
    results = []
    try:
        for values in (("5", "1", "100"), ("60", "30", "6000")):
            for k, v in zip(keys, values):
                with open(VM + k, "w") as f:
                    f.write(v)
            _, out, counts = _fill(tmp_path, "ext2", "64M", f"h{values[0]}")
            results.append((out["time"], out["result"], counts))
    finally:
        for k in keys:
            with open(VM + k, "w") as f:
                f.write(saved[k])
    assert results[0] == results[1]


def test_read_batch_reads_the_same_bytes_sooner_on_a_scattered_file(tmp_path):
    """read_batch (Linux's whole-window submission under the plug; the scheduler orders it) changes
    when blocks arrive, never what a read returns or how many blocks it asks for."""
    import random
    img = tmp_path / "r.img"
    mkfs(str(img), 128 * MiB, block_size=4096, uuid="00000000-0000-0000-0000-000000000005",
         hash_seed="00000000-0000-0000-0000-00000000a54d", now=1262304000)
    pages = list(range(1024))
    random.Random(3).shuffle(pages)
    with Volume.open(str(img), VolumeOptions(alloc="ext2", disk="ideal")) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        for p in pages:
            vol.write(ino, p * 4096, bytes([p % 251]) * 4096)
    seen = []
    for batch in (False, True):
        with Volume.open(str(img), VolumeOptions(alloc="ext2", disk="sata7200", read_batch=batch,
                                                 read_only=True)) as vol:
            data = b"".join(vol.read(ino, off, 1 << 20) for off in range(0, 1024 * 4096, 1 << 20))
            c = vol.counters
            seen.append((data, c["cache_misses"], c["readahead_blocks"], vol.clock.now))
    (a, miss_a, ra_a, t_a), (b, miss_b, ra_b, t_b) = seen
    assert a == b == b"".join(bytes([p % 251]) * 4096 for p in range(1024))
    assert (miss_a, ra_a) == (miss_b, ra_b)
    assert t_b < t_a
