"""A request stream replayed on a modelled drive (`simfs trace replay`).

The trace's rows are given to the drive in the trace's order (for an imported capture, the
order the host issued them; for a trace simfs wrote, the order simfs submitted them). The
drive serves one request at a time, so a request issued while an earlier one was still
outstanding in the capture simply queues behind it. When each request is issued in the replay
is kept from the capture's dependencies, with gap factor g (``--gaps``: keep is 1, none is 0,
scale=F is F):

  * after every request that had completed in the capture before it was issued: at that
    request's simulated completion plus g times the gap the capture shows between that
    completion and this issue (the host's time: CPU, the application, think time);
  * if the last thing the host did before it was its own issue of the previous request (it did
    not wait for a completion in between): at the previous request's replayed issue plus g
    times the gap between the two issues.

The first request is issued at its own time. The replay ends as an unmount does: the drive's
write cache is flushed (FLUSH CACHE) and the wait counted. With g = 1 and the drive the trace was recorded
on, every request is issued when it was, so a trace simfs wrote replays to the run's figures.
"""

from __future__ import annotations

import heapq
import math

GAPS_DEFAULT = "keep"


def gap_factor(text: str) -> float:
    """--gaps keep|none|scale=F -> the factor; ValueError (one line) for anything else."""
    if text == "keep":
        return 1.0
    if text == "none":
        return 0.0
    if text.startswith("scale="):
        try:
            f = float(text[6:])
        except ValueError:
            f = math.nan
        if math.isfinite(f) and f >= 0:
            return f
        raise ValueError(f"--gaps {text}: scale= takes a number >= 0 (e.g. scale=0.5)")
    raise ValueError(f"--gaps {text!r}: choose keep, none or scale=F")


def issue_times(cols: dict, g: float, submit) -> list[float]:
    """Replay the rows in order: `submit(i, issue_time) -> finish` serves row i on the drive;
    returns each row's replayed issue time (the rule in the module docstring)."""
    issue, finish = cols["issue"], cols["finish"]
    pending: list[tuple[float, int]] = []        # (captured finish, row) not yet seen complete
    done_new: list[float] = [0.0] * len(issue)   # replayed finish per row
    best = -math.inf                              # max over completed rows of (F' - g * finish)
    last_done = -math.inf                         # latest captured completion seen
    out: list[float] = []
    for i, t in enumerate(issue):
        while pending and pending[0][0] <= t:
            f, k = heapq.heappop(pending)
            best = max(best, done_new[k] - g * f)
            last_done = max(last_done, f)
        if i == 0:
            new = t
        else:
            new = best + g * t
            if issue[i - 1] >= last_done:        # the host's last event was its previous issue
                new = max(new, out[i - 1] + g * (t - issue[i - 1]))
        out.append(new)
        done_new[i] = submit(i, new)
        heapq.heappush(pending, (finish[i], i))
    return out


def replay(cols: dict, disk, g: float, extras: dict | None = None) -> dict:
    """Serve the trace's rows on `disk` (a fresh DiskModel) by the dependency rule; returns the
    statistics document (the `time` section simfs stats prints: phases, counters, disk time,
    latency) and the replayed rows' times."""
    from simfs.blockio.stats import Stats
    n = len(cols["op"])
    end = max((a + s for a, s in zip(cols["lba"], cols["sectors"])), default=0)
    if end > disk.sectors:
        raise ValueError(f"the trace reaches sector {end:,}, beyond the drive's {disk.sectors:,} "
                         f"(a larger drive, or capacity={end} in --disk)")
    rwbs = (extras or {}).get("rwbs") or [""] * n
    stats = Stats(cols["issue"][0] if n else 0.0)
    stats.watch(getattr(disk, "work_counters", None), getattr(disk, "work_time", None))
    stats.set_rotation(getattr(disk, "t_rev", None), getattr(disk, "head_switch", None))
    results = [None] * n
    phase = ["all"]

    def submit(i: int, t: float) -> float:
        if cols["phase"][i] != phase[0]:
            stats.mark(cols["phase"][i], t)
            phase[0] = cols["phase"][i]
        op = cols["op"][i]
        fua = op == "W" and "F" in rwbs[i].lstrip("F")[1:]
        r = disk.submit(op, cols["lba"][i], cols["sectors"][i], t, fua)
        stats.disk(op, cols["lba"][i], cols["sectors"][i], r, cols["cause"][i])
        results[i] = r
        return r.finish

    issue_times(cols, g, submit)
    last = max((r.finish for r in results), default=stats.phases[0].start)
    end = disk.flush(last)                  # as at unmount: the drive's write cache drained
    stats.flush(end - last)
    doc = stats.snapshot(end, {"disk": disk.name})
    first = cols["issue"][0] if n else 0.0
    captured = (max(cols["finish"]) - first) if n else 0.0
    return {"time": doc, "requests": n, "elapsed": end - (results[0].issue if n else 0.0),
            "captured_elapsed": captured, "results": results}


