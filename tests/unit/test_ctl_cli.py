"""The pieces of items 1-3 and 7 that need no mount: the mount helper's argument handling,
the options shown in force, `simfs ctl`'s refusals, the unmount summary and `stats --diff`
on files, mkfs's positional size and the did-you-mean suggestions."""

from __future__ import annotations

import json
import os

import pytest

from simfs.cli.helper import kernel_defaults, mount_options, parse_helper_args
from simfs.cli.main import main
from simfs.cli.stats import unmount_summary
from simfs.fs.types import VolumeOptions
from simfs.fuse import mountopts


def test_helper_drops_mount8_options_and_keeps_values_with_commas():
    img, mnt, opts, fake = parse_helper_args(
        ["/i.img", "/m", "-o", "rw,noauto,_netdev,user,nofail,x-a=1,X-b,comment=c,defaults,"
                               "disk=sata7200,rpm=5400,alloc=cg,nosuid", "-n", "-t", "fuse.simfs"])
    assert (img, mnt, fake) == ("/i.img", "/m", False)
    assert opts == "rw,disk=sata7200,rpm=5400,alloc=cg,nosuid"
    m = mountopts.parse([opts])
    assert m.volume.disk == "sata7200,rpm=5400" and m.volume.alloc == "cg" and m.kernel_flags == ["nosuid"]
    assert parse_helper_args(["-f", "a", "b"])[3] is True
    if os.geteuid() == 0:          # mount(8) never passes its defaults suid and dev: made explicit
        assert kernel_defaults("rw,alloc=cg") == "suid,dev,rw,alloc=cg"
        assert kernel_defaults("rw,nosuid,nodev,noexec") == "rw,nosuid,nodev,noexec"
        assert kernel_defaults("rw,nodev") == "suid,rw,nodev"
    assert mount_options("defaults") == ""
    for bad in (["a"], ["a", "b", "c"], ["a", "b", "-o"], ["a", "b", "--bogus"]):
        with pytest.raises(ValueError):
            parse_helper_args(bad)


def test_options_in_force_include_defaults():
    m = mountopts.parse(["alloc=cg,disk=wd1200jb"])
    assert m.default_fsname("/x/d.img") == "/x/d.img"     # the source, as a device's path
    shown = m.policies()
    d = VolumeOptions()
    assert shown.startswith("disk=wd1200jb;alloc=cg;")
    assert f"writeback={d.writeback}" in shown and f"dirorder={d.dirorder}" in shown
    force = m.in_force("/x/d.img")
    assert force["maxio"] == d.maxio and force["alloc"] == "cg" and force["fsname"] == "/x/d.img"
    assert force["policies"] == shown and "fsname=/x/d.img" in m.fuse_options("/x/d.img")
    assert "noatime" in m.fuse_options("/x/d.img")
    assert "noatime" not in mountopts.parse(["atime"]).fuse_options("/x/d.img")   # (relatime: the kernel's)
    assert mountopts.parse(["nostats"]).nostats


def test_misspelt_mount_option_is_named():
    with pytest.raises(mountopts.OptionError, match=r"did you mean 'cache'"):
        mountopts.parse(["cahce=4M"])


