"""The kernel layout oracle (benchmarks/kernel_layout.py, benchmarks/layoutstats.py).

Its statistics on hand-made images whose answer is known (a file mapped block by block with
debugfs into three extents, in a chosen group), on both an ext2 (block-mapped) and an ext4
(extent-mapped, flex_bg) image; then the tool end to end on a small generated tree: the kernel
and simfs both unpack it, and every image holds exactly the tree's files, directories and data
blocks, with the directories counted from the inodes equal to the group descriptors' counts.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import layoutstats
from tests.conftest import run
from tests.helpers import can_loop_mount
from pathlib import Path

needs_e2fsprogs = pytest.mark.skipif(shutil.which("debugfs") is None, reason="e2fsprogs not installed")

# 64 MiB, 1 KiB blocks: 8 groups of 8192 blocks, first data block 1, 256-byte inodes (4 a block)
MKFS = {"ext2": ["mke2fs", "-q", "-F", "-t", "ext2", "-b", "1024", "-I", "256", "-O", "^resize_inode,^dir_index"],
        "ext4": ["mkfs.ext4", "-q", "-F", "-b", "1024", "-I", "256", "-O", "^has_journal,^metadata_csum,^64bit",
                 "-E", "lazy_itable_init=0"]}
A = 1 + 2 * 8192 + 1000          # in group 2, clear of its bitmaps and inode table
C = 1 + 3 * 8192 + 1000          # in group 3, clear of its backup superblock and descriptors too
MAP = [(0, A), (1, A + 1), (2, A + 2), (3, A + 100), (4, A + 101), (5, C)]   # 3 runs


def hand_made(tmp_path, kind: str):
    """An image with /f: 6 KiB in 3 extents, the first two in group 2, the last in group 3;
    /d: an empty directory; /g: 20 KiB written by debugfs (ext2: its indirect block in line)."""
    img = tmp_path / f"{kind}.img"
    run(["truncate", "-s", "64M", img])
    run(MKFS[kind] + [img])
    (tmp_path / "g").write_bytes(bytes(range(256)) * 80)
    cmds = ["write /dev/null f", "mkdir d"]
    cmds += [f"bmap f {lb} {pb}" for lb, pb in MAP] + [f"setb {pb}" for _, pb in MAP]
    cmds += [f"sif f size {len(MAP) * 1024}", f"write {tmp_path / 'g'} g"]
    (tmp_path / "cmds").write_text("\n".join(cmds) + "\n")
    run(["debugfs", "-w", "-f", tmp_path / "cmds", img])
    subprocess.run(["e2fsck", "-fy", str(img)], capture_output=True)   # i_blocks and free counts
    run(["e2fsck", "-fn", img])
    shown = run(["debugfs", "-R", "blocks f", img]).stdout.split()
    assert shown == [str(pb) for _, pb in MAP], "e2fsck moved the hand-made map"
    return img


def _first_block(img, name: str) -> int:
    return int(run(["debugfs", "-R", f"blocks {name}", img]).stdout.split()[0])


@needs_e2fsprogs
@pytest.mark.parametrize("kind", ["ext2", "ext4"])
def test_statistics_of_a_hand_made_image(tmp_path, kind):
    img = hand_made(tmp_path, kind)
    geo = layoutstats.geometry(img)
    assert (geo.block_size, geo.blocks_per_group, geo.inodes_per_group % 4) == (1024, 8192, 0)
    assert geo.groups_per_flex == (16 if kind == "ext4" else 1)
    nodes = {n.ino: n for n in layoutstats.inodes(img, geo)}
    assert sorted(nodes) == [2, 11, 12, 13, 14]             # root, lost+found, f, d, g
    f, g = nodes[12], nodes[14]
    assert (f.kind, f.size, g.size) == ("regular", 6144, 20480)
    assert f.runs == [(0, A, 3), (3, A + 100, 2), (5, C, 1)]
    g0 = _first_block(img, "g")
    if kind == "ext2":                                      # the indirect block between 11 and 12
        assert f"(0-11):{g0}-{g0 + 11}, (IND):{g0 + 12}, (12-19):{g0 + 13}-{g0 + 20}" in \
            run(["debugfs", "-R", "stat g", img]).stdout
    assert g.runs == [(0, g0, 20)]

    s = layoutstats.statistics(geo, list(nodes.values()))
    assert (s["files"], s["directories"], s["data_blocks"]) == (2, 3, 26)
    assert (s["files_over_4k"], s["files_over_4k_multi_extent"]) == (2, 1)
    assert (s["extents_per_file_mean"], s["extents_per_file_p99"], s["extents_per_file_max"]) == (2.0, 3, 3)
    # f: inode 12 in group 0, data in group 2; g: inode 14 in group 0
    assert s["inode_data_group_distance_mean"] == (2 + (g0 - 1) // 8192) / 2
    assert s["itable_blocks_touched"] == 4                  # inodes 1-14, four to a block
    assert s["dirs_per_group"] == geo.dirs_per_group        # inode types agree with the descriptors
    assert s["dirs_per_group"][0] == 3 and s["groups_with_dirs"] == 1
    assert s["flex_groups"] == (1 if kind == "ext4" else 8)


def test_directory_statistics_of_a_made_up_layout():
    """File-to-directory distance and directories per flex group by subtree, on a layout whose
    answer is counted by hand: 4 groups of 100 blocks and 10 inodes, flex groups of 2; /a
    (inode 3, group 0) holds /a/b (inode 21, group 2) and /a/c (inode 4, group 0); /z
    (inode 31, group 3) holds /z/y (inode 32, group 3); files /a/f and /a/b/g."""
    geo = layoutstats.Geometry(1024, 100, 10, 256, 0, 11, 2, [], [0] * 4, [0] * 4, np.ones(41, dtype=bool))
    node = layoutstats.Inode
    nodes = [node(2, "directory", 1024, [(0, 5, 1)]), node(3, "directory", 1024, [(0, 10, 1)]),
             node(4, "directory", 1024, [(0, 11, 1)]), node(21, "directory", 1024, [(0, 200, 1)]),
             node(31, "directory", 1024, [(0, 300, 1)]), node(32, "directory", 1024, [(0, 301, 1)]),
             node(12, "regular", 4096, [(0, 160, 4)]), node(22, "regular", 1024, [(0, 250, 1)])]
    parent = {3: (2, "a"), 4: (3, "c"), 21: (3, "b"), 31: (2, "z"), 32: (31, "y"), 12: (3, "f"), 22: (21, "g")}
    s = layoutstats.statistics(geo, nodes, 2, parent)
    assert s["dirs_per_flex_by_subtree"] == {"a": [2, 1], "z": [0, 2]}
    assert s["dirs_per_flex_group"] == [3, 3]             # the root, /a, /a/c | /a/b, /z, /z/y
    assert s["dirs_in_first_flex_group_pct"] == 50.0
    assert s["subtree_dirs_away_pct"] == 100.0 * 1 / 3    # /a/b of /a/b, /a/c, /z/y
    assert s["file_dir_distance_mean"] == ((160 - 10) / 100 + (250 - 200) / 100) / 2


@needs_e2fsprogs
def test_free_extents_are_e2freefrags_and_the_bitmaps(tmp_path):
    """The free extents of the hand-made image: e2freefrag's count, and the maximal runs of
    free blocks dumpe2fs lists (runs that continue into the next group joined)."""
    img = hand_made(tmp_path, "ext4")
    runs = []
    for line in run(["dumpe2fs", img]).stdout.splitlines():
        if line.startswith("  Free blocks: "):
            for part in filter(None, (p.strip() for p in line.split(":", 1)[1].split(","))):
                lo, _, hi = part.partition("-")
                lo, hi = int(lo), int(hi or lo)
                if runs and runs[-1][1] + 1 == lo:
                    runs[-1][1] = hi
                else:
                    runs.append([lo, hi])
    assert len(runs) > 3                                   # the hand-made map's holes among them
    assert layoutstats.free_extents(img) == len(runs)


@needs_e2fsprogs
def test_an_unreadable_image_is_a_scan_error(tmp_path):
    img = tmp_path / "zero.img"
    run(["truncate", "-s", "4M", img])
    with pytest.raises(layoutstats.ScanError, match="dumpe2fs"):
        layoutstats.geometry(img)


def tool(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.kernel_layout", *map(str, args)],
                          capture_output=True, text=True, timeout=1200, **kw)


def test_a_missing_tree_is_one_line_and_status_2(tmp_path):
    r = tool("--tree", tmp_path / "nowhere")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


def _tree_counts(root) -> tuple[int, int, int]:
    """Regular files (distinct inodes), directories below root, 4 KiB data blocks of the files."""
    seen, dirs, blocks = set(), 0, 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            if stat.S_ISDIR(st.st_mode):
                dirs += 1
            elif stat.S_ISREG(st.st_mode) and st.st_ino not in seen:
                seen.add(st.st_ino)
                blocks += math.ceil(st.st_size / 4096)
    return len(seen), dirs, blocks


@pytest.mark.mount
def test_end_to_end_on_a_small_tree(tmp_path):
    if why := can_loop_mount():
        pytest.skip(why)
    from experiments.workload import generate_tree
    src = tmp_path / "src"
    generate_tree(src, seed=3, files=300)
    files, dirs, blocks = _tree_counts(src)
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    only = "kernel-ext4/nodelalloc,kernel-ext2/nodelalloc,simfs-ext2/ext2"
    r = tool("--tree", src, "--size", "1G", "--runs", "2", "--only", only, "--work", work, "--out", out, "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout)
    runs = res["trees"][0]["runs"]
    assert sorted(runs) == ["kernel-ext2/nodelalloc#1", "kernel-ext2/nodelalloc#2", "kernel-ext4/nodelalloc#1",
                            "kernel-ext4/nodelalloc#2", "simfs-ext2/ext2"]
    for name, one in runs.items():
        assert one["e2fsck_clean"], name
        s = one["by_flex"]["1"]
        assert (s["files"], s["directories"], s["data_blocks"]) == (files, dirs + 2, blocks), name  # + root, lost+found
        assert s["dirs_per_group"] == one["image"]["descriptor_dirs_per_group"], name
        assert 1 <= s["extents_per_file_mean"] and s["itable_blocks_touched"] >= files // 16, name
        assert s["free_extents"] >= 1 and s["file_dir_distance_mean"] >= 0, name
        assert sum(map(sum, s["dirs_per_flex_by_subtree"].values())) == dirs + 1, name     # + lost+found
        assert one["by_flex"]["16"]["flex_groups"] == 1, name                # 8 groups of 128 MiB
    assert runs["kernel-ext4/nodelalloc#1"]["image"]["groups_per_flex"] == 16
    assert "extent" in runs["kernel-ext4/nodelalloc#1"]["image"]["features"]
    assert "extent" not in runs["simfs-ext2/ext2"]["image"]["features"]
    table = (out / "table.md").read_text()
    assert "| inode-table blocks touched |" in table and "simfs-ext2/ext2" in table
    assert "| free extents (e2freefrag) |" in table and "| directories per flex group in " in table
    assert list(work.iterdir()) == []                                        # its temporary directory is gone
    assert str(work) not in run(["losetup", "-a"]).stdout
    assert str(work) not in Path("/proc/mounts").read_text()
