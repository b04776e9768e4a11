"""writeback=softdep on a whole Volume: soft updates' rollbacks are a timing model only.

After an unpack, removals and unmount under softdep the image is e2fsck-clean, the run is
deterministic bit for bit, blocks did go out rolled back and were written again, and the
result differs from async (it used to be identical)."""

import json

import pytest

from experiments.workload import generate_tree
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, copy_tree_into

MIB = 1 << 20


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    dest = tmp_path_factory.mktemp("tree") / "src"
    generate_tree(dest, seed=5, files=400)
    return dest


def _run(tmp_path, tree, writeback):
    img = tmp_path / f"{writeback}.img"
    mkfs(img, 200 * MIB, block_size=4096, uuid=bytes(range(16)), hash_seed=bytes(16), now=1_000_000_000)
    opts = VolumeOptions(writeback=writeback, disk="wd1200jb", alloc="cg", cache=1 * MIB)
    with Volume.open(img, opts) as vol:
        copy_tree_into(vol, tree)
        t_copy = vol.clock.now
        victims = [(n, ino) for n, ino, _ in vol.readdir(vol.root_ino) if n not in (b".", b"..")]
        for name, ino in victims[::2]:              # remove half the top level, then write back
            st = vol.getattr(ino)
            if st.st_mode & 0o170000 == 0o100000:
                vol.unlink(vol.root_ino, name)
        vol.sync()
        snap = vol.stats_snapshot()
    assert_fsck_clean(img)
    return t_copy, snap


def test_softdep_is_fsck_clean_deterministic_and_not_async(tmp_path, tree):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    one = _run(tmp_path / "a", tree, "softdep")
    two = _run(tmp_path / "b", tree, "softdep")
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    counters = one[1]["total"]["counters"]
    assert counters.get("softdep_rollbacks", 0) > 0
    t_async, snap_async = _run(tmp_path / "c", tree, "async")
    assert "softdep_rollbacks" not in snap_async["total"]["counters"]
    assert (t_async, snap_async["total"]["disk_time"]) != (one[0], one[1]["total"]["disk_time"])
