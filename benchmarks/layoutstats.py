"""Where a file system put its inodes, directories and blocks, read from the image by e2fsprogs.

The kernel layout oracle (benchmarks/kernel_layout.py) compares images written by the kernel's
ext4 with images written by simfs. To be a fair judge the reading must not be simfs's own code,
and it must be the same code for both: `dumpe2fs` gives the geometry (groups, flex groups, where
each inode table lives, which inodes are free) and one `debugfs -f` batch of `stat <ino>` gives
every in-use inode's type, size and block map (BLOCKS: for block-mapped files, EXTENTS: for
extent-mapped ones), a batch of `ls -p <dir>` every file's directory, and `e2freefrag` the
free extents. The statistics treat both formats alike: an *extent* is a run of logically
and physically contiguous data blocks, where the file's own map blocks (indirect blocks, extent
tree blocks) lying in the gap between two data blocks do not break the run: e2fsprogs' filefrag
counts ext2 files so (its FIBMAP path steps over the indirect block), and reading such a file
needs no seek there. Otherwise every block-mapped file past 12 blocks would count two extents
and an ext2 image could not be set beside an extent-mapped one.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

_GROUP = re.compile(r"^Group (\d+): \(Blocks (\d+)-(\d+)\)")
_ITABLE = re.compile(r"^\s+Inode table at (\d+)-(\d+)")
_COUNTS = re.compile(r"^\s+\d+ free blocks, \d+ free inodes, (\d+) directories")
_FREE_INODES = re.compile(r"^\s+Free inodes: ?(.*)$")
# "(0-11):9249-9260", "(12):9262", "(0-3[u]):100-103"; (IND), (DIND), (ETB0) ... are not data
_RUN = re.compile(r"\((\d+)(?:-(\d+))?(?:\[u\])?\):(\d+)(?:-(\d+))?")
_MAPBLOCK = re.compile(r"\((?:IND|DIND|TIND|ETB\d+)\):(\d+)")
_HEAD = re.compile(r"Inode: (\d+)\s+Type: (\S+)")
_SIZE = re.compile(r"Size: (\d+)")


class ScanError(Exception):
    """An e2fsprogs tool failed or printed what this reader does not understand."""


@dataclass
class Geometry:
    """The image's shape, from `dumpe2fs` (header and group descriptors)."""
    block_size: int
    blocks_per_group: int
    inodes_per_group: int
    inode_size: int
    first_data_block: int
    first_ino: int
    groups_per_flex: int            # the image's own flex_bg size, 1 without flex_bg
    features: list[str]
    itable_start: list[int]         # per group: first block of its inode table
    dirs_per_group: list[int]       # per group: the descriptor's used-directories count
    used: np.ndarray                # bool per inode number (index 0 unused): not in a free range

    @property
    def groups(self) -> int:
        return len(self.itable_start)


@dataclass
class Inode:
    ino: int
    kind: str                       # debugfs's Type: regular, directory, symlink, ...
    size: int
    runs: list[tuple[int, int, int]] = field(default_factory=list)   # (logical, physical, length)


def _tool(argv: list[str], **kw) -> str:
    env = dict(os.environ, DEBUGFS_PAGER="__none__", PAGER="__none__", LC_ALL="C")
    try:
        r = subprocess.run(argv, capture_output=True, text=True, env=env, **kw)
    except OSError as e:
        raise ScanError(f"{argv[0]}: {e.strerror}") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ScanError(f"{' '.join(argv[:2])}... exited {r.returncode}: {last}")
    return r.stdout


def _ranges(text: str):
    for part in text.split(","):
        part = part.strip()
        if part:
            lo, _, hi = part.partition("-")
            yield int(lo), int(hi or lo)


def geometry(image) -> Geometry:
    """Parse `dumpe2fs IMAGE`: the superblock's header, then one paragraph per group."""
    out = _tool(["dumpe2fs", str(image)])
    head, _, body = out.partition("\n\n")
    h = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            h[key.strip()] = value.strip()
    try:
        features = h.get("Filesystem features", "").split()
        inodes = int(h["Inode count"])
        geo = Geometry(int(h["Block size"]), int(h["Blocks per group"]), int(h["Inodes per group"]),
                       int(h.get("Inode size", "128")), int(h["First block"]),
                       int(h.get("First inode", "11")),
                       int(h["Flex block group size"]) if "flex_bg" in features else 1,
                       features, [], [], np.ones(inodes + 1, dtype=bool))
    except (KeyError, ValueError) as e:
        raise ScanError(f"dumpe2fs {image}: no usable superblock header ({e})") from None
    geo.used[0] = False
    for line in body.splitlines():
        if m := _GROUP.match(line):
            if int(m[1]) != geo.groups:
                raise ScanError(f"dumpe2fs {image}: group {m[1]} out of order")
            geo.itable_start.append(-1)
            geo.dirs_per_group.append(0)
        elif m := _ITABLE.match(line):
            geo.itable_start[-1] = int(m[1])
        elif m := _COUNTS.match(line):
            geo.dirs_per_group[-1] = int(m[1])
        elif m := _FREE_INODES.match(line):
            for lo, hi in _ranges(m[1]):
                geo.used[lo:hi + 1] = False
    if not geo.groups or -1 in geo.itable_start:
        raise ScanError(f"dumpe2fs {image}: group descriptors without inode tables")
    return geo


