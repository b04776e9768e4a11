"""`simfs policies`, `simfs frag` (formatting, --image, the xattr pages) and `simfs layout`,
without FUSE. Where the kernel can loop-mount an image read-only, `simfs frag --image` is
compared with e2fsprogs' filefrag on the kernel's ext2, byte for byte."""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
import subprocess
import sys

import pytest

from policies import ALLOCATORS, INODE_PLACERS
from policies.dirorder import DIR_ORDERS
from simfs import cli
from simfs.cli import frag as cf
from policies.writeback import WRITEBACK as WRITEBACK_POLICIES
from simfs.ondisk.mkfs import mkfs
from simfs.fs.inspection import frag_counts
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, kernel_mount, needs_e2fsprogs


def simfs(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simfs.cli", *map(str, args)], capture_output=True,
                          text=True, **kw)


def write(vol, parent, name: bytes, size: int, chunk: int = 8192) -> int:
    ino = vol.create(parent, name, 0o644, 0, 0).st_ino
    vol.hold(ino)
    off = 0
    while off < size:
        n = min(chunk, size - off)
        vol.write(ino, off, bytes([off // chunk % 251 + 1]) * n)
        off += n
    vol.drop(ino)
    return ino


# policies -----------------------------------------------------------------------------------------
def test_policies_lists_every_policy_with_its_summary():
    r = simfs("policies")
    assert r.returncode == 0, r.stderr
    for kind, table in (("allocator", ALLOCATORS), ("inode placement", INODE_PLACERS),
                        ("directory order", DIR_ORDERS)):
        assert kind in r.stdout
        for name, cls in table.items():
            assert cls.summary, name
            assert any(ln.split()[0].lstrip("*") == name and cls.summary in ln
                       for ln in r.stdout.splitlines() if ln.strip()), name
    for name in WRITEBACK_POLICIES:
        assert name in r.stdout
    assert "*ext2 " in r.stdout and "*linear" in r.stdout and "*async" in r.stdout   # defaults marked: Linux ext2


def test_policies_markdown_json_and_show():
    md = simfs("policies", "--markdown").stdout.splitlines()
    assert md[0] == "| kind | option | name | summary |"
    rows = json.loads(simfs("policies", "--json").stdout)
    assert len(md) - 2 == len(rows) == (len(ALLOCATORS) + len(INODE_PLACERS) + len(DIR_ORDERS)
                                       + len(WRITEBACK_POLICIES))
    out = simfs("policies", "show", "ext2fs-2010").stdout
    assert "allocator (-o alloc=ext2fs-2010)" in out and "ext2_blkpref" in out
    both = simfs("policies", "show", "sequential").stdout
    assert "allocator" in both and "inode placement" in both
    bad = simfs("policies", "show", "bogus")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "first-free" in bad.stderr


@pytest.mark.parametrize("opt,valid", [("alloc=bogus", "ext2fs-2010-fixed"), ("dirorder=bogus", "inode"),
                                       ("inode_placement=bogus", "orlov")])
def test_mount_refuses_unknown_policy_names_in_one_line(tmp_path, opt, valid):
    img = tmp_path / "i.img"
    mkfs(str(img), 16 << 20)
    (tmp_path / "mnt").mkdir()
    r = simfs("mount", img, tmp_path / "mnt", "-o", opt)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bogus" in r.stderr and valid in r.stderr, r.stderr


# frag: formatting ---------------------------------------------------------------------------------
def doc(runs, size, indirect=(), delalloc=(), bs=4096, f_blocks=15868, inodes=16384):
    return {"block_size": bs, "size": size, "runs": [list(r) for r in runs], "indirect": list(indirect),
            "delalloc": [list(d) for d in delalloc], "f_blocks": f_blocks, "inodes_count": inodes,
            "mode": 0o100644, "i_blocks": 0}


def test_frag_counts_like_filefrag():
    # inline first indirect block: the kernel's FIEMAP sees two runs, filefrag -B one extent
    inline = doc([(0, 100, 12), (12, 113, 20)], 32 * 4096, indirect=[("IND", 112)])
    assert frag_counts(inline)["extents"] == 2 and frag_counts(inline)["extents_bmap"] == 1
    # stranded indirect block (cg-2010): one FIEMAP extent, two FIBMAP extents
    stranded = doc([(0, 100, 32)], 32 * 4096, indirect=[("IND", 900)])
    assert frag_counts(stranded)["extents"] == 1 and frag_counts(stranded)["extents_bmap"] == 2
    # a hole that keeps the physical distance is not a new extent (filefrag's `expected`)
    holey = doc([(0, 100, 2), (10, 110, 2)], 12 * 4096)
    assert frag_counts(holey)["extents"] == 1
    lines, info = cf.frag_report("f", doc([(0, 100, 1), (1, 200, 1)], 8192), verbose=True)
    assert lines == [
        "Filesystem type is: ef53",
        "Filesystem cylinder groups approximately 1",
        "File size of f is 8192 (2 blocks of 4096 bytes)",
        " ext:     logical_offset:        physical_offset: length:   expected: flags:",
        "   0:        0..       0:        100..       100:      1:             merged",
        "   1:        1..       1:        200..       200:      1:        101: last,merged,eof",
        "f: 2 extents found"]
    lines, _ = cf.frag_report("f", doc([(0, 100, 1), (1, 200, 1)], 8192), bmap=True)
    assert lines == ["f: 2 extents found, perfection would be 1 extent"]
    assert cf.frag_report("e", doc([], 0))[0] == ["e: 0 extents found"]
    d = cf.frag_report("d", doc([(0, 100, 4)], 8 * 4096, delalloc=[(4, 4)]), verbose=True, first=False)[0]
    assert d[-2].endswith("last,unknown_loc,delalloc,eof") and "0..         0:      0:" in d[-2]


def test_extents_xattr_pages_join(monkeypatch):
    from simfs.fuse import operations as fuse_ops
    runs = [(i, 1000 + 2 * i, 1) for i in range(1300)]
    leaves = [(i, 1000 + 2 * i, 1, i % 3 == 0) for i in range(1300)]
    ext = {"ino": 12, "mode": 0o100644, "size": 1300 * 4096, "i_blocks": 0, "block_size": 4096,
           "runs": runs, "leaf_extents": leaves, "indirect": [("IND", 5)], "delalloc": [], "xattr_block": 0,
           "blocks_count": 1 << 20, "first_data_block": 0, "blocks_per_group": 32768,
           "inodes_count": 1 << 16, "inodes_per_group": 2048, "f_blocks": 1 << 20}
    pages = {}
    first = json.loads(fuse_ops.extents_page(ext, 0))
    assert first["pages"] == 3
    for k in range(3):
        raw = fuse_ops.extents_page(ext, k)
        assert len(raw) < 65536
        pages["user.simfs.extents" + (f".{k}" if k else "")] = raw
    with pytest.raises(Exception):
        fuse_ops.extents_page(ext, 3)
    monkeypatch.setattr(cf.os, "getxattr", lambda path, name: pages[name])
    got = cf.read_extents("/x")
    assert [tuple(r) for r in got["runs"]] == runs and got["indirect"] == [["IND", 5]]
    assert [tuple(r) for r in got["leaf_extents"]] == leaves


# frag: the volume ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Two images (1 KiB and 4 KiB blocks) with files laid out by several allocators."""
    out = {}
    for bs in (1024, 4096):
        img = str(tmp_path_factory.mktemp("frag") / f"f{bs}.img")
        mkfs(img, 64 << 20, block_size=bs, blocks_per_group=8 * bs)
        with Volume.open(img, VolumeOptions(alloc="ext2fs-2010")) as vol:
            write(vol, vol.root_ino, b"strided", 20 * bs)
        with Volume.open(img, VolumeOptions(alloc="ext2")) as vol:
            write(vol, vol.root_ino, b"big", 5 << 20)
            write(vol, vol.root_ino, b"small", 100)
            write(vol, vol.root_ino, b"empty", 0)
            ino = vol.create(vol.root_ino, b"sparse", 0o644, 0, 0).st_ino
            for off in (0, 3 * bs, 40 * bs, 2000 * bs, 70000 * bs):
                vol.write(ino, off, b"z" * bs)
            d = vol.mkdir(vol.root_ino, b"dir", 0o755, 0, 0).st_ino
            for i in range(300):
                vol.create(d, b"name-%05d-long-enough-to-fill-blocks" % i, 0o644, 0, 0)
            ino = vol.create(vol.root_ino, b"random", 0o644, 0, 0).st_ino
            order = list(range(3000))
            random.Random(1).shuffle(order)
            for lblk in order:
                vol.write(ino, lblk * bs, b"r" * bs)
        with Volume.open(img, VolumeOptions(alloc="cg-2010")) as vol:
            write(vol, vol.root_ino, b"cg", 300 * bs)
        out[bs] = img
    return out


NAMES = ["strided", "big", "small", "empty", "sparse", "dir", "random", "cg"]


def test_volume_extents_match_the_block_map_and_charge_nothing(images):
    with Volume.open(images[1024], VolumeOptions(read_only=True, disk="ideal")) as vol:
        for name in NAMES:
            ino = vol.lookup(vol.root_ino, name.encode()).st_ino
            before = (vol.clock.now, dict(vol.counters))
            e = vol.extents(ino)
            assert (vol.clock.now, dict(vol.counters)) == before, name
            ref = list(vol.filemap.blocks(vol.inodes.get(ino)))
            data = sorted((k, p) for k, p in ref if not isinstance(k, str))
            assert [(lb + i, p + i) for lb, p, n in e["runs"] for i in range(n)] == data, name
            assert e["indirect"] == [(k, p) for k, p in ref if isinstance(k, str)], name
            assert e["f_blocks"] == vol.statfs().f_blocks


@pytest.mark.serial
@needs_e2fsprogs
@pytest.mark.parametrize("bs", [1024, 4096])
def test_frag_image_is_filefrag_on_the_kernels_ext2(images, bs, tmp_path):
    img = images[bs]
    assert_fsck_clean(img)
    lm = tmp_path / "lm"
    lm.mkdir()
    r = subprocess.run(["mount", "-o", "loop,ro", img, str(lm)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot loop-mount here: {r.stderr.strip()}")
    try:
        for name in NAMES:
            for flags in ([], ["-v"], ["-B"], ["-B", "-v"], ["-e"], ["-B", "-e"]):
                want = subprocess.run(["filefrag", *flags, name], cwd=lm, capture_output=True, text=True)
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = cli.main(["frag", "--image", img, *flags, name])
                assert (out.getvalue(), rc != 0) == (want.stdout, want.returncode != 0), (name, flags)
    finally:
        subprocess.run(["umount", str(lm)], capture_output=True)


@pytest.fixture(scope="module")
def ext4_image(tmp_path_factory):
    """An ext4-profile image (extent-mapped files) with files laid out by three allocators."""
    img = str(tmp_path_factory.mktemp("frag4") / "f.img")
    mkfs(img, 64 << 20, block_size=4096, profile="ext4")
    with Volume.open(img, VolumeOptions(alloc="delayed")) as vol:
        write(vol, vol.root_ino, b"big", 5 << 20)              # crosses lblk 12 and 12 + 1024
        write(vol, vol.root_ino, b"small", 100)
        write(vol, vol.root_ino, b"empty", 0)
        vol.mkdir(vol.root_ino, b"dir", 0o755, 0, 0)
    with Volume.open(img, VolumeOptions(alloc="ext2")) as vol:
        ino = vol.create(vol.root_ino, b"sparse", 0o644, 0, 0).st_ino
        for off in (0, 3, 40, 2000, 9000):
            vol.write(ino, off * 4096, b"z" * 4096)
        ino = vol.create(vol.root_ino, b"random", 0o644, 0, 0).st_ino
        order = list(range(3000))
        random.Random(1).shuffle(order)
        for lblk in order:
            vol.write(ino, lblk * 4096, b"r" * 4096)
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        write(vol, vol.root_ino, b"mb", 2 << 20)
    return img


@pytest.mark.serial
@needs_e2fsprogs
def test_frag_of_extent_files_is_filefrag_on_the_kernels_ext4(ext4_image, tmp_path):
    """On an extent-mapped file filefrag's FIEMAP rows are the leaf extents, unflagged or
    `unwritten` (no `merged`: that is ext2's block-mapped report), and a row with no flag at
    the end of the file reads ",eof" (filefrag 1.47); -B applies ext2's indirect-block rule
    only to block-mapped files (is_ext2 needs no EXT4_EXTENTS_FL): there the expected block is
    the last one + 1, and no cylinder-group line or perfection clause is printed (issue 41).
    The kernel fallocates a file `fa` and writes into its middle, leaving unwritten extents."""
    img = tmp_path / "f.img"
    shutil.copyfile(ext4_image, img)
    with kernel_mount(img, tmp_path / "rw", rw=True, fstype="ext4") as mnt:
        subprocess.run(["fallocate", "-l", "256K", str(mnt / "fa")], check=True)
        with open(mnt / "fa", "r+b") as f:
            f.seek(10 * 4096)
            f.write(b"w" * 8192)
    (tmp_path / "rw").rmdir()
    assert_fsck_clean(img)
    with kernel_mount(img, tmp_path / "lm", fstype="ext4") as lm:
        for name in ("big", "small", "empty", "dir", "sparse", "random", "mb", "fa"):
            for flags in ([], ["-v"], ["-e"], ["-B"], ["-B", "-v"]):
                want = subprocess.run(["filefrag", *flags, name], cwd=lm, capture_output=True, text=True)
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = cli.main(["frag", "--image", str(img), *flags, name])
                assert (out.getvalue(), rc != 0) == (want.stdout, want.returncode != 0), (name, flags)


def test_frag_errors(images, tmp_path):
    r = simfs("frag", "--image", images[4096], "/nope")
    assert r.returncode == 1 and "No such file" in r.stderr
    (tmp_path / "plain").write_text("x")
    r = simfs("frag", tmp_path / "plain")
    assert r.returncode == 1 and "not on a simfs mount" in r.stderr
    r = simfs("frag", "--image", tmp_path / "missing.img", "/x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


# layout -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def striped(tmp_path_factory):
    from experiments.workload import generate_tree
    from tests.helpers import copy_tree_into
    d = tmp_path_factory.mktemp("layout")
    generate_tree(d / "src", seed=1, files=300)
    img = str(d / "s.img")
    mkfs(img, 64 << 20, block_size=4096)
    with Volume.open(img, VolumeOptions(alloc="ext2fs-2010")) as vol:
        copy_tree_into(vol, str(d / "src"))
    return img


def test_layout_owners_account_for_every_block(striped):
    from simfs.pictures import blockmap
    m = blockmap.block_owners(striped)
    with Volume.open(striped, VolumeOptions(read_only=True, disk="ideal")) as vol:
        used = vol.space.block_used.copy()
    assert ((m.owner == blockmap.FREE) == ~used).all()
    assert not (m.owner == blockmap.UNOWNED).any()
    assert len(m.tops) >= 2 and sum(m.files.values()) >= 300
    # seed 000's stripe: in the busiest group, file data sits on every 8th block
    g = max(range(m.groups), key=lambda g: (m.owner[m.group_starts[g]:][:m.blocks_per_group] >= blockmap.TOP0).sum())
    seg = m.owner[m.group_starts[g]:m.group_starts[g] + m.blocks_per_group]
    files = [i for i, o in enumerate(seg) if o >= blockmap.TOP0]
    gaps = [b - a for a, b in zip(files, files[1:])]
    assert gaps.count(8) > 0.6 * len(gaps), gaps[:40]


def test_layout_draws_a_png(striped, tmp_path):
    out = tmp_path / "map.png"
    r = simfs("layout", striped, "-o", out, "--title", "ext2fs-2010")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "free" in r.stdout and "runs/file" in r.stdout
    g = tmp_path / "g.png"
    r = simfs("layout", striped, "-o", g, "--group", "0", "--color-by", "file")
    assert r.returncode == 0 and g.exists(), r.stderr
    r = simfs("layout", striped, "-o", g, "--group", "99")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
