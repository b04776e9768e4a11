"""FFS cluster reallocation through the volume (cluster_write → ffs_reallocblks).

Seed 002: before r242520 (cg-2010) reallocation moves data blocks d0..d12 to a new
contiguous run and strands the first indirect block away from them; cg-2013 refuses clusters
that cross lbn 11→12 and keeps the indirect block between d11 and d12.
"""

import pytest

from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean


def _layout(tmp_path, alloc):
    img = tmp_path / f"{alloc}.img"
    mkfs(img, 64 << 20, block_size=4096, blocks_per_group=4096)
    with Volume.open(img, VolumeOptions(alloc=alloc, disk="ideal")) as vol:
        for i in range(40):                   # age the group: holes of 1-3 blocks
            vol.write(vol.create(vol.root_ino, b"small%d" % i, 0o644, 0, 0).st_ino, 0, b"x" * 4096 * (1 + i % 3))
        for i in range(0, 40, 2):
            vol.unlink(vol.root_ino, b"small%d" % i)
        vol.sync()
        ino = vol.create(vol.root_ino, b"big", 0o644, 0, 0).st_ino
        for off in range(0, 200 * 4096, 4096):   # appended block by block, as cp writes
            vol.write(ino, off, bytes([off // 4096 % 251]) * 4096)
        blocks = dict(vol.filemap.blocks(vol.inodes.get(ino)))
        moved = vol.counters.get("clusters_reallocated", 0)
        assert vol.read(ino, 150 * 4096, 4096) == bytes([150 % 251]) * 4096
    assert_fsck_clean(img)
    return blocks, moved


@pytest.mark.parametrize("alloc", ["cg-2010", "cg-2013"])
def test_reallocation_makes_data_contiguous(tmp_path, alloc):
    blocks, moved = _layout(tmp_path, alloc)
    assert moved > 0
    assert all(blocks[i] + 1 == blocks[i + 1] for i in range(11))          # d0..d11 in one run


def test_first_indirect_block_is_stranded_by_2010_and_inline_with_2013(tmp_path):
    old, _ = _layout(tmp_path, "cg-2010")
    new, _ = _layout(tmp_path, "cg-2013")
    assert new[11] < new["IND"] < new[12] and new[12] - new[11] == 2        # [d11][IND][d12]
    assert not (old[11] < old["IND"] < old[12])                            # stranded elsewhere
    assert abs(old["IND"] - old[11]) > 16
