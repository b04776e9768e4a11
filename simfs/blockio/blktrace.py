"""A simfs request trace as the binary blktrace format (`simfs trace export --format blktrace`).

Each disk request becomes the events a Linux block device emits for one file-system request
(struct blk_io_trace, version 7, in the host's byte order as blktrace writes it): Q (queued)
and G (request allocated) and I (inserted) at its issue time, D (dispatched to the drive)
when the drive starts it (issue + queue), C (completed) at its finish. blkparse, btt,
iowatcher and seekwatcher read the files; btt's Q2C is then the trace's finish - issue and
its D2C finish - start. Flags: R or W; S for a write the host waited for; A for read-ahead
(a read nobody waited for); M for every block that is not file data.
"""

from __future__ import annotations

import struct

MAGIC = 0x65617400 | 0x07                 # BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
EVENT = struct.Struct("=IIQQIIIIIHH")     # struct blk_io_trace: 48 bytes, native order

# trace categories (upper 16 bits of action) and actions (lower 16), from blktrace_api.h
TC_READ, TC_WRITE, TC_SYNC, TC_QUEUE, TC_ISSUE, TC_COMPLETE, TC_FS = 1, 2, 8, 16, 64, 128, 256
TC_NOTIFY, TC_AHEAD, TC_META = 1 << 10, 1 << 11, 1 << 12
TA_QUEUE, TA_GETRQ, TA_ISSUE, TA_COMPLETE, TA_INSERT = 1, 4, 7, 8, 12
TN_PROCESS = 0
#: the events of one request: (action, its category, which time of the request)
STEPS = (("Q", TA_QUEUE, TC_QUEUE, "issue"), ("G", TA_GETRQ, TC_QUEUE, "issue"),
         ("I", TA_INSERT, TC_QUEUE, "issue"), ("D", TA_ISSUE, TC_ISSUE, "start"),
         ("C", TA_COMPLETE, TC_COMPLETE, "finish"))
DEVICE = (8 << 20) | 0                    # (8, 0): sda, in the kernel's dev_t layout
PID = 1
COMM = b"simfs"


def _flags(op: str, cause: str, waited: bool) -> int:
    cat = TC_FS | (TC_READ if op == "R" else TC_WRITE)
    if op == "W" and waited:
        cat |= TC_SYNC
    if op == "R" and not waited:
        cat |= TC_AHEAD
    if cause != "data":
        cat |= TC_META
    return cat


def events(cols: dict) -> list[tuple]:
    """(time ns, order..., sector, bytes, action) of every event of the trace, in time order
    (at one instant Q before G, I, D, C; requests in the order they were issued)."""
    out = []
    waited = cols.get("wait") or [1] * len(cols["op"])
    for i, (op, lba, n, cause) in enumerate(zip(cols["op"], cols["lba"], cols["sectors"], cols["cause"])):
        cat = _flags(op, cause, bool(waited[i]))
        for k, (_, ta, tc, when) in enumerate(STEPS):
            t = round(cols[when][i] * 1e9)
            # at one instant, completions of earlier requests come first
            first = 0 if k == 4 and t > round(cols["issue"][i] * 1e9) else 1
            out.append((t, first, i, k, lba, n * 512, ta | ((tc | cat) << 16)))
    out.sort()
    return out


def export(cols: dict, base: str) -> dict:
    """Write BASE.blktrace.0 (simfs has one queue: one CPU) and return what was written."""
    path = f"{base}.blktrace.0"
    evs = events(cols)
    with open(path, "wb") as f:
        # the pid -> name mapping blkparse prints (a notify event, its pdu the name)
        name = COMM + b"\0"
        f.write(EVENT.pack(MAGIC, 0, 0, 0, 0, TN_PROCESS | (TC_NOTIFY << 16), PID, DEVICE, 0, 0, len(name)))
        f.write(name)
        for seq, (t, _, _, _, sector, nbytes, action) in enumerate(evs, start=1):
            f.write(EVENT.pack(MAGIC, seq, t, sector, nbytes, action, PID, DEVICE, 0, 0, 0))
    return {"files": [path], "requests": len(cols["op"]), "events": len(evs)}


def own_figures(cols: dict) -> dict:
    """simfs's own figures of a trace, the way btt computes its counterparts: Q2C and D2C
    means (s), Q2D mean, and the mean seek distance between requests in dispatch order
    (D2D) and in queue order (Q2Q), by btt's rule (overlap = 0, else the distance from the
    previous request's end, or its start when going backwards); and how many requests
    overlap an earlier one still in flight. btt pairs a request's events by sector, so those
    (which Linux never issues: a buffer under write is locked until it completes, and so is
    simfs's since the cache modelled the lock) make its Q2C and D2C figures differ from these."""
    n = len(cols["op"])
    if not n:
        return {"requests": 0}
    issue, start, finish = cols["issue"], cols["start"], cols["finish"]

    def seek_mean(order):
        last_s = last_e = 0
        total = 0
        for i in order:
            s = cols["lba"][i]
            e = s + cols["sectors"][i]
            if (last_s <= s <= last_e) or (last_s <= e <= last_e):
                d = 0
            elif s > last_e:
                d = s - last_e
            else:
                d = s - last_s
            total += abs(d)
            last_s, last_e = s, e
        return total / n
    overlaps = 0
    flight: list[tuple[float, int, int]] = []
    for i in range(n):
        a, b = cols["lba"][i], cols["lba"][i] + cols["sectors"][i]
        flight = [f for f in flight if f[0] > issue[i]]
        if any(x < b and a < y for _, x, y in flight):
            overlaps += 1
        flight.append((finish[i], a, b))
    by_issue = sorted(range(n), key=lambda i: (round(issue[i] * 1e9), i))
    by_start = sorted(range(n), key=lambda i: (round(start[i] * 1e9), i))
    return {"requests": n,
            "q2c": sum(f - q for f, q in zip(finish, issue)) / n,
            "d2c": sum(f - d for f, d in zip(finish, start)) / n,
            "q2d": sum(d - q for d, q in zip(start, issue)) / n,
            "q2q_seek_mean": seek_mean(by_issue), "d2d_seek_mean": seek_mean(by_start),
            "overlapping_in_flight": overlaps}
