"""-o clocks=process through Operations, in-process (no kernel): each request on its process's
clock (simfs.fuse.processes), the process tree a table the test writes.

Two readers (pids 11 and 12, children of the shell 10) read two 4 MiB files in lockstep, 128
KiB a request, as the kernel would send them: file a is in simfs's cache, file b on the drive,
and every request costs 1 ms of CPU (cpu=flat). With one clock the mount times them one after
the other; with a clock per process the cached reader's requests overlap the other's drive
time: the phase takes less than one clock says and less than the two alone, and not less than
the busier reader alone. The shell's next request comes after both (it waited for them). The
figures repeat run for run. One process alone gives the statistics one clock gives.
"""

from __future__ import annotations

import os


from simfs.fs.volume import Volume, VolumeOptions
from simfs.fuse.operations import FUSE_ROOT, Operations
from simfs.fuse.processes import RequestClocks
from simfs.ondisk.mkfs import mkfs
from tests.helpers import ProcessTable, fuse_ctx, run_op

SIZE = 4 << 20
CHUNK = 128 << 10
SHELL, A, B = 10, 11, 12


ctx, call, Tree = fuse_ctx, run_op, ProcessTable


def _mounted(tmp_path, name, clocks, tree, warm=(), **opts):
    """A volume with two 4 MiB files, written back and dropped from every cache, then those
    named in `warm` read once (in simfs's cache)."""
    img = tmp_path / f"{name}.img"
    mkfs(img, 64 << 20, block_size=4096)
    vol = Volume.open(img, VolumeOptions(disk="sata7200", clocks=clocks, **opts))
    for f in (b"a", b"b"):
        ino = vol.create(vol.root_ino, f, 0o100644, 0, 0).st_ino
        for off in range(0, SIZE, 1 << 20):
            vol.write(ino, off, b"z" * (1 << 20))
    vol.drop_caches()
    for f in warm:
        ino = vol.lookup(vol.root_ino, f).st_ino
        vol.read(ino, 0, SIZE)
    ops = Operations(vol, info={"image": str(img)})
    if clocks == "process":
        ops.process_clocks = RequestClocks(vol.clock, tree)
    return ops, vol


def _read_phase(ops, vol, readers) -> dict:
    """The readers in lockstep, then the shell: {"elapsed", "shell_at", per reader finish}."""
    t0 = vol.clock.now
    call(ops, "getattr", FUSE_ROOT, ctx(SHELL))
    fhs = {}
    for pid, name in readers:
        ino = call(ops, "lookup", FUSE_ROOT, name, ctx(pid)).st_ino
        fhs[pid] = call(ops, "open", ino, os.O_RDONLY, ctx(pid)).fh
    for off in range(0, SIZE, CHUNK):
        for pid, _ in readers:
            assert len(call(ops, "read", fhs[pid], off, CHUNK)) == CHUNK
    for pid, _ in readers:
        call(ops, "release", fhs[pid])
    out = {"elapsed": vol.clock.now - t0}
    pc = getattr(ops, "process_clocks", None)
    for pid, _ in readers:
        if pc is not None:
            out[pid] = pc.clocks.procs[pid].t - t0
            del pc.clocks.probe.procs[pid]           # the reader exits
    call(ops, "getattr", FUSE_ROOT, ctx(SHELL))
    if pc is not None:
        out["shell_at"] = pc.clocks.procs[SHELL].t - t0
    return out


def _run(tmp_path, name, clocks, readers, **opts):
    ops, vol = _mounted(tmp_path, name, clocks, Tree(), **opts)
    try:
        return _read_phase(ops, vol, readers)
    finally:
        vol.close()


BOTH = ((A, b"a"), (B, b"b"))
#: file a in simfs's cache, b on the drive; 1 ms of CPU a request (a reader with work to do)
SETUP = dict(warm=[b"a"], cpu="flat", cpu_op_us=1000.0)


def test_two_readers_overlap_and_repeat(tmp_path):
    serial = _run(tmp_path, "serial", "mount", BOTH, **SETUP)
    alone = [_run(tmp_path, f"alone{pid}", "process", ((pid, name),), **SETUP)[pid] for pid, name in BOTH]
    runs = [_run(tmp_path, f"both{i}", "process", BOTH, **SETUP) for i in range(3)]
    assert runs[0] == runs[1] == runs[2]                 # deterministic for the interleaving
    both = runs[0]
    assert both["elapsed"] < serial["elapsed"]            # one clock: one after the other
    assert both["elapsed"] < sum(alone)
    assert both["elapsed"] >= max(alone)                  # no faster than the busier alone
    assert both["shell_at"] >= max(both[A], both[B])      # the shell waited for both


def test_one_reader_alone_gives_one_clocks_figures(tmp_path):
    figures = []
    for clocks in ("mount", "process"):
        ops, vol = _mounted(tmp_path, clocks, clocks, Tree())
        _read_phase(ops, vol, ((A, b"a"),))
        vol.close()
        snap = vol.stats_snapshot()
        figures.append((snap["now"], snap["total"], snap["unmount"]))
    assert figures[0] == figures[1]
    assert figures[0][0] > 0 and figures[0][1]["counters"]["disk_reads"] > 0
