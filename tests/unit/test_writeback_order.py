"""The buffer cache's own write-back batches (the syncer, sync, the dirty thresholds, eviction,
fsync) leave the cache in `writeback_order` and the host queue's scheduler orders them
(docs/host-queue.md, "Write-back"): `block` (the default) sorts them by block number itself
as before; `linux` issues them as Linux's flusher does (inode by inode, the one dirtied first
first, each inode's pages ascending; metadata as the block device's inode), `freebsd` as
FreeBSD's syncer (vnode by vnode, a file's indirect blocks before its data, the device
vnode's inode/cylinder-group/superblock blocks one more vnode). Under `none` the drive gets
that order with adjacent runs merged; `cfq` and `mq-deadline` sort it by sector; `disksort`
(FreeBSD's bioq_disksort) takes the first request, then sweeps up from it and wraps."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.writeback import make_writeback
from simfs.blockio.cache import WRITEBACK_ORDERS, BufferCache
from simfs.blockio.hostqueue import HostQueue
from simfs.blockio.stats import Stats
from tests.unit.test_cache import MemImage, RecClock

SETTINGS = dict(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
KINDS = ["data", "data", "data", "dir", "inode", "bitmap", "indirect", "gdt"]


class FastClock(RecClock):
    """RecClock's one-at-a-time disk, a millisecond a request: a batch ends long before any
    scheduler's expiry (cfq's 40 ms async slice, 250 ms fifo; deadline's 5 s) interferes."""

    def io(self, op, blkno, n, kind, ino=0, wait=True, sync=False, at=None):
        busy = self.busy
        finish = super().io(op, blkno, n, kind, ino, wait, sync, at)
        self.busy = finish - 1.0 + 0.001
        if self.spans and op == "W":
            self.spans[-1] = self.spans[-1][:3] + (self.busy,)
        if wait:
            self.now = self.busy
        assert self.busy >= busy
        return self.busy


def make(order="block", iosched="none", maxio=8, capacity=4096, max_request=None):
    clock = FastClock()
    c = BufferCache(MemImage(), 64, capacity, Stats(), clock, writeback=make_writeback("async"), maxio_blocks=maxio,
                    iosched=iosched, writeback_order=order, max_request_blocks=max_request)
    clock.cache = c
    return c, clock


def dirty_all(c, clock, writes):
    """writes: (block, kind, ino, dt) - each dirtied as one operation, dt simulated seconds apart."""
    for blkno, kind, ino, dt in writes:
        clock.now += dt
        c.begin_op("write")
        c.write(blkno, bytes([blkno % 251]) * 64, kind, ino)
        c.end_op()


def expected_flusher_order(c, writes, order):
    """The flusher's order, from the writes themselves (not the cache's code): owner by owner
    in the order each owner first became dirty, each owner's blocks ascending (FreeBSD: its
    indirect blocks first)."""
    device = ({"inode", "bitmap", "gdt", "super", "indirect", "xattr"} if order == "linux"
              else {"inode", "bitmap", "gdt", "super"})
    last = {}
    for blkno, kind, ino, _ in writes:
        last[blkno] = (kind, ino)                 # the last write says what the block is
    owners: list = []
    for blkno, kind, ino, _ in writes:
        k, i = last[blkno]
        o = "dev" if k in device else i
        if o not in owners:
            owners.append(o)

    def owner(b):
        k, i = last[b]
        return "dev" if k in device else i
    out = []
    for o in owners:
        mine = sorted(b for b in last if owner(b) == o)
        if order == "freebsd":
            mine = [b for b in mine if last[b][0] == "indirect"] + [b for b in mine if last[b][0] != "indirect"]
        out += mine
    return out


def joins(writes, order):
    """Which two blocks adjacent in a batch may form one run: any (Linux, the cache's sort);
    FreeBSD clusters only two data blocks of one regular file (vfs_bio_awrite)."""
    last = {blkno: (kind, ino) for blkno, kind, ino, _ in writes}
    if order != "freebsd":
        return None
    return lambda a, b: last[a][0] == last[b][0] == "data" and last[a][1] == last[b][1]


