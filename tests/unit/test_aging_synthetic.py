"""Synthetic aging (issue 55 item 1, experiments.aging.synthetic): the profile files, the
spec, the choice of what to delete, and one in-process aging of a small image that must end
at its target fullness with e2fsck clean, the same blocks in use twice."""

from __future__ import annotations

import shutil
import subprocess
from types import SimpleNamespace

import pytest

from experiments.aging import synthetic
from experiments.aging.synthetic import Ager, Live, Profile, SyntheticError


def test_builtin_profile_reads_as_geriatrix_wrote_it():
    p = synthetic.load("agrawal")
    assert len(p.sizes) == 11 and p.sizes[0] == (8, 1.0) and p.sizes[-1] == (8388608, 1.0)
    assert len(p.ages) == 10 and p.ages[-1] == (122640.0, 1.0)
    assert len(p.dirs) == 15 and p.dirs[6] == (7, 42.0, 32)
    assert synthetic.load("agrawal").digest() == p.digest()


def _profile(tmp_path, sizes="2\n4096 1\n65536 1\n", ages="2\n1 1\n2 1\n", dirs="1\n1 1 0\n"):
    d = tmp_path / "prof"
    d.mkdir(exist_ok=True)
    for name, text in (("size", sizes), ("age", ages), ("dir", dirs)):
        (d / f"{name}_distribution.txt").write_text(text)
    return d


def test_a_profile_directory_loads(tmp_path):
    p = synthetic.load(str(_profile(tmp_path)))
    assert p.sizes == ((4096, 1.0), (65536, 1.0)) and p.dirs == ((1, 1.0, 0),)


@pytest.mark.parametrize("kw, words", [
    ({"sizes": "3\n4096 1\n"}, "says 3 rows but has 1"), ({"sizes": "x\n"}, "not a profile file"),
    ({"sizes": "1\n4096 0\n"}, "positive"), ({"sizes": "1\n-8 1\n"}, "whole bytes"),
    ({"ages": "2\n5 1\n3 1\n"}, "increasing"), ({"dirs": "1\n0 1 0\n"}, "depths must be 1 or more")])
def test_bad_profile_files_are_one_line(tmp_path, kw, words):
    with pytest.raises(SyntheticError, match=words) as e:
        synthetic.load(str(_profile(tmp_path, **kw)))
    assert "\n" not in str(e.value)


def test_missing_profile(tmp_path):
    with pytest.raises(SyntheticError, match="neither a built-in profile"):
        synthetic.load("nosuch")
    (tmp_path / "p").mkdir()
    with pytest.raises(SyntheticError, match="size_distribution.txt"):
        synthetic.load(str(tmp_path / "p"))


def test_settings_fill_in_the_defaults():
    assert synthetic.settings({"profile": "agrawal", "full": 70}) == {"full": 70, "churn": 1.0, "seed": 42, "frag": None}


# what a delete takes ---------------------------------------------------------------------------------
class FakeKernel:
    """Just what Ager's bookkeeping touches (no volume operation is made)."""
    def __init__(self):
        self.root = 1
        self.unlinked = []
        self.vol = SimpleNamespace(geo=SimpleNamespace(blocks_count=1000, block_size=4096))

    def unlink(self, d, path):
        self.unlinked.append(path[-1])


def _ager(ages, sizes=((4096, 1), (65536, 1))):
    prof = Profile("t", tuple(sizes), tuple(ages), ((1, 1.0, 0),))
    return Ager(FakeKernel(), prof, 80.0, 1)


def _add(a, born, size_i):
    a.live[born] = Live([b"f%d" % born], a.profile.sizes[size_i][0], born, size_i, 0)
    a.born.append(born)
    a.size_n[size_i] += 1
    a.dir_n[0] += 1


def test_delete_takes_from_the_age_bucket_most_over_its_share():
    """Two equal age buckets (younger than half the run, older): with 4 old files and 1 young
    one, the old bucket is over its share, so its file of the most over-represented size
    goes, the oldest such."""
    a = _ager(ages=((1, 1), (2, 1)))
    for born, s in ((1, 0), (2, 1), (3, 1), (4, 1), (10, 0)):
        _add(a, born, s)
    a.tick = 11                         # the delete is tick 12: young = born at 6 or later
    assert a.delete()
    assert a.k.unlinked == [b"f2"]      # size 1 is 3 of 5 (its share 1/2): its oldest old file
    assert sorted(a.live) == [1, 3, 4, 10]


def test_delete_takes_young_files_when_they_are_too_many():
    a = _ager(ages=((1, 1), (2, 1)))
    for born, s in ((1, 1), (20, 0), (21, 1), (22, 1), (23, 0)):
        _add(a, born, s)
    a.tick = 23
    assert a.delete()
    assert a.k.unlinked == [b"f21"]     # young (born at 12 or later): 4 of 5; size 1 is 3 of 5
                                        # (its oldest file, f1, is old: not this bucket's)
    assert a.deleted == 1 and a.size_n == [2, 2]


def test_create_takes_the_size_most_lacking_that_fits():
    a = _ager(ages=((1, 1), (2, 1)))
    for born in (1, 2, 3):
        _add(a, born, 0)
    assert a.lacking_size(room_blocks=100) == 1
    assert a.lacking_size(room_blocks=8) == 0           # 64 KiB is 16 blocks: does not fit
    assert a.lacking_size(room_blocks=0) is None


# an aging, in-process -----------------------------------------------------------------------------
def _aged_image(tmp_path, name, spec="agrawal,full=75,churn=0.5", alloc="mballoc-delalloc"):
    from simfs.fuse import mountopts
    from simfs.ondisk.mkfs import mkfs
    img = tmp_path / name
    mkfs(str(img), 24 << 20, block_size=4096, profile="ext4", uuid="5a6e6f00-0042-4242-8042-000000000042",
         hash_seed="5a6e6f00-0042-4242-8042-000000000042")
    got = synthetic.age(str(img), mountopts.parse([f"alloc={alloc}"]).volume, synthetic.parse(spec))
    return img, got


@pytest.mark.skipif(shutil.which("e2fsck") is None, reason="needs e2fsck (e2fsprogs)")
def test_aging_reaches_its_fullness_and_e2fsck_is_clean(tmp_path):
    from experiments.aging.measure import image_used, used_pct
    img, got = _aged_image(tmp_path, "a.img")
    assert abs(got["used_pct"] - 75) <= synthetic.TOLERANCE / 2                # settled
    assert abs(used_pct(image_used(str(img))) - got["used_pct"]) < 0.01      # what the bitmaps say
    assert got["deleted"] > 0 and got["files"] == got["created"] - got["deleted"]
    assert got["written_bytes"] >= 0.5 * (24 << 20)                            # the churn was written
    assert got["free_extents"] > 1                                             # free space broken up
    r = subprocess.run(["e2fsck", "-fn", str(img)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    img2, got2 = _aged_image(tmp_path, "b.img")
    assert got2 == got                                  # the same layout (times are the clock's)
    assert (image_used(str(img)) == image_used(str(img2))).all()


def test_an_image_fuller_than_the_target_is_refused(tmp_path):
    with pytest.raises(SyntheticError, match="already has"):
        _aged_image(tmp_path, "c.img", spec="agrawal,full=1")
