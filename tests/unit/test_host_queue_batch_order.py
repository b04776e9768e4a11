"""The order a batch reaches the drive: the file system submits a `read_batch` window in file
order under the plug (mpage_readpages/read_pages), and a page cache's writepages in page order
(write_cache_pages); only the host queue orders them - `none` and 2.6's `noop` as submitted,
`mq-deadline` and `cfq` by sector from the head, 2.6's `deadline` from its oldest request on a
fresh queue (docs/host-queue.md, "Who orders a batch")."""

from __future__ import annotations

import shutil

import pytest

from simfs.fs.types import VolumeOptions
from simfs.fs.volume import Volume
from simfs.ondisk.mkfs import mkfs

#: the file's blocks are written in this order, each followed by a block of a second file, so
#: the file's layout is out of file order
ORDER = [5, 0, 9, 2, 11, 7, 1, 10, 3, 8, 4, 6]
NBLOCKS = len(ORDER)                     # direct blocks only: no map block splits the window


@pytest.fixture(scope="module")
def scattered(tmp_path_factory):
    img = tmp_path_factory.mktemp("window") / "w.img"
    mkfs(str(img), 32 << 20, block_size=4096, uuid="00000000-0000-0000-0000-000000000053",
         hash_seed="00000000-0000-0000-0000-00000000a53e", now=1262304000)
    with Volume.open(str(img), VolumeOptions(alloc="ext2", disk="sata7200")) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        other = vol.create(vol.root_ino, b"g", 0o644, 0, 0).st_ino
        for i, lblk in enumerate(ORDER):
            vol.write(ino, lblk * 4096, bytes([lblk + 1]) * 4096)
            vol.write(other, i * 4096, bytes(4096))
    return str(img), ino


def read_window(scattered, iosched: str):
    """Read the whole file cold in one read (one window): (the bios the file system submitted,
    in order, as (start, n); the requests the drive got, in order, as lists of those bios)."""
    img, ino = scattered
    with Volume.open(img, VolumeOptions(alloc="ext2", disk="sata7200", read_only=True, read_batch=True,
                                        iosched=iosched)) as vol:
        inode = vol.inodes.get(ino)
        layout = [vol.filemap.bmap(inode, lblk) for lblk in range(NBLOCKS)]
        vol.inodes.put(inode)
        hq = vol.cache.hq
        submitted: list[tuple[int, int]] = []
        submit = hq.submit

        def recording(op, start, n, kind, ino=0, wait=False, done=None):
            if kind == "data":
                submitted.append((start, n))
            return submit(op, start, n, kind, ino, wait, done)

        hq.submit = recording
        hq.log = []
        data = vol.read(ino, 0, NBLOCKS * 4096)
        assert data == b"".join(bytes([lblk + 1]) * 4096 for lblk in range(NBLOCKS))
        drive = [[(b.start, b.n) for b in r.bios] for _, r, *_ in hq.log if r.bios[0].kind == "data"]
    return layout, submitted, drive


def file_order_runs(layout: list[int]) -> list[tuple[int, int]]:
    """The bios mpage_readpages builds: blocks contiguous on disk in file order, one bio a run."""
    runs: list[list[int]] = []
    for p in layout:
        if runs and runs[-1][0] + runs[-1][1] == p:
            runs[-1][1] += 1
        else:
            runs.append([p, 1])
    return [tuple(r) for r in runs]


SCHEDULERS = ["none", "noop", "deadline", "cfq", "mq-deadline"]


@pytest.mark.parametrize("iosched", SCHEDULERS)
def test_the_file_system_submits_a_window_in_file_order(scattered, iosched):
    """Whatever the scheduler, fileio hands the queue the window's runs in file order."""
    layout, submitted, drive = read_window(scattered, iosched)
    assert sorted(layout) != layout                  # the layout is out of file order
    assert submitted == file_order_runs(layout)
    assert sorted(b for r in drive for b in r) == sorted(submitted)   # each bio once


