"""unpack on archives in the forms GNU tar writes besides its default: sparse members (tar -S,
GNU and pax maps) and pax headers (times to the nanosecond, extended headers that move each
member's data in the archive). The oracle is GNU tar itself: its extraction into a local
directory (contents, sizes, times) and, for the layout, the kernel's ext2 on the image (the
holes of a sparse member stay holes). tests/mount/test_verbs_validate.py compares the
operations with the real tar on a mount."""

from __future__ import annotations

import os
import subprocess

import pytest

from simfs.inprocess import treedesc, verbs
from simfs.inprocess.kernel import Kernel
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, kernel_mount

SIZE = 5 << 20


def _source(root):
    """A sparse file (data at 0 and at 1 MiB, a hole to its end), files with times to the
    nanosecond (one before 1970: a negative time with a fraction), and a plain file."""
    root.mkdir()
    with open(root / "sparse", "wb") as f:
        f.write(os.urandom(5000))
        f.seek(1 << 20)
        f.write(os.urandom(30000))
        f.truncate(SIZE)
    (root / "plain").write_bytes(b"p" * 30000)
    (root / "old").write_bytes(b"o")
    os.utime(root / "plain", ns=(1_700_000_000_123_456_789, 1_700_000_000_987_654_321))
    os.utime(root / "old", ns=(-31_535_999_876_543_211, -31_535_999_876_543_211))


@pytest.fixture(scope="module", params=["gnu -S", "posix", "posix -S"])
def archive(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("forms")
    _source(d / "src")
    fmt, *flags = request.param.split()
    tar = d / "t.tar"
    subprocess.run(["tar", f"--format={fmt}", *flags, "--sort=name", "-cf", str(tar), "-C", str(d / "src"),
                    "."], check=True)
    (d / "x").mkdir()
    subprocess.run(["tar", "-xpf", str(tar), "-C", str(d / "x")], check=True)   # GNU tar's own result
    return tar, d / "x", request.param


def test_the_members_carry_what_gnu_tar_extracts(archive):
    tar, _, form = archive
    got = {b"/".join(e.path): e for e in treedesc.from_tarball(str(tar))}
    assert got[b"plain"].mtime_ns == (1_700_000_000_987_654_321 if form.startswith("posix")
                                      else 1_700_000_000_000_000_000)
    sparse = got[b"sparse"]
    if "-S" in form:
        regions = sparse.sparse
        assert regions[-1] == (SIZE, 0)                 # always last: tar's ftruncate to the size
        assert all(n for _, n in regions[:-1]) and regions[0][0] == 0 and any(o == 1 << 20 for o, _ in regions)
        assert sum(n for _, n in regions) < 64 << 10
    else:
        assert sparse.sparse is None
    with open(tar, "rb") as f:                          # each member's data where the entry says
        data = f.read()
    assert data[got[b"plain"].offset:got[b"plain"].offset + 30000] == b"p" * 30000


@pytest.mark.serial
def test_unpack_leaves_what_gnu_tar_leaves(archive, tmp_path):
    tar, real, form = archive
    img = tmp_path / "img"
    mkfs(str(img), 64 << 20, block_size=4096, inode_size=256)
    vol = Volume.open(str(img), VolumeOptions())
    k = Kernel(vol)
    k.mkdir(k.root, [b"tree"], 0o755)
    verbs.VERBS["unpack"](k, [b"tree"], treedesc.from_tarball(str(tar), with_data=True))
    k.unmount()
    vol.close()
    assert_fsck_clean(str(img))
    with kernel_mount(img, tmp_path / "mnt") as mnt:
        for name in ("sparse", "plain", "old"):
            ours, theirs = os.lstat(mnt / "tree" / name), os.lstat(real / name)
            assert (ours.st_size, ours.st_mtime_ns, ours.st_mode) == \
                (theirs.st_size, theirs.st_mtime_ns, theirs.st_mode), name
            assert (mnt / "tree" / name).read_bytes() == (real / name).read_bytes(), name
        blocks = os.lstat(mnt / "tree" / "sparse").st_blocks * 512
    if "-S" in form:
        assert blocks < 64 << 10                        # the holes got no block
    else:
        assert blocks >= SIZE                           # archived whole, written whole
