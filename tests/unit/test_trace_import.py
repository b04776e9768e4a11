"""`simfs trace import`: the kernel's own captures (tracefs, committed under tests/unit/data),
blkparse's text, blktrace's binary (round trip through `simfs trace export`), and one line
with exit status 2 for a capture that is malformed, cut short or ambiguous."""

from __future__ import annotations

import os
import re
import struct

import pytest

from simfs.blockio.trace import read_trace
from simfs.blockio.traceimport import (CaptureError, blktrace_events, read_capture, read_extras,
                                       write_trace)
from tests.conftest import run_simfs
from tests.unit.test_trace_export import make_trace
from pathlib import Path

DATA = os.path.join(os.path.dirname(__file__), "data")
FIND, UNTAR, BLKPARSE = (os.path.join(DATA, f) for f in ("find.tracefs", "untar.tracefs",
                                                          "find-head.blkparse"))
ISSUE = re.compile(r"block_rq_issue: (\d+,\d+) ([A-Z]+) \d+ \(\) (\d+) \+ (\d+) \S+ \[([^\]]*)\]")


def issued(path):
    """(rwbs, sector, sectors, process) of every block_rq_issue line with data, by a plain regex."""
    with open(path) as f:
        return [(m[2], int(m[3]), int(m[4]), m[5]) for m in map(ISSUE.search, f) if m and int(m[4])]


@pytest.mark.parametrize("path", [FIND, UNTAR])
def test_the_kernels_capture_imports_request_for_request(tmp_path, path):
    fmt, reqs, notes = read_capture(path)
    assert fmt == "tracefs" and notes["devices"] == ["7,0"]
    want = issued(path)
    assert len(want) > 300
    assert sorted((r.rwbs, r.lba, r.sectors, r.process) for r in reqs) == sorted(want)
    assert all(r.issue <= r.start < r.finish for r in reqs)
    out = tmp_path / "t.trace"
    write_trace(reqs, str(out))
    cols, extra = read_trace(out), read_extras(str(out))
    assert cols["issue"][0] == 0.0 and cols["issue"] == sorted(cols["issue"])
    assert [c == "meta" for c in cols["cause"]] == ["M" in f[1:] for f in extra["rwbs"]]
    assert cols["wait"] == [int("A" not in f if o == "R" else "S" in f[1:])
                            for o, f in zip(cols["op"], extra["rwbs"])]


def test_find_is_reads_untar_is_writes_and_the_flush_is_counted():
    _, find, _ = read_capture(FIND)
    _, untar, notes = read_capture(UNTAR)
    assert {r.op for r in find} == {"R"} and sum(r.op == "W" for r in untar) > 0.9 * len(untar)
    assert any("A" in r.rwbs for r in find) and any("M" in r.rwbs for r in find)
    with open(UNTAR) as f:
        flushes = sum(1 for line in f if re.search(r"block_rq_issue: 7,0 F\w* 0 \(\) \d+ \+ 0 ", line))
    assert notes["no_data"] == flushes == 1


def test_blkparse_text_gives_the_requests_the_tracefs_capture_gave():
    """find-head.blkparse is blkparse's text of the first 150 requests of find.tracefs."""
    fmt, got, _ = read_capture(BLKPARSE)
    _, want, _ = read_capture(FIND)
    want = want[:150]
    assert fmt == "blkparse" and len(got) == 150
    t0 = want[0].issue
    for g, w in zip(got, want):
        assert (g.op, g.lba, g.sectors, g.rwbs) == (w.op, w.lba, w.sectors, w.rwbs)
        assert g.issue == pytest.approx(w.issue - t0, abs=1e-9)
        assert g.finish == pytest.approx(w.finish - t0, abs=1e-9)


def _same_requests(a: dict, b: dict):
    assert len(a["op"]) == len(b["op"])
    for k in ("op", "lba", "sectors", "wait"):
        assert a[k] == b[k], k
    assert [c != "data" for c in a["cause"]] == [c != "data" for c in b["cause"]]
    for k in ("issue", "start", "finish"):
        t0a, t0b = a["issue"][0], b["issue"][0]
        assert [x - t0a for x in a[k]] == pytest.approx([x - t0b for x in b[k]], abs=2e-9), k


