"""The writing verbs (unpack, cp -a, rm -rf) in process, without FUSE: the tree they leave on
the image, a clean e2fsck, and determinism (two runs, identical statistics). Their agreement
with the real tools on a mount is checked by tests/mount/test_verbs_validate.py."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess

import pytest

from simfs.inprocess import treedesc, verbs
from simfs.inprocess.kernel import Kernel
from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean

UUID = "00000000-0000-0000-0000-000000000001"


def _tree(root):
    """A small tree with what tar and cp treat specially: modes, empty files and dirs,
    multi-record files, a safe and an unsafe ("..") symlink, a hard link, a long name."""
    os.makedirs(root / "a" / "b" / "empty")
    os.makedirs(root / "c")
    (root / "a" / "small.txt").write_bytes(b"hello\n")
    (root / "a" / "b" / "big.bin").write_bytes(bytes(range(256)) * 1000)      # 256000 B
    (root / "a" / "zero").write_bytes(b"")
    (root / "c" / ("long" * 30)).write_bytes(b"x" * 5000)
    os.chmod(root / "a" / "small.txt", 0o444)
    os.chmod(root / "c", 0o750)
    os.symlink("small.txt", root / "a" / "ln")
    os.symlink("../a/small.txt", root / "c" / "up")
    os.link(root / "a" / "b" / "big.bin", root / "c" / "hard")
    for p in sorted(root.rglob("*"), reverse=True):
        os.utime(p, ns=(1_000_000_000, 1_000_000_000), follow_symlinks=False)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    d = tmp_path_factory.mktemp("src")
    _tree(d / "t")
    tar = d / "t.tar"
    subprocess.run(["tar", "--sort=name", "-cf", str(tar), "-C", str(d / "t"), "."], check=True)
    return d / "t", tar


def _image(tmp_path, name="img"):
    img = tmp_path / name
    mkfs(str(img), 64 << 20, block_size=4096, uuid=UUID)
    return img


def _unpack(img, tar, **opts):
    vol = Volume.open(str(img), VolumeOptions(**opts))
    k = Kernel(vol)
    k.mkdir(k.root, [b"tree"], 0o755)
    out = verbs.VERBS["unpack"](k, [b"tree"], treedesc.from_tarball(str(tar)))
    return vol, k, out


def _close(vol, k):
    k.unmount()
    snap = vol.stats_snapshot()
    vol.close()
    return snap


def _listing(vol, ino, path=b""):
    """{path: (kind, size, mode, nlink, target)} of the tree under directory `ino`."""
    out = {}
    for name, child, _ in vol.readdir(ino, 0):
        if name in (b".", b".."):
            continue
        a = vol.peek_attr(child)
        p = path + b"/" + name
        kind = stat.S_IFMT(a.st_mode)
        target = vol.readlink(child) if kind == stat.S_IFLNK else None
        out[p] = (kind, a.st_size if kind != stat.S_IFDIR else 0,
                  stat.S_IMODE(a.st_mode) if kind != stat.S_IFLNK else 0, a.st_nlink, target)
        if kind == stat.S_IFDIR:
            out.update(_listing(vol, child, p))
    return out


def _local(root):
    out = {}
    for p in sorted(root.rglob("*")):
        st = os.lstat(p)
        kind = stat.S_IFMT(st.st_mode)
        rel = b"/" + os.fsencode(p.relative_to(root))
        target = os.fsencode(os.readlink(p)) if kind == stat.S_IFLNK else None
        out[rel] = (kind, st.st_size if kind != stat.S_IFDIR else 0,
                    stat.S_IMODE(st.st_mode) if kind != stat.S_IFLNK else 0, st.st_nlink, target)
    return out


def _lookup(vol, names):
    ino = vol.root_ino
    for n in names:
        ino = vol.lookup(ino, n).st_ino
        vol.drop(ino)
    return ino


def test_unpack_builds_the_tree(tmp_path, tarball):
    src, tar = tarball
    img = _image(tmp_path)
    vol, k, out = _unpack(img, tar)
    assert out == {"dirs": 4, "files": 4, "symlinks": 2, "hardlinks": 1, "nodes": 0, "bytes": 261006}
    got = _listing(vol, _lookup(vol, [b"tree"]))
    assert got == _local(src)
    _close(vol, k)
    assert_fsck_clean(str(img))


def test_unpack_with_data_keeps_the_bytes(tmp_path, tarball):
    src, tar = tarball
    img = _image(tmp_path)
    vol = Volume.open(str(img), VolumeOptions())
    k = Kernel(vol)
    k.mkdir(k.root, [b"tree"], 0o755)
    verbs.VERBS["unpack"](k, [b"tree"], treedesc.from_tarball(str(tar), with_data=True))
    ino = vol.lookup(_lookup(vol, [b"tree", b"a", b"b"]), b"big.bin").st_ino
    assert vol.read(ino, 0, 300000) == bytes(range(256)) * 1000
    vol.drop(ino)
    _close(vol, k)
    assert_fsck_clean(str(img))


def test_unpack_from_a_directory_matches_the_tarball(tmp_path, tarball):
    src, tar = tarball
    a, b = _image(tmp_path, "a"), _image(tmp_path, "b")
    vol, k, _ = _unpack(a, tar)
    snap_a = _close(vol, k)
    vol = Volume.open(str(b), VolumeOptions())
    k = Kernel(vol)
    k.mkdir(k.root, [b"tree"], 0o755)
    verbs.VERBS["unpack"](k, [b"tree"], treedesc.from_directory(str(src)))
    snap_b = _close(vol, k)
    assert snap_a == snap_b


def test_unpack_again_keeps_the_directories_and_replaces_the_rest(tmp_path, tarball):
    """A second unpack onto the tree (GNU tar's default old-files policy): the same tree; no
    directory made again, every file, link and symbolic link removed and made anew (and the
    placeholder for the ".." link once more, at the end)."""
    src, tar = tarball
    img = _image(tmp_path)
    _close(*_unpack(img, tar)[:2])
    r = verbs.run(str(img), VolumeOptions(), "unpack", "tree", source=treedesc.from_tarball(str(tar)))
    ops = r["time"]["total"]["operations"]
    local = _local(src)
    assert "mkdir" not in ops
    assert ops["unlink"]["count"] == sum(kind != stat.S_IFDIR for kind, *_ in local.values()) + 1
    with Volume.open(str(img), VolumeOptions()) as vol:
        assert _listing(vol, _lookup(vol, [b"tree"])) == local
    assert_fsck_clean(str(img))


def test_unpack_stops_where_a_directory_with_entries_is_in_a_files_way(tmp_path):
    """tar: "./x: Cannot open: File exists" (unlinkat EISDIR, rmdir ENOTEMPTY): the verb stops
    there with EEXIST naming the member; what it made is on the image, which is clean."""
    for name, make in (("a", lambda r: (r / "x").mkdir() or (r / "x" / "f").write_text("f")),
                       ("b", lambda r: (r / "x").write_text("file"))):
        (tmp_path / name).mkdir()
        make(tmp_path / name)
        subprocess.run(["tar", "-cf", str(tmp_path / f"{name}.tar"), "-C", str(tmp_path / name), "."],
                       check=True)
    img = _image(tmp_path)
    a, b = (treedesc.from_tarball(str(tmp_path / f"{name}.tar")) for name in "ab")
    verbs.run(str(img), VolumeOptions(), "unpack", "t", mkdir=True, source=a)
    with pytest.raises(FSError) as e:
        verbs.run(str(img), VolumeOptions(), "unpack", "t", source=b)
    assert e.value.errno == errno.EEXIST and "x" in str(e.value)
    assert_fsck_clean(str(img))


@pytest.mark.parametrize("alloc,dirorder", [("ext2", "hash"), ("cg", "linear"),
                                            ("first-free", "inode")])
def test_unpack_is_deterministic(tmp_path, tarball, alloc, dirorder):
    _, tar = tarball
    snaps = []
    for name in ("a", "b"):
        img = _image(tmp_path, name)
        vol, k, _ = _unpack(img, tar, alloc=alloc, dirorder=dirorder)
        snaps.append(_close(vol, k))
    assert snaps[0] == snaps[1]
    assert snaps[0]["now"] > 0


def test_cp_a_copies_the_tree(tmp_path, tarball):
    src, tar = tarball
    img = _image(tmp_path)
    vol, k, _ = _unpack(img, tar, dirorder="hash")
    _close(vol, k)
    snaps = []
    for name in ("x", "y"):
        copy = tmp_path / name
        shutil.copyfile(img, copy)
        vol = Volume.open(str(copy), VolumeOptions(dirorder="hash"))
        k = Kernel(vol)
        out = verbs.VERBS["cp-a"](k, [b"tree"], dst=[b"copy"])
        assert out == {"dirs": 5, "files": 4, "symlinks": 2, "hardlinks": 1, "nodes": 0, "bytes": 261006}
        assert _listing(vol, _lookup(vol, [b"copy"])) == _listing(vol, _lookup(vol, [b"tree"]))
        snaps.append(_close(vol, k))
        assert_fsck_clean(str(copy))
    assert snaps[0] == snaps[1]


def _copied(img, tar):
    """One mount: the archive unpacked with its data into /tree, then `cp -a tree copy`."""
    vol = Volume.open(str(img), VolumeOptions())
    k = Kernel(vol)
    k.mkdir(k.root, [b"tree"], 0o755)
    verbs.VERBS["unpack"](k, [b"tree"], treedesc.from_tarball(str(tar), with_data=True))
    verbs.VERBS["cp-a"](k, [b"tree"], dst=[b"copy"])
    return vol, k


def test_cp_a_keeps_the_holes(tmp_path):
    """A file with holes (unpacked from tar -S) is copied by cp -a's sparse path: the same
    bytes, and no block for the holes (as many blocks as the source)."""
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "f", "wb") as f:
        f.write(bytes(range(256)) * 40)
        f.seek(3 << 20)
        f.write(b"x" * 5000)
        f.truncate(5 << 20)
    tar = tmp_path / "t.tar"
    subprocess.run(["tar", "-S", "-cf", str(tar), "-C", str(src), "."], check=True)
    img = _image(tmp_path)
    vol, k = _copied(img, tar)
    a, b = (vol.lookup(_lookup(vol, [top]), b"f") for top in (b"tree", b"copy"))
    assert vol.read(a.st_ino, 0, 6 << 20) == vol.read(b.st_ino, 0, 6 << 20) == (src / "f").read_bytes()
    assert b.st_size == 5 << 20 and b.st_blocks == a.st_blocks < 100
    for x in (a, b):
        vol.drop(x.st_ino)
    _close(vol, k)
    assert_fsck_clean(str(img))


def test_cp_a_copies_the_bytes(tmp_path, tarball):
    _, tar = tarball
    img = _image(tmp_path)
    vol, k = _copied(img, tar)
    ino = vol.lookup(_lookup(vol, [b"copy", b"a", b"b"]), b"big.bin").st_ino
    assert vol.read(ino, 0, 300000) == bytes(range(256)) * 1000
    vol.drop(ino)
    _close(vol, k)
    assert_fsck_clean(str(img))


def test_rm_rf_removes_the_tree(tmp_path, tarball):
    _, tar = tarball
    img = _image(tmp_path)
    vol, k, _ = _unpack(img, tar)
    before = vol.statfs()
    _close(vol, k)
    snaps = []
    for name in ("x", "y"):
        copy = tmp_path / name
        shutil.copyfile(img, copy)
        vol = Volume.open(str(copy), VolumeOptions())
        k = Kernel(vol)
        out = verbs.VERBS["rm-rf"](k, [b"tree"])
        assert out == {"dirs": 5, "files": 5, "other": 2}
        assert [n for n, _, _ in vol.readdir(vol.root_ino, 0) if n not in (b".", b"..")] \
            in ([], [b"lost+found"])
        after = vol.statfs()
        assert after.f_bfree > before.f_bfree and after.f_ffree > before.f_ffree
        snaps.append(_close(vol, k))
        assert_fsck_clean(str(copy))
    assert snaps[0] == snaps[1]


def test_verbs_are_registered():
    for name in ("unpack", "cp-a", "rm-rf", "find"):
        assert callable(verbs.VERBS[name])
