"""`simfs disks` list / show / probe, through the argparse registration the top-level CLI uses."""

import argparse
import json

import pytest

from disk_models import PRESETS
from simfs.cli import disks as cli_disks


def run(argv, capsys):
    parser = argparse.ArgumentParser(prog="simfs")
    sub = parser.add_subparsers(dest="command")
    cli_disks.register(sub)
    args = parser.parse_args(argv)
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_has_one_line_per_preset(capsys):
    code, out, err = run(["disks"], capsys)
    assert code == 0 and not err
    lines = out.strip().splitlines()
    assert len(lines) == len(PRESETS)
    for line, name in zip(lines, PRESETS):
        assert line.split()[0] == name and len(line.split()) > 3


def test_show_prints_every_parameter_with_provenance(capsys):
    code, out, err = run(["disks", "show", "wd1200jb"], capsys)
    assert code == 0
    assert "8.9 ms" in out and "[read]" in out and "[inferred]" in out and "WD400BB" in out
    for key in PRESETS["wd1200jb"].values:
        assert key in out
    assert "cylinders" in out            # derived figures too


def test_show_with_overrides_marks_them(capsys):
    code, out, _ = run(["disks", "show", "sata7200,rpm=5400,write_cache=off"], capsys)
    assert code == 0
    assert "override (rpm=5400)" in out and "override (write_cache=off)" in out


@pytest.mark.parametrize("argv, words", [
    (["disks", "show", "floppy"], ["unknown disk preset", "sata7200", "wd-ears"]),
    (["disks", "show", "sata7200,spin=3"], ["unknown disk parameter", "rpm"]),
    (["disks", "probe", "floppy"], ["unknown disk preset"]),
    (["disks", "probe", "sata7200,rpm=x"], ["rpm"]),
])
def test_errors_are_one_line_on_stderr_with_exit_2(capsys, argv, words):
    code, out, err = run(argv, capsys)
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1
    for w in words:
        assert w in err


def test_probe_prints_a_table_and_draws_a_png(capsys, tmp_path):
    png = tmp_path / "probe.png"
    code, out, err = run(["disks", "probe", "wd-ears", "-o", str(png)], capsys)
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for heading in ("seek vs distance", "sequential read rate", "random 4 KiB", "read-modify-write"):
        assert heading in out


def test_probe_json_reports_the_calibration(capsys):
    code, out, _ = run(["disks", "probe", "wd-ears", "--json"], capsys)
    assert code == 0
    rep = json.loads(out)
    # the seek curve's far end is the datasheet full stroke; its near end the track-to-track
    assert rep["seek"][0][1] == pytest.approx(rep["datasheet_seek_ms"]["t2t"], rel=0.01)
    assert rep["seek"][-1][1] == pytest.approx(rep["datasheet_seek_ms"]["full"], rel=0.01)
    # zones: outer faster than inner, at the preset's figures
    assert rep["zones"][0][2] == pytest.approx(PRESETS["wd-ears"].values["od_rate"], rel=0.05)
    assert rep["zones"][-1][2] == pytest.approx(PRESETS["wd-ears"].values["id_rate"], rel=0.05)
    # only the aligned shift is fast; misaligned costs 2-4x (OSNews: ~3x)
    fast = [row for row in rep["rmw"] if row[2] < 1.05]
    assert len(fast) == 1
    assert 2.0 <= rep["rmw_cases"]["random_sync_1GiB"] <= 4.0
    assert rep["rmw_cases"]["sequential_cached"] < 1.1


def test_probe_of_a_512_byte_drive_shows_no_rmw(capsys):
    code, out, _ = run(["disks", "probe", "sas10k", "--json"], capsys)
    rep = json.loads(out)
    assert all(row[2] < 1.05 for row in rep["rmw"])


def test_probe_ideal(capsys):
    code, out, _ = run(["disks", "probe", "ideal"], capsys)
    assert code == 0 and "costs nothing" in out