def _merge(runs: list[tuple[int, int, int]], map_blocks=frozenset()) -> list[tuple[int, int, int]]:
    """Join runs that continue each other logically and physically, over a gap made only of
    the file's own map blocks: [(logical, physical, data blocks)]."""
    out: list[list[int]] = []
    end = 0                                    # physical block after the last run's end
    for lb, pb, n in sorted(runs):
        if out and out[-1][0] + out[-1][2] == lb and end <= pb and all(b in map_blocks for b in range(end, pb)):
            out[-1][2] += n
        else:
            out.append([lb, pb, n])
        end = pb + n
    return [tuple(r) for r in out]


def _parse_stat(chunk: str) -> Inode | None:
    m = _HEAD.search(chunk)
    if not m:
        return None
    size = _SIZE.search(chunk)
    node = Inode(int(m[1]), m[2], int(size[1]) if size else 0)
    _, marker, blocks = chunk.partition("\nBLOCKS:\n")
    if not marker:
        _, marker, blocks = chunk.partition("\nEXTENTS:\n")
    if marker:
        runs = []
        for lb, le, pb, pe in _RUN.findall(blocks):
            n = int(le or lb) - int(lb) + 1
            if pe and int(pe) - int(pb) + 1 != n:
                raise ScanError(f"inode {node.ino}: run ({lb}-{le}):{pb}-{pe} of unequal lengths")
            runs.append((int(lb), int(pb), n))
        node.runs = _merge(runs, frozenset(int(b) for b in _MAPBLOCK.findall(blocks)))
    return node


def inodes(image, geo: Geometry) -> list[Inode]:
    """`debugfs -f` one `stat` per in-use inode (the root and from first_ino on; the other
    reserved inodes are the file system's own), in inode order."""
    wanted = [int(i) for i in np.flatnonzero(geo.used) if i == 2 or i >= geo.first_ino]
    with tempfile.NamedTemporaryFile("w", prefix="layoutstats-", suffix=".cmds") as f:
        f.write("".join(f"stat <{i}>\n" for i in wanted))
        f.flush()
        out = _tool(["debugfs", "-f", f.name, str(image)])
    found = [n for n in map(_parse_stat, re.split(r"^debugfs: ", out, flags=re.M)) if n]
    if [n.ino for n in found] != wanted:
        raise ScanError(f"debugfs {image}: stat answered for {len(found)} of {len(wanted)} inodes")
    return found


def free_extents(image) -> int:
    """The free extents `e2freefrag` counts (its "Num. free extent" line)."""
    out = _tool(["e2freefrag", str(image)])
    m = re.search(r"^Num\. free extent: (\d+)", out, flags=re.M)
    if not m:
        raise ScanError(f"e2freefrag {image}: no free extent count")
    return int(m[1])


_ENTRY = re.compile(r"^/(\d+)/(\d+)/\d+/\d+/(.*)/\d*/$")


def names(image, nodes: list[Inode]) -> dict[int, tuple[int, str]]:
    """Every inode's directory and name (the first link `debugfs ls -p` shows), from one
    `debugfs -f` batch of `ls -p <dir>` over the directories."""
    dirs = [n.ino for n in nodes if n.kind == "directory"]
    with tempfile.NamedTemporaryFile("w", prefix="layoutstats-", suffix=".cmds") as f:
        f.write("".join(f"ls -p <{i}>\n" for i in dirs))
        f.flush()
        out = _tool(["debugfs", "-f", f.name, str(image)])
    parent: dict[int, tuple[int, str]] = {}
    for chunk in re.split(r"^debugfs: ", out, flags=re.M)[1:]:
        head, _, body = chunk.partition("\n")
        m = re.match(r"ls -p <(\d+)>", head)
        if not m:
            continue
        d = int(m[1])
        for line in body.splitlines():
            e = _ENTRY.match(line)
            if e and e[3] not in (".", "..") and int(e[1]) not in parent:
                parent[int(e[1])] = (d, e[3])
    return parent


