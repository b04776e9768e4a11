"""The host's request queue: Linux's block layer between the buffer cache and the drive.

The buffer cache hands the block layer *bios*: one run of contiguous blocks in one direction,
as the file system built it (at most `maxio`). The block layer turns them into *requests* and
decides the order in which the requests go to the drive. Modelled from Linux's code:

* **The plug** (block/blk-core.c `blk_start_plug`/`blk_finish_plug`, 2.6.39 on; before it the
  queue's own plug, `blk_plug_device`, did the same for a batch): bios submitted while the
  task holds a plug collect in its plug list, and reach the scheduler together when the plug is
  finished or the task sleeps (`schedule` -> `blk_flush_plug`). The cache plugs a write-back
  batch (writepages under the flusher's plug) and the reads a task does not wait for (the
  read-ahead window: `read_pages`' plug); anything that makes the task wait (a request it waits
  for, a buffer still on its way, a sleep) flushes the plug first, and so does the end of the
  operation. A request the task waits for goes through the plug too and is flushed at once.
* **Merging** (block/blk-merge.c): a bio joins a request of the same direction that ends where
  the bio begins (back merge) or begins where it ends (front merge) if the result stays within
  `max_sectors_kb` (`blk_rq_get_max_sectors`, `ll_back_merge_fn`, `ll_front_merge_fn`).
  Where each scheduler looks is its kernel's: see SCHEDULERS.
* **nr_requests**: every bio that does not merge needs a request; when `nr_requests` are taken
  the submitter sleeps for one (`get_request_wait`, `blk_mq_get_tag`), which flushes its plug.
  So nr_requests bounds how many requests are merged and sorted together.
* **The scheduler** orders the requests of a flush (`none`/`noop`: as submitted;
  `deadline`/`mq-deadline`: by sector in one-way sweeps, reads before writes, with expiry
  times; `cfq`: the request nearest the head, reads first, the fifo once a slice; FreeBSD's
  `disksort`: no merging, the first request, then a one-way sweep up from it), picking the
  next request when the drive has finished the previous one. The file system submits a read
  window in file order (read_pages) and a page cache's writepages in page order, for the
  scheduler to order; the buffer cache's own write-back batches come in its `writeback_order`:
  sorted by block by the cache itself (the default), or as Linux's flusher or FreeBSD's
  syncer issues them (docs/host-queue.md, "Write-back").
* **No sort at the flush**, as in the kernels modelled (2.6.18-2.6.38 for noop, deadline and
  cfq; 6.13 on for none and mq-deadline). Linux sorted the plug list only in between:
  2.6.39 (73c101011926, the per-task plug) list_sort()ed it by queue alone (plug_rq_cmp), 3.8
  (975927b942c9) by queue and sector until the legacy path went in 5.0; blk-mq's
  blk_mq_flush_plug_list sorted by software queue and sector (plug_ctx_cmp; 3110fc79606f in
  4.20), from 5.0 only when the plug held several queues' requests (ce5b009cff19); 5.16
  (bc490f81731e, the singly linked plug list) dropped the sort. From 5.16 to 6.12 that list
  was LIFO and `none` issued a plug newest first (liburing issue #1000) until e70c301faece
  ("block: don't reorder requests in blk_add_rq_to_plug", 6.13); the elevator path was
  reversed from 26fed4ac4eab until 34e0a279a993 (6.3). Before 2.6.39 bios went into the
  elevator as they came (the queue plugged itself, blk_plug_device): noop kept that order.

Simplifications (stated in docs/host-queue.md): the queue empties at each flush - a later
plug's requests do not overtake requests of an earlier flush that the drive has not started
(exact when the drive takes requests as fast as they come; for a one-command drive Linux could
still reorder them). Requests are issued to the drive at the flush; the drive's queue time
holds their wait. 6.x's plug also flushes itself at BLK_MAX_REQUEST_COUNT (32 since 5.16,
16 before) requests or behind a request of BLK_PLUG_FLUSH_SIZE (128 KiB; blk_add_rq_to_plug);
here only nr_requests flushes a plug early - with the queue kept between flushes the scheduler
would see those requests together anyway.

Deterministic: no wall clock; the order depends only on the bios, their order and the finish
times the drive model returns.
"""

from __future__ import annotations

