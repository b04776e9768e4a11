"""A damaged htree index, as ext4 meets it: a root or node dx_probe would not use is read
linearly (every name still found, an insert drops the index); a block the index points past the
directory, or a leaf where a node should be, is EUCLEAN with the error recorded; hashes out of
order misroute a lookup (ENOENT) and nothing worse. Never a traceback or a hang."""

import errno
import struct
import subprocess

import pytest

from simfs.errors import FSError
from simfs.fs.volume import Volume
from simfs.ondisk.constants import INDEX_FL
from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from tests.volume.test_htree import levels, make_dir, opts

pytestmark = needs_e2fsprogs

NAMES = [b"entry-number-%05d" % i for i in range(600)]
EUCLEAN = errno.EUCLEAN


def make(tmp_path):
    img = tmp_path / "img"
    return img, make_dir(img, NAMES)


def phys(img, lblk: int) -> int:
    out = subprocess.run(["debugfs", "-R", f"bmap /d {lblk}", str(img)], capture_output=True, check=True)
    return int(out.stdout)


def patch(img, lblk: int, off: int, fmt: str, value: int) -> None:
    with open(img, "r+b") as f:
        f.seek(phys(img, lblk) * 1024 + off)
        f.write(struct.pack(fmt, value))


def outcomes(img, inos) -> dict:
    """errno (0: found with the right inode) -> how many names; the error count recorded."""
    out: dict[int, int] = {}
    with Volume.open(img, opts()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        for name, ino in inos.items():
            try:
                assert vol.lookup(d, name).st_ino == ino
                e = 0
            except FSError as err:
                e = err.errno
            out[e] = out.get(e, 0) + 1
        errors = vol.sb.error_count
    return out, errors


# (where in block 0, struct format, value): dx_probe's "goto fail" cases
UNUSABLE_ROOT = {
    "hash version": (28, "<B", 7),
    "info_length": (29, "<B", 9),
    "levels": (30, "<B", 2),
    "flags": (31, "<B", 1),
    "limit": (32, "<H", 100),
    "count beyond limit": (34, "<H", 125),
    "count 0": (34, "<H", 0),
}


@pytest.mark.parametrize("field", UNUSABLE_ROOT)
def test_an_unusable_root_is_read_linearly(tmp_path, field):
    img, inos = make(tmp_path)
    patch(img, 0, *UNUSABLE_ROOT[field])
    found, errors = outcomes(img, inos)
    assert found == {0: len(inos)} and errors == 0          # ext4 warns, falls back, records nothing
    with Volume.open(img, opts(dirorder="hash")) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        assert sorted(n for n, _, _ in vol.readdir(d))[2:] == sorted(inos)
        vol.create(d, b"after", 0o644, 0, 0)                # dx_fallback: the index is dropped
        assert not vol.inodes.get(d).flags & INDEX_FL
        vol.unlink(d, NAMES[5])
    assert_fsck_clean(img)


def test_a_cycle_is_read_linearly(tmp_path):
    img, inos = make(tmp_path)
    patch(img, 0, 32 + 8 + 4, "<I", 0)            # entry 1's leaf: the root itself
    assert outcomes(img, inos) == ({0: len(inos)}, 0)


def test_a_block_past_the_directory_is_euclean(tmp_path):
    img, inos = make(tmp_path)
    patch(img, 0, 32 + 8 + 4, "<I", 5000)         # entry 1's leaf beyond i_size
    found, errors = outcomes(img, inos)
    assert found.get(EUCLEAN) and found.get(0) and set(found) == {0, EUCLEAN}
    assert errors >= 1
    with Volume.open(img, opts(dirorder="hash", force=True)) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        with pytest.raises(FSError) as e:
            vol.readdir(d)
        assert e.value.errno == EUCLEAN


def test_hashes_out_of_order_misroute_only(tmp_path):
    img, inos = make(tmp_path)
    patch(img, 0, 32 + 16, "<I", 0xFFFFFFF0)      # entry 2's hash above every later one
    found, errors = outcomes(img, inos)
    assert set(found) <= {0, errno.ENOENT} and found.get(errno.ENOENT) and errors == 0
    with Volume.open(img, opts(dirorder="hash")) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        assert sorted(n for n, _, _ in vol.readdir(d))[2:] == sorted(inos)


def test_a_damaged_leaf_keeps_the_others(tmp_path):
    img, inos = make(tmp_path)
    with open(img, "r+b") as f:                   # the first record of entry 1's leaf
        f.seek(phys(img, 0) * 1024 + 32 + 8 + 4)
        leaf = struct.unpack("<I", f.read(4))[0]
    patch(img, leaf, 4, "<H", 0)                  # rec_len 0
    found, errors = outcomes(img, inos)
    assert found.get(EUCLEAN) and found.get(0) and set(found) == {0, EUCLEAN} and errors >= 1


def test_a_leaf_where_a_node_should_be_is_euclean(tmp_path):
    img2 = tmp_path / "img2"                      # two levels: 1 KiB blocks, 5000 names
    inos = make_dir(img2, [b"a-longer-name-for-more-leaves-%05d" % i for i in range(5000)], size="64M",
                    inodes=8192)
    assert levels(img2, "/d") == 1
    with open(img2, "r+b") as f:                  # the node of root entry 0, and a leaf under it
        f.seek(phys(img2, 0) * 1024 + 32 + 4)
        node = struct.unpack("<I", f.read(4))[0]
        f.seek(phys(img2, node) * 1024 + 8 + 4)
        leaf = struct.unpack("<I", f.read(4))[0]
        f.seek(phys(img2, 0) * 1024 + 32 + 4)
        f.write(struct.pack("<I", leaf))
    found, errors = outcomes(img2, inos)
    assert found.get(EUCLEAN) and found.get(0) and set(found) == {0, EUCLEAN} and errors >= 1


def test_a_leaf_record_running_off_its_block_hides_only_the_names_after_it(tmp_path):
    """A leaf's record whose rec_len runs past the block: ext4_search_dir walks off the block
    there (no rec_len of 0 met), so the names after it in that leaf are not found (ENOENT) and
    every other name is (issue 51 item 9); the listing skips only the rest of that leaf."""
    img, inos = make(tmp_path)
    with open(img, "r+b") as f:                   # entry 1's leaf
        f.seek(phys(img, 0) * 1024 + 32 + 8 + 4)
        leaf = struct.unpack("<I", f.read(4))[0]
        f.seek(phys(img, leaf) * 1024)
        data = f.read(1024)
    recs, off = [], 0
    while off < 1024:
        rec_len, name_len = struct.unpack_from("<HB", data, off + 4)
        recs.append((off, data[off + 8:off + 8 + name_len]))
        off += rec_len
    at, _ = recs[len(recs) // 2]
    patch(img, leaf, at + 4, "<H", 1024 - at + 4)
    hidden = {name for o, name in recs if o > at}
    found, errors = outcomes(img, inos)
    assert found == {0: len(inos) - len(hidden) - 1, errno.ENOENT: len(hidden), EUCLEAN: 1}
    with Volume.open(img, opts(dirorder="hash", force=True)) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        listed = {n for n, _, _ in vol.readdir(d)}
    assert listed == (set(inos) | {b".", b".."}) - hidden - {recs[len(recs) // 2][1]}
