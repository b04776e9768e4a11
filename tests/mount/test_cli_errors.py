"""Bad input to `simfs mount` (and umount): one line on stderr, exit status 2, nothing mounted."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import e2fsck, fuse_mounts, make_image, run_simfs

pytestmark = pytest.mark.mount


@pytest.fixture
def image(tmp_path):
    return make_image(tmp_path / "good.img", "64M")


@pytest.fixture
def empty_dir(tmp_path):
    d = tmp_path / "mnt"
    d.mkdir()
    return d


BASE = None


@pytest.fixture(autouse=True)
def _session_base(tmp_path_factory):
    global BASE
    BASE = os.path.realpath(tmp_path_factory.getbasetemp())


def _ours() -> list[str]:
    """FUSE mounts below this test session's temporary directory (other sessions may mount
    and unmount meanwhile)."""
    return sorted(p for p in fuse_mounts() if p.startswith(BASE + "/"))


def _refused(*args, match: str):
    before = _ours()
    r = run_simfs(*args, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1, r.stderr
    assert match in lines[0], lines[0]
    assert "Traceback" not in r.stderr
    assert _ours() == before, "something was left mounted"
    return lines[0]


def test_mount_point_missing(image, tmp_path):
    _refused("mount", image, tmp_path / "nowhere", match="does not exist")


def test_mount_point_not_a_directory(image, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    _refused("mount", image, f, match="not a directory")


def test_mount_point_not_empty(image, empty_dir):
    (empty_dir / "something").write_text("x")
    _refused("mount", image, empty_dir, match="not empty")


def test_image_missing(tmp_path, empty_dir):
    _refused("mount", tmp_path / "missing.img", empty_dir, match="does not exist")


def test_image_not_ext2(tmp_path, empty_dir):
    junk = tmp_path / "junk.img"
    junk.write_bytes(os.urandom(1 << 20))
    _refused("mount", junk, empty_dir, match="not an ext2")
    assert sorted(os.listdir(tmp_path)) == ["junk.img", "mnt"]    # no log left behind, as mount(8)


@pytest.mark.parametrize("what", ["stats", "trace", "log"])
def test_an_output_over_another_image_is_refused(image, tmp_path, empty_dir, what):
    """-o stats=OTHER.img wrote the statistics over another (even a mounted) image."""
    other = make_image(tmp_path / "other.img", "16M")
    before = other.read_bytes()
    _refused("mount", image, empty_dir, "-o", f"{what}={other}", match="it is an ext2 image")
    assert other.read_bytes() == before


def test_a_log_that_is_no_regular_file_is_refused(image, empty_dir):
    """simfs umount reads the log back: /dev/zero made it read for ever."""
    _refused("mount", image, empty_dir, "-o", "log=/dev/zero", match="not a regular file")


def test_image_too_small(tmp_path, empty_dir):
    tiny = tmp_path / "tiny.img"
    tiny.write_bytes(b"\0" * 100)
    _refused("mount", tiny, empty_dir, match="ext2")


@pytest.mark.skipif(shutil.which("mkfs.ext4") is None, reason="mkfs.ext4 not installed")
def test_image_with_unsupported_feature(tmp_path, empty_dir):
    img = tmp_path / "ext4.img"
    subprocess.run(["truncate", "-s", "64M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True, capture_output=True)
    _refused("mount", img, empty_dir, match="unsupported")


def test_image_already_mounted(simfs_mount, tmp_path):
    other = tmp_path / "second"
    other.mkdir()
    _refused("mount", simfs_mount.image, other, match="in use")
    assert (simfs_mount.mnt / ".simfs" / "stats").exists()     # the first mount is untouched


def test_mount_point_already_mounted(simfs_mount, tmp_path):
    img2 = make_image(tmp_path / "b.img", "64M")
    _refused("mount", img2, simfs_mount.mnt, match="already a mount point")


@pytest.mark.parametrize("opts,match", [
    ("no_such_option=1", "unknown mount option 'no_such_option'"),
    ("{int}=lots", "bad value for mount option {int}"),
    ("atime=maybe", "bad value for mount option atime"),
    ("alloc=no-such-allocator", "no-such-allocator"),
    ("loglevel=loud", "bad value for mount option loglevel"),
    ("log", "needs a value"),
])
def test_bad_option(image, empty_dir, opts, match):
    if "{int}" in opts:          # any integer field of VolumeOptions
        import dataclasses
        import typing
        from simfs.fs.volume import VolumeOptions
        hints = typing.get_type_hints(VolumeOptions)
        name = next(f.name for f in dataclasses.fields(VolumeOptions) if hints[f.name] is int)
        opts, match = opts.format(int=name), match.format(int=name)
    line = _refused("mount", image, empty_dir, "-o", opts, match=match)
    if "unknown" in match:
        assert "valid options:" in line and "alloc" in line and "log" in line


def test_bad_options_leave_image_usable(image, empty_dir):
    _refused("mount", image, empty_dir, "-o", "alloc=no-such-allocator", match="no-such")
    r = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_umount_not_mounted(empty_dir, tmp_path):
    _refused("umount", empty_dir, match="not mounted")
    _refused("umount", tmp_path / "nowhere", match="does not exist")


def _patched(src, dst, offset: int, data: bytes):
    """A copy of image src with data written at offset (a deterministic corruption)."""
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        f.seek(offset)
        f.write(data)
    return dst


# Offsets on a 64M image with 4K blocks: superblock at byte 1024, descriptor 0 at 4096
# (block_bitmap, inode_bitmap, inode_table: u32; free_blocks, free_inodes, used_dirs: u16).
@pytest.mark.parametrize("offset,data,match", [
    (4096, bytes(range(64)), "corrupt group descriptor 0 (block bitmap at block 50462976"),
    (4096, (0).to_bytes(4, "little"), "corrupt group descriptor 0 (block bitmap at block 0"),
    (4096 + 8, (3).to_bytes(4, "little"), "inode bitmap at block 3 overlaps the inode table"),
    (4096 + 12, (40000).to_bytes(2, "little"), "40000 free blocks in a group of 16384"),
    (4096 + 14, (9000).to_bytes(2, "little"), "9000 free inodes"),
    (1024 + 8, (20000).to_bytes(4, "little"), "reserved block count 20000 > block count 16384"),
    (1024 + 12, (20000).to_bytes(4, "little"), "free block count 20000 > block count"),
    (1024 + 16, (9000).to_bytes(4, "little"), "free inode count 9000 > inode count"),
])
def test_corrupt_image_refused(image, empty_dir, tmp_path, offset, data, match):
    """Was exit 1 with 'Bad file descriptor': the image's fd was closed twice."""
    bad = _patched(image, tmp_path / "bad.img", offset, data)
    before = bad.read_bytes()
    line = _refused("mount", bad, empty_dir, match=match)
    assert "corrupt" in line
    assert bad.read_bytes() == before, "a refused image must not be written"


