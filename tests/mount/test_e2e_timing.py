"""Simulated time through a real mount (issue 5): unpack a generated tree with tar, unmount,
mount again and read everything back with `tar cf /dev/zero .` (GNU tar reads no file data
when the archive is /dev/null, so a read-back never uses /dev/null).

* the simulated time is > 0 and changes with the disk preset; `disk=ideal` costs no disk time;
* the same workload on identical images (same --uuid/--hash-seed) gives identical statistics,
  FUSE request counts and request traces, bit for bit. The stats document holds no wall-clock
  figure at all; the only field that differs is `image` (the path of each run's image);
* `-o trace=` feeds `simfs plot`, `simfs stats` shows the time tables, `simfs mkfs --disk`
  reports newfs time, and the disk's `drive_cache` no longer clashes with the mount's `cache`.

Budget: about 30 s (five mounted workloads of a 500-file tree).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import SimfsMount, e2fsck, make_image, run, run_simfs, tree_tarball

UUID = "00112233-4455-6677-8899-aabbccddeeff"
HASH_SEED = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
MKFS = ("--uuid", UUID, "--hash-seed", HASH_SEED)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    return tree_tarball(tmp_path_factory.mktemp("timing-tree"), seed=5, files=500)


def workload(tmp_path, name: str, disk: str, tarball) -> dict:
    """mkfs, mount, unpack, umount, mount, tar cf /dev/zero ., umount. Returns the statistics
    (/.simfs/stats just before each unmount and -o stats= written at each unmount), the traces
    and `simfs stats` output."""
    image = make_image(tmp_path / f"{name}.img", "256M", *MKFS)
    mnt = tmp_path / f"{name}.mnt"
    mnt.mkdir()
    m = SimfsMount(image, mnt)
    out = {"image": image}
    try:
        for phase in ("unpack", "readback"):
            trace, final = tmp_path / f"{name}.{phase}.csv", tmp_path / f"{name}.{phase}.json"
            m.mount(f"disk={disk},trace={trace},stats={final}")
            (mnt / ".simfs" / "mark").write_text(phase)
            if phase == "unpack":
                run(["tar", "xf", tarball, "-C", mnt])
            else:
                run(["tar", "cf", "/dev/zero", "."], cwd=mnt)
            out[phase + "_live"] = m.stats()
            out[phase + "_table"] = run_simfs("stats", mnt).stdout
            m.umount()
            out[phase] = json.loads(final.read_text())
            out[phase + "_trace"] = trace
    finally:
        m.force_cleanup()
    rc, log = e2fsck(image)
    assert rc == 0, log
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tarball):
    """One workload per disk, and sata7200 twice (identical images) for determinism."""
    out = {}
    for name, disk in (("sata7200", "sata7200"), ("again", "sata7200"), ("wd1200jb", "wd1200jb"),
                       ("ideal", "ideal")):
        out[name] = workload(tmp_path_factory.mktemp(name), name, disk, tarball)
    return out


def _phase(doc: dict, name: str) -> dict:
    return next(p for p in doc["phases"] if p["name"] == name)


@pytest.mark.mount
def test_simulated_time_is_positive_and_depends_on_the_disk(runs):
    for name in ("sata7200", "wd1200jb"):
        for phase in ("unpack", "readback"):
            p = _phase(runs[name][phase], phase)
            assert p["elapsed"] > 0 and p["waited"] > 0, (name, phase)
            assert p["disk_time"]["busy"] > 0, (name, phase)
            c = p["counters"]
            assert c["disk_reads" if phase == "readback" else "disk_writes"] > 0
        rb = _phase(runs[name]["readback"], "readback")["counters"]
        assert rb["sectors_read"] * 512 >= 0.9 * _tree_bytes(runs[name]), "tar read the file data"
    for phase in ("unpack", "readback"):
        a = _phase(runs["sata7200"][phase], phase)
        b = _phase(runs["wd1200jb"][phase], phase)
        assert a["elapsed"] != b["elapsed"] and a["disk_time"]["busy"] != b["disk_time"]["busy"]
        # the same requests, only the drive differs
        assert a["counters"]["disk_reads"] == b["counters"]["disk_reads"]
    # the 2003 PATA drive (8.9 ms seeks, 50 MB/s) is slower than the 2009 SATA one
    assert runs["wd1200jb"]["unpack"]["now"] > runs["sata7200"]["unpack"]["now"]


@pytest.mark.mount
def test_the_drive_s_own_work_is_in_the_statistics(runs):
    """A write-cached drive destages what the unpack wrote; the unmount's FLUSH CACHE waits
    for it; `simfs stats` shows both in a table of their own."""
    total = runs["sata7200"]["unpack"]["total"]
    c, dt = total["counters"], total["disk_time"]
    assert 0 < c["sectors_destaged"] <= c["sectors_written"] and c["drive_destages"] > 0
    assert c["drive_flushes"] >= 1 and dt["flush"] > 0
    assert dt["destage_seek"] + dt["destage_rotation"] + dt["destage_transfer"] > 0
    assert "the drive's own work" in runs["sata7200"]["unpack_table"]
    ideal = runs["ideal"]["unpack"]["total"]["counters"]
    assert "drive_destages" not in ideal and ideal["drive_flushes"] >= 1


def _tree_bytes(r) -> int:
    return _phase(r["unpack"], "unpack")["counters"]["bytes_written"]


@pytest.mark.mount
def test_ideal_disk_costs_no_disk_time(runs):
    for phase in ("unpack", "readback"):
        doc = runs["ideal"][phase]
        total = doc["total"]
        assert all(v == 0.0 for v in total["disk_time"].values()), total["disk_time"]
        assert total["counters"]["disk_reads"] + total["counters"]["disk_writes"] > 0
        # what is left is the CPU charge (docs/statistics.md, CPU time): each operation's time
        # is its own charge, and nothing else takes any
        assert total["operations"]["getattr"]["time"] > 0
        charged = sum(o["time"] for o in total["operations"].values())
        assert total["elapsed"] == pytest.approx(charged, rel=1e-6)
        assert doc["now"] < runs["sata7200"][phase]["now"]


@pytest.mark.mount
def test_same_workload_same_statistics_bit_for_bit(runs):
    a, b = runs["sata7200"], runs["again"]
    for key in ("unpack", "readback"):
        assert a[key] == b[key], f"-o stats= of {key} differ"
        live_a, live_b = dict(a[key + "_live"]), dict(b[key + "_live"])
        # the only field that differs: the image's path. No field is wall-clock based.
        assert live_a.pop("image") != live_b.pop("image")
        assert live_a == live_b, f"/.simfs/stats of {key} differ"
        assert a[key + "_trace"].read_bytes() == b[key + "_trace"].read_bytes()


@pytest.mark.mount
def test_simfs_stats_shows_the_time_tables(runs):
    text = runs["sata7200"]["readback_table"]
    for words in ("simulated time", "phases", "elapsed (s)", "waited by tools (s)", "disk busy (s)",
                  "seeks (>128 sectors)", "drive-cache hits", "buffer-cache hits", "buffer-cache misses",
                  "dirty_blocks", "sectors read", "disk time", "rotation", "rmw", "operations",
                  "| readback", "disk requests by cause"):
        assert words in text, words
    live = runs["sata7200"]["readback_live"]
    for line in text.splitlines():
        assert line == line.rstrip(), "trailing blanks"
    # (reading the stats file is itself a getattr of / charged to the clock, so compare counts)
    phase = _phase(live["time"], "readback")
    row = next(ln for ln in text.splitlines() if ln.startswith("| sectors read "))
    assert f" {phase['counters']['sectors_read']:,} " in row


@pytest.mark.mount
def test_plot_two_traces(runs, tmp_path):
    png = tmp_path / "unpack.png"
    r = run_simfs("plot", runs["sata7200"]["unpack_trace"], runs["wd1200jb"]["unpack_trace"],
                  "-o", png, "--label", "sata7200", "--label", "wd1200jb", "--title", "tar xf")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in r.stdout.splitlines()
             if ln.startswith("|")]                   # Markdown: stdout is a pipe here
    assert {"avg seeks/s", "avg MB/s", "avg IO/s"} <= set(table[0])
    rows = {row[0]: row for row in table[2:4]}
    # run time of each trace: first request's start to last request's finish
    assert float(rows["sata7200"][1]) < float(rows["wd1200jb"][1])


# without mounting ---------------------------------------------------------------------------------
def test_mkfs_on_a_disk_reports_simulated_time(tmp_path):
    r = run_simfs("mkfs", tmp_path / "w.img", "--size", "1G", "--disk", "wd-ears", *MKFS)
    line = r.stdout.splitlines()[-1]
    assert line.startswith("mkfs on wd-ears: ") and " s simulated (" in line and "requests" in line
    seconds = float(line.split(": ")[1].split()[0])
    assert seconds > 0
    r2 = run_simfs("mkfs", tmp_path / "i.img", "--size", "1G", "--disk", "ideal", *MKFS)
    assert "mkfs on ideal: 0.000 s simulated" in r2.stdout
    rc, log = e2fsck(tmp_path / "w.img")
    assert rc == 0, log
    dump = subprocess.run(["dumpe2fs", "-h", str(tmp_path / "w.img")], capture_output=True, text=True).stdout
    assert UUID in dump and HASH_SEED in dump
    # the file is sized like the untimed mkfs's (130M: the small last group is dropped)
    run_simfs("mkfs", "-q", tmp_path / "a.img", "--size", "130M", *MKFS)
    run_simfs("mkfs", "-q", tmp_path / "b.img", "--size", "130M", "--disk", "ideal", *MKFS)
    assert (tmp_path / "a.img").stat().st_size == (tmp_path / "b.img").stat().st_size == 128 << 20


@pytest.mark.parametrize("args, words", [
    (("--disk", "nosuch"), "unknown disk preset"),
    (("--disk", "sata7200,cache=8"), "drive_cache"),
    (("--uuid", "xyz"), "not a UUID"),
    (("--hash-seed", "xyz"), "not a UUID"),
])
def test_mkfs_bad_options(tmp_path, args, words):
    r = run_simfs("mkfs", tmp_path / "x.img", "--size", "64M", *args, check=False)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.img").exists()


def test_drive_cache_and_the_buffer_cache_are_different_options():
    import disk_models
    from simfs.fuse import mountopts
    m = mountopts.parse(["disk=sata7200,drive_cache=8,rpm=5400,cache=64M"])
    assert m.volume.cache == 64 << 20
    assert disk_models.resolve(m.volume.disk).values["drive_cache"] == 8.0
    assert disk_models.resolve(m.volume.disk).values["rpm"] == 5400.0
    with pytest.raises(ValueError, match="drive_cache"):
        disk_models.make_disk("sata7200,cache=8")
    show = run_simfs("disks", "show", "sata7200").stdout
    assert "drive_cache" in show and "mount option cache=" in show
