"""The ext4 profile on disk: mkfs against mke2fs, the kernel's ext4 and e2fsck as oracles.

`simfs mkfs --profile ext4` must lay out the bitmaps and inode tables of each flex group as
mke2fs does (dumpe2fs shows the same groups), make an image the kernel's ext4 mounts read-write
and e2fsck finds clean, and images mkfs.ext4 makes without a journal, metadata_csum or 64bit
must mount in simfs; images with features simfs does not handle are refused by name.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from simfs.cli.main import main
from simfs.errors import ImageError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, can_loop_mount, kernel_mount, needs_e2fsprogs, refused_by

pytestmark = [needs_e2fsprogs,
              pytest.mark.skipif(shutil.which("mkfs.ext4") is None, reason="mkfs.ext4 not installed")]
NO_JOURNAL = "^has_journal,^metadata_csum,^64bit"


def groups_of(img) -> str:
    """dumpe2fs's per-group section (where every bitmap and inode table lies, free blocks)."""
    out = subprocess.run(["dumpe2fs", str(img)], capture_output=True, text=True, check=True).stdout
    return out[out.index("\nGroup 0:"):]


def features_of(img) -> set[str]:
    out = subprocess.run(["dumpe2fs", "-h", str(img)], capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("Filesystem features:"))
    return set(line.split(":", 1)[1].split())


@pytest.mark.parametrize("block_size,flex,mib", [(1024, 4, 200), (1024, 16, 200), (4096, 16, 3000)])
def test_flex_bg_layout_is_mke2fs_s(tmp_path, block_size, flex, mib):
    ours, theirs = tmp_path / "ours.img", tmp_path / "theirs.img"
    mkfs(ours, mib << 20, block_size=block_size, bytes_per_inode=8192, profile="ext4", groups_per_flex=flex)
    with open(theirs, "wb") as f:
        f.truncate(mib << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", str(block_size), "-i", "8192", "-I", "256", "-G", str(flex),
                    "-O", NO_JOURNAL + ",^resize_inode", str(theirs)], check=True)
    assert features_of(ours) == features_of(theirs)
    assert groups_of(ours) == groups_of(theirs)
    assert_fsck_clean(ours)
    with Volume.open(ours, VolumeOptions(read_only=True)) as vol:
        assert vol.geo.groups_per_flex == flex and vol.geo.extents


def test_ext2_profile_has_no_flex_groups(tmp_path):
    img = tmp_path / "e2.img"
    mkfs(img, 64 << 20, block_size=1024)
    assert features_of(img) == {"ext_attr", "filetype", "sparse_super", "large_file"}
    with Volume.open(img, VolumeOptions(read_only=True)) as vol:
        assert vol.geo.groups_per_flex == 1 and not vol.geo.extents


