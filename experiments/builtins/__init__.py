"""What a job file cannot say in TOML: the Python hooks a job names with `builtin = "NAME"` (its
args = {...} go to the function), and the tables a command-line option of `simfs experiment
run` changes (`--size`). The generic phases live in experiments/phases.py; the hooks of one
experiment in the module named after it (alignment.py, mmap_fragmentation.py).
"""

from __future__ import annotations

BUILTIN_NAMES = ("mkfs", "newfs", "fsck-scan", "mmap-write", "dd-read", "mmap-fill", "dd-verb")


def BUILTINS() -> dict:
    """NAME -> the function that makes the phase (imported when a job is checked or compiled)."""
    from .. import phases as ph
    from . import alignment, mmap_fragmentation
    return {
        "mkfs": ph.mkfs_phase,                      # the runner's timed mkfs, shown as a phase
        "newfs": alignment.newfs_phase,             # FreeBSD newfs's request pattern (alignment)
        "fsck-scan": ph.metadata_scan,              # the fsck-like metadata scan, in-process
        "mmap-write": ph.mmap_write,                # alloctest mounted (params.size; column writes=pwrite)
        "dd-read": ph.dd_read,                      # dd bs=1M of the file "big", with MB/s (params.size)
        "mmap-fill": mmap_fragmentation.fill_phase,  # the same fill in-process through the modelled page
                                                    # cache (columns writes, pagecache), extents counted
        "dd-verb": mmap_fragmentation.dd_phase,     # dd bs=1M of "big" in-process, with MB/s
    }


def size_overlay(name: str, size: int, quick: bool) -> dict | None:
    """The tables `simfs experiment run NAME --size SIZE` merges over experiment NAME's job, or
    None when the experiment takes no size (its workload is a tree)."""
    if name == "mmap-fragmentation":
        from .mmap_fragmentation import size_overlay as of_size
        return of_size(size, quick)
    return None