def test_image_larger_than_the_disk_model(image, empty_dir):
    _refused("mount", image, empty_dir, "-o", "disk=sata7200,capacity=100000",
             match="does not fit the disk model")
    assert e2fsck(image)[0] == 0


@pytest.mark.parametrize("opts,match", [
    ("cache=0", "(valid: 64K to "),
    ("cache=-1", "(valid: 64K to "),
    ("cache=99999999999999G", "the machine's memory"),
    ("maxio=0", "(valid: 4K to 64M, a multiple of 4K)"),
    ("cpu_op_us=-5", "(valid: 0 to 1000000)"),
    ("cpu_op_us=nan", "expected a finite number"),
    ("sync_interval=0", "(valid: 0.01 to 86400)"),
    ("sync_interval=-1", "(valid: 0.01 to 86400)"),
    ("cache=infK", "expected an integer"),
])
def test_number_out_of_range(image, empty_dir, opts, match):
    _refused("mount", image, empty_dir, "-o", opts, match=match)


@pytest.mark.parametrize("key", ["trace", "stats", "oplog"])
def test_output_file_in_missing_directory(image, empty_dir, key):
    """trace= was exit 1 with a FileNotFoundError; stats= was accepted and never written."""
    _refused("mount", image, empty_dir, "-o", f"{key}=/nonexistent/x.out",
             match=f"cannot write the {key} file /nonexistent/x.out: directory /nonexistent does not exist")


@pytest.mark.parametrize("key", ["trace", "stats", "oplog"])
def test_output_file_is_a_directory(image, empty_dir, tmp_path, key):
    _refused("mount", image, empty_dir, "-o", f"{key}={tmp_path}", match="Is a directory")