def test_round_trip_simfs_trace_to_blktrace_and_back(tmp_path):
    """simfs trace export --format blktrace, then import: the same requests, in the same order,
    with the same times (ns), R/W, metadata and waited-for flags; queued requests included."""
    trace = tmp_path / "t.trace"
    make_trace(trace)
    run_simfs("trace", "export", str(trace), "--format", "blktrace", str(tmp_path / "bt"))
    back = tmp_path / "back.trace"
    r = run_simfs("trace", "import", str(tmp_path / "bt.blktrace.0"), "-o", str(back))
    assert "(blktrace): 400 requests" in r.stdout
    a, b = read_trace(trace), read_trace(back)
    assert max(s - q for s, q in zip(a["start"], a["issue"])) > 0.001       # some queued
    _same_requests(a, b)
    assert set(read_extras(str(back))["process"]) == {"simfs"}


def test_round_trip_of_the_kernels_stream(tmp_path):
    """The kernel's find imported, exported, imported again (by base name): the same requests
    and rwbs flags."""
    one, two = tmp_path / "1.trace", tmp_path / "2.trace"
    run_simfs("trace", "import", FIND, "-o", str(one))
    run_simfs("trace", "export", str(one), "--format", "blktrace", str(tmp_path / "k"))
    run_simfs("trace", "import", str(tmp_path / "k"), "-o", str(two))
    _same_requests(read_trace(one), read_trace(two))
    assert read_extras(str(one))["rwbs"] == read_extras(str(two))["rwbs"]


def test_big_endian_blktrace_reads_the_same(tmp_path):
    """blktrace writes the tracing host's byte order: a big-endian file reads the same."""
    trace = tmp_path / "t.trace"
    make_trace(trace, n=50)
    run_simfs("trace", "export", str(trace), "--format", "blktrace", str(tmp_path / "le"))
    data = (tmp_path / "le.blktrace.0").read_bytes()
    ev, out, off = struct.Struct("<IIQQIIIIIHH"), bytearray(), 0
    while off < len(data):
        fields = ev.unpack_from(data, off)
        out += struct.pack(">IIQQIIIIIHH", *fields) + data[off + 48:off + 48 + fields[-1]]
        off += 48 + fields[-1]
    (tmp_path / "be.blktrace.0").write_bytes(bytes(out))
    le = [(e.time, e.kind, e.sector, e.nr, e.rwbs) for e in blktrace_events(str(tmp_path / "le"))]
    be = [(e.time, e.kind, e.sector, e.nr, e.rwbs) for e in blktrace_events(str(tmp_path / "be"))]
    assert le == be and len(le) == 3 * 50          # Q, D, C (G, I passed over)


def test_device_filter(tmp_path):
    """Two devices: refused without --device (naming both), each kept with it."""
    text = Path(FIND).read_text()
    other = re.sub(r"block_rq_(issue|complete): 7,0 ", r"block_rq_\1: 8,16 ", text)
    mixed = tmp_path / "mixed.tracefs"
    mixed.write_text(text + "\n".join(ln for ln in other.splitlines() if not ln.startswith("#")) + "\n")
    r = run_simfs("trace", "import", str(mixed), "-o", str(tmp_path / "t"), check=False)
    assert r.returncode == 2 and "7,0" in r.stderr and "8,16" in r.stderr and "--device" in r.stderr
    n = len(issued(FIND))
    for dev in ("7,0", "8,16"):
        _, reqs, _ = read_capture(str(mixed), dev)
        assert len(reqs) == n and {r.dev for r in reqs} == {dev}


def _cut(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text) if isinstance(text, str) else p.write_bytes(text)
    return str(p)


