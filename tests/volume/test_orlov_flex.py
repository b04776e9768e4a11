"""ext4's inode placement (policies/ext4_ialloc.py, inode_placement=orlov-flex) through Volume.

With flex groups of one it agrees with ext2's Orlov (policies/linux_ialloc.py) where the
kernels' code does: top-level directories (the same seeded start, the same search) and
files (find_group_other). With flex groups it packs: a directory goes to the first group of
the flex group Orlov chose, a file to the first group of its parent's flex group with a free
inode. The image here has no flex_bg; the placer reads the flex size from the geometry
(`groups_per_flex`), set on the volume's geometry as an ext4 image's superblock sets it.
"""

import pytest

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean


def _image(path):
    mkfs(path, 64 << 20, block_size=1024, blocks_per_group=1024, inodes_per_group=64,
         uuid=bytes(16), hash_seed=bytes(16), now=1)
    return path


def _populate(vol, tops=6, files=5):
    """Top-level directories, each with files: the inode numbers in creation order."""
    out = []
    for i in range(tops):
        d = vol.mkdir(vol.root_ino, b"top%d" % i, 0o755, 0, 0).st_ino
        out.append(d)
        out += [vol.create(d, b"f%d" % j, 0o644, 0, 0).st_ino for j in range(files)]
    return out


def test_flex_size_one_agrees_with_ext2_orlov_at_the_top_and_for_files(tmp_path):
    got = {}
    for placer in ("orlov", "orlov-flex"):
        img = _image(tmp_path / placer)
        with Volume.open(img, VolumeOptions(alloc="mballoc", inode_placement=placer)) as vol:
            got[placer] = _populate(vol)
        assert_fsck_clean(img)
    assert got["orlov"] == got["orlov-flex"]


@pytest.mark.parametrize("flex", [4, 16])
def test_flex_groups_pack_inodes_at_their_first_group(tmp_path, flex):
    img = _image(tmp_path / "img")
    with Volume.open(img, VolumeOptions(alloc="mballoc", inode_placement="orlov-flex")) as vol:
        vol.geo.groups_per_flex = flex
        assert vol.space.geometry.groups_per_flex == flex
        geo = vol.geo
        tops = [vol.mkdir(vol.root_ino, b"top%d" % i, 0o755, 0, 0).st_ino for i in range(3)]
        for d in tops:
            assert geo.group_of_inode(d) % flex == 0      # the first group of its flex group
        for d in tops:
            fg = geo.group_of_inode(d) // flex
            files = [vol.create(d, b"f%d" % j, 0o644, 0, 0).st_ino for j in range(40)]
            assert {geo.group_of_inode(f) for f in files} == {fg * flex}   # beside the parent
            sub = vol.mkdir(d, b"sub", 0o755, 0, 0).st_ino
            assert geo.group_of_inode(sub) // flex == fg   # the parent's flex group qualifies
        d = tops[0]
        fg = geo.group_of_inode(d) // flex
        more = [geo.group_of_inode(vol.create(d, b"g%d" % j, 0o644, 0, 0).st_ino) for j in range(40)]
        assert more == sorted(more) and more[-1] == fg * flex + 1   # the next group of the flex group
        # with flex groups the top-level directories spread over flex groups, not groups
        assert len({geo.group_of_inode(d) // flex for d in tops}) == 3
    assert_fsck_clean(img)


def test_mballoc_uses_orlov_flex_by_default(tmp_path):
    img = _image(tmp_path / "img")
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        assert vol.placer.name == "orlov-flex"


def test_orlov_reads_the_per_cpu_counters_as_the_kernel_does():
    """percpu_counter_read_positive: the global count lags the file system's changes until
    the CPU's pending delta reaches the batch (32), then takes all of it."""
    from policies.ext4_ialloc import PERCPU_BATCH, PercpuCounter
    c = PercpuCounter(1000)
    seen = [c.follow(1000 - n) for n in range(1, 2 * PERCPU_BATCH + 1)]
    assert seen[:PERCPU_BATCH - 1] == [1000] * (PERCPU_BATCH - 1)      # 31 inodes made: still 1000
    assert seen[PERCPU_BATCH - 1] == 1000 - PERCPU_BATCH                # the 32nd folds them in
    assert seen[-1] == 1000 - 2 * PERCPU_BATCH
    assert c.follow(1000 - 2 * PERCPU_BATCH - 40) == 1000 - 2 * PERCPU_BATCH - 40   # one large change: at once
    assert PercpuCounter(5).follow(-40) == 0                            # read_positive