def runs(blocks, maxio, plug_merge=False, join=None):
    """Runs contiguous in the given order, at most maxio blocks (`join`: and allowed to join):
    the bios the cache builds;
    `plug_merge`: then as `none`'s plug merges them - a bio joins the newest request if it
    ends where the bio begins or begins where it ends, within maxio (blk_attempt_plug_merge)."""
    out: list[list[int]] = []
    for b in blocks:
        if out and out[-1][0] + out[-1][1] == b and out[-1][1] < maxio and (join is None or join(b - 1, b)):
            out[-1][1] += 1
        else:
            out.append([b, 1])
    if plug_merge:
        reqs: list[list[int]] = []
        for s, n in out:
            last = reqs[-1] if reqs else None
            if last and last[1] + n <= maxio and last[0] + last[1] == s:
                last[1] += n
            elif last and last[1] + n <= maxio and s + n == last[0]:
                last[0], last[1] = s, last[1] + n
            else:
                reqs.append([s, n])
        out = reqs
    return [tuple(r) for r in out]


write = st.tuples(st.integers(0, 120), st.sampled_from(KINDS), st.integers(1, 6), st.sampled_from([0.0, 0.0, 0.5]))


def synced(order, iosched, writes, maxio=8):
    c, clock = make(order, iosched, maxio)
    dirty_all(c, clock, writes)
    assert clock.writes() == []                  # nothing went before the sync (no threshold)
    c.sync()
    return c, clock


@settings(**SETTINGS)
@given(st.lists(write, min_size=1, max_size=60), st.sampled_from(WRITEBACK_ORDERS),
       st.sampled_from(["none", "noop", "deadline", "cfq", "mq-deadline", "disksort"]))
def test_a_sync_writes_every_dirty_block_once(writes, order, iosched):
    c, clock = synced(order, iosched, writes)
    written = sorted(b + i for b, n in clock.writes() for i in range(n))
    assert written == sorted({w[0] for w in writes})     # nothing lost, nothing twice
    assert c.ndirty == 0


@settings(**SETTINGS)
@given(st.lists(write, min_size=1, max_size=60), st.sampled_from(["linux", "freebsd"]))
def test_none_sends_the_flushers_order_with_adjacent_runs_merged(writes, order):
    """Under `none` (and 2.6's noop, FIFO) the drive sees the flusher's order: its runs,
    contiguous in that order, at most maxio blocks (FreeBSD: of one file's data), merged by
    the plug with the newest request only, within max_sectors_kb = maxio."""
    c, clock = synced(order, "none", writes)
    assert clock.writes() == runs(expected_flusher_order(c, writes, order), 8, plug_merge=True,
                                  join=joins(writes, order))


@settings(**SETTINGS)
@given(st.lists(write, min_size=1, max_size=60), st.sampled_from(["block", "linux", "freebsd"]),
       st.sampled_from(["cfq", "mq-deadline"]))
def test_cfq_and_mq_deadline_send_a_write_back_batch_by_sector(writes, order, iosched):
    """A batch of writes on a fresh queue: cfq from the head at 0 and mq-deadline from
    latest_pos 0 both sweep up, whatever order the cache submitted in."""
    c, clock = synced(order, iosched, writes)
    starts = [b for b, _ in clock.writes()]
    assert starts == sorted(starts)


@settings(**SETTINGS)
@given(st.lists(write, min_size=1, max_size=60), st.sampled_from(["linux", "freebsd"]))
def test_disksort_takes_the_first_then_sweeps_up_and_wraps(writes, order):
    c, clock = synced(order, "disksort", writes)
    flusher = runs(expected_flusher_order(c, writes, order), 8, join=joins(writes, order))
    sent = clock.writes()
    assert sorted(sent) == sorted(flusher)        # no merging: the cache's runs, each one command
    assert sent[0] == flusher[0]
    pos = sent[0][0] + sent[0][1]
    rest = sorted(flusher[1:])
    for r in sent[1:]:                            # the lowest at or above the head, else the lowest
        above = [x for x in rest if x[0] >= pos]
        assert r == (above[0] if above else rest[0])
        rest.remove(r)
        pos = r[0] + r[1]


