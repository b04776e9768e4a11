"""Bad input to `simfs` (argparse usage errors of every command, replay, mkfs, verb): one line on
stderr, no traceback, exit status 2, nothing lost (an image refused is unchanged and stays
e2fsck-clean). Each test runs `python -m simfs.cli ...` as a user would; no FUSE."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean
from pathlib import Path


def simfs(*argv, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simfs.cli", *map(str, argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def refused(*argv, words=(), img=None, cwd=None) -> str:
    """Run `simfs ARGV`: exit status 2, one line on stderr containing `words`, and IMAGE (if
    given) unchanged and e2fsck-clean. Returns the line."""
    before = sha(img) if img is not None else None
    r = simfs(*argv, cwd=cwd)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    if img is not None:
        assert sha(img) == before, "a refused command changed the image"
        assert_fsck_clean(img)
    return lines[0]


@pytest.fixture
def image(tmp_path):
    img = tmp_path / "d.img"
    mkfs(img, 64 << 20)
    return img


# 1. argparse's usage errors: one line, for every command ------------------------------------------
@pytest.mark.parametrize("argv, prog, words", [
    (["mkfs", "x.img", "64X"], "simfs mkfs", ["argument SIZE: not a size: '64X'"]),
    (["mkfs", "x.img", "64M", "--sise", "8M"], "simfs mkfs", ["--sise", "did you mean --size?"]),
    (["mkfz", "x.img"], "simfs", ["invalid choice: 'mkfz'", "did you mean mkfs?"]),
    (["verb", "fnd", "x.img", "/"], "simfs verb", ["invalid choice: 'fnd'", "did you mean find?"]),
    (["verb", "dd", "x.img"], "simfs verb dd", ["required: PATH"]),
    (["verb", "dd", "x.img", "f", "--bs", "x"], "simfs verb dd", ["argument --bs"]),
    (["replay"], "simfs replay", ["required: LOG, IMAGE"]),
    (["disks", "show"], "simfs disks show", ["required"]),
    (["fsck"], "simfs fsck", ["required"]),
    (["stats", "--bogus"], "simfs stats", ["unrecognized arguments: --bogus"]),
    (["compare"], "simfs compare", ["required"]),
    (["mount", "x.img"], "simfs mount", ["required"]),
    (["layout"], "simfs layout", ["required"]),
])
def test_usage_errors_are_one_line(tmp_path, argv, prog, words):
    line = refused(*argv, words=words, cwd=tmp_path)
    assert line.startswith(f"{prog}: error: ") and line.endswith(f"({prog} --help)"), line
    assert "usage:" not in line
    assert not (tmp_path / "x.img").exists()


# 2, 3. simfs replay --------------------------------------------------------------------------------
@pytest.fixture
def recorded(tmp_path):
    """A log of a small run (create, write 8 KiB, read it back, unmount) and a copy of the image
    from before it. Returns (log lines, copy)."""
    from simfs.inprocess.oplog import RecordingVolume
    from simfs.fs.volume import Volume, VolumeOptions
    img = tmp_path / "rec.img"
    mkfs(img, 64 << 20)
    copy = tmp_path / "copy.img"
    copy.write_bytes(img.read_bytes())
    vol = RecordingVolume.start(Volume.open(img, VolumeOptions()), str(tmp_path / "run.log"), "t")
    ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
    vol.write(ino, 0, b"x" * 8192)
    vol.read(ino, 0, 8192)
    vol.close()
    lines = (tmp_path / "run.log").read_text().splitlines()
    assert lines[-1] == '["close",null]' and lines[2].startswith('["write",8192,')
    return lines, copy


def write_log(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_checks_the_image_before_its_identity(tmp_path, recorded):
    lines, _ = recorded
    log = write_log(tmp_path / "ok.log", lines)
    rnd = tmp_path / "random.img"
    rnd.write_bytes(bytes(range(256)) * (4 << 12))
    line = refused("replay", log, rnd, words=(f"{rnd}: not an ext2 file system (bad magic",))
    assert "another image" not in line
    verb = simfs("verb", "find", rnd, "/")
    assert verb.returncode == 2 and line.split(": ", 1)[1] == verb.stderr.strip().split(": ", 1)[1]
    short = tmp_path / "short.img"
    short.write_bytes(b"\1" * 1000)
    refused("replay", log, short, words=("not an ext2 file system (file is only 1000 bytes)",))


def test_replay_refuses_an_ext4_image_as_such(tmp_path, recorded):
    import shutil
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 not installed")
    lines, _ = recorded
    img = tmp_path / "ext4.img"
    img.write_bytes(b"")
    subprocess.run(["truncate", "-s", "64M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True, capture_output=True)
    line = refused("replay", write_log(tmp_path / "ok.log", lines), img,
                   words=("unsupported incompatible feature(s)",))
    assert "another image" not in line


def test_replay_refuses_an_unknown_header_option(tmp_path, recorded):
    import json
    lines, copy = recorded
    head = json.loads(lines[0])
    head["options"]["frobnicate"] = 3
    log = write_log(tmp_path / "other.log", [json.dumps(head)] + lines[1:])
    refused("replay", log, copy, img=copy,
            words=("'frobnicate'", "does not know", "another simfs version"))


def test_replay_names_the_operation_after_the_unmount(tmp_path, recorded):
    lines, copy = recorded
    n = len(lines) - 1                      # operations, the unmount last
    log = write_log(tmp_path / "after.log", lines + ['["getattr",null,0]'])
    line = refused("replay", log, copy, img=copy,
                   words=(f"operation {n + 1} (line {n + 2}) follows the unmount (operation {n}",))
    assert "without the unmount" not in line
    refused("replay", "--partial", log, copy, img=copy, words=("follows the unmount",))


@pytest.mark.parametrize("op, length", [("write", 10 ** 12), ("write", -5), ("read", 10 ** 12),
                                        ("write", "12")])
def test_replay_refuses_an_impossible_length(tmp_path, recorded, op, length):
    import json
    lines, copy = recorded
    i = next(i for i, line in enumerate(lines) if line.startswith(f'["{op}"'))
    rec = json.loads(lines[i])
    rec[-1] = length
    log = write_log(tmp_path / "edited.log", lines[:i] + [json.dumps(rec)] + lines[i + 1:])
    line = refused("replay", log, copy, words=(f"operation {i} (line {i + 1}, {op}) is malformed",
                                               repr(length)))
    assert "MemoryError" not in line
    assert_fsck_clean(copy)


# 4. simfs mkfs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("opts, words", [
    (["--uuid", ""], ["--uuid is empty"]),
    (["--hash-seed", ""], ["--hash-seed is empty"]),
    (["--disk", ""], ["--disk is empty"]),
    (["--maxio", "64K"], ["--maxio", "needs --disk"]),
])
def test_mkfs_refuses_empty_or_pointless_options(tmp_path, image, opts, words):
    refused("mkfs", image, "64M", "--force", *opts, words=words, img=image)
    refused("mkfs", tmp_path / "new.img", "64M", *opts, words=words)
    assert not (tmp_path / "new.img").exists()


def test_mkfs_refuses_an_empty_image_name(tmp_path):
    refused("mkfs", "", "64M", words=["the image name is empty"])


def test_mkfs_maxio_with_disk_still_works(tmp_path):
    r = simfs("mkfs", tmp_path / "t.img", "64M", "--disk", "sata7200", "--maxio", "64K", "-q")
    assert r.returncode == 0 and "mkfs on sata7200" in r.stdout, r.stderr
    assert_fsck_clean(tmp_path / "t.img")


# 5. simfs verb's own options -----------------------------------------------------------------------
@pytest.fixture
def with_file(image):
    """The image with a 1 MiB file "big" (written by the mmap-fill verb)."""
    r = simfs("verb", "mmap-fill", image, "big", "--size", "1M", "--json")
    assert r.returncode == 0, r.stderr
    return image


@pytest.mark.parametrize("opts, words", [
    (["--bs", "0"], ["argument --bs: invalid number: '0'"]),
    (["--count", "-1"], ["argument --count: invalid number: '-1'"]),
    (["--skip", "-5"], ["argument --skip: invalid number: '-5'"]),
    (["--count", "two"], ["argument --count: invalid number: 'two'"]),
])
def test_dd_refuses_invalid_numbers(with_file, opts, words):
    line = refused("verb", "dd", with_file, "big", *opts, words=words, img=with_file)
    assert line.startswith("simfs verb dd: error: ")


def test_dd_takes_valid_numbers(with_file):
    import json
    r = simfs("verb", "dd", with_file, "big", "--bs", "4K", "--skip", "3", "--count", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["result"] == {"reads": 2, "bytes": 8192}


def test_mmap_fill_pagecache_needs_writes_mmap(image, tmp_path):
    refused("verb", "mmap-fill", image, "f", "--size", "1M", "--pagecache", "bogus",
            words=("--pagecache", "needs --writes mmap"), img=image)
    r = simfs("verb", "mmap-fill", image, "f", "--size", "1M", "--writes", "mmap",
              "--pagecache", "linux-2.6.29,ram=1G", "--json")
    assert r.returncode == 0, r.stderr
    assert_fsck_clean(image)


def test_empty_stats_path_is_refused(image, recorded, tmp_path):
    refused("verb", "find", image, "/", "--stats", "", words=("argument --stats: an empty path",),
            img=image, cwd=tmp_path)
    lines, copy = recorded
    refused("replay", write_log(tmp_path / "ok.log", lines), copy, "--stats", "",
            words=("argument --stats: an empty path",), img=copy, cwd=tmp_path)


# 6. every verb's --help has examples, and they parse -----------------------------------------------
def _examples(help_text: str) -> list[str]:
    """The command lines of the "examples:" block (as tests/mount/test_help_examples.py reads
    them: a trailing backslash continues a line), without trailing comments."""
    block = help_text.split("examples:", 1)[1].split("\n\n", 1)[0]
    return [ex.split("#")[0].strip() for ex in block.replace("\\\n", " ").splitlines() if ex.strip()]


@pytest.mark.parametrize("verb", ["", "unpack", "find", "cp-a", "rm-rf", "tar-read", "du", "grep",
                                  "dd", "cat", "mmap-fill"])
def test_verb_help_shows_examples_that_parse(verb):
    import shlex
    from simfs.cli.main import build_parser
    r = simfs("verb", *([verb] if verb else []), "--help")
    assert r.returncode == 0 and "examples:" in r.stdout, r.stdout
    lines = _examples(r.stdout)
    assert len(lines) >= (5 if not verb else 2), lines
    for ex in lines:
        argv = shlex.split(ex.split(">")[0])
        assert argv[:2] == ["simfs", "verb"] and (not verb or argv[2] == verb), ex
        assert "disk.img" in argv, ex          # the image tests/mount/test_help_examples.py makes
        a = build_parser().parse_args(argv[1:])
        assert a.func.__name__ == "cmd_verb"
