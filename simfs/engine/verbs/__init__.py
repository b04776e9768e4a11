"""In-process verbs: the seeds' workloads run against a Volume through the kernel model.

Each verb is a tool (tar, find, cp -a, rm -rf, du, grep -r, dd, an mmap writer) written as the
system calls the real tool makes, sent through `simfs.engine.kernel.Kernel`, which turns them
into the Volume calls a FUSE mount receives. Readdir order, allocation and write-back therefore
come from the mount's policies exactly as when mounted; tests/mount/test_verbs_validate.py
checks each verb against the real tool on a real mount (simulated time and disk requests).

A verb is a function `run(k, where, **params) -> dict`: `k` the Kernel, `where` the path (a
list of names from the mount's root) it works on; it returns what it did (files, bytes, ...).
`VERBS` maps the command-line names to them.
"""

from __future__ import annotations

from . import cp, find, rm, unpack

VERBS = {
    "find": find.run,
    "unpack": unpack.run,
    "cp-a": cp.run,
    "rm-rf": rm.run,
}


def split(path: str) -> list[bytes]:
    """A path inside the mount ("tree/sub", "/tree/sub") as a list of names."""
    import os
    return [os.fsencode(p) for p in path.split("/") if p and p != "."]