@settings(**SETTINGS)
@given(st.lists(write, min_size=1, max_size=60), st.sampled_from(["none", "disksort", "cfq"]))
def test_the_default_block_order_is_the_caches_sort(writes, iosched):
    """`block` (the default): the batch leaves sorted by block, so `none` and `disksort` send
    it ascending, as before the flusher orders existed."""
    c, clock = synced("block", iosched, writes)
    assert clock.writes() == runs(sorted({w[0] for w in writes}), 8, plug_merge=iosched == "none")


def test_two_files_go_in_the_order_they_were_dirtied():
    """File 2 dirtied first, at higher blocks; file 1 later, lower: Linux's flusher writes file
    2 first, the cache's sort file 1 first; cfq sorts either; metadata is the block device's
    inode (Linux) - the inode block dirtied last goes with the bitmap dirtied first."""
    writes = [(50, "data", 2, 0.0), (20, "bitmap", 0, 0.0), (51, "data", 2, 0.0), (10, "data", 1, 1.0),
              (11, "data", 1, 0.0), (30, "inode", 1, 0.0)]
    assert synced("linux", "none", writes)[1].writes() == [(50, 2), (20, 1), (30, 1), (10, 2)]
    assert synced("block", "none", writes)[1].writes() == [(10, 2), (20, 1), (30, 1), (50, 2)]
    assert synced("linux", "cfq", writes)[1].writes() == [(10, 2), (20, 1), (30, 1), (50, 2)]
    # FreeBSD: the indirect block goes with its file, before the file's data
    writes = [(40, "data", 3, 0.0), (41, "indirect", 3, 0.0), (5, "inode", 3, 0.0), (39, "data", 3, 0.0)]
    c, _ = make("freebsd")
    dirty_all(c, c.clock, writes)
    assert c.flusher_order([5, 39, 40, 41]) == [41, 39, 40, 5]
    c.writeback_order = "linux"
    assert c.flusher_order([5, 39, 40, 41]) == [39, 40, 5, 41]
    # none's plug front-merges the data run into the indirect block before it (6.x's
    # blk_attempt_plug_merge): one request
    assert synced("freebsd", "none", writes)[1].writes() == [(39, 3), (5, 1)]
    # disksort: the first, then up from its end, then the rest from the lowest
    assert synced("freebsd", "disksort", writes)[1].writes() == [(41, 1), (5, 1), (39, 2)]


def test_eviction_writes_in_lru_order_under_a_flusher_order():
    """Reclaim writes the pages it reaches, least recently used first (pageout); the cache's
    sort wrote them by block."""
    for order, want in (("linux", [(10, 1), (40, 1), (30, 1)]), ("block", [(10, 1), (30, 1), (40, 1)])):
        c, clock = make(order, capacity=64)
        for b, ino in ((30, 1), (10, 2), (40, 3)):      # dirtied 30, 10, 40
            c.write(b, bytes(64), "data", ino)
        c.bread(30, "data", 1)                           # the LRU: 10, 40, 30
        for b in range(1000, 1070):               # clean reads push them out
            c.bread(b, "data", 9)
        assert clock.writes()[:3] == want, order


def test_fsync_and_the_thresholds_use_the_order_too():
    c, clock = make("linux")
    dirty_all(c, clock, [(60, "data", 1, 0.0), (61, "data", 1, 0.0), (20, "data", 2, 0.0), (59, "data", 1, 0.0)])
    c.flush_blocks([61, 20, 60])
    assert clock.writes() == [(60, 2), (20, 1)]   # file 1 first (dirtied first), then file 2
    c, clock = make("linux", capacity=64)         # bg threshold: 6 dirty buffers; hard: 25
    dirty_all(c, clock, [(100 - i, "data", 1 + i % 2, 0.0) for i in range(30)])
    first = clock.writes()[0]
    assert first[0] in range(71, 101) and (100 - first[0]) % 2 == 0   # file 1's blocks, the oldest file


