"""Volume checked against outside oracles: the Linux kernel's ext2 driver, mkfs.ext2,
debugfs and e2fsck."""

import errno
import hashlib
import os
from pathlib import Path
import re
import stat
import subprocess

import pytest

from simfs.errors import FSError, ImageError
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume
from tests.helpers import assert_fsck_clean, can_loop_mount, kernel_mount, needs_e2fsprogs

pytestmark = needs_e2fsprogs


def build_tree(vol: Volume) -> None:
    """Nested dirs, empty dirs, files 0 B .. >1 MiB, holes, both kinds of symlink, hard links,
    fifos, devices and xattrs."""
    root = vol.root_ino
    d1 = vol.mkdir(root, b"src", 0o755, 0, 0).st_ino
    d2 = vol.mkdir(d1, b"deep", 0o750, 1000, 1000).st_ino
    d3 = vol.mkdir(d2, b"deeper", 0o700, 0, 0).st_ino
    vol.mkdir(root, b"empty", 0o755, 0, 0)
    rng = __import__("random").Random(7)
    sizes = [0, 1, 511, 4096, 12 * 1024, 13 * 1024, 300 * 1024, (1 << 20) + 12345]
    for i, size in enumerate(sizes):
        ino = vol.create([d1, d2, d3][i % 3], b"file%d.c" % i, 0o644, 0, 0).st_ino
        vol.write(ino, 0, rng.randbytes(size))
    holey = vol.create(d1, b"holes", 0o600, 0, 0).st_ino
    vol.write(holey, 5 << 20, b"after a hole")
    vol.write(holey, 100, b"near the start")
    vol.symlink(d1, b"fast-link", b"deep/file1.c", 0, 0)
    vol.symlink(d1, b"slow-link", b"deep/" + b"x" * 150, 0, 0)
    f0 = vol.lookup(d1, b"file0.c").st_ino
    vol.link(f0, root, b"hardlink-to-file0")
    vol.mknod(d2, b"fifo", stat.S_IFIFO | 0o644, 0, 0, 0)
    vol.mknod(d2, b"null", stat.S_IFCHR | 0o666, os.makedev(1, 3), 0, 0)
    vol.setxattr(holey, b"user.origin", b"simfs test")


