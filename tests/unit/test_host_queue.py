"""The host's request queue (simfs.blockio.hostqueue): hypothesis properties of Linux's plug,
merging and schedulers - nothing lost or served twice, merges only of adjacent requests of one
direction within max_sectors_kb, `none` in submission order, deadline's expiry and batches -
and the effect of max_sectors_kb on a small in-process write-back."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.blockio.hostqueue import (CFQ_EXPIRE, FIFO_BATCH, PENDING, READ_EXPIRE, SCHEDULERS, WRITE_EXPIRE,
                                     HostQueue)

SETTINGS = dict(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


class Drive:
    """A one-at-a-time drive: a request takes `per_block` seconds a block after the previous."""

    def __init__(self, per_block: float):
        self.now = 0.0
        self.busy = 0.0
        self.per_block = per_block
        self.issued: list[tuple] = []        # (op, start, n, finish)

    def issue(self, op, start, n, kind, ino, wait):
        self.busy = max(self.busy, self.now) + n * self.per_block
        self.issued.append((op, start, n, self.busy))
        return self.busy


# a step: ("bio", op, where, n) or ("flush",) or ("time", dt); `where` >= 0 is a block, -1 right
# after the previous bio, -2 right before it, -3 right after the one before it (merges happen)
bio = st.tuples(st.just("bio"), st.sampled_from("RRWWW"), st.one_of(st.integers(0, 200), st.sampled_from([-1, -1, -2, -3])),
                st.integers(1, 12))
step = st.one_of(*[bio] * 12, st.just(("flush",)), st.tuples(st.just("time"), st.floats(0, 2)))


def run(steps, scheduler, nr, maxb, per_block=0.01):
    drive = Drive(per_block)
    q = HostQueue(drive.issue, lambda: drive.now, scheduler, nr, maxb)
    q.log = []
    bios = []
    for s in steps:
        if s[0] == "bio":
            where, n = s[2], s[3]
            if where < 0 and len(bios) >= (2 if where == -3 else 1):
                prev = bios[-2] if where == -3 else bios[-1]
                where = prev.start - n if where == -2 else prev.start + prev.n
            bios.append(q.submit(s[1], max(where, 0), n, "data"))
        elif s[0] == "flush":
            q.flush()
        else:
            drive.now += s[1]
    q.flush()
    return q, drive, bios


@settings(**SETTINGS)
@given(st.lists(step, max_size=80), st.sampled_from(sorted(SCHEDULERS)), st.integers(1, 8),
       st.integers(1, 40))
def test_every_block_is_issued_once_in_a_request_of_adjacent_same_direction_bios(steps, scheduler, nr, maxb):
    q, drive, bios = run(steps, scheduler, nr, maxb)
    submitted = sorted((b.op, b.start + i) for b in bios for i in range(b.n))
    issued = sorted((op, start + i) for op, start, n, _ in drive.issued for i in range(n))
    assert issued == submitted                            # nothing lost, nothing twice
    assert q.plugged == 0
    finishes = {f for *_, f in drive.issued}
    for b in bios:
        assert b.finish != PENDING and b.finish in finishes
    # each request is one direction, within the limit, and its bios tile it exactly
    for t, rq, *_ in q.log:
        assert rq.n <= maxb
        assert all(b.op == rq.op for b in rq.bios)
        pos = rq.start
        for b in rq.bios:
            assert b.start == pos
            pos += b.n
        assert pos == rq.end
        assert all(b.finish == rq.bios[0].finish for b in rq.bios)


@settings(**SETTINGS)
@given(st.lists(step, max_size=60), st.integers(1, 8), st.integers(1, 40))
def test_none_dispatches_in_submission_order_and_merges_only_with_the_newest(steps, nr, maxb):
    q, drive, bios = run(steps, "none", nr, maxb)
    index = {id(b): i for i, b in enumerate(bios)}
    order = [sorted(index[id(b)] for b in rq.bios if id(b) in index) for _, rq, *_ in q.log]
    order = [o for o in order if o]
    firsts = [o[0] for o in order]
    assert firsts == sorted(firsts)                       # submission order
    for o in order:                                       # only the newest request takes a bio:
        assert o == list(range(o[0], o[0] + len(o)))      # its bios were submitted in a row


@settings(**SETTINGS)
@given(st.lists(step, max_size=120), st.sampled_from(["deadline", "mq-deadline"]),
       st.integers(4, 64), st.integers(1, 40), st.sampled_from([0.01, 0.05, 0.3, 1.0]))
def test_deadline_honours_expiry_and_batches(steps, scheduler, nr, maxb, per_block):
    q, drive, bios = run(steps, scheduler, nr, maxb, per_block)
    expire = {"R": READ_EXPIRE, "W": WRITE_EXPIRE}
    run_len = 0
    prev = None
    for t, rq, new_batch, head in q.log:
        if new_batch:
            run_len = 1
            assert head is not None and head.op == rq.op
            if t >= head.arrival + expire[head.op]:
                assert rq is head                         # an expired request starts the batch
        else:                                             # (mq-deadline's first pick may go
            run_len += 1                                  # on from its initial state)
            assert run_len <= FIFO_BATCH                  # at most fifo_batch in a batch
            if prev is None:
                prev = rq
                continue
            assert rq.op == prev.op
            if scheduler == "mq-deadline":
                assert rq.start >= prev.start             # a batch sweeps upwards
        prev = rq


@settings(**SETTINGS)
@given(st.lists(step, max_size=120), st.integers(4, 64), st.integers(1, 40), st.sampled_from([0.001, 0.01, 0.05]))
def test_cfq_serves_the_nearest_but_an_expired_head_once_a_slice(steps, nr, maxb, per_block):
    q, drive, bios = run(steps, "cfq", nr, maxb, per_block)
    last_end, slice_fifo = 0, 0
    for t, rq, new_slice, head in q.log:
        if new_slice:
            slice_fifo = 0
        nearest = min((r for r in q_waiting(q.log, t, rq)), key=lambda r: cfq_key(r, last_end, q.back_max))
        if rq is not nearest:                       # only the expired fifo head, once a slice
            assert rq is head and t >= head.arrival + CFQ_EXPIRE[rq.op]
            slice_fifo += 1
            assert slice_fifo == 1
        last_end = rq.end


def q_waiting(log, t, rq):
    """The requests of rq's direction still waiting when rq was picked (from the log: those of
    the same flush picked at or after it)."""
    i = next(i for i, e in enumerate(log) if e[1] is rq)
    same = [e[1] for e in log[i:] if e[1].op == rq.op and e[1].flush == rq.flush]
    return same


def cfq_key(r, last, back_max):
    if r.start >= last:
        return (0, r.start - last, -r.start)
    if last - r.start <= back_max:
        return (0, (last - r.start) * 2, -r.start)
    return (1, r.start, 0)


@pytest.mark.parametrize("scheduler, order", [
    # 2.6's deadline on a fresh queue has no next_rq: each batch starts at the fifo head
    ("deadline", [("R", 40), ("R", 5), ("W", 50), ("W", 10), ("W", 30)]),
    # mq-deadline sweeps up from latest_pos (0 at first)
    ("mq-deadline", [("R", 5), ("R", 40), ("W", 10), ("W", 30), ("W", 50)]),
    ("none", [("W", 50), ("R", 40), ("W", 10), ("R", 5), ("W", 30)]),
    # cfq: the sync queue first, each time the request nearest the head (0 at first)
    ("cfq", [("R", 5), ("R", 40), ("W", 50), ("W", 30), ("W", 10)]),
])
def test_a_flush_reads_first_in_each_schedulers_order(scheduler, order):
    drive = Drive(0.001)
    q = HostQueue(drive.issue, lambda: drive.now, scheduler, 128, 32)
    for op, start in (("W", 50), ("R", 40), ("W", 10), ("R", 5), ("W", 30)):
        q.submit(op, start, 1, "data")
    assert drive.issued == []                # in the plug until it is flushed
    q.flush()
    assert [(op, s) for op, s, *_ in drive.issued] == order


def test_deadline_takes_the_expired_head_when_a_batch_ends():
    """A flush that keeps the drive busy past write_expire: after fifo_batch requests the
    oldest write (submitted first, highest sector) goes before the sweep goes on."""
    drive = Drive(0.5)                       # 0.5 s a block: write_expire passes after 10 requests
    q = HostQueue(drive.issue, lambda: drive.now, "mq-deadline", 128, 1)
    q.submit("W", 1000, 1, "data")
    for i in range(40):
        q.submit("W", 2 * i, 1, "data")
    q.flush()
    starts = [s for _, s, *_ in drive.issued]
    assert starts[:FIFO_BATCH] == [2 * i for i in range(FIFO_BATCH)]     # the sweep from 0
    assert starts[FIFO_BATCH] == 1000                                     # then the expired head


def test_merging_respects_direction_adjacency_and_the_limit():
    drive = Drive(0.001)
    q = HostQueue(drive.issue, lambda: drive.now, "mq-deadline", 128, 8)
    q.submit("W", 0, 4, "data")
    q.submit("R", 4, 2, "data")              # other direction: no merge
    q.submit("W", 4, 4, "data")              # not the newest plugged request: a new one
    q.submit("W", 8, 1, "data")              # back merge with the newest: 4..9
    q.submit("W", 20, 2, "data")
    q.submit("W", 18, 2, "data")             # front merge with the newest: 18..22
    q.flush()                                # insert merge: 4..9 after 0..4 would be 9 > 8
    assert sorted((op, s, n) for op, s, n, _ in drive.issued) == \
        [("R", 4, 2, ), ("W", 0, 4), ("W", 4, 5), ("W", 18, 4)]
    drive.issued.clear()
    q.submit("W", 100, 4, "data")
    q.submit("R", 104, 2, "data")
    q.submit("W", 104, 4, "data")            # inserted after 100..104: one request 100..108
    q.flush()
    assert sorted((op, s, n) for op, s, n, _ in drive.issued) == [("R", 104, 2), ("W", 100, 8)]


@pytest.mark.parametrize("scheduler", ["deadline", "cfq"])
def test_2_6_deadline_merges_requests_a_bio_made_adjacent(scheduler):
    """attempt_back_merge / attempt_front_merge after a bio merge: 0..4 and 8..12 are joined by
    4..8 (back merge into the first, then the second joins) or 8..12 first (front merge)."""
    for order in ([(0, 4), (8, 4), (4, 4)], [(8, 4), (0, 4), (4, 4)]):
        drive = Drive(0.001)
        q = HostQueue(drive.issue, lambda: drive.now, scheduler, 128, 16)
        bios = [q.submit("W", s, n, "data") for s, n in order]
        q.flush()
        assert [(s, n) for _, s, n, _ in drive.issued] == [(0, 12)]
        assert len({b.finish for b in bios}) == 1 and bios[0].finish != PENDING


def test_a_bio_longer_than_the_limit_is_split_and_finishes_with_its_last_piece():
    drive = Drive(0.001)
    q = HostQueue(drive.issue, lambda: drive.now, "none", 128, 4)
    b = q.submit("R", 10, 10, "data")
    assert b.finish == PENDING
    q.flush()
    assert [(s, n) for _, s, n, _ in drive.issued] == [(10, 4), (14, 4), (18, 2)]
    assert b.finish == drive.issued[-1][3]


def test_nr_requests_bounds_what_is_merged_together():
    drive = Drive(0.001)
    q = HostQueue(drive.issue, lambda: drive.now, "mq-deadline", 4, 64)
    for s in (0, 2, 4, 6, 8, 1, 3, 5, 7, 9):        # odd blocks fill the gaps later
        q.submit("W", s, 1, "data")
    q.flush()
    assert len(drive.issued) > 1                    # with room for all, fewer requests:
    drive2 = Drive(0.001)
    q2 = HostQueue(drive2.issue, lambda: drive2.now, "mq-deadline", 128, 64)
    for s in (0, 2, 4, 6, 8, 1, 3, 5, 7, 9):
        q2.submit("W", s, 1, "data")
    q2.flush()
    assert len(drive2.issued) < len(drive.issued)


def test_unknown_scheduler_is_refused():
    with pytest.raises(ValueError, match="mq-deadline"):
        HostQueue(lambda *a: 0.0, lambda: 0.0, "bfq")


def _write_file(tmp_path, extra: str) -> tuple[dict, float]:
    from simfs.fs.types import VolumeOptions
    from simfs.fs.volume import Volume
    from simfs.ondisk.mkfs import mkfs
    img = tmp_path / f"w{len(extra)}.img"
    mkfs(str(img), 64 << 20, block_size=4096, uuid="00000000-0000-0000-0000-000000000053",
         hash_seed="00000000-0000-0000-0000-00000000a53d", now=1262304000)
    opts = dict(alloc="ext2", disk="sata7200,write_cache=off", writeback="async")
    opts.update(dict(kv.split("=") for kv in extra.split(",") if kv))
    if "max_sectors_kb" in opts:
        opts["max_sectors_kb"] = int(opts["max_sectors_kb"])
    with Volume.open(str(img), VolumeOptions(**opts)) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        for off in range(0, 4 << 20, 1 << 16):
            vol.write(ino, off, bytes(1 << 16))
        vol.sync()
        return dict(vol.counters), vol.clock.now


def test_max_sectors_kb_merges_write_back_into_larger_requests(tmp_path):
    """A 4 MiB file written back: with maxio=128K bios, the default sends 128 KiB requests;
    max_sectors_kb=512 (Linux 2.6's default) merges four bios a request, as the kernel's
    write-back does, and the drive spends less on per-command overhead."""
    base, t_base = _write_file(tmp_path, "")
    big, t_big = _write_file(tmp_path, "max_sectors_kb=512")
    assert big["sectors_written"] == base["sectors_written"]
    assert big["disk_writes"] < base["disk_writes"]
    assert big.get("hostqueue_bio_merges", 0) > 0 and not base.get("hostqueue_bio_merges")
    assert t_big < t_base
    again, t_again = _write_file(tmp_path, "max_sectors_kb=512")
    assert (again, t_again) == (big, t_big)          # deterministic


def test_an_operations_read_ahead_leaves_the_plug_when_it_ends(tmp_path):
    """The read-ahead a read does not wait for is plugged; the operation's end flushes it, at
    the simulated time it was submitted (nothing passes in between without a wait)."""
    from simfs.fs.types import VolumeOptions
    from simfs.fs.volume import Volume
    from simfs.ondisk.mkfs import mkfs
    img = tmp_path / "ra.img"
    mkfs(str(img), 64 << 20, block_size=4096, uuid="00000000-0000-0000-0000-000000000053",
         hash_seed="00000000-0000-0000-0000-00000000a53d", now=1262304000)
    with Volume.open(str(img), VolumeOptions(alloc="ext2", disk="sata7200")) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.write(ino, 0, bytes(1 << 20))
    with Volume.open(str(img), VolumeOptions(alloc="ext2", disk="sata7200", read_only=True,
                                             read_batch=True)) as vol:
        vol.read(ino, 0, 4096)                  # blocks 0..4 (and the inode's): the reader
        before = vol.counters["disk_reads"]     # waits for block 0
        vol.read(ino, 4096, 4096)               # block 1 is there; the window's 5..9 are not:
        assert vol.cache.hq.plugged == 0        # submitted, nobody waits - the end of the
        assert vol.counters["disk_reads"] == before + 1      # operation sends them


def test_cfq_takes_an_expired_fifo_head_at_a_slices_first_pick():
    """Reads of 1/16 s each, slices of 0.1 s, sync expiry 0.125 s: the slice starting at 0.125 s
    checks the fifo first and the oldest read (submitted first, far away) goes; from there the
    nearest is behind (22, within back_seek_max); the next slice's check takes the oldest
    again (4), and the sweep goes on forward."""
    drive = Drive(1 / 16)
    q = HostQueue(drive.issue, lambda: drive.now, "cfq", 128, 1)
    q.submit("R", 1000, 1, "data")
    for i in range(12):
        q.submit("R", 2 * i, 1, "data")
    q.flush()
    assert [s for _, s, *_ in drive.issued] == [0, 2, 1000, 22, 4, 6, 8, 10, 12, 14, 16, 18, 20]


def test_cfq_counts_a_backward_seek_double():
    """cfq_choose_req: from the head at 10, 7 is 3 back (costing 6) and 15 is 5 ahead: 15 first."""
    drive = Drive(0.001)
    q = HostQueue(drive.issue, lambda: drive.now, "cfq", 128, 8)
    q.submit("R", 9, 1, "data")
    q.flush()
    q.submit("R", 7, 1, "data")
    q.submit("R", 15, 1, "data")
    q.flush()
    assert [s for _, s, *_ in drive.issued] == [9, 15, 7]
