"""The kernel's ext4 reads an ext4-profile simfs image back byte for byte after an untar and an
`rm -rf` of half the tree (issue 41's "done when"), for immediate and delayed allocation.

The generated source tree (2,000 files, 0 B to over 1 MiB, symlinks, hard links) is untarred
onto a mount of an image made with `simfs mkfs --profile ext4`; every other top-level directory
is removed; after the unmount `e2fsck -fn` is clean and the kernel's own ext4 driver (a
read-only loop mount) sees exactly the tree simfs showed, every file's bytes included.
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import manifest, run
from tests.helpers import kernel_mount

pytestmark = pytest.mark.mount

SKIP = ("lost+found", ".simfs")


@pytest.mark.parametrize("alloc", ["ext2", "delayed"])
def test_kernel_ext4_reads_the_tree_after_untar_and_rm(simfs_factory, tmp_path, source_tarball,
                                                       source_manifest, alloc):
    m = simfs_factory(f"alloc={alloc}", size="512M", mkfs_args=("--profile", "ext4"))
    run(["tar", "xf", source_tarball, "-C", m.mnt])
    assert manifest(m.mnt, skip_top=SKIP) == source_manifest
    tops = sorted(p for p in m.mnt.iterdir() if p.is_dir() and p.name not in SKIP)
    assert len(tops) >= 2
    for p in tops[::2]:
        shutil.rmtree(p)
    want = manifest(m.mnt, skip_top=SKIP)
    assert len(want) < len(source_manifest)
    m.umount()
    m.assert_clean()
    with kernel_mount(m.image, tmp_path / "kernel", fstype="ext4") as ro:
        assert manifest(ro) == want