@pytest.mark.serial
def test_the_kernel_mounts_the_profile_read_write_and_simfs_reads_what_it_wrote(tmp_path):
    if can_loop_mount():
        pytest.skip(can_loop_mount())
    img = tmp_path / "k.img"
    mkfs(img, 128 << 20, block_size=4096, profile="ext4")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", "-t", "ext4", str(img), str(mnt)], check=True)
    try:
        (mnt / "d").mkdir()
        data = os.urandom(300_000)
        (mnt / "d" / "f").write_bytes(data)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert_fsck_clean(img)
    with Volume.open(img, VolumeOptions()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        f = vol.lookup(d, b"f").st_ino
        assert vol.read(f, 0, len(data) + 1) == data
        vol.unlink(d, b"f")
    assert_fsck_clean(img)


@pytest.mark.serial
def test_mkfs_ext4_images_mount_in_simfs(tmp_path):
    """mkfs.ext4 -O ^has_journal,^metadata_csum,^64bit (with resize_inode, as Debian's
    mke2fs makes it): simfs reads, writes and frees on it; e2fsck stays clean; the kernel reads
    what simfs wrote."""
    img = tmp_path / "m.img"
    with open(img, "wb") as f:
        f.truncate(96 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-O", NO_JOURNAL, str(img)], check=True)
    assert {"resize_inode", "flex_bg", "extent", "huge_file", "dir_nlink", "extra_isize"} <= features_of(img)
    data = bytes(range(256)) * 3000
    with Volume.open(img, VolumeOptions()) as vol:
        assert vol.geo.groups_per_flex == 16
        d = vol.mkdir(vol.root_ino, b"dir", 0o755, 0, 0).st_ino
        ino = vol.create(d, b"file", 0o644, 0, 0).st_ino
        vol.hold(ino)
        vol.write(ino, 0, data)
        vol.drop(ino)
    assert_fsck_clean(img)
    if can_loop_mount() is None:
        mnt = tmp_path / "ro"
        with kernel_mount(img, mnt, fstype="ext4"):
            assert (mnt / "dir" / "file").read_bytes() == data


@pytest.mark.parametrize("extra,named", [("", "64bit"), ("^64bit,metadata_csum", "metadata_csum"),
                                         ("^64bit,^metadata_csum,inline_data", "inline_data"),
                                         ("^64bit,^metadata_csum,uninit_bg", "uninit_bg")])
def test_features_simfs_cannot_handle_are_refused_by_name(tmp_path, capsys, extra, named):
    img = tmp_path / "r.img"
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    opts = ["-O", "^has_journal," + extra] if extra else ["-O", "^has_journal"]
    subprocess.run(["mkfs.ext4", "-q", "-F", *opts, str(img)], check=True, capture_output=True)
    with pytest.raises(ImageError, match=named):
        Volume.open(img, VolumeOptions())
    (tmp_path / "mnt").mkdir()
    line = refused_by(main, capsys, "mount", img, tmp_path / "mnt", words=(named,))
    assert "unsupported" in line


@pytest.mark.parametrize("argv,words", [
    (("--profile", "ext4", "-O", "metadata_csum"), ("metadata_csum", "cannot make")),
    (("-O", "nonsense"), ("unknown feature", "nonsense")),
    (("-G", "8"), ("flex_bg is not enabled",)),
    (("--profile", "ext4", "-G", "6"), ("power of 2",)),
])
def test_mkfs_refuses_what_it_cannot_make(tmp_path, capsys, argv, words):
    img = tmp_path / "no.img"
    refused_by(main, capsys, "mkfs", img, "64M", *argv, words=words)
    assert not img.exists()


def test_mkfs_feature_edits_follow_mke2fs(tmp_path, capsys):
    img = tmp_path / "e.img"
    assert main(["mkfs", "-q", str(img), "64M", "--profile", "ext4", "-O", "^dir_index,^huge_file"]) == 0
    assert features_of(img) == {"ext_attr", "filetype", "extent", "flex_bg", "sparse_super", "large_file",
                                "dir_nlink", "extra_isize"}
    assert_fsck_clean(img)


@pytest.mark.parametrize("where,words", [(10**7, "outside the blocks flex_bg allows"),
                                         (1, "outside the blocks flex_bg allows")])
def test_a_corrupt_flex_bg_descriptor_is_refused_at_mount(tmp_path, capsys, where, words):
    """Group 5's inode table moved past the end of the file system, or onto the primary
    descriptor table (ext4_check_descriptors refuses both): one line, exit 2, image untouched."""
    img = tmp_path / "d.img"
    mkfs(img, 64 << 20, block_size=1024, profile="ext4")
    desc = 1024 * 2 + 5 * 32 + 8                   # bg_inode_table of group 5 (descriptors at block 2)
    with open(img, "r+b") as f:
        f.seek(desc)
        f.write(where.to_bytes(4, "little"))
    before = img.read_bytes()
    (tmp_path / "mnt").mkdir()
    refused_by(main, capsys, "mount", img, tmp_path / "mnt", words=("group descriptor 5", words))
    assert img.read_bytes() == before
