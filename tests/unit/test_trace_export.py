"""A request trace exported as blktrace files, read by the real blkparse and btt; the latency
histogram against the sorted latencies of the same trace."""

import math
import random
import re
import shutil
import subprocess
import sys

import pytest

from disk_models import make_disk
from simfs.blockio.blktrace import own_figures
from simfs.blockio.clock import SimClock
from simfs.blockio.histogram import REL_ERROR, Histogram
from simfs.blockio.stats import Stats
from simfs.blockio.trace import TraceWriter, read_trace


def make_trace(path, n=400, seed=5):
    """A small trace through the real clock and a rotating model: random and sequential
    reads and writes, some waited for, some not (so requests queue)."""
    rng = random.Random(seed)
    tw, stats = TraceWriter(path), Stats()
    clock = SimClock(make_disk("sata7200"), stats, 8, trace=tw)
    for i in range(n):
        blk = rng.randrange(0, 200000) if rng.random() < 0.5 else 50000 + i * 16
        clock.io(rng.choice("RRW"), blk, rng.randint(1, 16), rng.choice(["data", "inode", "dir"]),
                 wait=rng.random() < 0.7)
        clock.cpu(rng.random() * 0.002)
    tw.close()
    return stats


def simfs(*args):
    return subprocess.run([sys.executable, "-m", "simfs.cli", *args], capture_output=True, text=True)


def btt_figures(text):
    """Q2C and D2C (avg, N) of btt's All Devices table, and the Q2Q and D2D seek NSEEKS, MEAN."""
    out = {}
    for name in ("Q2C", "D2C"):
        m = re.search(rf"^{name}\s+\S+\s+(\S+)\s+\S+\s+(\d+)$", text, re.M)
        out[name] = (float(m.group(1)), int(m.group(2)))
    for name in ("Q2Q", "D2D"):
        sect = text.split(f"Device {name} Seek Information")[1]
        m = re.search(r"\(\s*8,\s*0\) \|\s+(\d+)\s+(\S+)", sect)
        out[name] = (int(m.group(1)), float(m.group(2)))
    return out


