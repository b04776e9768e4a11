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
