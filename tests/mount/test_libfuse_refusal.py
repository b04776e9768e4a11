"""A mount libfuse refuses (fuse_session_new fails on an option it does not know) is one line
on stderr that names the options simfs passed to libfuse and libfuse's own reason, exit
status 2, nothing mounted, the image clean and no log left behind; in the background (the
daemon's refusal travels back through the pipe) and in the foreground. No option simfs takes
reaches libfuse refused today, so the option set is widened with one it refuses."""

from __future__ import annotations

import os

import pytest

from simfs.cli.main import main
from simfs.fuse import mountopts
from tests.conftest import e2fsck, fuse_mounts, make_image
from tests.helpers import refused_by

pytestmark = pytest.mark.mount


@pytest.mark.parametrize("foreground", [False, True])
def test_a_libfuse_refusal_is_one_line_naming_the_options(tmp_path, capsys, monkeypatch, foreground):
    real = mountopts.MountOptions.fuse_options
    monkeypatch.setattr(mountopts.MountOptions, "fuse_options",
                        lambda self, image: real(self, image) | {"no_such_libfuse_option"})
    img = make_image(tmp_path / "r.img", "64M")
    mnt = tmp_path / "m"
    mnt.mkdir()
    line = refused_by(main, capsys, "mount", img, mnt, *(["--foreground"] if foreground else []),
                      words=("libfuse refused", "no_such_libfuse_option", "default_permissions",
                             "subtype=simfs"))
    assert "unknown option" in line, line           # libfuse's own reason
    assert "RuntimeError" not in line
    assert os.path.realpath(mnt) not in fuse_mounts()
    assert e2fsck(img)[0] == 0
    assert not os.path.exists(str(img) + ".log")