def test_blkparse_and_btt_read_the_export(tmp_path):
    for tool in ("blkparse", "btt"):
        assert shutil.which(tool), f"{tool} is missing: install the blktrace package (make system-packages)"
    trace = tmp_path / "t.trace"
    make_trace(trace)
    r = simfs("trace", "export", str(trace), "--format", "blktrace", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    cols = read_trace(trace)
    n = len(cols["op"])
    reads = cols["op"].count("R")
    p = subprocess.run(["blkparse", "-i", str(tmp_path / "out"), "-d", str(tmp_path / "out.bin")],
                       capture_output=True, text=True, check=True)
    assert re.search(rf"^Events \(out\): {5 * n} entries$", p.stdout, re.M), p.stdout[-600:]
    for action in "QGIDC":         # every request's five events, with R or W as the trace has it
        lines = re.findall(rf"^\s*8,0\s+0\s+\d+\s+\S+\s+1\s+{action}\s+(\S+) (\d+) \+ (\d+)", p.stdout, re.M)
        assert len(lines) == n
        assert sum(1 for rwbs, _, _ in lines if "R" in rwbs) == reads
        assert sorted((int(s), int(k)) for _, s, k in lines) == sorted(zip(cols["lba"], cols["sectors"]))
    b = subprocess.run(["btt", "-i", str(tmp_path / "out.bin"), "-o", str(tmp_path / "btt")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert b.returncode == 0, b.stderr
    got = btt_figures((tmp_path / "btt.avg").read_text())
    own = own_figures(cols)
    assert own["q2d"] > 0.001                                      # requests did queue
    assert got["Q2C"][1] == got["D2C"][1] == n
    assert got["Q2C"][0] == pytest.approx(own["q2c"], rel=0.01)
    assert got["D2C"][0] == pytest.approx(own["d2c"], rel=0.01)
    assert got["Q2Q"] == (n, pytest.approx(own["q2q_seek_mean"], rel=0.01))
    assert got["D2D"] == (n, pytest.approx(own["d2d_seek_mean"], rel=0.01))


def test_histogram_percentiles_match_the_sorted_latencies(tmp_path):
    trace = tmp_path / "t.trace"
    stats = make_trace(trace, n=3000, seed=11)
    cols = read_trace(trace)
    lat = sorted(f - q for f, q in zip(cols["finish"], cols["issue"]))
    h = Histogram()
    for x in lat:
        h.add(x)
    s = h.summary()
    assert s["count"] == len(lat) and s["max"] == lat[-1]
    assert s["mean"] == pytest.approx(sum(lat) / len(lat))
    for p in (50, 90, 99, 99.9):
        exact = lat[max(1, math.ceil(p / 100 * len(lat))) - 1]
        assert s[f"p{p:g}"] == pytest.approx(exact, rel=REL_ERROR), p
    # the volume's own histogram (Stats.disk) is the same one, and merging halves changes nothing
    assert stats.snapshot(0.0)["total"]["latency"]["disk"]["all"]["p99"] == pytest.approx(s["p99"], rel=1e-9)
    a, b = Histogram(), Histogram()
    for i, x in enumerate(reversed(lat)):
        (a if i % 2 else b).add(x)
    assert a.merge(b).to_dict()["counts"] == h.to_dict()["counts"]


def test_requests_overlapping_one_in_flight_are_counted(tmp_path):
    """btt pairs events by sector: a block written again while its last write is queued is
    what makes btt's figures differ, and the export names how many there are."""
    from disk_models import make_disk as mk
    tw, stats = TraceWriter(tmp_path / "t.trace"), Stats()
    clock = SimClock(mk("sata7200"), stats, 8, trace=tw)
    clock.io("W", 5000, 4, "data", wait=False)
    clock.io("W", 100000, 1, "inode", wait=False)
    clock.io("W", 100000, 1, "inode", wait=False)    # queued behind its own earlier write
    clock.cpu(0.1)
    clock.io("R", 5002, 1, "data")                    # inside the first write, finished by now
    tw.close()
    cols = read_trace(tmp_path / "t.trace")
    assert own_figures(cols)["overlapping_in_flight"] == 1
    r = simfs("trace", "export", str(tmp_path / "t.trace"), str(tmp_path / "o"))
    assert r.returncode == 0 and "note: 1 requests overlap" in r.stdout


def test_trace_commands_refuse_bad_input_in_one_line(tmp_path):
    (tmp_path / "not.csv").write_text("a,b\n1,2\n")
    make_trace(tmp_path / "t.trace", n=5)
    for args in (["export", str(tmp_path / "missing"), str(tmp_path / "o")],
                 ["export", str(tmp_path / "not.csv"), str(tmp_path / "o")],
                 ["export", str(tmp_path / "t.trace"), str(tmp_path / "nodir" / "o")],
                 ["export", str(tmp_path / "t.trace"), "--format", "csv", str(tmp_path / "o")],
                 ["latency", str(tmp_path)]):
        r = simfs("trace", *args)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, (args, r.stderr)
    assert not list(tmp_path.glob("o.blktrace.*"))


def test_stats_and_compare_show_the_latencies(tmp_path):
    import json
    docs = []
    for name, n in (("a", 200), ("b", 400)):
        stats = make_trace(tmp_path / f"{name}.trace", n=n)
        docs.append(tmp_path / f"{name}.json")
        docs[-1].write_text(json.dumps(stats.snapshot(1.0)))
    r = simfs("stats", str(docs[0]))
    assert r.returncode == 0, r.stderr
    assert "latency in phase all (simulated ms; rotational misses:" in r.stdout
    assert "| disk all " in r.stdout and "p99.9" in r.stdout
    r = simfs("compare", str(docs[0]), str(docs[1]), "--json")
    assert r.returncode == 0, r.stderr
    metrics = {row["metric"] for row in json.loads(r.stdout)}
    assert {"latency disk all p99", "disk time rotation", "rotational_misses"} <= metrics


def test_a_trace_written_before_the_wait_column_still_reads_and_exports(tmp_path):
    from simfs.blockio.trace import FIELDS
    make_trace(tmp_path / "new.trace", n=20)
    rows = (tmp_path / "new.trace").read_text().splitlines()
    assert rows[0].split(",")[-1] == "wait"
    (tmp_path / "old.trace").write_text("\n".join(r.rsplit(",", 1)[0] for r in rows) + "\n")
    assert (tmp_path / "old.trace").read_text().splitlines()[0] == ",".join(FIELDS)
    old = read_trace(tmp_path / "old.trace")
    assert old["wait"] == [1] * 20 and old["lba"] == read_trace(tmp_path / "new.trace")["lba"]
    assert simfs("trace", "export", str(tmp_path / "old.trace"), str(tmp_path / "o")).returncode == 0


def test_results_carry_the_latencies_to_csv_and_the_report_table(tmp_path):
    """A record's latency (records.latency_of of a phase) reaches results.csv's columns and
    the report's table, with the same figures as the statistics."""
    import csv
    from experiments.report import latency_columns, latency_table, write_csv
    from experiments.records import latency_of
    stats = make_trace(tmp_path / "t.trace", n=300)
    phase = stats.snapshot(1.0)["phases"][0]
    lat = latency_of(phase)
    assert lat["split"]["rotation"] == phase["disk_time"]["rotation"]
    rec = {"config": "c", "rep": 0, "phase": "p", "sim": 1.0, "wall": 0.0, "counters": {}, "extra": {},
           "latency": lat}
    doc = {"experiment": "x", "configs": [{"name": "c", "params": {}}], "records": [rec],
           "summary": [{**rec, "latency": lat}]}
    write_csv(doc, tmp_path / "r.csv")
    row = next(csv.DictReader((tmp_path / "r.csv").read_text().splitlines()))
    assert float(row["disk_lat_p99"]) == phase["latency"]["disk"]["all"]["p99"]
    assert float(row["disk_rotation_s"]) == phase["disk_time"]["rotation"]
    assert int(row["rotational_misses"]) == phase["latency"]["rotational_misses"]
    assert latency_columns(rec)["disk_lat_max"] == phase["latency"]["disk"]["all"]["max"]
    header, rows = latency_table(doc)
    assert rows[0][2] == f"{phase['latency']['disk']['all']['count']:,}"
    assert rows[0][header.index("p99 ms")] == f"{1000 * phase['latency']['disk']['all']['p99']:.3f}"
    assert latency_of({"disk_time": {}}) == {}          # statistics from before latencies: none


def test_rotational_misses_count_backward_reads_not_forward_ones():
    """Reading blocks in descending order (the delayed-inode find of results/summary) waits
    almost a revolution each time on the same track: a miss; ascending, the drive's
    read-ahead serves them: none. Random reads across the disk change cylinder: none."""
    def misses(blocks):
        stats = Stats()
        clock = SimClock(make_disk("sata7200"), stats, 8)
        for b in blocks:
            clock.io("R", b, 1, "dir")
            clock.cpu(0.00012)
        return stats.snapshot(clock.now)["total"]["latency"]["rotational_misses"], clock.now
    back, t_back = misses(range(32644, 32600, -1))
    fwd, t_fwd = misses(range(32600, 32644))
    assert back >= 40 and fwd == 0
    assert t_back > 40 * 0.007 > 10 * t_fwd
    rng = random.Random(3)
    assert misses([rng.randrange(0, 70_000_000) for _ in range(40)])[0] <= 2