def test_malformed_and_truncated_captures_are_one_line_and_status_2(tmp_path):
    lines = Path(FIND).read_text().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if "block_rq_issue" in ln)
    comp = next(i for i, ln in enumerate(lines) if "block_rq_complete" in ln)
    bt = tmp_path / "bt"
    make_trace(tmp_path / "x.trace", n=20)
    run_simfs("trace", "export", str(tmp_path / "x.trace"), "--format", "blktrace", str(bt))
    raw = (tmp_path / "bt.blktrace.0").read_bytes()
    cases = {
        # cut in the middle of its last line
        "cut.tracefs": ("".join(lines)[:-30], rf":{len(lines)}: block_rq_complete does not parse"),
        # the completion of the first request lost: it never completes
        "nocomp.tracefs": ("".join(lines[:comp] + lines[comp + 1:]), rf":{first + 1}: the request issued"),
        "garbled.tracefs": ("".join(lines[:first] + [lines[first].replace(" + 8", " + x")]
                                    + lines[first + 1:]), rf":{first + 1}: block_rq_issue does not parse"),
        "lost.tracefs": ("".join(lines[:first + 2] + ["CPU:1 [LOST 12 EVENTS]\n"] + lines[first + 2:]),
                         rf":{first + 3}: the kernel lost events"),
        "cut.blkparse": (Path(BLKPARSE).read_text()[:5000], r":\d+: "),
        "cut.blktrace.0": (raw[:-20], r"event \d+ \(byte \d+\): cut short"),
        "words.txt": ("hello world\n", r"not a tracefs, blkparse or blktrace capture"),
        "empty.txt": ("", r"no events"),
    }
    for name, (text, says) in cases.items():
        path = _cut(tmp_path, name, text)
        with pytest.raises(CaptureError, match=says):
            read_capture(path)
        if name not in ("cut.tracefs", "nocomp.tracefs", "cut.blktrace.0", "words.txt"):
            continue                      # the command prints the same message: a few suffice
        r = run_simfs("trace", "import", path, "-o", str(tmp_path / "out.trace"), check=False)
        assert r.returncode == 2 and r.stdout == "", name
        assert len(r.stderr.strip().splitlines()) == 1 and re.search(says, r.stderr), (name, r.stderr)
    r = run_simfs("trace", "import", FIND, "-o", str(tmp_path / "o"), "--device", "loop0", check=False)
    assert r.returncode == 2 and "MAJOR,MINOR" in r.stderr


def test_pairing_is_first_in_first_out_and_early_completions_are_skipped(tmp_path):
    """Two reads of one sector in flight at once complete in issue order; a write of that
    sector is paired by its own completion; a completion whose issue the capture missed is
    skipped and counted; a requeued request keeps its first issue time."""
    line = "   dd-7  [000] ..... {t}: block_rq_{ev}: 7,0 {rwbs} {b}() {s} + 8 be,0,4 [{tail}]\n"
    events = [(0.5, "complete", "R", 900, "0"),                 # issued before the capture
              (1.0, "issue", "R", 100, "dd"), (1.5, "issue", "W", 100, "dd"),
              (2.0, "issue", "R", 100, "dd"), (2.5, "complete", "W", 100, "0"),
              (3.0, "complete", "R", 100, "0"), (4.0, "complete", "R", 100, "0"),
              (5.0, "issue", "R", 300, "dd"), (5.1, "requeue", "R", 300, "0"),
              (5.2, "issue", "R", 300, "dd"), (6.0, "complete", "R", 300, "0")]
    text = "".join(line.format(t=f"{t:.6f}", ev=ev, rwbs=rw, b="4096 " if ev == "issue" else "",
                               s=s, tail=tail) for t, ev, rw, s, tail in events)
    path = tmp_path / "c.tracefs"
    path.write_text(text)
    _, reqs, notes = read_capture(str(path))
    assert [(r.op, r.issue, r.start, r.finish) for r in reqs] == \
        [("R", 1.0, 1.0, 3.0), ("W", 1.5, 1.5, 2.5), ("R", 2.0, 2.0, 4.0), ("R", 5.0, 5.2, 6.0)]
    assert notes["early_completions"] == 1