@pytest.mark.parametrize("iosched", ["none", "noop"])
def test_none_and_noop_send_the_window_in_file_order(scattered, iosched):
    """No plug sort (5.16's singly linked plug list dropped blk-mq's list_sort; 2.6 before
    2.6.39 had no plug list) and a FIFO scheduler: the drive sees file order, merges aside."""
    layout, submitted, drive = read_window(scattered, iosched)
    oldest_bio = [min(submitted.index(b) for b in r) for r in drive]
    assert oldest_bio == sorted(oldest_bio)          # requests go in the order they were made
    starts = [min(s for s, _ in r) for r in drive]
    assert starts != sorted(starts)                  # not by sector


@pytest.mark.parametrize("iosched", ["mq-deadline", "cfq"])
def test_mq_deadline_and_cfq_sweep_the_window_by_sector(scattered, iosched):
    """The window lies above the inode table the read went to first: mq-deadline's sweep from
    latest_pos and cfq's nearest request ahead of the head both go up by sector."""
    _, _, drive = read_window(scattered, iosched)
    starts = [min(s for s, _ in r) for r in drive]
    assert starts == sorted(starts)


def test_2_6_deadline_starts_at_the_oldest_request_then_sweeps(scattered):
    """2.6's deadline on a fresh queue has no next_rq: the first batch starts at the fifo head
    (the window's first bio in file order), goes up by sector, and when nothing is above starts
    again at the oldest request left."""
    _, submitted, drive = read_window(scattered, "deadline")
    left = list(drive)
    expect = []
    pos = None
    while left:
        above = [r for r in left if pos is not None and min(s for s, _ in r) > pos]
        nxt = min(above, key=lambda r: min(s for s, _ in r)) if above else \
            min(left, key=lambda r: min(submitted.index(b) for b in r))
        expect.append(nxt)
        left.remove(nxt)
        pos = min(s for s, _ in nxt)
    assert drive == expect
    assert submitted[0] in drive[0]


def write_back_pages(scattered, tmp_path, iosched: str):
    """Rewrite every page of the file through writepages (a page cache's write-back of one
    inode, page order) on a copy of the image: (the file's layout, the data requests the drive
    got)."""
    img, ino = scattered
    copy = tmp_path / "copy.img"
    shutil.copyfile(img, copy)
    with Volume.open(str(copy), VolumeOptions(alloc="ext2", disk="sata7200", iosched=iosched)) as vol:
        inode = vol.inodes.get(ino)
        layout = [vol.filemap.bmap(inode, lblk) for lblk in range(NBLOCKS)]
        vol.inodes.put(inode)
        vol.read(ino, 0, NBLOCKS * 4096)                 # the blocks are cached: no read below
        vol.cache.hq.log = []
        vol.writepages(ino, list(range(NBLOCKS)), bytes([7]) * 4096)
        drive = [(r.op, [(b.start, b.n) for b in r.bios]) for _, r, *_ in vol.cache.hq.log
                 if r.bios[0].kind == "data"]
    return layout, drive


@pytest.mark.parametrize("iosched", ["none", "mq-deadline"])
def test_writepages_submits_in_page_order_and_the_scheduler_sorts(scattered, tmp_path, iosched):
    """writepages hands the queue its runs in page order (no sort of its own): `none` writes
    them so, mq-deadline by sector."""
    layout, drive = write_back_pages(scattered, tmp_path, iosched)
    assert {op for op, _ in drive} == {"W"}
    bios = [b for _, r in drive for b in r]
    assert sorted(bios) == sorted(file_order_runs(layout))
    starts = [min(s for s, _ in r) for _, r in drive]
    if iosched == "none":
        order = file_order_runs(layout)
        oldest = [min(order.index(b) for b in r) for _, r in drive]
        assert oldest == sorted(oldest) and starts != sorted(starts)
    else:
        assert starts == sorted(starts)