def test_freebsds_buf_daemon_writes_in_the_dirty_queues_order():
    """The dirty thresholds under FreeBSD: buf_daemon's flushbufqueues takes the dirty queue
    from its oldest buffer, not vnode by vnode (Linux's background writeback does go inode by
    inode)."""
    writes = [(100 - i, "data", 1 + i % 2, 0.0) for i in range(30)]    # two files interleaved
    got = {}
    # FIFO queues that merge neither 99 into 100 (noop has no front merge) nor 99 after 98
    # (none merges with the newest request only)
    for order, iosched in (("freebsd", "noop"), ("linux", "none")):
        c, clock = make(order, iosched, capacity=64)   # background threshold 6, the first batch 4
        dirty_all(c, clock, writes)
        got[order] = clock.writes()[:4]
    assert got["freebsd"] == [(100, 1), (99, 1), (98, 1), (97, 1)]     # age order: the files alternate
    assert got["linux"] == [(98, 1), (100, 1), (97, 1), (99, 1)]       # file 1's (dirtied first), then 2's


def test_an_unknown_order_is_refused():
    with pytest.raises(ValueError, match="write-back order"):
        make("sorted")


def test_disksort_does_not_merge_and_keeps_the_first():
    issued = []

    def issue(op, start, n, kind, ino, wait):
        issued.append((op, start, n))
        return float(len(issued))
    q = HostQueue(issue, lambda: 0.0, "disksort", 128, 32)
    for start in (50, 51, 10, 70, 20, 60):
        q.submit("W", start, 1, "data")
    q.submit("R", 30, 1, "data")
    q.flush()
    assert issued == [("W", 50, 1), ("W", 51, 1), ("W", 60, 1), ("W", 70, 1), ("W", 10, 1), ("W", 20, 1),
                      ("R", 30, 1)]


def test_freebsd_clusters_only_a_regular_files_data():
    """vfs_bio_awrite clusters "only to regular files": inode blocks, a directory's blocks and
    two files' adjacent data go one buffer (one file's run) a request; the cache's sort made
    one request of all of them."""
    writes = [(10, "inode", 1, 0.0), (11, "inode", 2, 0.0), (12, "data", 1, 0.0), (13, "data", 1, 0.0),
              (14, "data", 2, 0.0), (15, "dir", 3, 0.0), (16, "dir", 3, 0.0)]
    assert synced("block", "disksort", writes)[1].writes() == [(10, 7)]
    assert synced("freebsd", "disksort", writes)[1].writes() == [(10, 1), (11, 1), (12, 2), (14, 1), (15, 1), (16, 1)]
    # a sync mount's metadata, written before the operation returns, is not clustered either
    for order, want in (("block", [(20, 2)]), ("freebsd", [(20, 1), (21, 1)])):
        c = BufferCache(MemImage(), 64, 4096, Stats(), FastClock(), writeback=make_writeback("sync"),
                        writeback_order=order)
        c.clock.cache = c
        c.begin_op("mkdir")
        c.write(20, bytes(64), "inode", 1)
        c.write(21, bytes(64), "inode", 2)
        c.end_op()
        assert c.clock.writes() == want, order


def test_the_defaults_are_the_caches_sort_and_none():
    """Without arguments the cache sorts its batches itself and the queue is `none`: the stream
    simfs sent before the flusher orders (docs/host-queue.md)."""
    c = BufferCache(MemImage(), 64, 1024, Stats(), FastClock(), writeback=make_writeback("async"))
    assert c.writeback_order == "block" and c.hq.scheduler == "none"


