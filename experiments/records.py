"""What a phase's record keeps from the statistics, and the experiments' one error type.

Below both the runner and the phases (each imports from here, neither from the other), so the
in-process phases and the mounted runner build records with the same counters and split.
"""

from __future__ import annotations

#: the counters a phase's record keeps
COUNTERS = ("disk_reads", "disk_writes", "seeks", "sectors_read", "sectors_written", "cache_hits",
            "cache_misses", "blocks_allocated", "read_discontiguities")

#: the disk-time components a record keeps (where the disk's time went)
SPLIT = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")


class ExperimentError(RuntimeError):
    """A run that cannot go on: one line for the user (a tool failed, a disk was full)."""


def latency_of(entry: dict | None) -> dict:
    """A phase's latency percentiles (simfs/blockio/stats.py Phase.latency) and its disk-time
    split, as a record keeps them; {} for statistics written before latencies were kept."""
    if not isinstance(entry, dict) or not isinstance(entry.get("latency"), dict):
        return {}
    dt = entry.get("disk_time", {})
    return {**entry["latency"], "split": {k: dt.get(k, 0.0) for k in SPLIT}}
