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


def simfs(*argv, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simfs.cli", *map(str, argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


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