# -- one host thread keeping `depth` requests in flight (fio's asynchronous engines) ----------

def closed_loop(requests: list, queue, depth: int, start: float, background=()) -> list:
    """Time the host's requests as one thread that keeps `depth` of them in flight (fio's
    libaio/io_uring/posixaio with iodepth=depth and iodepth_batch / iodepth_batch_complete /
    iodepth_low at their defaults): it submits the next as soon as fewer than `depth` are in
    flight, each after its own host time (CPU); a request whose first drive request completes
    goes on to its next one after the gap it had (a block map read, then the data).

    `requests`: per host request, its drive requests [(gap, op, lba, sectors, sync), ...] in
    order, `gap` being the host time before it (for the first: before the submission, from the
    moment the thread was free; for the others: after the previous one completed).
    `background`: (t, op, lba, sectors, sync) the host did not wait for, issued at t.
    `queue`: a disk_models.queue.DriveQueue on the drive (its own depth and scheduler order
    what is in it). Returns per host request (submitted, arrived, finished, [DiskResult]):
    when the thread started submitting it, when its first drive request reached the drive,
    when its last completed. Deterministic: ties go to the earlier request."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, not {depth}")
    n = len(requests)
    out: list = [None] * n
    pending: list = []                 # (t, seq, request or -1, drive request index, values)
    seq = 0
    for b in background:
        heapq.heappush(pending, (b[0], seq, -1, 0, b[1:]))
        seq += 1
    host, nxt, inflight = start, 0, 0

    def fill() -> None:
        nonlocal host, nxt, inflight, seq
        while inflight < depth and nxt < n:
            gap, *values = requests[nxt][0]
            sub = host
            host += gap
            out[nxt] = [sub, host, None, []]
            heapq.heappush(pending, (host, seq, nxt, 0, values))
            seq += 1
            nxt += 1
            inflight += 1

    fill()
    while pending or queue.outstanding:
        if pending:
            t = pending[0][0]
            pick = queue.next_pick
            if pick is None and queue.outstanding:
                pick = queue.peek()        # one started: nothing is picked before it completes
            if not queue.outstanding or t <= pick:
                t, _, k, j, (op, lba, sectors, sync) = heapq.heappop(pending)
                queue.submit(op, lba, sectors, t, sync, tag=(k, j))
                continue
        (k, j), res = queue.pop()
        if k < 0:
            continue
        rec = out[k]
        rec[3].append(res)
        if j + 1 < len(requests[k]):
            gap, *values = requests[k][j + 1]
            heapq.heappush(pending, (res.finish + gap, seq, k, j + 1, values))
            seq += 1
            continue
        rec[2] = res.finish
        inflight -= 1
        if res.finish > host:
            host = res.finish
        fill()
    return [tuple(r) for r in out]


def host_requests(cols: dict, rows: list, start: float) -> tuple[list, list]:
    """Group a phase's trace rows (indices, in trace order) by the host request that made them,
    for a stream of direct I/O (O_DIRECT reads and writes, nothing of the file in the cache):
    every `data` row is one request's data, and the rows the host waited for before it (a block
    map or directory read: `wait` 1, another cause) are that request's too, in order; the other
    rows (write-back of metadata, `wait` 0) are background. Returns (requests, background) in
    closed_loop's form, each gap as the capture had it (a request's first: from the completion
    of the one before, or from `start`)."""
    issue, finish, cause, wait = cols["issue"], cols["finish"], cols["cause"], cols["wait"]
    requests: list = []
    background: list = []
    chain: list = []
    held: list = []
    free = start                       # when the host was free (its last request completed)
    last = start                       # the completion the chain's next row waited for

    def values(i):
        return (cols["op"][i], cols["lba"][i], cols["sectors"][i], False)

    for i in rows:
        if cause[i] != "data" and not wait[i]:
            background.append((issue[i],) + values(i))
            continue
        gap = issue[i] - (last if chain else free)
        chain.append((gap,) + values(i))
        held.append(i)
        last = finish[i]
        if cause[i] == "data":
            requests.append(chain)
            chain, held = [], []
            free = last
    # waited-for rows after the last data row (a close, a stat): no I/O's, issued when they were
    background.extend((issue[i],) + values(i) for i in held)
    background.sort(key=lambda b: b[0])
    return requests, background