def statistics(geo: Geometry, nodes: list[Inode], flex: int | None = None,
               parent: dict[int, tuple[int, str]] | None = None) -> dict:
    """The oracle's figures for one image. `flex`: groups per flex group for the directory
    figures (default: the image's own; 16 compares an image without flex_bg with ext4's).
    `parent` (from `names`): each inode's directory, for the file-to-directory distance and
    the directories per flex group of each top-level subtree."""
    flex = flex or geo.groups_per_flex
    parent = parent or {}
    group_of_block = lambda b: (b - geo.first_data_block) // geo.blocks_per_group   # noqa: E731
    files = [n for n in nodes if n.kind == "regular"]
    with_data = [n for n in files if n.runs]
    extents = np.array([len(n.runs) for n in with_data], dtype=np.int64)
    big = [n for n in files if n.size > 4096]
    big_multi = sum(1 for n in big if len(n.runs) > 1)
    distance = [abs((n.ino - 1) // geo.inodes_per_group - group_of_block(n.runs[0][1])) for n in with_data]

    dir_groups = np.array([(n.ino - 1) // geo.inodes_per_group for n in nodes if n.kind == "directory"],
                          dtype=np.int64)
    per_group = np.bincount(dir_groups, minlength=geo.groups)
    nflex = -(-geo.groups // flex)
    per_flex = np.bincount(dir_groups // flex, minlength=nflex)
    within = dir_groups % flex

    per_block = geo.block_size // geo.inode_size
    used = np.flatnonzero(geo.used)
    itable = {((i - 1) // geo.inodes_per_group, ((i - 1) % geo.inodes_per_group) // per_block) for i in used}
    dirs = len(dir_groups)

    first = {n.ino: n.runs[0][1] for n in nodes if n.runs}
    # a file's first data block to its directory's first block, in groups
    to_dir = [abs(first[n.ino] - first[parent[n.ino][0]]) / geo.blocks_per_group
              for n in with_data if n.ino in parent and parent[n.ino][0] in first]
    top: dict[int, str] = {}                 # directory -> its top-level directory's name

    def top_of(ino: int) -> str | None:
        chain = []
        while ino not in top and ino in parent and parent[ino][0] != 2:
            chain.append(ino)
            ino = parent[ino][0]
        name = top.get(ino) or (parent[ino][1] if ino in parent else None)
        for i in chain + [ino]:
            top[i] = name
        return name

    subtrees: dict[str, list[int]] = {}
    top_flex: dict[str, int] = {}
    for n in nodes:
        if n.kind != "directory" or n.ino not in parent or n.ino == 2:
            continue
        name = top_of(n.ino)
        fg = (n.ino - 1) // geo.inodes_per_group // flex
        subtrees.setdefault(name, [0] * nflex)[fg] += 1
        if parent[n.ino][0] == 2:
            top_flex[name] = fg
    below = sum(sum(c) for c in subtrees.values()) - len(top_flex)
    away = sum(sum(c) - c[top_flex[t]] for t, c in subtrees.items() if t in top_flex)
    return {
        "files": len(files),
        "directories": dirs,
        "data_blocks": int(sum(r[2] for n in files for r in n.runs)),
        "files_over_4k": len(big),
        "files_over_4k_multi_extent": big_multi,
        "files_over_4k_multi_extent_pct": 100.0 * big_multi / len(big) if big else 0.0,
        "extents_per_file_mean": float(extents.mean()) if len(extents) else 0.0,
        "extents_per_file_p99": int(np.percentile(extents, 99, method="inverted_cdf")) if len(extents) else 0,
        "extents_per_file_max": int(extents.max()) if len(extents) else 0,
        "flex": flex,
        "flex_groups": nflex,
        "flex_groups_with_dirs": int(np.count_nonzero(per_flex)),
        "dirs_per_used_flex_group": dirs / max(1, int(np.count_nonzero(per_flex))),
        "dirs_in_busiest_flex_group_pct": 100.0 * int(per_flex.max()) / dirs if dirs else 0.0,
        "dirs_in_first_flex_group_pct": 100.0 * int(per_flex[0]) / dirs if dirs else 0.0,
        "subtree_dirs_away_pct": 100.0 * away / below if below else 0.0,
        "dirs_per_flex_by_subtree": dict(sorted(subtrees.items(), key=lambda t: (-sum(t[1]), t[0]))),
        "file_dir_distance_mean": float(np.mean(to_dir)) if to_dir else 0.0,
        "groups": geo.groups,
        "groups_with_dirs": int(np.count_nonzero(per_group)),
        "dirs_in_first_3_groups_of_flex_pct": 100.0 * int(np.count_nonzero(within < 3)) / dirs if dirs else 0.0,
        "inode_data_group_distance_mean": float(np.mean(distance)) if distance else 0.0,
        "itable_blocks_touched": len(itable),
        "dirs_per_group": per_group.tolist(),
        "dirs_per_flex_group": per_flex.tolist(),
    }


def scan(image, flexes=(None,)) -> dict:
    """The image's shape and, per flex-group size asked for (None: the image's own), its
    statistics: {"image": ..., "by_flex": {"16": {...}, ...}}. IMAGE must not be mounted."""
    geo = geometry(image)
    nodes = inodes(image, geo)
    parent = names(image, nodes)
    free = free_extents(image)
    return {"image": {"features": geo.features, "groups_per_flex": geo.groups_per_flex,
                      "block_size": geo.block_size, "inode_size": geo.inode_size,
                      "blocks_per_group": geo.blocks_per_group, "inodes_per_group": geo.inodes_per_group,
                      "descriptor_dirs_per_group": geo.dirs_per_group},
            "by_flex": {str(f or geo.groups_per_flex): dict(statistics(geo, nodes, f, parent), free_extents=free)
                        for f in flexes}}
