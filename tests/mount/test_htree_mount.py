"""Hash-tree directories through FUSE (`-o htree,dirorder=hash` on an mke2fs image): real
tools fill and thin a large directory, `ls -f` returns it in the order the kernel's own ext4
returns it from the same image (hash order), and e2fsck -fn and the kernel read it back."""

import os
import subprocess

import pytest

from tests.conftest import SimfsMount, manifest, run
from tests.helpers import kernel_mount
from tests.volume.test_htree import levels, mke2fs

pytestmark = pytest.mark.mount


def ls_f(path) -> list[bytes]:
    """Names in readdir order (ls -f: no sorting, . and .. included)."""
    return subprocess.run(["ls", "-f", str(path)], capture_output=True, check=True).stdout.splitlines()


def test_big_directory_in_the_kernels_order(tmp_path, source_tree):
    img, mnt = tmp_path / "img", tmp_path / "mnt"
    mke2fs(img, 4096, "256M")
    mnt.mkdir()
    m = SimfsMount(img, mnt, "htree,dirorder=hash")
    m.mount()
    try:
        big = mnt / "big"
        big.mkdir()
        listfile = tmp_path / "names"
        listfile.write_text("".join(f"file-{i:05d}.txt\n" for i in range(6000)))
        run(["xargs", "-a", str(listfile), "touch"], cwd=big)
        run(["find", str(big), "-name", "*3.txt", "-delete"])
        run(["cp", "-a", str(source_tree[0]), str(mnt / "src")])
        ours = ls_f(big)
        ours_src = manifest(mnt / "src")
    finally:
        m.umount()
    m.assert_clean()
    assert levels(img, "/big") == 0 and len(ours) == 2 + 6000 - 600
    with kernel_mount(img, tmp_path / "k") as k:
        assert ls_f(k / "big") == ours                     # the same names, in the same order
        assert manifest(k / "src") == ours_src
        assert os.path.exists(k / "big" / "file-00000.txt")
        assert not os.path.exists(k / "big" / "file-00003.txt")
