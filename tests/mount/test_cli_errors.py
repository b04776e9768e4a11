"""Bad input to `simfs mount` (and umount): one line on stderr, exit status 2, nothing mounted."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import fuse_mounts, make_image, run_simfs

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