@pytest.mark.parametrize("opts,match", [
    ("stats={image}", "the stats file {image} is also the image"),
    ("trace={image}", "the trace file {image} is also the image"),
    ("trace={d}/t,stats={d}/t", "the stats file {d}/t is also the trace file"),
    ("log={d}/t,stats={d}/t", "is also the log file"),
    ("stats={image}.log", "is also the log file"),
    ("oplog={image}", "the oplog file {image} is also the image"),
    ("oplog={d}/t,stats={d}/t", "the oplog file {d}/t is also the stats file"),
])
def test_outputs_must_not_overwrite_each_other(image, empty_dir, tmp_path, opts, match):
    """-o stats=IMAGE used to overwrite the image with JSON at unmount."""
    fmt = dict(image=image, d=tmp_path)
    before = image.read_bytes()
    _refused("mount", image, empty_dir, "-o", opts.format(**fmt), match=match.format(**fmt))
    assert image.read_bytes() == before
    assert not (tmp_path / "t").exists()


def test_outputs_to_dev_null(image, empty_dir):
    run_simfs("mount", image, empty_dir, "-o", "trace=/dev/null,stats=/dev/null")
    run_simfs("umount", empty_dir)
    assert e2fsck(image)[0] == 0


def test_probe_leaves_no_files(image, empty_dir, tmp_path):
    _refused("mount", image, empty_dir, "-o", f"stats={tmp_path}/s.json,trace={tmp_path}/t.csv,cache=0",
             match="cache")
    _refused("mount", tmp_path / "missing.img", empty_dir, "-o", f"stats={tmp_path}/s.json",
             match="does not exist")
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "t.csv").exists()


def test_stats_unwritable_at_unmount_is_reported(image, empty_dir, tmp_path):
    """The statistics were silently not written while `simfs umount` returned 0."""
    out = tmp_path / "out"
    out.mkdir()
    run_simfs("mount", image, empty_dir, "-o", f"stats={out}/s.json")
    try:
        (empty_dir / "f").write_text("data")
        shutil.rmtree(out)
    finally:
        r = run_simfs("umount", empty_dir, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "the image is written back" in lines[0] and f"cannot write the stats file {out}/s.json" in lines[0], lines[0]
    assert _ours() == []
    assert e2fsck(image)[0] == 0


def test_long_image_name_needs_a_log(tmp_path, empty_dir):
    """IMAGE.log is longer than a file name may be: say so and name -o log=."""
    img = make_image(tmp_path / ("x" * 252), "64M")
    _refused("mount", img, empty_dir, match="-o log=")
    run_simfs("mount", img, empty_dir, "-o", f"log={tmp_path}/l.log")
    run_simfs("umount", empty_dir)
    assert e2fsck(img)[0] == 0


def test_mount_point_too_long(image, tmp_path):
    deep = str(tmp_path) + "/" + "/".join(["y" * 200] * 25)
    line = _refused("mount", image, deep, match="more than PATH_MAX (4095 bytes)")
    assert "does not exist" not in line
    _refused("mount", image, tmp_path / ("z" * 300), match="a name in it is longer than 255 bytes")
    _refused("umount", deep, match="more than PATH_MAX (4095 bytes)")


def test_umount_bad_timeout(empty_dir):
    _refused("umount", empty_dir, "--timeout", "-1", match="--timeout")
    _refused("umount", empty_dir, "--timeout", "nan", match="--timeout")


def test_paths_that_cannot_be_looked_up(image, tmp_path, empty_dir):
    """These were all "does not exist"; say what is wrong instead."""
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    _refused("mount", tmp_path / "loop1", empty_dir, match="Too many levels of symbolic links")
    _refused("mount", f"{image}/x", empty_dir, match="Not a directory")
    _refused("mount", image, f"{image}/x", match="Not a directory")
    _refused("mount", image, tmp_path / "nowhere", match="does not exist")


def test_ctl_on_a_read_only_mount_says_why(image, empty_dir):
    """The kernel refuses writes to .simfs/ on a read-only mount: one line that says so."""
    run_simfs("mount", image, empty_dir, "-o", "ro")
    try:
        for action in (["mark", "p"], ["drop-caches"]):
            r = run_simfs("ctl", empty_dir, *action, check=False)
            assert r.returncode == 2 and "mounted read-only" in r.stderr, r.stderr
            assert len(r.stderr.strip().splitlines()) == 1
    finally:
        run_simfs("umount", empty_dir)
