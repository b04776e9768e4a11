"""The verbs refuse what the real tools refuse, before the image is touched: `rm -rf` of ".",
"..", a path ending in them or the mount's root; `cp -a` of a directory into itself; an mmap
fill of the root. And find and du take a file operand as GNU find and du -s do: one fstatat."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys

import pytest

from simfs.inprocess import treedesc, verbs
from simfs.inprocess.kernel import Kernel
from simfs.errors import VerbRefused
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean
from pathlib import Path

UUID = "00000000-0000-0000-0000-000000000002"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """An image holding t/{top.txt, ln -> top.txt, a/{f, deep/g}, ab/h, b/}."""
    d = tmp_path_factory.mktemp("refusals")
    src = d / "src"
    (src / "a" / "deep").mkdir(parents=True)
    (src / "ab").mkdir()
    (src / "b").mkdir()
    (src / "top.txt").write_bytes(b"top\n" * 3000)                # 12000 B: 3 blocks
    (src / "a" / "f").write_bytes(b"f\n")
    (src / "a" / "deep" / "g").write_bytes(b"g" * 5000)
    (src / "ab" / "h").write_bytes(b"h\n")
    os.symlink("top.txt", src / "ln")
    img = d / "pristine.img"
    mkfs(str(img), 64 << 20, block_size=4096, uuid=UUID)
    verbs.run(str(img), VolumeOptions(), "unpack", "t",
              source=treedesc.from_directory(str(src), with_data=True), mkdir=True)
    return img


@pytest.fixture
def img(pristine, tmp_path):
    copy = tmp_path / "img"
    shutil.copyfile(pristine, copy)
    return copy


def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _listing(img) -> set[bytes]:
    """Every path in the image (lost+found included)."""
    out = set()
    with Volume.open(str(img), VolumeOptions()) as vol:
        def walk(ino, prefix):
            for name, child, _ in vol.readdir(ino, 0):
                if name in (b".", b".."):
                    continue
                p = prefix + b"/" + name
                out.add(p)
                if stat.S_ISDIR(vol.peek_attr(child).st_mode):
                    walk(child, p)
        walk(vol.root_ino, b"")
    return out


FULL = {b"/lost+found", b"/t", b"/t/top.txt", b"/t/ln", b"/t/a", b"/t/a/f", b"/t/a/deep",
        b"/t/a/deep/g", b"/t/ab", b"/t/ab/h", b"/t/b"}


def _refused(img, verb, path, message, **params):
    before = _digest(img)
    with pytest.raises(VerbRefused) as e:
        verbs.run(str(img), VolumeOptions(), verb, path, **params)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert _digest(img) == before                   # not even opened
    return str(e.value)


def test_the_pristine_image(pristine):
    assert _listing(pristine) == FULL
    assert_fsck_clean(str(pristine))


# rm -rf ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [".", "./", "..", "../", "t/.", "t/./", "t/..", "t/a/..",
                                  "/t/..", "t/a/../.", "./."])
def test_rm_refuses_dot_and_dotdot(img, path):
    msg = _refused(img, "rm-rf", path, "rm: refusing to remove '.' or '..' directory: skipping")
    assert msg.endswith(f"'{path}'")
    assert _listing(img) == FULL


@pytest.mark.parametrize("path", ["", "/", "//"])
def test_rm_refuses_the_root(img, path):
    _refused(img, "rm-rf", path, "rm: it is dangerous to operate recursively on")
    assert _listing(img) == FULL


@pytest.mark.parametrize("where", [[], [b"t", b".."], [b"."], [b"t", b"a", b".."]])
def test_rm_run_refuses_names_it_is_given(img, where):
    """Callers that build the names themselves (tests, jobs) get the same refusal."""
    vol = Volume.open(str(img), VolumeOptions())
    k = Kernel(vol)
    with pytest.raises(VerbRefused):
        verbs.VERBS["rm-rf"](k, where)
    k.unmount()
    vol.close()
    assert _listing(img) == FULL
    assert_fsck_clean(str(img))


def test_rm_still_removes_a_path_with_a_trailing_slash(img):
    out = verbs.run(str(img), VolumeOptions(), "rm-rf", "t/a/")
    assert out["result"]["dirs"] == 2 and out["result"]["files"] == 2
    assert _listing(img) == {p for p in FULL if not p.startswith(b"/t/a/") and p != b"/t/a"}
    assert_fsck_clean(str(img))


# cp -a ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("src, dst", [
    ("t", "t/sub"), ("t", "t/sub/deeper"), ("", "copy"), ("/", "/t/x"), (".", "x"),
    ("t", "./t/./x"), ("t/a", "t/b/../a/x"), ("t/a/..", "t/x"), ("t", "u/../t/x"),
    ("t/a", "t/a/deep/x"),
])
def test_cp_refuses_a_directory_into_itself(img, src, dst):
    msg = _refused(img, "cp-a", src, "cp: cannot copy a directory, ", dst=dst)
    assert msg == f"cp: cannot copy a directory, '{src}', into itself, '{dst}'"
    assert _listing(img) == FULL


@pytest.mark.parametrize("src, dst", [("t", "t"), ("t", "./t/"), ("t/a", "t/b/../a"), ("", "/")])
def test_cp_refuses_the_source_itself(img, src, dst):
    _refused(img, "cp-a", src, "are the same file", dst=dst)
    assert _listing(img) == FULL


def test_cp_run_refuses_names_it_is_given(img):
    vol = Volume.open(str(img), VolumeOptions())
    k = Kernel(vol)
    with pytest.raises(VerbRefused):
        verbs.VERBS["cp-a"](k, [b"t"], dst=[b"t", b"sub"])
    with pytest.raises(VerbRefused):
        verbs.VERBS["cp-a"](k, [], dst="copy")
    k.unmount()
    vol.close()
    assert _listing(img) == FULL
    assert_fsck_clean(str(img))


def test_cp_compares_names_not_prefixes(img):
    """t/a and t/ab share a prefix of characters, not of names: the copy is made."""
    verbs.run(str(img), VolumeOptions(), "cp-a", "t/ab", dst="t/a/ab2")
    verbs.run(str(img), VolumeOptions(), "cp-a", "t/a", dst="t/ab/a")
    assert _listing(img) == FULL | {b"/t/a/ab2", b"/t/a/ab2/h", b"/t/ab/a", b"/t/ab/a/f",
                                    b"/t/ab/a/ab2", b"/t/ab/a/ab2/h", b"/t/ab/a/deep",
                                    b"/t/ab/a/deep/g"}
    assert_fsck_clean(str(img))


# mmap-fill --------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, message", [
    ("", "Is a directory (the image's root)"), ("/", "Is a directory (the image's root)"),
    (".", "Is a directory (the image's root)"), ("t/", "'t/': Is a directory"),
    ("t/..", "Is a directory"), ("new/", "Is a directory"),
])
def test_mmap_fill_refuses_a_directory_path(img, path, message):
    _refused(img, "mmap-fill", path, message, size=64 << 10)
    assert _listing(img) == FULL


def test_mmap_fill_run_refuses_the_root(img):
    vol = Volume.open(str(img), VolumeOptions())
    k = Kernel(vol)
    with pytest.raises(VerbRefused):
        verbs.VERBS["mmap-fill"](k, [], size=64 << 10)
    k.unmount()
    vol.close()
    assert _listing(img) == FULL


# find and du on a file operand --------------------------------------------------------------------
class Recording:
    """The Kernel, with the system calls a verb makes recorded as (name, path or None)."""

    def __init__(self, k):
        self._k, self.calls = k, []

    def __getattr__(self, name):
        got = getattr(self._k, name)
        if not callable(got):
            return got

        def call(*args, **kw):
            path = args[1] if len(args) > 1 and isinstance(args[1], list) else None
            self.calls.append((name, path))
            return got(*args, **kw)
        return call


@pytest.mark.parametrize("verb", ["find", "du"])
@pytest.mark.parametrize("path, kind", [([b"t", b"top.txt"], "files"), ([b"t", b"ln"], "other")])
def test_find_and_du_take_a_file_operand_with_one_fstatat(img, verb, path, kind):
    vol = Volume.open(str(img), VolumeOptions())
    k = Recording(Kernel(vol))
    out = verbs.VERBS[verb](k, path)
    assert k.calls == [("stat", path)]              # newfstatat(AT_FDCWD, FILE), nothing else
    assert out["dirs"] == 0 and out[kind] == 1 and out["files"] + out["other"] == 1
    if verb == "du":
        assert out["blocks"] == vol.getattr(vol.lookup(vol.lookup(vol.root_ino, b"t").st_ino,
                                                       path[1]).st_ino).st_blocks
    k.unmount()
    vol.close()
    assert_fsck_clean(str(img))


def test_find_and_du_on_a_file_through_run(img):
    assert verbs.run(str(img), VolumeOptions(), "find", "t/a/f")["result"] == \
        {"dirs": 0, "files": 1, "other": 0}
    du = verbs.run(str(img), VolumeOptions(), "du", "t/top.txt")["result"]
    assert du["files"] == 1 and du["dirs"] == 0 and du["blocks"] == 24     # 12000 B: 3 4-KiB blocks
    # a directory operand is walked as before
    assert verbs.run(str(img), VolumeOptions(), "find", "t/a")["result"] == \
        {"dirs": 2, "files": 2, "other": 0}


# the command line ------------------------------------------------------------------------------------
def test_cli_rm_rf_dot_exits_2_with_one_line(img):
    before = _digest(img)
    r = subprocess.run([sys.executable, "-m", "simfs.cli", "verb", "rm-rf", str(img), "."],
                       capture_output=True, text=True)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert err == ["simfs verb: rm: refusing to remove '.' or '..' directory: skipping '.'"], r.stderr
    assert r.stdout == ""
    assert _digest(img) == before
    assert _listing(img) == FULL


def test_a_bad_page_cache_model_is_refused_before_the_file_is_made(tmp_path):
    img = tmp_path / "m.img"
    mkfs(str(img), 16 << 20, block_size=4096, uuid=UUID)
    with pytest.raises(ValueError, match="fault_us"):
        verbs.run(str(img), VolumeOptions(), "mmap-fill", "f", size=1 << 20, writes="mmap",
                  pagecache="linux-2.6.29,fault_us=nan")
    with Volume.open(str(img), VolumeOptions(read_only=True)) as vol:
        with pytest.raises(OSError):
            vol.lookup(vol.root_ino, b"f")
    assert_fsck_clean(img)
