"""The simfs command without mounting: version, help, mkfs, fsck, stats rendering."""

import io
import json
import shutil

import pytest

from simfs import __version__
from simfs.cli.common import size_type as parse_size
from simfs.cli.main import build_parser
from simfs.cli.stats import print_stats
from tests.conftest import run_simfs

needs_e2fsck = pytest.mark.skipif(shutil.which("e2fsck") is None, reason="e2fsprogs not installed")


def test_version():
    r = run_simfs("--version")
    assert r.stdout.strip() == f"simfs {__version__}"


@pytest.mark.parametrize("cmd", ["mkfs", "mount", "umount", "fsck", "stats"])
def test_help_has_examples(cmd):
    r = run_simfs(cmd, "--help")
    assert "examples:" in r.stdout and f"simfs {cmd}" in r.stdout


def test_top_level_help_lists_commands():
    r = run_simfs("--help")
    for cmd in ("mkfs", "mount", "umount", "fsck", "stats"):
        assert cmd in r.stdout
    assert "examples:" in r.stdout


def test_mount_help_lists_options():
    out = run_simfs("mount", "--help").stdout
    for key in ("alloc=", "log=", "debug_faults", "ro / rw"):
        assert key in out


def test_no_command_is_usage_error():
    assert run_simfs(check=False).returncode == 2


