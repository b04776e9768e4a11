"""Shared test helpers: external oracles (e2fsck, debugfs) and image fixtures."""

import shutil
import subprocess

import pytest

needs_e2fsprogs = pytest.mark.skipif(shutil.which("e2fsck") is None, reason="e2fsprogs not installed")


def e2fsck(image) -> tuple[int, str]:
    """Run `e2fsck -fn` (check everything, change nothing); (exit status, output)."""
    r = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def assert_fsck_clean(image) -> None:
    rc, out = e2fsck(image)
    assert rc == 0, f"e2fsck -fn {image} exited {rc}:\n{out}"

