"""Op log format 3: a -o clocks=process run recorded with its processes replays with the
same per-process clocks (issue 53 item 3; simfs.inprocess.processlog), in-process.

The run goes through simfs.fuse.operations as a mount's requests do, the process tree a table
the test writes: the shell (10) starts two readers (11, 12) that read two 2 MiB files in
lockstep (a in simfs's cache, b on the drive, 1 ms of CPU a request); reader 12 also writes a
file and fsyncs it, and the volume is synced between two requests (the daemon's sync at a remount
read-only); a child of reader a (14) asks for something that makes no volume call (its
record still ends the request in the log); a `simfs ctl mark` (13) marks a phase between; both
readers exit and the shell's next request comes after them. The replay of the log on a copy of the image gives the
recorded statistics field for field and each process's last finish; with -o clocks=mount it
gives the figures one clock gives for the same requests. Malformed process records and a
log without them under clocks=process are one ReplayError line (exit 2 through the command).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from simfs.cli.main import main
from simfs.fs.volume import Volume, VolumeOptions
from simfs.fuse import control
from simfs.fuse.operations import FUSE_ROOT, Operations
from simfs.fuse.processes import RequestClocks
from simfs.inprocess.oplog import RecordingVolume, read_header
from simfs.inprocess.replay import ReplayError, replay
from simfs.ondisk.mkfs import mkfs
from tests.helpers import ProcessTable, fuse_ctx, run_op

SIZE = 2 << 20
CHUNK = 128 << 10
SHELL, A, B, CTL, HELPER = 10, 11, 12, 13, 14
OPTS = dict(disk="sata7200", cpu="flat", cpu_op_us=1000.0)


ctx, call, Tree = fuse_ctx, run_op, ProcessTable


def _session(ops, vol_outside, tree) -> dict:
    """The requests (see the module docstring); {pid: its record} with clocks=process."""
    pc = getattr(ops, "process_clocks", None)
    seen = {}
    call(ops, "getattr", FUSE_ROOT, ctx(SHELL))
    fhs = {}
    for pid, name in ((A, b"a"), (B, b"b")):
        ino = call(ops, "lookup", FUSE_ROOT, name, ctx(pid)).st_ino
        fhs[pid] = call(ops, "open", ino, os.O_RDONLY, ctx(pid)).fh
    out = call(ops, "create", FUSE_ROOT, b"out", 0o100644, os.O_WRONLY, ctx(B))[0].fh
    for i, off in enumerate(range(0, SIZE, CHUNK)):
        for pid in (A, B):
            assert len(call(ops, "read", fhs[pid], off, CHUNK)) == CHUNK
        if i == 2:                      # a child of reader a asks something of no volume call
            tree.procs[HELPER] = (A, 104)
            call(ops, "access", FUSE_ROOT, os.R_OK, ctx(HELPER))
            del tree.procs[HELPER]
        if i == 4:                      # a `simfs ctl mark` (a child of the shell) in between
            tree.procs[CTL] = (SHELL, 103)
            d = call(ops, "lookup", FUSE_ROOT, control.NAME, ctx(CTL)).st_ino
            m = call(ops, "lookup", d, b"mark", ctx(CTL)).st_ino
            fh = call(ops, "open", m, os.O_WRONLY, ctx(CTL)).fh
            call(ops, "write", fh, 0, b"middle")
            call(ops, "release", fh)
            if pc is not None:
                seen[CTL] = pc.clocks.procs[CTL]
            del tree.procs[CTL]
        call(ops, "write", out, off, b"w" * CHUNK)
        if i == 6:
            vol_outside.sync()          # between requests, as the daemon's sync at a remount ro
    call(ops, "fsync", out, False)
    for fh in (*fhs.values(), out):
        call(ops, "release", fh)
    if pc is not None:
        seen.update((pid, pc.clocks.procs[pid]) for pid in (SHELL, A, B))
    del tree.procs[A], tree.procs[B]     # both exit; the shell waited for them
    call(ops, "getattr", FUSE_ROOT, ctx(SHELL))
    return seen


def _record(d, clocks: str, log=None):
    """Run the session on a fresh image (its copy from before kept as d/NAME.copy); the log,
    the statistics, and {pid: (record number, last finish)} of the processes."""
    img = d / f"{clocks}.img"
    mkfs(img, 64 << 20, block_size=4096)
    vol = Volume.open(img, VolumeOptions(clocks=clocks, **OPTS))
    for f in (b"a", b"b"):
        ino = vol.create(vol.root_ino, f, 0o100644, 0, 0).st_ino
        for off in range(0, SIZE, 1 << 20):
            vol.write(ino, off, b"z" * (1 << 20))
    vol.close()
    shutil.copyfile(img, d / f"{clocks}.copy")
    vol = Volume.open(img, VolumeOptions(clocks=clocks, **OPTS))
    log = log or d / f"{clocks}.log"
    rv = RecordingVolume.start(vol, str(log), "test", processes=clocks == "process")
    rv.drop_caches()
    ino = rv.lookup(rv.root_ino, b"a").st_ino
    rv.read(ino, 0, SIZE)                       # a in simfs's cache
    ops = Operations(rv, info={"image": str(img)})
    tree = Tree()
    if clocks == "process":
        ops.process_clocks = RequestClocks(vol.clock, tree, recorder=rv.record_processes())
    procs = {pid: (p.n, p.t) for pid, p in _session(ops, rv, tree).items()}
    rv.close()
    return log, vol.stats_snapshot(), procs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("oplogproc")
    return d, _record(d, "process"), _record(d, "mount")


def test_the_log_says_the_processes(runs):
    d, (log, _, _), (mlog, _, _) = runs
    assert read_header(str(log))["version"] == 3 and read_header(str(log))["processes"] is True
    lines = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    kinds = [r[0] for r in lines]
    assert kinds.count("process") == 5             # the shell (its parent is init: none), two readers, ctl, a's child
    assert kinds.count("exited") == 4              # a's child to a; ctl, both readers to the shell
    assert "ctl" in kinds and "on" in kinds
    mount_lines = mlog.read_text().splitlines()[1:]
    assert "processes" not in read_header(str(mlog))
    assert not {json.loads(x)[0] for x in mount_lines} & {"process", "exited", "on", "ctl"}
    ops = [r for r in lines if r[0] not in ("process", "exited", "on", "ctl")]
    assert ops == [json.loads(x) for x in mount_lines]     # the same operations either way


def test_replay_keeps_each_process_clock(runs):
    d, (log, stats, procs), _ = runs
    shutil.copyfile(d / "process.copy", d / "r1.img")
    got = replay(str(log), str(d / "r1.img"), VolumeOptions(clocks="process", **OPTS))
    assert got["time"] == stats                     # field for field, phases included
    assert {"middle"} <= {p["name"] for p in stats["phases"]}
    for pid, (n, t) in procs.items():
        assert got["processes"][n] == t, pid
    assert procs[SHELL][1] >= max(procs[A][1], procs[B][1])  # the shell waited for both


def test_the_overlap_is_what_the_replay_reproduces(runs):
    """One clock over the same operations takes longer; replayed with -o clocks=mount, the
    process log gives the recorded clocks=mount run's statistics."""
    d, (log, stats, _), (_, mstats, _) = runs
    assert stats["now"] < mstats["now"]
    shutil.copyfile(d / "process.copy", d / "r2.img")
    got = replay(str(log), str(d / "r2.img"), VolumeOptions(clocks="mount", **OPTS))
    assert got["time"]["total"] == mstats["total"] and got["time"]["now"] == mstats["now"]
    assert got["processes"] is None


