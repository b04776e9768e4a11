"""The in-process kernel's path walk (simfs.inprocess.kernel.Kernel.walk) through symbolic links:
a link before the last name is followed (its target walked from the link's directory), the last
name only where the call follows it, ".." goes to the parent without a LOOKUP, and a path out of
the image (an absolute target, ".." of the root) is refused,
and a chain of more than MAXSYMLINKS links stops with ELOOP, as in Linux. The mounted oracle for
the operations of such walks: tests/mount/test_verbs_validate.py (links_tree)."""

import errno
import stat

import pytest

from simfs.inprocess.kernel import MAXSYMLINKS, Kernel
from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs


@pytest.fixture
def k(tmp_path):
    img = tmp_path / "walk.img"
    mkfs(img, 64 << 20)
    vol = Volume.open(img, VolumeOptions())
    k = Kernel(vol)
    k.mount()
    R = k.root
    k.mkdir(R, [b"d"], 0o755)
    k.mkdir(R, [b"d", b"sub"], 0o755)
    k.close(k.create(R, [b"d", b"sub", b"f"], 0o644))
    k.symlink(R, [b"via"], b"d")
    k.symlink(R, [b"hop"], b"via/sub")
    k.symlink(R, [b"d", b"up"], b"../d/sub")
    k.symlink(R, [b"abs"], b"/etc")
    k.symlink(R, [b"loop"], b"loop")
    k.symlink(R, [b"out"], b"../d")
    for i in range(MAXSYMLINKS + 1):                 # c0 -> c1 -> ... -> c40 -> d
        k.symlink(R, [b"c%d" % i], b"c%d" % (i + 1) if i < MAXSYMLINKS else b"d")
    yield k
    k.unmount()
    vol.close()


def test_links_before_the_last_name_are_followed(k):
    R = k.root
    f = k.stat(R, [b"d", b"sub", b"f"]).st_ino
    for path in ([b"via", b"sub", b"f"], [b"hop", b"f"], [b"d", b"up", b"f"], [b"via", b"up", b"f"]):
        assert k.stat(R, path).st_ino == f, path
    assert stat.S_ISLNK(k.stat(R, [b"via"]).st_mode)                      # lstat: the link
    assert k.open(R, [b"hop"]).ino == k.stat(R, [b"d", b"sub"]).st_ino    # open: followed


def test_names_are_made_where_the_links_lead(k):
    R = k.root
    k.mkdir(R, [b"via", b"new"], 0o755)
    k.close(k.create(R, [b"hop", b"g"], 0o644))
    assert k.stat(R, [b"d", b"new"]).st_mode & stat.S_IFDIR
    assert k.stat(R, [b"d", b"sub", b"g"]).st_ino


def test_paths_out_of_the_image_and_long_chains_are_refused(k):
    R = k.root
    for path in ([b"abs", b"passwd"], [b"out", b"sub"], [b"d", b"..", b"..", b"d"]):
        with pytest.raises(FSError) as e:                                # out of the image
            k.stat(R, path)
        assert e.value.errno == errno.EXDEV, path
    for path in ([b"loop", b"x"], [b"c0", b"sub"]):
        with pytest.raises(FSError) as e:
            k.stat(R, path)
        assert e.value.errno == errno.ELOOP, path
    assert k.stat(R, [b"c1", b"sub"]).st_ino == k.stat(R, [b"d", b"sub"]).st_ino   # 40 links: followed
