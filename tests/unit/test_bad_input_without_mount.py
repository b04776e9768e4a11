"""Bad input to the commands that run without a mount (plot, layout, frag, disks probe, stats,
fsck, run, verb mmap-fill's page-cache model): one line on stderr, no traceback, exit status 2,
nothing written over. In-process (simfs.cli.main.main); no FUSE."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from simfs.cli.main import main
from simfs.ondisk.mkfs import mkfs
from tests.helpers import refused_by

PNG = b"\x89PNG\r\n\x1a\n"


def refused(capsys, *argv, words=()) -> str:
    return refused_by(main, capsys, *argv, words=words)


def png_size(path) -> tuple[int, int]:
    raw = Path(path).read_bytes()[:24]
    assert raw[:8] == PNG
    return struct.unpack(">II", raw[16:24])


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """A 32 MiB image (8,192 blocks of 4 KiB) with one 1 MiB file, and the trace of writing it."""
    d = tmp_path_factory.mktemp("bad")
    img, trace = d / "d.img", d / "all.csv"
    mkfs(img, 32 << 20, block_size=4096, uuid=bytes(16), hash_seed=bytes(16), now=1_000_000_000)
    assert main(["verb", "mmap-fill", str(img), "big", "--size", "1M", "-o", f"trace={trace}",
                 "--json"]) == 0
    return img, trace


# simfs layout -----------------------------------------------------------------------------------
def test_layout_refuses_a_directory_as_image(tmp_path, capsys):
    refused(capsys, "layout", tmp_path, "-o", tmp_path / "m.png", words=("not a regular file",))


@pytest.mark.parametrize("dpi", ["0", "5", "100000"])
def test_layout_dpi_bounded(image, tmp_path, capsys, dpi):
    refused(capsys, "layout", image[0], "-o", tmp_path / "m.png", "--dpi", dpi, words=("--dpi", "10 to 300"))
    assert not (tmp_path / "m.png").exists()


def test_layout_dpi_scales_the_whole_picture(image, tmp_path, capsys):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert main(["layout", str(image[0]), "-o", str(a)]) == 0
    assert main(["layout", str(image[0]), "-o", str(b), "--dpi", "200"]) == 0
    (wa, ha), (wb, hb) = png_size(a), png_size(b)
    assert (wb, hb) == (2 * wa, 2 * ha)


def test_layout_cells_at_most_one_row(image, tmp_path, capsys):
    # 8,192 blocks in rows of 256 cells: 32 blocks per cell fill one row; more is refused
    assert main(["layout", str(image[0]), "-o", str(tmp_path / "m.png"), "--cells", "32"]) == 0
    capsys.readouterr()
    for k in ("33", "99999999"):
        refused(capsys, "layout", image[0], "-o", tmp_path / "m.png", "--cells", k,
                words=(f"--cells {k}", "at most 32 blocks per cell"))


def test_layout_width_and_picture_size_bounded(image, tmp_path, capsys):
    refused(capsys, "layout", image[0], "-o", tmp_path / "m.png", "--width", "100000",
            words=("--width 100000", "at most 4096"))
    # one cell per row: 8,192 rows of 12 pixels, a 98,000-pixel-tall picture
    refused(capsys, "layout", image[0], "-o", tmp_path / "m.png", "--width", "1", "--cells", "1",
            words=("pixels", "million"))
    assert not (tmp_path / "m.png").exists()


def test_layout_output_format_and_not_over_the_image(image, tmp_path, capsys):
    refused(capsys, "layout", image[0], "-o", tmp_path / "m.xyz", words=("cannot write a .xyz picture",))
    img = tmp_path / "d.png"
    img.write_bytes(image[0].read_bytes())
    refused(capsys, "layout", img, "-o", img, words=("is the image",))
    assert img.read_bytes() == image[0].read_bytes()


def test_layout_group_with_blocks_refused(image, tmp_path, capsys):
    """--group and --blocks each choose what to draw ("draw only ..."): together --blocks was
    ignored silently."""
    refused(capsys, "layout", image[0], "-o", tmp_path / "m.png", "--group", "0", "--blocks", "0:100",
            words=("--group and --blocks both say what to draw: give one",))
    assert not (tmp_path / "m.png").exists()


def test_layout_one_group_is_singular(image, tmp_path, capsys):
    """The 32 MiB image has one group: "1 group", not "1 groups" (summary and the map's subtitle)."""
    from simfs.pictures.blockmap import block_owners, subtitle
    assert main(["layout", str(image[0]), "-o", str(tmp_path / "m.png"), "--group", "0"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("8,192 blocks of 4096 bytes, 1 group"), first
    m = block_owners(image[0])
    assert subtitle(m, group=0) == "8,192 blocks of 4096 bytes, 1 group of 32,768 blocks; showing group 0"
    assert subtitle(m).endswith("; showing 1 group")
    m.groups = 3
    assert subtitle(m, blocks=(0, 100)).endswith("3 groups of 32,768 blocks; showing blocks 0..99")


# simfs frag --image ------------------------------------------------------------------------------
def test_frag_refuses_a_directory_as_image(tmp_path, capsys):
    refused(capsys, "frag", "--image", tmp_path, "/x", words=("not a regular file",))


# simfs plot ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("frames", ["0", "1", "481", "100000000"])
def test_plot_frames_bounded(image, tmp_path, capsys, frames):
    refused(capsys, "plot", image[1], "--movie", tmp_path / "m.gif", "--frames", frames,
            words=(f"--frames {frames}", "2 to 480"))
    assert not (tmp_path / "m.gif").exists()


def test_plot_output_format(image, tmp_path, capsys):
    refused(capsys, "plot", image[1], "-o", tmp_path / "p.xyz", words=("cannot write a .xyz picture",))


def test_plot_does_not_write_over_a_trace(image, tmp_path, capsys):
    before = image[1].read_bytes()
    refused(capsys, "plot", image[1], "-o", image[1], words=("one of the traces",))
    pic = tmp_path / "t.png"                 # a trace named like a picture
    pic.write_bytes(before)
    refused(capsys, "plot", pic, "-o", tmp_path / "." / "t.png", words=("one of the traces",))
    gif = tmp_path / "t.gif"
    gif.write_bytes(before)
    refused(capsys, "plot", gif, "--movie", gif, words=("--movie", "one of the traces"))
    assert image[1].read_bytes() == before and pic.read_bytes() == before and gif.read_bytes() == before


def test_plot_trace_cut_mid_row(image, tmp_path, capsys):
    text = image[1].read_text()
    cut = tmp_path / "trunc.csv"
    cut.write_text(text[:text.index("\n", 2000) - 30])          # the last row loses its end
    line = refused(capsys, "plot", cut, "-o", tmp_path / "p.png", words=("bad trace", "cut short"))
    assert f"trunc.csv:{text[:text.index(chr(10), 2000)].count(chr(10)) + 1}:" in line
    bad = tmp_path / "bad.csv"
    rows = text.splitlines()
    rows[5] = "x" + rows[5][1:]
    bad.write_text("\n".join(rows) + "\n")
    refused(capsys, "plot", bad, "-o", tmp_path / "p.png", words=("bad.csv:6: issue", "not a number"))


def test_read_trace_refuses_a_row_cut_short_in_one_error(image, tmp_path):
    """Every reader of traces (plot, the lessons, seekplot) gets the file and line, not a
    TypeError from a missing field."""
    from simfs.blockio.trace import FIELDS, OPTIONAL, read_trace
    text = image[1].read_text()
    assert len(read_trace(image[1])["lba"]) == text.count("\n") - 1
    cut = tmp_path / "cut.csv"
    cut.write_text(text[:text.index("\n", 2000) - 30])
    with pytest.raises(ValueError, match=rf"cut\.csv:\d+: \d+ fields where the header has {len(FIELDS) + len(OPTIONAL)}"):
        read_trace(cut)


def _header_only(tmp_path):
    from simfs.blockio.trace import FIELDS
    empty = tmp_path / "empty.csv"
    empty.write_text(",".join(FIELDS) + "\n")
    return empty


def test_plot_of_a_trace_with_only_its_header(tmp_path, capsys, recwarn):
    """Nothing to draw is one line (it drew an empty picture and matplotlib warned "No artists
    with labels found to put in legend"); --json still prints the summary, a zero row."""
    empty = _header_only(tmp_path)
    refused(capsys, "plot", empty, "-o", tmp_path / "e.png",
            words=(f"{empty}: no requests (only the header row): nothing to draw",))
    assert not (tmp_path / "e.png").exists() and not recwarn.list
    assert main(["plot", str(empty), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"label": "empty.csv", "requests": 0}]


def test_seekplot_draws_nothing_with_a_note_and_no_warning(tmp_path):
    """The panels of series without requests (a lesson's or a job's): no legend warning."""
    import warnings
    from simfs.blockio.trace import read_trace
    from simfs.pictures.seekplot import phase_series, plot_series
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = plot_series([("a", phase_series(read_trace(_header_only(tmp_path)), None))] * 2, tmp_path / "e.png")
    assert got == [{"label": "a", "requests": 0}] * 2 and (tmp_path / "e.png").exists()


def test_plot_refuses_an_op_other_than_r_or_w(image, tmp_path, capsys):
    rows = image[1].read_text().splitlines()
    at = rows[0].split(",").index("op")
    cells = rows[3].split(",")
    cells[at] = "Q"
    rows[3] = ",".join(cells)
    bad = tmp_path / "q.csv"
    bad.write_text("\n".join(rows) + "\n")
    refused(capsys, "plot", bad, "--json", words=(f"bad trace: {bad}:4: op is 'Q', not R or W",))


# simfs disks probe ------------------------------------------------------------------------------
def test_disks_probe_output_format(tmp_path, capsys):
    refused(capsys, "disks", "probe", "sata7200", "-o", tmp_path / "pr.xyz", words=("cannot write a .xyz picture",))
    refused(capsys, "disks", "probe", "sata7200", "-o", tmp_path / "no" / "pr.png", words=("does not exist",))


# simfs stats FILE / --diff ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stats_file(image, tmp_path_factory):
    """The final statistics of a find on the image (what -o stats= writes)."""
    path = tmp_path_factory.mktemp("stats") / "st.json"
    assert main(["verb", "find", str(image[0]), "/", "--stats", str(path), "--json"]) == 0
    return path


def _spoiled(stats_file, tmp_path, change) -> str:
    doc = json.loads(stats_file.read_text())
    change(doc)
    out = tmp_path / "bad.json"
    out.write_text(json.dumps(doc))
    return str(out)


@pytest.mark.parametrize("change, words", [
    (lambda d: d["phases"][0]["counters"].__setitem__("disk_reads", "many"),
     ('phases[0].counters.disk_reads is "many", not a number',)),
    (lambda d: (d["phases"][0].__setitem__("elapsed", None), d["total"].__setitem__("elapsed", None)),
     ("phases[0].elapsed is null, not a number",)),
    (lambda d: d["phases"][0].__setitem__("name", 5), ("phases[0].name is 5, not a string",)),
    (lambda d: d["total"]["operations"]["getattr"].__setitem__("count", "x"),
     ('total.operations.getattr.count is "x", not a number',)),
    (lambda d: d["unmount"]["disk_time"].__setitem__("seek", float("nan")), ("unmount.disk_time.seek is NaN",)),
])
def test_stats_file_with_wrong_types(stats_file, tmp_path, capsys, change, words):
    bad = _spoiled(stats_file, tmp_path, change)
    refused(capsys, "stats", bad, words=("not simfs statistics",) + words)
    refused(capsys, "stats", "--diff", stats_file, bad, words=words)
    refused(capsys, "stats", "--diff", bad, stats_file, "--phase", "x", words=words)


def test_stats_file_as_written_is_shown(stats_file, capsys):
    assert main(["stats", str(stats_file)]) == 0
    assert main(["stats", "--diff", str(stats_file), str(stats_file)]) == 0


# simfs verb mmap-fill --pagecache (simfs.inprocess.pagecache.WritebackParams.parse) ------------------
@pytest.mark.parametrize("override, words", [
    ("fault_us=inf", "fault_us=inf: must be a finite number"),
    ("fault_us=nan", "fault_us=nan: must be a finite number"),
    ("congestion_wait=1e300", "congestion_wait must be 0.001 to 60 seconds"),
    ("dirty_writeback_interval=1e-9", "dirty_writeback_interval must be at least 0.01 seconds"),
    ("ram=", "ram= has no value (e.g. ram=6G)"),
    ("dirty_ratio=", "dirty_ratio= has no value"),
    ("dirty_ratio=101", "dirty_ratio must be 1 to 100 percent"),
    ("dirty_background_ratio=-1", "dirty_background_ratio must be 0 to 100 percent"),
    ("dirty_background_ratio=20,dirty_ratio=10", "dirty_background_ratio (20) must not exceed dirty_ratio (10)"),
    ("dirty_ratio=3", "dirty_background_ratio (5) must not exceed dirty_ratio (3); dirty_background_ratio "
                      "is the default"),
])
def test_pagecache_values_checked_where_parsed(override, words):
    from simfs.inprocess.pagecache import WritebackParams
    with pytest.raises(ValueError) as e:
        WritebackParams.parse(f"linux-2.6.29,{override}")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_pagecache_values_in_range_pass():
    from simfs.inprocess.pagecache import WritebackParams
    p = WritebackParams.parse("linux-2.6.29,ram=1G,dirty_ratio=20,dirty_background_ratio=20,fault_us=1000000")
    assert (p.dirty_ratio, p.dirty_background_ratio, p.fault_us) == (20, 20, 1e6)


@pytest.mark.parametrize("override", ["fault_us=inf", "fault_us=nan", "ram="])
def test_verb_mmap_fill_refuses_a_bad_pagecache(image, capsys, override):
    refused(capsys, "verb", "mmap-fill", image[0], "f", "--size", "1M", "--writes", "mmap",
            "--pagecache", f"linux-2.6.29,{override}", "--json", words=("page-cache model", override))


# simfs fsck ----------------------------------------------------------------------------------------
from tests.helpers import needs_e2fsprogs  # noqa: E402


@needs_e2fsprogs
@pytest.mark.parametrize("content, words", [
    (os.urandom(200_000), "not an ext2 file system (bad magic"),
    (b"", "not an ext2 file system (file is only 0 bytes)"),
    (b"\0" * 1500, "not an ext2 file system (file is only 1500 bytes)"),
    (None, "image is shorter (2097152 bytes) than its file system (8192 blocks of 4096)"),
])
@pytest.mark.parametrize("repair", [False, True])
def test_fsck_on_a_file_that_is_no_ext2_image(image, tmp_path, capsys, content, words, repair):
    f = tmp_path / "x.img"
    f.write_bytes(content if content is not None else image[0].read_bytes()[:2 << 20])
    before = f.read_bytes()
    refused(capsys, "fsck", *(["--repair"] if repair else []), f, words=(words,))
    assert f.read_bytes() == before


def _crashed(src, dst, state=b"\0\0"):
    """A copy of the image whose superblock says "not clean" (s_state 0), as a crash leaves it;
    no journal beside it."""
    raw = bytearray(src.read_bytes())
    raw[1024 + 58:1024 + 60] = state
    dst.write_bytes(raw)
    return dst


@needs_e2fsprogs
@pytest.mark.parametrize("state, reason", [(b"\0\0", "file system was not cleanly unmounted"),
                                           (b"\3\0", "file system has errors")])
def test_fsck_reports_an_image_not_cleanly_unmounted(image, tmp_path, capsys, state, reason):
    """A crashed image, and one with errors recorded (e2fsck -fy clears them and says 0):
    --repair marks either clean and says so with exit status 1."""
    img = _crashed(image[0], tmp_path / "c.img", state)
    assert main(["fsck", str(img)]) == 4
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"NOT clean: {reason}"), out
    assert f"simfs fsck --repair {img}" in out[0]
    assert main(["fsck", "--repair", str(img)]) == 1
    assert capsys.readouterr().out.startswith("clean after e2fsck -fy")
    assert main(["fsck", str(img)]) == 0
    assert capsys.readouterr().out.startswith("clean: ")


def test_fsck_help_lists_every_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["fsck", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("0 clean", "1 --repair fixed", "2 bad input", "not an ext2 file system",
                  "4 problems left uncorrected, or the image was not cleanly unmounted", "8 e2fsck could not check",
                  "130 interrupted"):
        assert words in text, words


# simfs run JOB.toml (experiments/jobfile/, experiments/jobcli.py) ----------------------------------
JOB = """\
[job]
name = "t"

[workload]
kind = "tree"
seed = 1
files = 20

[mkfs]
size = "64M"

[mount]
alloc = "ext2"

[[phase]]
name = "unpack"
verb = "unpack"
path = "tree"
setup = true

[[phase]]
name = "cp"
verb = "cp-a"
path = "tree"
args = {dst = "copy"}
"""


def _job_file(tmp_path, old="", new="", text=None):
    assert old in JOB
    p = tmp_path / "job.toml"
    if text is None:
        text = JOB.replace(old, new, 1)
    p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)
    return p


@pytest.mark.parametrize("old, new, line, words", [
    ("files = 20", "files = 0", 7, "[workload] files = 0: must be a whole number >= 1"),
    ("files = 20", "files = -5", 7, "[workload] files = -5: must be a whole number >= 1"),
    ("files = 20", 'files = "many"', 7, '[workload] files = "many": must be a whole number >= 1'),
    ("seed = 1", "seed = true", 6, "[workload] seed = true: must be a whole number >= 0"),
    ("files = 20", 'files = 20\nfanout = [3, 2]', 8, "must be [LO, HI]"),
    ("files = 20", 'files = 20\nmax_file_size = "big"', 8, "not a size"),
    ("files = 20", 'files = 20\nsvn = "yes"', 8, "must be true or false"),
    ('name = "t"', 'name = "../../escape"', 2, "must be a plain file name"),
    ('name = "t"', 'name = ".."', 2, "must be a plain file name"),
    ('size = "64M"', 'size = "0"', 10, "mkfs: image too small: 0 bytes"),
    ('size = "64M"', "size = 5", 10, "mkfs: image too small: 5 bytes"),
    ('size = "64M"', 'size = "100P"', 10, "mkfs: image too large"),
    ('size = "64M"', 'size = "64M"\nblock_size = 2048', 11, "mkfs: block size must be 1024 or 4096, not 2048"),
    ('size = "64M"', 'size = "64M"\ninode_size = "big"', 11, 'mkfs inode_size must be a number, not "big"'),
    ('alloc = "ext2"', 'alloc = "ext2"\n\n[matrix]\nblock_size = [1024, 2048]', 16,
     "mkfs: block size must be 1024 or 4096, not 2048"),
    ('args = {dst = "copy"}', 'args = {dst = "copy", bogus = 1}', 25,
     "verb 'cp-a' takes no argument 'bogus'; valid: dst, mark, mkdir, oplog, options"),
    ('path = "tree"\nsetup = true', 'path = "tree"\nsetup = true\nargs = {source = "x"}', 20,
     "verb 'unpack' takes no argument 'source'; valid: dot,"),
])
def test_job_checked_up_front(tmp_path, old, new, line, words):
    from experiments import jobfile
    p = _job_file(tmp_path, old, new)
    with pytest.raises(jobfile.JobError) as e:
        jobfile.load(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{p}:{line}: "), msg
    assert words in msg, msg


def test_job_builtin_args_checked(tmp_path):
    from experiments import jobfile
    p = _job_file(tmp_path, text=JOB.split("[[phase]]")[0] + '[[phase]]\nname = "mk"\nbuiltin = "mkfs"\n'
                                                               'args = {bogus = 1}\n')
    with pytest.raises(jobfile.JobError, match=r"builtin 'mkfs' takes no argument 'bogus'; valid: none"):
        jobfile.load(p)


def test_job_size_following_the_workload_is_left_to_the_run(tmp_path):
    """Loading accepts it; the run sizes the image from the workload it prepared: the minimum
    for a small one, about the share asked of a large one."""
    from experiments import jobfile, runner
    job = jobfile.load(_job_file(tmp_path, 'size = "64M"', 'size = {workload = 0.001, min = "1M"}'))
    assert job.doc["mkfs"]["size"] == {"workload": 0.001, "min": "1M"}
    sizes = {n: jobfile.compile_job(job, runner.Workload("tree", bytes=n)).configs[0].mkfs["size_bytes"]
             for n in (64 << 20, 4 << 30)}
    assert sizes[64 << 20] == 1 << 20
    assert 1 << 20 < sizes[4 << 30] and abs(sizes[4 << 30] - 0.001 * (4 << 30)) < 1 << 20


def test_run_binary_job_file(tmp_path, capsys):
    p = _job_file(tmp_path, text=b"\x89PNG\r\n\x1a\n" + os.urandom(300))
    refused(capsys, "run", p, words=(f"{p}:1: not a job file: not UTF-8 text",))


@pytest.mark.parametrize("flag, where, words", [
    ("--work-dir", "nonexistent/x", "--work-dir {p}: no such directory, nor its parent {d}/nonexistent"),
    ("--work-dir", "file", "--work-dir {p}: not a directory"),
    ("--out", "file", "--out {p}: exists and is not a directory"),
    ("--out", "nonexistent/x", "directory {d}/nonexistent does not exist"),
    ("--resume", "nonexistent", "--resume {p}: no such directory"),
])
def test_run_directories_checked_up_front(tmp_path, capsys, flag, where, words):
    job = _job_file(tmp_path)
    (tmp_path / "file").write_text("keep")
    p = tmp_path / where
    refused(capsys, "run", job, flag, p, "--no-plots", words=(words.format(p=p, d=tmp_path),))
    assert sorted(x.name for x in tmp_path.iterdir()) == ["file", "job.toml"]
    assert (tmp_path / "file").read_text() == "keep"


RUN_LS = '\n[[phase]]\nname = "ls"\nrun = "ls {mnt}"\n'        # lines 27-29 after JOB


@pytest.mark.parametrize("old, new, line, words", [
    ("", RUN_LS + "prepare = 3\n", 30, "[[phase]] prepare = 3: must be a string"),
    ("", RUN_LS.replace("{mnt}", "{mount}"), 29, "phase 'ls', run: unknown placeholder {mount}; the placeholders "
                                                 "are {mnt}, {source}, {tarball}, {work}, {image}"),
    ("", '\n[quick]\nworkload = {files = 0}\n', 28, "in [quick]: [workload] files = 0: must be a whole number"),
    ('kind = "tree"\nseed = 1\nfiles = 20', 'kind = "dir"\npath = "{tmp}/nope"', 6,
     '[workload] path = "{tmp}/nope": no such directory'),
    ('kind = "tree"\nseed = 1\nfiles = 20', 'kind = "dir"\npath = "{tmp}/job.toml"', 6, "not a directory"),
    ("setup = true", 'setup = true\nargs = {from = "{tmp}/nope.tar"}', 20,
     "phase 'unpack': from = \"{tmp}/nope.tar\": no such directory or archive"),
])
def test_run_refuses_a_bad_job_at_its_line_before_anything(tmp_path, capsys, old, new, line, words):
    """Wrong types, unknown placeholders, a broken [quick] (without --quick) and paths that do
    not exist: JOB.toml:LINE, exit status 2, nothing made (they failed after mounting, or
    without a line). --work-dir names a missing directory: only the job can be refused first."""
    new, words = new.replace("{tmp}", str(tmp_path)), words.replace("{tmp}", str(tmp_path))
    p = _job_file(tmp_path, text=JOB.replace(old, new, 1) if old else JOB + new)
    msg = refused(capsys, "run", p, "--work-dir", tmp_path / "nonexistent", "--out", tmp_path / "out",
                  "--no-plots", words=(words,))
    assert msg.startswith(f"{p}:{line}: "), msg
    assert sorted(x.name for x in tmp_path.iterdir()) == ["job.toml"]


def test_run_source_that_does_not_exist(tmp_path, capsys):
    p = _job_file(tmp_path)
    refused(capsys, "run", p, "--source", tmp_path / "nope", "--work-dir", tmp_path / "nonexistent",
            words=(f"--source {tmp_path / 'nope'}: no such directory",))


def test_layout_empty_block_range_refused(image, tmp_path, capsys):
    refused(capsys, "layout", image[0], "-o", tmp_path / "m.png", "--blocks", "100:0",
            words=("--blocks 100:0: an empty range",))


@pytest.mark.parametrize("cmd", [["experiment", "run", "mmap-fragmentation", "--quick"],
                                 ["lesson", "seven-free", "--quick"]])
@pytest.mark.parametrize("bad, words", [
    ("full", "the directory holds other files"),
    ("file/x", "cannot write there (Not a directory)"),
    ("/proc/x", "cannot write there"),
])
def test_results_go_nowhere_they_would_write_over(tmp_path, capsys, cmd, bad, words):
    """Checked before the run (it used to write over another directory's README.md, or fail
    with a traceback after minutes of work)."""
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "README.md").write_text("precious")
    (tmp_path / "file").write_text("x")
    out = bad if bad.startswith("/") else tmp_path / bad
    refused(capsys, *cmd, "--out", out, words=(words,))
    assert (tmp_path / "full" / "README.md").read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["file", "full"]


@pytest.mark.parametrize("opts, words", [
    (["--work-dir", "/nonexistent/x"], "--work-dir /nonexistent/x: no such directory, nor its parent /nonexistent"),
    (["--size", "0"], "--size 0: give a size above 0"),
    (["-r", "0"], "--repetitions 0: give 1 or more"),
    (["--source", "/nonexistent"], "--source /nonexistent: not a directory"),
    (["--source", "{tmp}"], "--source {tmp}: no files in it"),
])
def test_experiment_options_checked_before_the_run(capsys, tmp_path, opts, words):
    (tmp_path / "sub").mkdir()                              # a tree with no file
    opts = [o.format(tmp=tmp_path) for o in opts]
    refused(capsys, "experiment", "run", "ext2fs-2010", "--quick", *opts, words=(words.format(tmp=tmp_path),))


def test_a_quick_run_replaces_no_full_run_s_results(tmp_path, capsys):
    full = tmp_path / "r"
    full.mkdir()
    (full / "results.json").write_text(json.dumps({"experiment": "ext2fs-2010", "quick": False}))
    refused(capsys, "experiment", "run", "ext2fs-2010", "--quick", "--out", full,
            words=("a --quick run replaces no full run's results",))


@pytest.mark.parametrize("cmd", [["experiment", "run", "writeback", "--quick"],
                                 ["run", str(Path(__file__).resolve().parents[2] / "examples" / "jobs" / "fio-alloc.toml")]])
def test_mounted_runs_check_root_and_fuse_first(tmp_path, capsys, monkeypatch, cmd):
    """Without root or FUSE a run with mounted phases is refused before anything is made (it
    used to mount, then fail half-way); one line naming what is missing."""
    from experiments import jobrun
    monkeypatch.setattr(jobrun, "fuse_problem", lambda: "not root")
    out = tmp_path / "out"
    msg = refused(capsys, *cmd, "--out", out, "--work-dir", tmp_path / "work", words=("not root", "FUSE"))
    assert "\n" not in msg.strip() and not out.exists() and not (tmp_path / "work").exists()


def test_did_you_mean_where_names_are_looked_up(capsys):
    refused(capsys, "experiment", "run", "writebak", words=("did you mean 'writeback'?",))
    refused(capsys, "policies", "show", "frist-free", words=("did you mean 'first-free'?",))
    refused(capsys, "disks", "show", "wd1200", words=("did you mean 'wd1200jb'?",))
