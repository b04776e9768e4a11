"""fsx on the ext4 profile (extent-mapped files, flex_bg), for every allocator.

The same runs as tests/mount/test_fsx.py (fsx against a model, unmount, `e2fsck -fn` clean, the
file debugfs dumps from the image equal to a reference run's), on images made with
`simfs mkfs --profile ext4`: with 1 KiB blocks and a 1 MiB file, so that fsx's writes, holes
and truncates grow the extent tree past the inode's four extents into leaf and index blocks
and cut it back.
"""

from __future__ import annotations

import pytest

from tests.mount.test_fsx import _seed, allocators, run_fsx_case

pytestmark = pytest.mark.mount

EXT4 = ("--profile", "ext4", "--block-size", "1024")


#: the ext4 allocators and the default one run in `make test`; the rest in `make test-long`
SHORT = ("ext2", "mballoc", "mballoc-delalloc")


@pytest.mark.parametrize("alloc", [a if a in SHORT else pytest.param(a, marks=pytest.mark.long)
                                   for a in allocators()])
def test_fsx_ext4_profile(simfs_factory, tmp_path, alloc):
    run_fsx_case(simfs_factory, tmp_path, f"alloc={alloc}", _seed(f"ext4 alloc={alloc}"),
                 flen=1 << 20, size="64M", mkfs_args=EXT4)