def test_a_volumes_sync_goes_file_by_file_under_linux_and_none(tmp_path):
    """In-process, an ext2 volume: file b re-dirtied before file a, whose blocks lie lower.
    Linux's flusher writes b's pages, then the block device's (superblock, inode table: dirtied
    after b's data), then a's; `none` sends that order; the cache's sort sends it by block;
    cfq orders the flusher's batch itself (nearest the head: the same requests)."""
    import shutil

    import simfs.fs.volume as volume
    from simfs.fuse import mountopts
    from simfs.ondisk.mkfs import mkfs
    img = tmp_path / "v.img"
    mkfs(str(img), 32 << 20, block_size=4096, uuid="00000000-0000-0000-0000-000000000053",
         hash_seed="00000000-0000-0000-0000-00000000a53e", now=1262304000)
    sent = {}
    for order, iosched in (("linux", "none"), ("block", "none"), ("linux", "cfq")):
        shutil.copyfile(img, tmp_path / "w.img")
        opts = mountopts.parse([f"alloc=ext2,disk=sata7200,iosched={iosched},writeback_order={order}"]).volume
        with volume.Volume.open(str(tmp_path / "w.img"), opts) as vol:
            assert vol.cache.writeback_order == order
            a = vol.create(vol.root_ino, b"a", 0o644, 0, 0).st_ino
            b = vol.create(vol.root_ino, b"b", 0o644, 0, 0).st_ino
            vol.write(a, 0, bytes(8 * 4096))
            vol.write(b, 0, bytes(8 * 4096))
            vol.sync()
            vol.write(b, 0, b"x" * 4 * 4096)
            vol.write(a, 0, b"y" * 4 * 4096)
            vol.cache.hq.log = []
            vol.sync()
            sent[order, iosched] = [(r.start, r.n, r.bios[0].kind, r.bios[0].ino) for _, r, *_ in vol.cache.hq.log]
    linux = sent["linux", "none"]
    assert [(k, i) for _, _, k, i in linux] == [("data", b), ("super", 0), ("inode", a), ("data", a)]
    a_start, b_start = linux[3][0], linux[0][0]
    assert a_start < b_start                                  # a's blocks lie lower: the sort puts a first
    assert sent["block", "none"] == sorted(linux)
    assert sorted(sent["linux", "cfq"]) == sorted(linux)


def test_a_files_pages_go_in_page_order_when_the_cache_knows_them():
    """Delayed pages carry their page (vkey) through placement; a placer that gives page 0
    the highest block leaves write_cache_pages' order page 0 first. Buffers marked dirty with
    `lblk` likewise; one buffer of the file without it: block order for that file."""
    from simfs.blockio.cache import vkey
    c, clock = make("linux", "noop")

    class Placer:
        def place(self, keys):
            out = {}
            for i, k in enumerate(sorted(keys)):         # vkey(9, 2) < vkey(9, 1) < vkey(9, 0)
                c.rekey(k, 300 + 2 * i)                  # page 2 -> 300, 1 -> 302, 0 -> 304
                out[k] = 300 + 2 * i
            return out
    c.placer = Placer()
    for lblk in (0, 1, 2):
        c.mark_dirty(vkey(9, lblk), c.page(vkey(9, lblk), "data", 9))
    c.sync()
    assert clock.writes() == [(304, 1), (302, 1), (300, 1)]
    for known, want in ((True, [(54, 1), (52, 1), (50, 1)]), (False, [(50, 1), (52, 1), (54, 1)])):
        c, clock = make("linux", "noop")
        for lblk, b in ((0, 54), (1, 52), (2, 50)):
            c.write(b, bytes(64), "data", 7, lblk=lblk if known or lblk else None)
        c.sync()
        assert clock.writes() == want, known
    # a block reused by another file forgets the page it had
    c, clock = make("linux")
    c.write(60, bytes(64), "data", 7, lblk=5)
    c.getblk(60, "data", 8)
    assert c.buffers[60].lblk == -1


def test_a_bad_writeback_order_is_refused_in_one_line():
    from simfs.fuse import mountopts
    with pytest.raises(Exception) as e:
        mountopts.parse(["writeback_order=sideways"])
    msg = str(e.value)
    assert "writeback_order" in msg and "block, linux, freebsd" in msg and "\n" not in msg
