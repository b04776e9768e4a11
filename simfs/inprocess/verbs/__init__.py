"""In-process verbs: the seeds' workloads run against a Volume through the kernel model.

Each verb is a tool (tar, find, cp -a, rm -rf, du, grep -r, dd, an mmap writer) written as the
system calls the real tool makes, sent through `simfs.inprocess.kernel.Kernel`, which turns them
into the Volume calls a FUSE mount receives. Readdir order, allocation and write-back therefore
come from the mount's policies exactly as when mounted; tests/mount/test_verbs_validate.py
checks each verb against the real tool on a real mount (simulated time and disk requests).

A verb is a function `run(k, where, **params) -> dict`: `k` the Kernel, `where` the path (a
list of names from the mount's root) it works on; it returns what it did (files, bytes, ...).
`VERBS` maps the command-line names to them.
"""

from __future__ import annotations

import contextlib
import gc
import os

from simfs.errors import VerbRefused

from . import cat, cp, dd, du, find, grep, mmap_fill, rm, tar_read, unpack

VERBS = {
    "find": find.run,
    "unpack": unpack.run,
    "cp-a": cp.run,
    "rm-rf": rm.run,
    "tar-read": tar_read.run,
    "du": du.run,
    "grep": grep.run,
    "dd": dd.run,
    "mmap-fill": mmap_fill.run,
    "cat": cat.run,
}

#: checks of PATH as given, before the image is opened (split() drops "." and a trailing "/",
#: which decide `rm -rf t/.`): each raises simfs.errors.VerbRefused as the tool refuses
REFUSE = {"rm-rf": rm.refuse, "cp-a": cp.refuse, "mmap-fill": mmap_fill.refuse}


def split(path: str) -> list[bytes]:
    """A path inside the mount ("tree/sub", "/tree/sub") as a list of names."""
    return [os.fsencode(p) for p in path.split("/") if p and p != "."]


def run(image: str, options, verb: str, where: str, *, mkdir: bool = False, mark: str = "",
        oplog: str = "", watch=None, **params) -> dict:
    """Open IMAGE cold with VolumeOptions `options`, run `verb` on `where` as one mount would
    (the volume closed as an unmount closes it: the write-back the verb left is included), and
    return {"result": what the verb reports, "time": the statistics -o stats= would hold,
    "counters": totals, "sim_cmd": simulated seconds from the tool's start to its end, without
    the set-up and the unmount's write-back (what the experiments time for phases without
    drain), "warnings": what a mount would have warned about (an unchecked or data-less image)}. `mkdir`: first `mkdir -p MNT/where` on the same mount, as the experiments prepare
    an unpack. `mark`: the statistics phase (and trace rows) the verb's work is recorded under,
    as the experiments' runner writes NAME to MNT/.simfs/mark before a tool (the
    root's inode is then read before the phase, as on a mount). `oplog`: record the operations the volume is
    asked in the form `-o oplog=PATH` records a mount's (so the two can be compared line by
    line). `watch(vol)`: called once the volume is open (a progress bar reads its simulated
    clock, vol.clock.now; it changes nothing). FSError from the verb propagates after the
    volume is closed; VerbRefused (the tool's error after its work, as cp -a's exit 1) after
    a normal unmount."""
    from simfs.inprocess.kernel import Kernel
    from simfs.fs.volume import Volume

    fn = VERBS[verb]
    if verb in REFUSE:
        REFUSE[verb](where, **params)
    with rare_collections():
        vol = Volume.open(image, options)
        vol.stop_when_unwritable = True
        if watch is not None:
            watch(vol)
        if oplog:
            from importlib.metadata import version
            from simfs.inprocess.oplog import RecordingVolume
            vol = RecordingVolume.start(vol, oplog, version("simfs"))
        k = Kernel(vol)
        try:
            k.mount()
            if mkdir:
                _mkdir_p(k, split(where))
            if mark:
                k.ctl()
                vol.mark(mark)
            start = vol.clock.now
            refused = None
            try:
                result = fn(k, split(where), **params)
            except VerbRefused as e:            # the tool's error after its work (cp -a exits 1):
                refused, result = e, None       # unmounted as usual, then raised
            sim_cmd = vol.clock.now - start
            k.unmount()
        except BaseException:
            vol.options.stats = ""              # no statistics file for a run that stopped
            vol.close()
            raise
        vol.close()
        if refused is not None:
            raise refused
    return {"result": result, "time": vol.stats_snapshot(), "counters": vol.counters,
            "sim_cmd": sim_cmd, "warnings": list(vol.warnings)}


#: gc thresholds during a run: young objects collected every 100,000 allocations, not 700
RUN_GC_THRESHOLDS = (100_000, 50, 100)


@contextlib.contextmanager
def rare_collections():
    """Run with Python's cyclic garbage collector seldom: a run allocates millions of short-
    lived objects (attributes, requests, buffers) and makes few cycles, while the volume's
    bounded caches (inodes, directory indexes, the buffer cache, the kernel's dentries) hold
    hundreds of thousands of long-lived ones that every full collection walks again; with the
    default thresholds those walks grew to 5% of a 100,000-file unpack. Restored afterwards."""
    old = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _mkdir_p(k, path: list[bytes]) -> None:
    """`mkdir -p`: a stat of each prefix, mkdir where it is missing."""
    import errno
    from simfs.errors import FSError
    for i in range(1, len(path) + 1):
        try:
            k.stat(k.root, path[:i])
        except FSError as e:
            if e.errno != errno.ENOENT:
                raise
            k.mkdir(k.root, path[:i], 0o755)