@pytest.mark.parametrize("text,value", [("4096", 4096), ("64M", 64 << 20), ("1G", 1 << 30),
                                        ("512KiB", 512 << 10), ("1.5k", 1536)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@needs_e2fsck
def test_mkfs_then_fsck_clean(tmp_path):
    img = tmp_path / "x.img"
    r = run_simfs("mkfs", img, "--size", "32M", "--block-size", "1024")
    assert "ext2" in r.stdout and img.exists()
    r = run_simfs("fsck", img)
    assert r.stdout.startswith("clean:")
    r = run_simfs("mkfs", img, "--size", "32M", check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    run_simfs("mkfs", "-q", img, "--size", "32M", "--force")


@pytest.mark.parametrize("args,match", [
    (["--size", "32M", "--block-size", "2048"], "block size"),
    (["--size", "1K"], "too small"),
])
def test_mkfs_bad_input(tmp_path, args, match):
    r = run_simfs("mkfs", tmp_path / "y.img", *args, check=False)
    assert r.returncode == 2 and match in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_mkfs_bad_size_is_argparse_error(tmp_path):
    r = run_simfs("mkfs", tmp_path / "z.img", "--size", "lots", check=False)
    assert r.returncode == 2 and "not a size" in r.stderr


@needs_e2fsck
def test_fsck_reports_damage(tmp_path):
    img = tmp_path / "d.img"
    run_simfs("mkfs", "-q", img, "--size", "32M")
    with open(img, "r+b") as f:          # wreck the root directory's inode (inode 2)
        data = bytearray(f.read())
        sb = 1024
        ipg = int.from_bytes(data[sb + 40:sb + 44], "little")
        assert ipg
        bs = 1024 << int.from_bytes(data[sb + 24:sb + 28], "little")
        gd = bs if bs > 1024 else 2048
        itable = int.from_bytes(data[gd + 8:gd + 12], "little")
        isize = int.from_bytes(data[sb + 88:sb + 90], "little")
        off = itable * bs + isize
        data[off:off + 2] = b"\0\0"              # root's i_mode = 0
        f.seek(0)
        f.write(data)
    r = run_simfs("fsck", img, check=False)
    assert r.returncode != 0 and r.stdout.startswith("NOT clean")


def test_fsck_missing_image(tmp_path):
    r = run_simfs("fsck", tmp_path / "none.img", check=False)
    assert r.returncode == 2


def test_fsck_names_what_is_wrong_with_the_image_path(tmp_path):
    loop = tmp_path / "loop.img"
    loop.symlink_to(loop)
    r = run_simfs("fsck", loop, check=False)
    assert r.returncode == 2 and "symbolic links" in r.stderr and "does not exist" not in r.stderr
    r = run_simfs("fsck", tmp_path, check=False)
    assert r.returncode == 2 and "not a regular file" in r.stderr


def test_stats_on_a_plain_directory(tmp_path):
    r = run_simfs("stats", tmp_path, check=False)
    assert r.returncode == 2 and "not a simfs mount" in r.stderr


def test_print_stats_renders_every_section():
    doc = {"simfs": "0", "image": "/i", "ops": {"lookup": 3, "read": 1}, "ops_total": 4,
           "errors": {}, "counters": {"bytes_read": 5 << 20, "blocks_allocated": 7},
           "time": {"simulated_s": 1.5, "by_op": {"read": 0.5}}}
    buf = io.StringIO()
    print_stats(doc, file=buf)
    out = buf.getvalue()
    for word in ("ops", "lookup", "counters", "5.0 MiB", "blocks_allocated", "time", "by_op.read", "(none)"):
        assert word in out, word


def test_disks_subcommand_is_registered():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "disks" in sub.choices


def test_stats_of_a_directory_that_only_looks_like_a_mount(tmp_path):
    """A .simfs/stats that is not JSON: one line naming it, exit 2 (was a traceback)."""
    (tmp_path / ".simfs").mkdir()
    (tmp_path / ".simfs" / "stats").write_text("hello\n")
    for args in (("stats", tmp_path), ("stats", "--json", tmp_path)):
        r = run_simfs(*args, check=False)
        assert r.returncode == 2 and "not simfs statistics" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.mount
@needs_e2fsck
def test_fsck_of_a_mounted_image_is_no_verdict_exit_8(simfs_factory):
    """e2fsck refuses a mounted file system with 8 (operational error); simfs fsck checks it
    anyway but adds 8: a clean-looking result read while the daemon writes is no verdict."""
    m = simfs_factory(size="64M")
    r = run_simfs("fsck", m.image, check=False)
    assert r.returncode == 8, (r.returncode, r.stdout, r.stderr)
    assert "is mounted" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert r.stdout.startswith("no verdict")
    js = json.loads(run_simfs("fsck", "--json", m.image, check=False).stdout)
    assert js["mounted"] is True and js["clean"] is False and js["status"] == 8


@needs_e2fsck
def test_fsck_json_of_a_clean_image(tmp_path):
    img = tmp_path / "j.img"
    run_simfs("mkfs", "-q", img, "--size", "32M")
    r = run_simfs("fsck", "--json", img)
    js = json.loads(r.stdout)
    assert js["clean"] is True and js["status"] == 0 and js["e2fsck_status"] == 0 and js["problems"] == []


@pytest.mark.mount
@needs_e2fsck
def test_mkfs_and_umount_json(tmp_path):
    """--json on the commands that print a result: mkfs (what was made, with --disk its time)
    and umount (the final statistics)."""
    img, mnt = tmp_path / "k.img", tmp_path / "mnt"
    js = json.loads(run_simfs("mkfs", img, "32M", "--block-size", "1024", "--disk", "sata7200", "--json").stdout)
    assert js["image"] == str(img) and js["block_size"] == 1024 and js["blocks"] == 32 * 1024
    assert js["inodes"] > 0 and js["disk"]["seconds"] > 0 and js["disk"]["bytes_written"] > 0
    mnt.mkdir()
    run_simfs("mount", img, mnt)
    try:
        (mnt / "f").write_bytes(b"x" * 10000)
    finally:
        r = run_simfs("umount", "--json", mnt)
    js = json.loads(r.stdout)
    assert js["mountpoint"] == str(mnt) and js["stats_file"] == f"{img}.stats.json"
    assert js["stats"]["total"]["counters"]["disk_writes"] > 0 and js["stats"]["unmount"]["elapsed"] >= 0
    assert run_simfs("fsck", img).returncode == 0


@pytest.mark.mount
def test_a_plain_mount_says_it_models_linux_ext2(tmp_path):
    """A mount with no policy options models Linux's ext2 (alloc=ext2 with Orlov, async
    write-back, linear readdir) and says so in one line on stderr; /.simfs/info shows those
    policies. A mount that names its policies is not told."""
    img, mnt = tmp_path / "p.img", tmp_path / "mnt"
    run_simfs("mkfs", "-q", img, "32M")
    mnt.mkdir()
    for opts, told in (([], True), (["-o", "alloc=first-free,writeback=sync"], False)):
        r = run_simfs("mount", img, mnt, *opts)
        try:
            info = (mnt / ".simfs" / "info").read_text()
        finally:
            run_simfs("umount", "-q", mnt)
        if told:
            assert r.stderr.strip() == ("simfs: modelling Linux ext2 (alloc=ext2 with Orlov inode placement, "
                                        "writeback=async, dirorder=linear); -o alloc=...,writeback=... to change")
            assert "alloc=ext2" in info and "writeback=async" in info and "dirorder=linear" in info
        else:
            assert r.stderr == "" and "alloc=first-free" in info and "writeback=sync" in info
