"""The alignment experiment's hook (experiments/jobs/alignment.toml): FreeBSD newfs's request
pattern on the configuration's disk, which no command against the ext2 mount can issue."""

from __future__ import annotations

from ..spec import Phase

#: the seed's partition: newfs's request pattern is computed for it, unscaled (31 requests; it
#: does not need the experiment's image)
NEWFS_SIZE = 10 << 30


def newfs_phase():
    """newfs's request pattern (simfs.inprocess.timed_newfs) on this configuration's disk."""
    from simfs.inprocess.timed_newfs import timed_newfs
    return Phase("newfs", "FreeBSD newfs -f 4096 -b 32768 of the seed's 10 GB partition: its request "
                          "pattern, issued synchronously to the disk model", kind="volume",
                 command=lambda c: timed_newfs(c.config.mount["disk"], NEWFS_SIZE))