import bisect
import math

#: a bio's finish before its request has gone to the drive (the plug holds it)
PENDING = math.inf

#: name -> (plug merge with the "last" request only or "all", front merges too, requests
#:          made adjacent by a merge merged, elevator insert merge, dispatch order)
#: none         blk-mq without a scheduler (6.x; the default of NVMe, and of every blk-mq device
#:              with `none`): plug merge with the newest request only (5.16 on: Axboe's "remove
#:              plug based merging" left the one-hit merge), dispatched in plug order, unsorted
#:              (blk_mq_flush_plug_list -> blk_mq_plug_issue_direct; 6.13 on, see above)
#: noop         2.6's noop elevator: a bio back-merges into any queued request (elv_merge: the
#:              request hash; noop has no front-merge function), FIFO dispatch in submission
#:              order (before 2.6.39 nothing sorted on the way in)
#: deadline     2.6's deadline (deadline-iosched.c): back and front merges (front_merges=1),
#:              and requests made adjacent by a merge are merged (elv_merged_request ->
#:              attempt_back_merge/attempt_front_merge); dispatch as below with next_rq
#: cfq          2.6's default (2.6.18 on; cfq-iosched.c), for one process: its sync queue (reads)
#:              before its async queue (writes); each dispatches the request cfq_choose_req
#:              finds nearest the head (backward seeks count double, up to back_seek_max), and
#:              takes its expired fifo head instead at most once per time slice
#:              (cfq_check_fifo); several processes' queues, idling and priorities are not
#:              modelled
#: mq-deadline  6.x's default for a single-queue rotating disk (mq-deadline.c): plug merge
#:              with the newest request, then insert merges (elv_attempt_insert_merge: a request
#:              is appended to the queued one that ends where it begins, again while possible);
#:              dispatch from latest_pos (deadline_from_pos), fifo head when nothing is above
#: disksort     FreeBSD's driver queue (kern/subr_disk.c bioq_disksort, 8.0 on; the ata(4) driver's
#:              ata_sort_queue of 5.3-8.x is the same one-way scan): no block layer, so no merging
#:              (each bio the file system built - a cluster of at most MAXPHYS - is one command);
#:              a one-way elevator (C-LOOK): the first request of a flush goes at once (the
#:              queue was empty: bioq_takefirst), then each pick is the queued request at or
#:              after the end of the last one taken (bioq->last_offset = offset + length), the
#:              lowest when none is (the key `offset - last_offset` is unsigned); reads and writes
#:              in one queue
SCHEDULERS = {
    "none": ("last", True, False, False, "fifo"),
    "disksort": (None, False, False, False, "disksort"),
    "noop": ("all", False, False, False, "fifo"),
    "deadline": ("all", True, True, False, "deadline"),
    "cfq": ("all", True, True, False, "cfq"),
    "mq-deadline": ("last", True, False, True, "mq-deadline"),
}

#: deadline's tunables (both kernels: read_expire = HZ/2, write_expire = 5*HZ,
#: writes_starved = 2, fifo_batch = 16)
READ_EXPIRE, WRITE_EXPIRE, WRITES_STARVED, FIFO_BATCH = 0.5, 5.0, 2, 16
#: cfq's (2.6.29 cfq-iosched.c): cfq_fifo_expire {async HZ/4, sync HZ/8}, cfq_slice_async HZ/25
#: and cfq_slice_sync HZ/10, cfq_back_max 16 MiB (in KiB), cfq_back_penalty 2
CFQ_EXPIRE = {"R": 0.125, "W": 0.25}
CFQ_SLICE = {"R": 0.1, "W": 0.04}
CFQ_BACK_MAX_BYTES, CFQ_BACK_PENALTY = 16 << 20, 2


class Bio:
    """One run the cache submitted; `finish` is PENDING until its request is on the drive.
    `done` (optional): called with the finish time then."""

    __slots__ = ("op", "start", "n", "kind", "ino", "wait", "finish", "done")

    def __init__(self, op, start, n, kind, ino, wait=False, done=None):
        self.op, self.start, self.n, self.kind, self.ino = op, start, n, kind, ino
        self.wait = wait
        self.finish = PENDING
        self.done = done


