"""Two processes reading through a mount at once, with -o clocks=process (issue 53, item 3;
docs/concurrency.md).

Two reader processes (children of the test) read two 2 MiB files in lockstep, 64 KiB at a
time: each opens its file and reads one chunk, then hands the turn to the other through a
pipe, so the requests reach simfs in the same order every run. Kernel read-ahead is off
(POSIX_FADV_RANDOM), so each read is one READ request the reader waits for. File a is in
simfs's cache (read once before), file b on the drive; every request costs 1 ms of CPU
(cpu=flat), as a reader with work to do would. Each run is a fresh image and mount prepared
the same way (the drive's rotational position follows absolute simulated time).

Checked: the phase's figures repeat over three runs; with a clock per process it takes less
than one clock says for the same requests (-o clocks=mount: one after the other) and less than
the two readers alone, and not less than the busier reader alone. The first of the three runs
is recorded (-o oplog=, format 3: each operation's process): `simfs replay` of its log on a
copy of the image gives the mount's statistics field for field (the phase's overlap kept), and
with -o clocks=mount the one clock's phase.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import run_simfs

pytestmark = pytest.mark.mount

SIZE = 2 << 20
CHUNK = 64 << 10
OPTIONS = "disk=sata7200,cpu=flat,cpu_op_us=1000"

# argv: path, chunk, size, wait fd (-1: the first turn is mine), pass fd (-1: nobody to pass to)
READER = r"""
import os, sys
path, chunk, size, wait, give = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def turn():
    if wait >= 0 and os.read(wait, 1) != b"t":
        sys.exit("lost the other reader")
def done():
    if give >= 0:
        os.write(give, b"t")
turn()
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
got = 0
for off in range(0, size, chunk):
    if off:
        turn()
    got += len(os.pread(fd, chunk, off))
    done()
os.close(fd)
sys.exit(0 if got == size else f"read {got} of {size} bytes")
"""


def _readers(mnt, names) -> None:
    """Run one reader per name, in lockstep in the order given; wait for all."""
    n = len(names)
    pipes = [os.pipe() for _ in range(n)] if n > 1 else []
    procs = []
    for i, name in enumerate(names):
        # reader i waits on pipe i and passes the turn to reader i+1 (the last to the first);
        # the first reader's first turn needs nobody
        wait = pipes[i][0] if n > 1 else -1
        give = pipes[(i + 1) % n][1] if n > 1 else -1
        fds = [f for f in (wait, give) if f >= 0]
        procs.append(subprocess.Popen([sys.executable, "-c", READER, str(mnt / name), str(CHUNK), str(SIZE),
                                       str(wait), str(give)], pass_fds=fds, cwd="/"))
    if n > 1:
        os.write(pipes[0][1], b"t")                  # the first reader goes first
    for p in procs:
        assert p.wait(timeout=120) == 0
    for r, w in pipes:
        os.close(r)
        os.close(w)


def _phase(m, names) -> dict:
    """Prepare (b cold on the drive, a in simfs's cache), run the readers; the phase's record."""
    run_simfs("ctl", m.mnt, "drop-caches")
    with open(m.mnt / "a", "rb") as f:
        while f.read(1 << 20):
            pass
    run_simfs("ctl", m.mnt, "mark", "readers")
    _readers(m.mnt, names)
    run_simfs("ctl", m.mnt, "mark", "after")
    phase = [p for p in m.stats()["time"]["phases"] if p["name"] == "readers"][-1]
    return {"elapsed": phase["elapsed"], "counters": phase["counters"], "disk_time": phase["disk_time"]}


def _run(simfs_factory, name, clocks, *phases, record=None) -> list[dict]:
    """A fresh mount with files a and b; the record of each phase (its readers) in turn.
    `record`: a directory for the mount's op log and statistics (run.log, run.json) and a copy
    of the image from before it (copy.img; the factory's first mount is undone for it)."""
    m = simfs_factory(f"{OPTIONS},clocks={clocks}", size="64M", name=name)
    if record is not None:
        m.umount()
        shutil.copyfile(m.image, record / "copy.img")
        m.mount(f"{OPTIONS},clocks={clocks},oplog={record / 'run.log'},stats={record / 'run.json'}")
    for f in ("a", "b"):
        with open(m.mnt / f, "wb") as out:
            for _ in range(SIZE // (1 << 20)):
                out.write(b"r" * (1 << 20))
    out = [_phase(m, names) for names in phases]
    m.umount()
    return out


def test_two_readers_overlap_and_repeat(simfs_factory, tmp_path):
    runs = [_run(simfs_factory, f"both{i}", "process", ["a", "b"], record=tmp_path if i == 0 else None)[0]
            for i in range(3)]
    assert runs[0] == runs[1] == runs[2]            # the same interleaving, the same figures
    both = runs[0]["elapsed"]
    serial = _run(simfs_factory, "serial", "mount", ["a", "b"])[0]
    one_clock = serial["elapsed"]
    # the recorded run replayed: the mount's statistics, the overlap kept; on one clock, serial's
    recorded = json.loads((tmp_path / "run.json").read_text())
    shutil.copyfile(tmp_path / "copy.img", tmp_path / "copy2.img")
    run_simfs("replay", tmp_path / "run.log", tmp_path / "copy.img", "--stats", tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == recorded
    r = run_simfs("replay", tmp_path / "run.log", tmp_path / "copy2.img", "-o", "clocks=mount", "--json")
    phase = [p for p in json.loads(r.stdout)["time"]["phases"] if p["name"] == "readers"][-1]
    assert phase["elapsed"] == one_clock and phase["counters"] == serial["counters"]
    # b first: its phase starts when the others' did (a's reads are CPU only: any time will do)
    alone = [p["elapsed"] for p in _run(simfs_factory, "alone", "process", ["b"], ["a"])]
    assert runs[0]["counters"]["disk_reads"] > 0
    assert both < one_clock                          # one clock: one after the other
    assert both < sum(alone)
    assert both >= max(alone)                        # no faster than the busier alone


def test_tools_through_per_process_clocks(simfs_factory, tmp_path):
    """The handles each open gets under clocks=process: two processes reading one file at once,
    a writer and a reader of another, a copy and its comparison; the image stays clean."""
    m = simfs_factory(f"{OPTIONS},clocks=process", size="64M", name="tools")
    data = os.urandom(3 << 20)
    (tmp_path / "src").write_bytes(data)
    subprocess.run(["cp", str(tmp_path / "src"), str(m.mnt / "f")], check=True)
    cats = [subprocess.Popen(["cat", str(m.mnt / "f")], stdout=subprocess.PIPE) for _ in range(2)]
    outs = [c.communicate(timeout=60)[0] for c in cats]
    assert outs == [data, data]
    subprocess.run(f"dd if={m.mnt / 'f'} bs=64k status=none | tee {m.mnt / 'g'} | cmp - {tmp_path / 'src'}",
                   shell=True, check=True)
    assert (m.mnt / "g").read_bytes() == data
    stats = m.stats()
    assert stats["unexpected_exceptions"] == 0