def test_ctl_refuses_bad_input(tmp_path, capsys):
    assert main(["ctl", str(tmp_path), "sync"]) == 2
    assert "not a simfs mount" in capsys.readouterr().err
    assert main(["ctl", str(tmp_path), "mark"]) == 2
    assert "needs a phase name" in capsys.readouterr().err
    for name in ("a\nb", "x" * 256):
        assert main(["ctl", str(tmp_path), "mark", name]) == 2
        assert "one line of at most 255 bytes" in capsys.readouterr().err
    assert main(["ctl", str(tmp_path), "reset", "x"]) == 2
    assert main(["ctl", str(tmp_path / "nope"), "sync"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["ctl", str(tmp_path), "drop-cache"])
    assert e.value.code == 2 and "did you mean drop-caches" in capsys.readouterr().err


def _snapshot(elapsed, reads, seeks, um=None):
    def phase(name, el, r, s):
        return {"name": name, "start": 0.0, "elapsed": el, "waited": el, "operations": {},
                "counters": {"disk_reads": r, "disk_writes": 0, "seeks": s, "sectors_read": 8 * r},
                "disk_time": {"busy": el}}
    doc = {"now": sum(elapsed), "disk": "sata7200", "alloc": "cg", "writeback": "sync", "dirorder": "linear",
           "phases": [phase(n, e, r, s) for n, e, r, s in zip(("all", "readback"), elapsed, reads, seeks)],
           "total": phase("total", sum(elapsed), sum(reads), sum(seeks))}
    if um:
        doc["unmount"] = phase("unmount", *um)
    return doc


def test_unmount_summary_takes_the_write_back_out_of_the_last_phase():
    text = unmount_summary(_snapshot([1.0, 0.5], [10, 6], [3, 2], um=(0.25, 4, 1)), "x.json")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ")}
    assert rows["readback"] == ["0.250000", "2", "1"]
    assert rows["write-back at unmount"] == ["0.250000", "4", "1"]
    assert rows["total"] == ["1.500000", "16", "5"]
    assert "x.json" in text


def test_stats_diff_and_file(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_snapshot([1.0, 0.5], [10, 6], [3, 2])))
    b.write_text(json.dumps({"time": _snapshot([2.0, 0.5], [20, 6], [3, 4])}))   # a --json document
    assert main(["stats", "--diff", str(a), str(b), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["disk reads"]["diff"] == 10 and rows["disk reads"]["ratio"] == "1.62x"
    assert rows["seeks (>128 sectors)"]["diff"] == 2
    assert main(["stats", "--diff", str(a), str(b), "--phase", "readback"]) == 0
    out = capsys.readouterr().out
    assert "| seeks (>128 sectors)" in out and "2.00x" in out
    assert main(["stats", "--diff", str(a), str(b), "--phase", "nope"]) == 2
    assert "has no phase 'nope'" in capsys.readouterr().err
    assert main(["stats", str(a)]) == 0 and "readback" in capsys.readouterr().out
    assert main(["stats", str(a), "--phase", "readback"]) == 2        # not ignored silently
    assert "--phase chooses what --diff compares" in capsys.readouterr().err
    a.write_text(json.dumps(_snapshot([1.0, 0.5], [10, 6], [3, 2], um=(0.25, 4, 1))))
    assert main(["stats", str(a)]) == 0 and "write-back at unmount" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{}")
    assert main(["stats", str(tmp_path / "bad.json")]) == 2
    assert main(["stats", "--diff", str(a), str(tmp_path / "none.json")]) == 2


def test_mkfs_takes_the_size_after_the_image(tmp_path, capsys):
    img = tmp_path / "d.img"
    assert main(["mkfs", "-q", str(img), "8M"]) == 0 and img.stat().st_size == 8 << 20
    assert main(["mkfs", "-q", str(tmp_path / "e.img")]) == 2
    assert "size is required" in capsys.readouterr().err
    assert main(["mkfs", "-q", str(tmp_path / "e.img"), "8M", "--size", "16M"]) == 2
    with pytest.raises(SystemExit):
        main(["mkfs", str(tmp_path / "f.img"), "--sise", "8M"])
    assert "did you mean --size" in capsys.readouterr().err


def test_disks_list_and_json(capsys):
    assert main(["disks", "list"]) == 0 and "wd1200jb" in capsys.readouterr().out
    assert main(["disks", "--json"]) == 0
    names = [d["name"] for d in json.loads(capsys.readouterr().out)]
    assert "sata7200" in names and "wd-ears" in names
    assert main(["disks", "show", "sata7200,rpm=5400", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["parameters"]["rpm"]["value"] == 5400 and doc["overrides"] == {"rpm": 5400}
    assert main(["disks", "show", "nope", "--json"]) == 2


def test_zero_counters_are_in_the_json():
    from simfs.blockio.stats import COUNTERS, DISK_COMPONENTS, Stats
    st = Stats()
    st.count("cache_hits", 3)
    snap = st.snapshot(1.0)
    for p in snap["phases"] + [snap["total"]]:
        assert p["counters"]["seeks"] == 0 and p["counters"]["cache_hits"] == 3
        assert set(COUNTERS) <= set(p["counters"]) and set(DISK_COMPONENTS) <= set(p["disk_time"])
    assert st.totals()["disk_reads"] == 0


def _scattered_writes(disk: str) -> dict:
    """The statistics of 20 one-block writes 5000 blocks apart, then a drain (fsync's wait)."""
    from disk_models import make_disk
    from simfs.blockio.clock import SimClock
    from simfs.blockio.stats import Stats
    clock = SimClock(make_disk(disk), Stats(), 8)
    for i in range(20):
        clock.io("W", 1 + 5000 * i, 1, "data", wait=False)
    clock.drain()
    return clock.stats.snapshot(clock.now)


def test_the_drive_s_own_work_has_its_table():
    from simfs.cli.stats import time_tables

    def drive_table(disk):
        tables = time_tables(_scattered_writes(disk))
        table = next((t for t in tables if t.startswith("the drive's own work")), "")
        return {line.split("|")[1].strip(): line.split("|")[2].strip()
                for line in table.splitlines() if line.startswith("| ")}

    rows = drive_table("wd-ears,partition_offset=41")
    assert rows["FLUSH CACHE commands"] == "1" and rows["destage operations"] == "20"
    assert rows["sectors destaged"] == "160" and int(rows["sectors pre-read (read-modify-write)"]) > 0
    assert float(rows["destage seek (s)"]) > 0 and float(rows["host waited on them (s)"]) > 0
    rows = drive_table("ideal")              # no write cache: flushes only, and they cost nothing
    assert rows == {"": "all", "FLUSH CACHE commands": "1", "host waited on them (s)": "0.000000"}


def test_stats_diff_compares_the_drive_s_own_work():
    from simfs.cli.stats import diff_rows
    rows = {r[0]: r[1:5] for r in diff_rows(_scattered_writes("wd-ears,partition_offset=40")["total"],
                                            _scattered_writes("wd-ears,partition_offset=41")["total"])}
    assert rows["sectors destaged"] == (160, 160, 0, "1.00x")
    # misaligned by one sector, each 4 KiB write covers two physical sectors partly: both pre-read
    assert rows["sectors pre-read (read-modify-write)"] == (0, 20 * 2 * 8, 320, "new")