def test_a_kernels_blktrace_events_bio_merges_and_passthrough(tmp_path):
    """Events as a Linux kernel writes them (blktrace_api.h): Q and M of bios carry no FS
    category, the request's G, I, D, C do; a bio back-merged into a request makes no request of
    its own; a pass-through (PC) command is no file-system request; the process name comes from
    the notify event."""
    ev = struct.Struct("<IIQQIIIIIHH")
    Q, M, G, I, D, C = 1, 2, 4, 12, 7, 8
    TCQ, TCI, TCC, FS, PC, W, SYNC = 16, 64, 128, 256, 512, 2, 8
    out = bytearray()

    def put(seq, t, sector, nbytes, act, cats, pdu=b"", pid=42):
        out.extend(ev.pack(0x65617407, seq, t, sector, nbytes, act | (cats << 16), pid, (8 << 20) | 16,
                           0, 0, len(pdu)) + pdu)
    put(0, 0, 0, 0, 0, 1 << 10, b"kworker/u8:2\0")                        # notify: pid 42's name
    put(1, 1000, 100, 4096, Q, TCQ | W | SYNC)
    put(2, 1500, 108, 4096, Q, TCQ | W | SYNC)
    put(3, 1600, 108, 4096, M, TCQ | W | SYNC)                            # back merge into 100
    put(4, 1700, 100, 8192, G, TCQ | W | SYNC | FS)
    put(5, 1800, 100, 8192, I, TCQ | W | SYNC | FS)
    put(6, 2000, 100, 8192, D, TCI | W | SYNC | FS)
    put(7, 2100, 0, 0, D, TCI | PC)                                       # a SCSI command
    put(8, 9000, 100, 8192, C, TCC | W | SYNC | FS)
    put(9, 9100, 0, 0, C, TCC | PC)
    (tmp_path / "k.blktrace.0").write_bytes(bytes(out))
    fmt, reqs, notes = read_capture(str(tmp_path / "k"))
    assert fmt == "blktrace" and notes["devices"] == ["8,16"]
    assert [(r.op, r.lba, r.sectors, r.rwbs, r.process, r.issue, r.start, r.finish) for r in reqs] == \
        [("W", 100, 16, "WS", "kworker/u8:2", 1e-6, 2e-6, 9e-6)]


def test_blkparse_lines_of_a_real_machine(tmp_path):
    """blkparse's output of a kernel's capture: remaps, plugs, unplugs, messages, a flush
    without sectors, a bio merged into a request; then the summary."""
    text = """\
  8,0    1        1     0.000000000  4162  A  WS 3417048 + 8 <- (8,1) 3414976
  8,0    1        2     0.000000400  4162  Q  WS 3417048 + 8 [jbd2/sda1-8]
  8,0    1        3     0.000001000  4162  G  WS 3417048 + 8 [jbd2/sda1-8]
  8,0    1        4     0.000001100  4162  P   N [jbd2/sda1-8]
  8,0    1        5     0.000001500  4162  Q  WS 3417056 + 8 [jbd2/sda1-8]
  8,0    1        6     0.000001600  4162  M  WS 3417056 + 8 [jbd2/sda1-8]
  8,0    1        7     0.000002000  4162  U   N [jbd2/sda1-8] 1
  8,0    1        8     0.000002100  4162  I  WS 3417048 + 16 [jbd2/sda1-8]
  8,0    1        9     0.000003000  4162  D  WS 3417048 + 16 [jbd2/sda1-8]
  8,0    1        0     0.000003100     0  m   N cfq4162S / dispatched a request
  8,0    1       10     0.000004000  4162  D  FN [jbd2/sda1-8]
  8,0    0        1     0.000200000     0  C  WS 3417048 + 16 [0]
  8,0    0        2     0.000300000     0  C  FN [0]

CPU0 (sda):
 Reads Queued:           0,        0KiB\t Writes Queued:           2,        8KiB
"""
    path = tmp_path / "real.blkparse"
    path.write_text(text)
    fmt, reqs, _ = read_capture(str(path))
    assert fmt == "blkparse"
    assert [(r.op, r.lba, r.sectors, r.rwbs, r.process, r.issue, r.start, r.finish) for r in reqs] == \
        [("W", 3417048, 16, "WS", "jbd2/sda1-8", 4e-7, 3e-6, 2e-4)]