def test_a_log_without_processes_is_refused_under_clocks_process(runs):
    d, _, (mlog, _, _) = runs
    shutil.copyfile(d / "mount.copy", d / "r3.img")
    with pytest.raises(ReplayError, match="does not record which process"):
        replay(str(mlog), str(d / "r3.img"), VolumeOptions(clocks="process", **OPTS))


def _edited(d, log, name, edit):
    lines = log.read_text().splitlines(keepends=True)
    out = d / name
    out.write_text("".join(edit(lines)))
    return out


def _first(lines, kind):
    return next(i for i, x in enumerate(lines) if x.startswith(f'["{kind}"'))


@pytest.mark.parametrize("name, edit, match, clocks", [
    ("unknown.log", lambda ls: ls[:_first(ls, "on")] + ['["on",null,99]\n'] + ls[_first(ls, "on"):],
     "process 99 is not a process an earlier record made", "process"),
    ("order.log", lambda ls: ls[:_first(ls, "process")] + ['["process",null,1,null]\n'] + ls[_first(ls, "process"):],
     "process 1 is made out of order (the next one is 0)", "process"),
    ("parent.log", lambda ls: [x.replace('["exited",null,1,0]', '["exited",null,1,2]') for x in ls],
     "exits to 2, which is not its parent (0)", "process"),
    ("twice.log", lambda ls: ls[:_first(ls, "exited") + 1] + [ls[_first(ls, "exited")]] + ls[_first(ls, "exited") + 1:],
     "exits twice", "process"),
    ("args.log", lambda ls: [x.replace('["ctl",null,', '["ctl",null,3,') for x in ls],
     "a 'ctl' record takes 1 arguments, the line gives 2", "process"),
    ("header.log", lambda ls: [ls[0].replace(',"processes":true', '')] + ls[1:],
     "record in a log whose header announces no process records", "mount"),
])
def test_malformed_process_records_are_one_line_exit_2(runs, capsys, name, edit, match, clocks):
    d, (log, _, _), _ = runs
    bad = _edited(d, log, name, edit)
    assert bad.read_text() != log.read_text()
    shutil.copyfile(d / "process.copy", d / f"{name}.img")
    rc = main(["replay", str(bad), str(d / f"{name}.img"), "-o", f"clocks={clocks}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("simfs replay: "), err
    assert match in err[0], err[0]


def test_version_2_logs_are_read_and_version_1_refused(runs, capsys):
    d, _, (mlog, mstats, _) = runs
    v2 = _edited(d, mlog, "v2.log", lambda ls: [ls[0].replace('"version":3', '"version":2')] + ls[1:])
    shutil.copyfile(d / "mount.copy", d / "v2.img")
    assert replay(str(v2), str(d / "v2.img"), VolumeOptions(clocks="mount", **OPTS))["time"] == mstats
    v1 = _edited(d, mlog, "v1.log", lambda ls: [ls[0].replace('"version":3', '"version":1')] + ls[1:])
    with pytest.raises(ReplayError, match="format version 1; this simfs reads versions 2, 3"):
        replay(str(v1), str(d / "v2.img"), VolumeOptions(clocks="mount", **OPTS))