def describe_tree(top) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, top)
            st = os.lstat(p)
            entry = [stat.filemode(st.st_mode), st.st_size if not stat.S_ISDIR(st.st_mode) else None, st.st_nlink,
                     st.st_uid, st.st_gid]
            if stat.S_ISLNK(st.st_mode):
                entry.append(os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                entry.append(hashlib.sha256(Path(p).read_bytes()).hexdigest())
            elif stat.S_ISCHR(st.st_mode):
                entry.append((os.major(st.st_rdev), os.minor(st.st_rdev)))
            out[rel] = entry
    return out


def describe_volume(vol: Volume, ino=None, prefix="") -> dict:
    out = {}
    ino = ino or vol.root_ino
    for name, child, _ in vol.readdir(ino):
        if name in (b".", b".."):
            continue
        rel = prefix + os.fsdecode(name)
        a = vol.getattr(child)
        entry = [stat.filemode(a.st_mode), a.st_size if not stat.S_ISDIR(a.st_mode) else None, a.st_nlink,
                 a.st_uid, a.st_gid]
        if stat.S_ISLNK(a.st_mode):
            entry.append(os.fsdecode(vol.readlink(child)))
        elif stat.S_ISREG(a.st_mode):
            entry.append(hashlib.sha256(vol.read(child, 0, a.st_size)).hexdigest())
        elif stat.S_ISCHR(a.st_mode):
            entry.append((os.major(a.st_rdev), os.minor(a.st_rdev)))
        out[rel] = entry
        if stat.S_ISDIR(a.st_mode):
            out.update(describe_volume(vol, child, rel + "/"))
    return out


@pytest.mark.serial
@pytest.mark.parametrize("block_size", [1024, 4096])
def test_kernel_sees_the_same_tree(tmp_path, block_size):
    if why := can_loop_mount():
        pytest.skip(why)
    img = tmp_path / "img"
    mkfs(img, 32 << 20, block_size=block_size)
    with Volume.open(img) as vol:
        build_tree(vol)
        ours = describe_volume(vol)
    assert_fsck_clean(img)
    with kernel_mount(img, tmp_path / "mnt") as mnt:
        theirs = describe_tree(mnt)
        xattr = os.getxattr(mnt / "src" / "holes", "user.origin")
    assert theirs == ours
    assert xattr == b"simfs test"
    assert "src/deep/deeper" in theirs and "empty" in theirs


@pytest.mark.serial
@pytest.mark.parametrize("block_size", [1024, 4096])
def test_the_largest_file_is_the_kernels(tmp_path, block_size):
    """Linux's ext2_max_size, and the kernel reading an inode of exactly that size: one byte
    more is EFBIG (for 4 KiB blocks simfs used to allow 2 TiB - 4 KiB, an i_size the kernel
    then called corrupt, "bad i_size value", while e2fsck passed it)."""
    from simfs.ondisk.constants import ext2_max_size
    kernel = {1024: 17247252480, 2048: 275415851008, 4096: 2196873666560}   # fs/ext2/super.c
    assert {b: ext2_max_size(b) for b in kernel} == kernel
    img = tmp_path / "img"
    mkfs(img, 32 << 20, block_size=block_size)
    with Volume.open(img) as vol:
        assert vol.max_size == kernel[block_size]
        f = vol.create(vol.root_ino, b"big", 0o100644, 0, 0).st_ino
        with pytest.raises(FSError) as e:
            vol.setattr(f, size=vol.max_size + 1)
        assert e.value.errno == errno.EFBIG
        vol.setattr(f, size=vol.max_size)
        vol.write(f, vol.max_size - 1, b"z")               # the last byte: a triple-indirect block
    assert_fsck_clean(img)
    with kernel_mount(img, tmp_path / "mnt") as mnt:
        size = os.stat(mnt / "big").st_size                # "Structure needs cleaning" if too big
        with open(mnt / "big", "rb") as fh:
            fh.seek(size - 1)
            last = fh.read(1)
    assert size == kernel[block_size] and last == b"z"


@pytest.mark.parametrize("block_size", [1024, 4096])
@pytest.mark.parametrize("features", ["^resize_inode,^dir_index", None])
def test_images_from_mkfs_ext2(tmp_path, block_size, features):
    img = tmp_path / "img"
    cmd = ["mkfs.ext2", "-q", "-F", "-b", str(block_size)] + (["-O", features] if features else [])
    subprocess.run(cmd + [str(img), "16M"], check=True)
    with Volume.open(img) as vol:
        d = vol.mkdir(vol.root_ino, b"dir", 0o755, 0, 0).st_ino
        for i in range(200):
            f = vol.create(d, b"f%03d" % i, 0o644, 0, 0).st_ino
            vol.write(f, 0, bytes([i]) * (i * 97))
        for i in range(0, 200, 2):
            vol.unlink(d, b"f%03d" % i)
        big = vol.create(vol.root_ino, b"big", 0o644, 0, 0).st_ino
        vol.write(big, 0, b"z" * (2 << 20))
    assert_fsck_clean(img)
    with Volume.open(img) as vol:
        d = vol.lookup(vol.root_ino, b"dir").st_ino
        assert vol.read(vol.lookup(d, b"f101").st_ino, 0, 1 << 20) == bytes([101]) * 101 * 97
        assert sum(1 for _ in vol.readdir(d)) == 100 + 2


def _debugfs_blocks(img, path) -> list:
    out = subprocess.run(["debugfs", "-R", f"stat {path}", str(img)], capture_output=True, text=True, check=True).stdout
    listing = out.split("BLOCKS:", 1)[1].split("TOTAL:", 1)[0]
    result = []
    for label, phys in re.findall(r"\(([^)]*)\):(\d+(?:-\d+)?)", listing):
        if "-" in phys:
            lo, hi = map(int, phys.split("-"))
            l0 = int(label.split("-")[0])
            result += [(l0 + i, lo + i) for i in range(hi - lo + 1)]
        else:
            result.append((label if not label[0].isdigit() else int(label), int(phys)))
    return result


def test_block_map_matches_debugfs_into_double_indirect(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 32 << 20, block_size=1024)
    with Volume.open(img) as vol:
        ino = vol.create(vol.root_ino, b"big", 0o644, 0, 0).st_ino
        # 12 direct + 256 single-indirect blocks end at 268 KiB; go well into double indirect
        vol.write(ino, 0, b"d" * (700 * 1024))
        vol.write(ino, 2 << 20, b"past a hole")
        ours = list(vol.filemap.blocks(vol.inodes.get(ino)))
    assert_fsck_clean(img)
    assert any(label == "DIND" for label, _ in ours)
    assert _debugfs_blocks(img, "/big") == ours


def test_enospc_leaves_earlier_files_and_a_clean_image(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 2 << 20, block_size=1024)
    kept = {}
    with Volume.open(img) as vol:
        for i in range(10_000):
            data = bytes([i % 251]) * 50_000
            try:
                ino = vol.create(vol.root_ino, b"f%d" % i, 0o644, 0, 0).st_ino
            except FSError as e:
                assert e.errno == errno.ENOSPC
                break
            try:
                n = vol.write(ino, 0, data)
            except FSError as e:
                assert e.errno == errno.ENOSPC
                break
            kept[b"f%d" % i] = data[:n]
            if n < len(data):
                break
        else:
            pytest.fail("the image never filled up")
        assert vol.statfs().f_bfree < 10
        with pytest.raises(FSError) as exc:
            vol.write(vol.create(vol.root_ino, b"more", 0o644, 0, 0).st_ino, 0, b"x" * 8192)
        assert exc.value.errno == errno.ENOSPC
    assert_fsck_clean(img)
    with Volume.open(img) as vol:
        for name, data in kept.items():
            assert vol.read(vol.lookup(vol.root_ino, name).st_ino, 0, 1 << 20) == data


def test_inodes_run_out_with_enospc(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 2 << 20, block_size=1024, inodes_per_group=64)
    with Volume.open(img) as vol:
        with pytest.raises(FSError) as exc:
            for i in range(1000):
                vol.create(vol.root_ino, b"i%d" % i, 0o644, 0, 0)
        assert exc.value.errno == errno.ENOSPC
    assert_fsck_clean(img)


def test_posix_errors(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with Volume.open(img) as vol:
        r = vol.root_ino
        f = vol.create(r, b"f", 0o644, 0, 0).st_ino
        d = vol.mkdir(r, b"d", 0o755, 0, 0).st_ino
        vol.create(d, b"inside", 0o644, 0, 0)
        cases = [
            (errno.ENAMETOOLONG, vol.create, r, b"n" * 256, 0o644, 0, 0),
            (errno.EEXIST, vol.mkdir, r, b"f", 0o755, 0, 0),
            (errno.ENOTDIR, vol.lookup, f, b"x"),
            (errno.ENOENT, vol.lookup, r, b"missing"),
            (errno.EISDIR, vol.unlink, r, b"d"),
            (errno.ENOTDIR, vol.rmdir, r, b"f"),
            (errno.ENOTEMPTY, vol.rmdir, r, b"d"),
            (errno.EINVAL, vol.rename, r, b"d", d, b"sub"),
            (errno.EISDIR, vol.rename, r, b"f", r, b"d"),
            (errno.EPERM, vol.link, d, r, b"dirlink"),
            (errno.EFBIG, vol.write, f, vol.max_size, b"x"),
            (errno.EISDIR, vol.read, d, 0, 10),
            (errno.EINVAL, vol.readlink, f),
        ]
        for err, fn, *args in cases:
            with pytest.raises(FSError) as exc:
                fn(*args)
            assert exc.value.errno == err, (fn.__name__, args[:2])
        vol.create(r, b"n" * 255, 0o644, 0, 0)   # exactly 255 bytes is fine
    assert_fsck_clean(img)


def test_large_file_beyond_4_gib(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 64 << 20, block_size=4096)
    with Volume.open(img) as vol:
        ino = vol.create(vol.root_ino, b"huge", 0o644, 0, 0).st_ino
        vol.write(ino, 5 << 30, b"beyond 4 GiB")
        assert vol.getattr(ino).st_size == (5 << 30) + 12
        assert vol.read(ino, (5 << 30) - 2, 20) == b"\0\0beyond 4 GiB"
    assert_fsck_clean(img)


def test_unlinked_file_lives_until_last_release(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with Volume.open(img) as vol:
        ino = vol.create(vol.root_ino, b"tmp", 0o644, 0, 0).st_ino
        vol.hold(ino)                                   # the kernel's reference
        vol.open_file(ino)
        vol.write(ino, 0, b"still here")
        vol.unlink(vol.root_ino, b"tmp")
        assert vol.read(ino, 0, 100) == b"still here"
        free_before = vol.statfs().f_bfree
        vol.release_file(ino, True)
        assert vol.statfs().f_bfree == free_before + 1  # freed at the last release
        assert vol.getattr(ino).st_nlink == 0           # the kernel's reference still sees it
        vol.drop(ino)                                   # until its FORGET
        with pytest.raises(FSError):
            vol.getattr(ino)
        orphan = vol.create(vol.root_ino, b"orphan", 0o644, 0, 0).st_ino
        vol.open_file(orphan)
        vol.write(orphan, 0, b"x" * 10000)
        vol.unlink(vol.root_ino, b"orphan")
    assert_fsck_clean(img)    # close freed the orphan that was still open


def test_unlinked_inode_nobody_has_open_is_freed_at_the_unlink(tmp_path):
    """The kernel evicts it at the unlink; its FORGET comes when it comes. Until then the
    number is not handed out again (what the kernel sends for the old node cannot reach a new
    inode), and a GETATTR through what still refers to it sees it with no link left."""
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with Volume.open(img) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        vol.hold(d, 2)                                  # two kernel references (lookup, readdir)
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.hold(ino, 3)
        vol.write(ino, 0, b"x" * 8192)
        free = vol.statfs()
        vol.unlink(vol.root_ino, b"f")
        vol.rmdir(vol.root_ino, b"d")
        now = vol.statfs()
        assert now.f_bfree == free.f_bfree + 2 + 1      # its data and the directory's block
        assert now.f_ffree == free.f_ffree + 2
        for gone in (ino, d):                           # through an O_PATH descriptor or a
            a = vol.getattr(gone)                       # removed working directory
            assert a.st_nlink == 0 and a.st_ino == gone
        with pytest.raises(FSError):
            vol.read(ino, 0, 1)
        with pytest.raises(FSError):
            vol.lookup(d, b"x")
        new = vol.create(vol.root_ino, b"g", 0o644, 0, 0).st_ino
        assert new not in (ino, d)                      # ext2 would take ino: not yet
        vol.drop(ino, 3)                                # the late FORGETs
        vol.drop(d, 2)
        for gone in (ino, d):
            with pytest.raises(FSError):
                vol.getattr(gone)
        from simfs.fs.namespace import Namespace      # and REUSE_AFTER inode events on (not
        made = []                                       # at the FORGET: the host's timing)
        for i in range(Namespace.REUSE_AFTER + 2):
            made.append(vol.create(vol.root_ino, b"h%d" % i, 0o644, 0, 0).st_ino)
            vol.hold(made[-1])
        again = next(n for n in made if n in (ino, d))  # now it is handed out again
        vol.hold(again)
        assert vol.getattr(again).st_nlink == 1
        vol.drop(again)
    assert_fsck_clean(img)


def test_a_referenced_number_is_reused_when_nothing_else_is_free(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with Volume.open(img) as vol:
        n = 0
        while True:                                     # fill every inode
            try:
                ino = vol.create(vol.root_ino, b"n%d" % n, 0o644, 0, 0).st_ino
            except FSError as e:
                assert e.errno == errno.ENOSPC
                break
            n += 1
        vol.hold(ino)
        vol.unlink(vol.root_ino, b"n%d" % (n - 1))     # the last one made, still referenced
        assert vol.create(vol.root_ino, b"last", 0o644, 0, 0).st_ino == ino
        vol.hold(ino)
        vol.drop(ino)                                   # the old node's FORGET
        assert vol.getattr(ino).st_nlink == 1 and ino in vol.holds
        vol.drop(ino)
    assert_fsck_clean(img)


def test_readdir_cookies_survive_changes(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        names = [b"entry-%04d" % i for i in range(400)]
        for n in names:
            vol.create(d, n, 0o644, 0, 0)
        seen, cookie = [], 0
        it = iter(vol.readdir(d, 0))
        for _ in range(150):
            name, _, cookie = next(it)
            seen.append(name)
        for n in names[:100]:               # remove entries behind and ahead of the cursor
            vol.unlink(d, n)
        vol.unlink(d, names[300])
        seen += [name for name, _, _ in vol.readdir(d, cookie)]
        expected = [b".", b".."] + names
        assert len(seen) == len(set(seen))
        assert set(seen) == set(expected) - {names[300]}


@pytest.mark.parametrize("content,message", [
    (b"", "not an ext2 file system"),
    (b"\0" * 8192, "not an ext2 file system"),
    (b"hello world" * 1000, "not an ext2 file system"),
])
def test_foreign_files_are_refused_clearly(tmp_path, content, message):
    img = tmp_path / "img"
    img.write_bytes(content)
    with pytest.raises(ImageError, match=message):
        Volume.open(img)


def test_missing_image_and_unsupported_features(tmp_path):
    with pytest.raises(ImageError, match="no such image"):
        Volume.open(tmp_path / "nope")
    img = tmp_path / "ext4"
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img), "16M"], check=True)
    with pytest.raises(ImageError, match=r"unsupported incompatible feature\(s\):.*64bit"):
        Volume.open(img)


def test_corrupt_superblock_is_refused(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with open(img, "r+b") as f:           # s_inodes_per_group = 0
        f.seek(1024 + 40)
        f.write(b"\0\0\0\0")
    with pytest.raises(ImageError, match="corrupt superblock"):
        Volume.open(img)


def test_image_is_locked_while_open(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20)
    with Volume.open(img):
        with pytest.raises(ImageError, match="already in use"):
            Volume.open(img)
