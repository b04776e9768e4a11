"""`simfs verb`, in-process (simfs.cli.main.main): unpack, find, cp -a and rm -rf on an image,
with the data where it should be; bad input refused with one line and exit status 2, the image
left e2fsck-clean."""

from __future__ import annotations

import json
import os
import stat
import tarfile

import pytest

from simfs.cli.main import main
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean


@pytest.fixture
def setup(tmp_path):
    src = tmp_path / "src"
    (src / "sub" / "deep").mkdir(parents=True)
    for i in range(30):
        (src / "sub" / f"f{i}.txt").write_bytes(os.urandom(37 * i + 1))
    (src / "sub" / "deep" / "big").write_bytes(os.urandom(300_000))
    os.symlink("sub/f1.txt", src / "link")
    img = tmp_path / "v.img"
    mkfs(img, 64 << 20, block_size=4096)
    return src, img


def run_json(capsys, *argv) -> dict:
    assert main(["verb", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_unpack_find_copy_remove(setup, capsys, tmp_path):
    src, img = setup
    doc = run_json(capsys, "unpack", img, "a/b", "--from", src, "-o", "alloc=ext2,disk=sas10k")
    assert doc["result"]["files"] == 31 and doc["result"]["symlinks"] == 1
    assert doc["time"]["now"] > 0
    assert run_json(capsys, "find", img, "a/b", "--type", "f")["result"]["files"] == 31
    run_json(capsys, "cp-a", img, "a/b", "--to", "c")
    with Volume.open(img, VolumeOptions()) as vol:
        d = vol.lookup(vol.lookup(vol.root_ino, b"c").st_ino, b"sub").st_ino
        big = vol.lookup(vol.lookup(d, b"deep").st_ino, b"big")
        assert vol.read(big.st_ino, 0, big.st_size) == (src / "sub" / "deep" / "big").read_bytes()
        assert vol.readlink(vol.lookup(vol.lookup(vol.root_ino, b"c").st_ino, b"link").st_ino) == b"sub/f1.txt"
    run_json(capsys, "rm-rf", img, "a")
    assert run_json(capsys, "find", img, "c")["result"] == {"dirs": 3, "files": 31, "other": 1}
    assert_fsck_clean(img)


def test_unpack_from_a_tarball_equals_from_the_directory(setup, capsys, tmp_path):
    src, img = setup
    tar = tmp_path / "t.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(src, arcname=".", filter=lambda m: m, recursive=True)
    other = tmp_path / "w.img"
    mkfs(other, 64 << 20, block_size=4096)
    a = run_json(capsys, "unpack", img, "t", "--from", tar)
    b = run_json(capsys, "unpack", other, "t", "--from", src)
    assert a["result"] == b["result"]


@pytest.mark.parametrize("argv, message", [
    (["find", "{img}", "nothere"], "find nothere: No such file or directory"),
    (["find", "{tmp}/none.img", "x"], "does not exist"),
    (["find", "{img}", "x", "-o", "dirorder=bogus"], "unknown directory order 'bogus'"),
    (["find", "{img}", "x", "-o", "oplog=/tmp/l"], "front-end option"),
    (["unpack", "{img}", "x", "--from", "{tmp}/missing"], "missing does not exist"),
    (["unpack", "{img}", "x", "--from", "{img}"], "the source file {img} is also the image"),
    (["cp-a", "{img}", "x", "--to", "y"], "cp-a x: No such file or directory"),
    (["cp-a", "{img}", "x", "--to", ""], "cp: cannot create directory '': No such file or directory"),
    (["mmap-fill", "{img}", "f", "--writes", "mmap", "--pagecache", "linux-9"], "unknown page-cache model"),
    (["mmap-fill", "{img}", "f", "--writes", "mmap", "--pagecache", "linux-2.6.29,ram=lots"], "bad value"),
])
def test_bad_input_is_one_line_and_status_2(setup, capsys, tmp_path, argv, message):
    _, img = setup
    argv = [a.format(img=img, tmp=tmp_path) for a in argv]
    assert main(["verb", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simfs verb: ") and message.format(img=img) in err[0], err
    assert_fsck_clean(img)


def test_a_full_image_stops_with_enospc(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(12):
        (src / f"f{i}").write_bytes(b"x" * (1 << 20))
    img = tmp_path / "small.img"
    mkfs(img, 8 << 20, block_size=4096)
    assert main(["verb", "unpack", str(img), "t", "--from", str(src)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0], err
    assert_fsck_clean(img)


def _tar(path, members: dict[str, bytes]) -> None:
    """An archive of regular files only, with these names (no directory members)."""
    import io
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in members.items():
            m = tarfile.TarInfo(name)
            m.size, m.mode = len(data), 0o644
            tf.addfile(m, io.BytesIO(data))


def _tree(img, *path: bytes):
    vol = Volume.open(img, VolumeOptions(disk="ideal", read_only=True))
    try:
        ino = vol.root_ino
        for name in path:
            ino = vol.lookup(ino, name).st_ino
        attr = vol.getattr(ino)
        if not stat.S_ISDIR(attr.st_mode):
            return attr, None
        return attr, sorted(n for n, _, _ in vol.readdir(ino) if n not in (b".", b".."))
    finally:
        vol.close()


def test_unpack_makes_the_directories_an_archive_leaves_out(tmp_path, capsys):
    """As GNU tar: a member whose directory is not in the archive gets it made (0755, umask
    022), a leading "/" and everything up to the last ".." is dropped from a name."""
    tar = tmp_path / "nodirs.tar"
    _tar(tar, {"d/e/f": b"one", "/abs/x": b"two", "../../up": b"three", "a/../../evil": b"four"})
    img = tmp_path / "v.img"
    mkfs(img, 16 << 20, block_size=4096)
    assert run_json(capsys, "unpack", img, "t", "--from", tar)["result"]["files"] == 4
    assert _tree(img)[1] == [b"lost+found", b"t"]               # nothing outside t
    assert _tree(img, b"t")[1] == [b"abs", b"d", b"evil", b"up"]
    attr, names = _tree(img, b"t", b"d")
    assert names == [b"e"] and attr.st_mode & 0o7777 == 0o755
    assert _tree(img, b"t", b"d", b"e", b"f")[0].st_size == 3
    assert_fsck_clean(img)


def test_a_failing_member_is_named(tmp_path, capsys):
    """A device number no 32-bit dev_t holds (glibc's mknod refuses it: EINVAL): the member
    is named, and the image is clean and marked with no error."""
    tar = tmp_path / "dev.tar"
    with tarfile.open(tar, "w", format=tarfile.GNU_FORMAT) as tf:
        m = tarfile.TarInfo("c")
        m.type, m.devmajor, m.devminor = tarfile.CHRTYPE, 2097151, 2097151
        tf.addfile(m)
    img = tmp_path / "v.img"
    mkfs(img, 16 << 20, block_size=4096)
    assert main(["verb", "unpack", str(img), "t", "--from", str(tar)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["simfs verb: unpack t: Invalid argument: c"], err
    assert_fsck_clean(img)
    assert main(["verb", "find", str(img), "t"]) == 0            # not marked with an error


def test_an_output_over_the_archive_is_refused(tmp_path, capsys):
    tar = tmp_path / "s.tar"
    _tar(tar, {"f": b"data"})
    before = tar.read_bytes()
    img = tmp_path / "v.img"
    mkfs(img, 16 << 20, block_size=4096)
    for out in (["--stats", str(tar)], ["-o", f"trace={tar}"]):
        assert main(["verb", "unpack", str(img), "t", "--from", str(tar), *out]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is also the source file" in err[0], err
        assert tar.read_bytes() == before


def test_cat_follows_a_symbolic_link_inside_the_image(setup, capsys, tmp_path):
    """cat, dd and grep open their operand as the kernel does, through a trailing link;
    a link that leads outside the image (absolute) is refused in one line, the image clean
    and marked with no error (it used to be read as a file: its target as block numbers)."""
    src, img = setup
    os.symlink("/etc/passwd", src / "abs")
    os.symlink("../f2.txt", src / "sub" / "deep" / "up")
    run_json(capsys, "unpack", img, "t", "--from", src)
    assert run_json(capsys, "cat", img, "t/link")["result"]["bytes"] == 38
    assert run_json(capsys, "dd", img, "t/sub/deep/up")["result"]["bytes"] == 75
    assert main(["verb", "cat", str(img), "t/abs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "leads outside the image (/etc/passwd)" in err[0], err
    assert_fsck_clean(img)
    assert main(["verb", "find", str(img), "t"]) == 0            # not marked with an error


def test_a_compressed_archive_cut_short(tmp_path, capsys):
    import gzip
    tar = tmp_path / "s.tar"
    _tar(tar, {f"f{i}": os.urandom(20000) for i in range(5)})
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gzip.compress(tar.read_bytes())[:40000])
    img = tmp_path / "v.img"
    mkfs(img, 16 << 20, block_size=4096)
    assert main(["verb", "unpack", str(img), "t", "--from", str(cut)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"simfs verb: cannot read {cut}: the archive ends early (cut short?)"], err
    assert_fsck_clean(img)


@pytest.mark.parametrize("out", [["-o", "trace=/dev/full"], ["--stats", "/dev/full"]])
def test_an_output_that_cannot_be_written_spares_the_image(setup, capsys, out):
    """A trace on a full disk used to fail every operation that made a request (EIO), and
    the image was marked with errors; now the trace stops, the run goes on, and the one
    line at the end names the file."""
    src, img = setup
    assert main(["verb", "unpack", str(img), "t", "--from", str(src), *out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    what = "trace" if "trace" in out[1] else "stats"
    assert len(err) == 1 and f"cannot write the {what} file /dev/full" in err[0], err
    assert "(the image is written back)" in err[0]
    assert_fsck_clean(img)
    assert run_json(capsys, "find", img, "t")["result"]["files"] == 31   # not marked with errors