class Request:
    """Bios merged into one command to the drive: blocks [start, start + n) of direction op."""

    __slots__ = ("op", "start", "n", "bios", "seq", "arrival", "flush")

    def __init__(self, bio: Bio, seq: int):
        self.op, self.start, self.n = bio.op, bio.start, bio.n
        self.bios = [bio]
        self.seq = seq
        self.arrival = 0.0
        self.flush = 0          # which flush took it to the scheduler

    @property
    def end(self) -> int:
        return self.start + self.n

    def __repr__(self):
        return f"Request({self.op} {self.start}+{self.n} #{self.seq})"


class HostQueue:
    """The block layer's queue of one device.

    `issue(op, blkno, nblocks, kind, ino, wait) -> finish` sends one request to the drive at
    the current simulated time without moving the clock (`wait`: the submitter will sleep on
    it after the flush); `now()` reads the clock.
    `max_blocks`: the largest request (max_sectors_kb in file-system blocks). `log`, when a
    list, records every dispatch: (pick time, request, started a batch?, the fifo head of the
    batch's direction then, or None)."""

    def __init__(self, issue, now, scheduler: str = "none", nr_requests: int = 128, max_blocks: int = 32,
                 stats=None, block_size: int = 4096):
        if scheduler not in SCHEDULERS:
            raise ValueError(f"I/O scheduler {scheduler!r}: choose one of {', '.join(SCHEDULERS)}")
        if nr_requests < 1 or max_blocks < 1:
            raise ValueError("nr_requests and the largest request must be at least 1")
        self.issue, self.now, self.stats = issue, now, stats
        self.scheduler = scheduler
        self.scan, self.front, self.coalesce, self.insert_merge, self.order = SCHEDULERS[scheduler]
        self.nr_requests = nr_requests
        self.max_blocks = max_blocks
        self.plug: list[Request] = []
        self.seq = 0
        self.flushes = 0
        self.log: list | None = None
        # deadline's state, kept from flush to flush (as the kernel's deadline_data)
        self.batching = 0
        self.starved = 0
        self.last_dir = "R"
        self.latest_pos = {"R": 0, "W": 0}
        # cfq's: the head's position (end of the last request dispatched), the active queue's
        # slice and whether its fifo was checked in it
        self.back_max = max(1, CFQ_BACK_MAX_BYTES // block_size)
        self.last_end = 0
        self.slice_dir: str | None = None
        self.slice_end = 0.0
        self.fifo_checked = False

    # -- the submitter's side ------------------------------------------------------------------
    def submit(self, op: str, start: int, n: int, kind: str, ino: int = 0, wait: bool = False,
               done=None) -> Bio:
        """Queue a bio in the plug (merging it if it can); its finish is known after `flush`.
        `wait`: the submitter will wait for it (the drive is told; see `issue`)."""
        bio = Bio(op, start, n, kind, ino, wait, done)
        if n > self.max_blocks:                      # bio_split_to_limits: pieces of at most
            self._split(bio)                         # max_sectors_kb, each queued as a bio
            return bio
        self._queue(bio)
        return bio

    def _split(self, bio: Bio) -> None:
        """The bio as pieces of max_blocks; it finishes when its last piece does."""
        pieces: list[Bio] = []
        left = [0]

        def piece_done(finish):
            left[0] -= 1
            if left[0] == 0:
                bio.finish = max(p.finish for p in pieces)
                if bio.done is not None:
                    bio.done(bio.finish)

        for s in range(bio.start, bio.start + bio.n, self.max_blocks):
            p = Bio(bio.op, s, min(self.max_blocks, bio.start + bio.n - s), bio.kind, bio.ino, bio.wait,
                    piece_done)
            pieces.append(p)
        left[0] = len(pieces)
        self._count("hostqueue_bio_splits")
        for p in pieces:
            self._queue(p)

    def _queue(self, bio: Bio) -> None:
        if self._plug_merge(bio):
            self._count("hostqueue_bio_merges")
            return
        if len(self.plug) >= self.nr_requests:       # no free request: the submitter sleeps,
            self.flush()                             # which flushes its plug
        self.plug.append(Request(bio, self.seq))
        self.seq += 1

    def flush(self) -> None:
        """The plug reaches the scheduler and the scheduler's requests go to the drive."""
        if not self.plug:
            return
        reqs, self.plug = self.plug, []
        t = self.now()
        self.flushes += 1
        for r in reqs:
            r.arrival, r.flush = t, self.flushes
        if self.insert_merge:
            reqs = self._insert_merges(reqs)
        pick = {"fifo": self._fifo, "cfq": self._cfq, "disksort": self._disksort}.get(self.order, self._deadline)
        for r in pick(reqs, t):
            first = r.bios[0]
            finish = self.issue(r.op, r.start, r.n, first.kind, first.ino, any(b.wait for b in r.bios))
            for b in r.bios:
                b.finish = finish
                if b.done is not None:
                    b.done(finish)

    @property
    def plugged(self) -> int:
        return len(self.plug)

    # -- merging -------------------------------------------------------------------------------
    def _fits(self, r: Request, n: int) -> bool:
        return r.n + n <= self.max_blocks

    def _plug_merge(self, bio: Bio) -> bool:
        """blk_attempt_plug_merge (and for the 2.6 elevators elv_merge): back, then front merge
        with a plugged request of the same direction, newest first."""
        plug = self.plug
        if self.scan is None:                        # FreeBSD: nothing merges below the file system
            return False
        cands = plug[-1:] if self.scan == "last" else reversed(plug)
        for r in cands:
            if r.op != bio.op or not self._fits(r, bio.n):
                continue
            if r.end == bio.start:
                r.n += bio.n
                r.bios.append(bio)
                if self.coalesce:
                    self._coalesce(r, at_end=True)
                return True
            if self.front and bio.start + bio.n == r.start:
                r.start, r.n = bio.start, r.n + bio.n
                r.bios.insert(0, bio)
                if self.coalesce:
                    self._coalesce(r, at_end=False)
                return True
        return False

    def _coalesce(self, r: Request, at_end: bool) -> None:
        """attempt_back_merge / attempt_front_merge: r grew at its end (or its start); a queued
        request that now touches it there is joined to the one in front."""
        for o in self.plug:
            if o is r or o.op != r.op:
                continue
            front, back = (r, o) if at_end else (o, r)
            if front.end == back.start and self._fits(front, back.n):
                front.n += back.n
                front.bios.extend(back.bios)
                self.plug.remove(back)
                self._count("hostqueue_request_merges")
                return

    def _insert_merges(self, reqs: list[Request]) -> list[Request]:
        """elv_attempt_insert_merge as dd_insert_requests calls it, request by request in plug
        order: append the request to a queued one ending where it begins, and again with the
        merged one, while the size allows."""
        queued: list[Request] = []
        by_end: dict[tuple, Request] = {}            # the request hash: (op, end) -> request
        for r in reqs:
            while True:
                o = by_end.get((r.op, r.start))
                if o is None or o is r or not self._fits(o, r.n):
                    break
                del by_end[(o.op, o.end)]
                if by_end.get((r.op, r.end)) is r:
                    del by_end[(r.op, r.end)]
                o.n += r.n
                o.bios.extend(r.bios)
                if r in queued:
                    queued.remove(r)
                self._count("hostqueue_request_merges")
                r = o
            if r not in queued:
                queued.append(r)
            by_end[(r.op, r.end)] = r
        queued.sort(key=_seq)
        return queued

    # -- dispatch --------------------------------------------------------------------------------
    def _fifo(self, reqs: list[Request], t: float):
        for r in reqs:
            if self.log is not None:
                self.log.append((t, r, False, None))
            yield r

    def _disksort(self, reqs: list[Request], t: float):
        """bioq_disksort's order for a flush that finds the queue empty: the first request is
        taken at once; then, each time, the queued request with the smallest unsigned
        `start - last_offset`, last_offset being the end of the request taken before (the
        sorted sequence at or above the head, then the one below it)."""
        if not reqs:
            return
        first, rest = reqs[0], sorted(reqs[1:], key=lambda r: (r.start, r.seq))
        if self.log is not None:
            self.log.append((t, first, False, None))
        yield first
        pos = first.end
        starts = [r.start for r in rest]
        while rest:
            i = bisect.bisect_left(starts, pos)
            if i == len(rest):                       # nothing at or above the head: wrap
                i = 0
            r = rest.pop(i)
            del starts[i]
            pos = r.end
            if self.log is not None:
                self.log.append((t, r, False, None))
            yield r

    def _deadline(self, reqs: list[Request], t0: float):
        """__dd_dispatch_request / deadline_dispatch_requests, one pick each time the drive is
        free (the generator resumes after the previous request's finish: `flush` keeps t)."""
        mq = self.order == "mq-deadline"
        sort: dict[str, list[tuple[int, int, Request]]] = {"R": [], "W": []}   # by sector
        fifo: dict[str, list[Request]] = {"R": [], "W": []}   # in insertion order
        for r in reqs:
            bisect.insort(sort[r.op], (r.start, r.seq, r))
            fifo[r.op].append(r)
        expire = {"R": READ_EXPIRE, "W": WRITE_EXPIRE}
        next_rq: dict[str, Request | None] = {"R": None, "W": None}   # 2.6's dd->next_rq (none at a fresh queue)
        t = t0

        def following(d):
            if mq:                                   # deadline_from_pos(latest_pos)
                s = sort[d]
                i = bisect.bisect_left(s, (self.latest_pos[d], -1))
                return s[i][2] if i < len(s) else None
            return next_rq[d]

        while fifo["R"] or fifo["W"]:
            rq = following(self.last_dir)
            new_batch, head = False, None
            if rq is None or self.batching >= FIFO_BATCH:
                if fifo["R"]:
                    if fifo["W"] and self.starved >= WRITES_STARVED:
                        d = "W"
                        self.starved = 0
                    else:
                        if fifo["W"]:
                            self.starved += 1
                        d = "R"
                else:
                    d = "W"
                    self.starved = 0
                head = fifo[d][0]
                nxt = following(d)
                rq = head if t >= head.arrival + expire[d] or nxt is None else nxt
                self.last_dir = d
                self.batching = 0
                new_batch = True
            d = rq.op
            self.batching += 1
            s = sort[d]
            i = bisect.bisect_left(s, (rq.start, rq.seq, rq))
            del s[i]
            fifo[d].remove(rq)
            if mq:
                self.latest_pos[d] = rq.start
            else:                                    # deadline_move_request
                next_rq["R"] = next_rq["W"] = None
                next_rq[d] = s[i][2] if i < len(s) else None
            if self.log is not None:
                self.log.append((t, rq, new_batch, head))
            yield rq
            t = max(t, rq.bios[0].finish)

    def _cfq(self, reqs: list[Request], t0: float):
        """cfq_dispatch_request for one process: the sync queue (reads) while it has requests,
        else the async one; a queue's slice lasts CFQ_SLICE; within a slice the fifo is
        checked once (cfq_check_fifo), else the request nearest the head goes
        (cfq_choose_req: forward distance, or backward distance x 2 within back_seek_max)."""
        queued: dict[str, list[Request]] = {"R": [], "W": []}   # in insertion order
        for r in reqs:
            queued[r.op].append(r)
        t = t0
        while queued["R"] or queued["W"]:
            d = "R" if queued["R"] else "W"
            new_slice = d != self.slice_dir or t >= self.slice_end
            if new_slice:
                self.slice_dir, self.slice_end, self.fifo_checked = d, t + CFQ_SLICE[d], False
            q = queued[d]
            head = q[0]
            rq = None
            if not self.fifo_checked:
                self.fifo_checked = True
                if t >= head.arrival + CFQ_EXPIRE[d]:
                    rq = head
            if rq is None:
                rq = min(q, key=self._cfq_distance)
            q.remove(rq)
            self.last_end = rq.end
            if self.log is not None:
                self.log.append((t, rq, new_slice, head))
            yield rq
            t = max(t, rq.bios[0].finish)

    def _cfq_distance(self, r: Request) -> tuple:
        """cfq_choose_req's order: (penalised distance, back-or-wrap, sector)."""
        last = self.last_end
        if r.start >= last:
            return (0, r.start - last, -r.start)
        if last - r.start <= self.back_max:          # a tie: the higher sector
            return (0, (last - r.start) * CFQ_BACK_PENALTY, -r.start)
        return (1, r.start, 0)          # beyond back_seek_max (wrapped): last, the lowest first

    def _count(self, key: str) -> None:
        if self.stats is not None:
            self.stats.count(key)


def _seq(r: Request) -> int:
    return r.seq
