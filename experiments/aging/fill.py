"""The nearly-full variant (`--fill PCT`): static filler files laid on the mount before the
first pull, so the history ages a file system PCT% of whose blocks are in use.

Conway et al. ("Filesystem Aging: It's More Usage than Fullness", HotStorage 2019) compare
git aging on a file system with abundant space against one under space pressure. The filler
is written through the mount, so it is in the op log: every replay lays the same files with
its own allocator, as the real file system under test would have. The files are of
log-uniform sizes from a seeded RNG (the same for every run), in a few directories; all but
the last are sized from an estimate of the blocks they take, the last is sized from the
image's block bitmaps after a sync, so that the recorded run is filled to PCT% (a block more
if, on the ext4 profile, that file needs an extent leaf; a replay under an allocator that maps
files with more or fewer tree blocks lands within a few blocks of it; each run records the
share it reached).
"""

from __future__ import annotations

import math
import os
import random

DIRS = 8
MIN_FILE, MAX_FILE = 16 << 10, 2 << 20
CHUNK = 1 << 20
PATTERN = b"simfs aging filler\n"
SEED = 42
MARGIN = 64                 # blocks left for the last file (sized from the image)


def target_blocks(blocks: int, pct: float) -> int:
    """The blocks in use once the image is filled to PCT% of its BLOCKS."""
    return math.ceil(blocks * pct / 100)


def map_blocks(size: int, block_size: int, extents: bool) -> int:
    """Blocks a contiguous file of SIZE bytes takes: its data, and its indirect blocks under
    ext2's block map (none for an extent-mapped file of four extents or fewer)."""
    n = -(-size // block_size)
    if extents or n <= 12:
        return n
    a = block_size // 4
    if n <= 12 + a:
        return n + 1
    return n + 2 + -(-(n - 12 - a) // a)


def size_for(blocks: int, block_size: int, extents: bool) -> int:
    """The largest file size whose map_blocks is at most BLOCKS (0 if none)."""
    size = blocks * block_size
    while size > 0 and map_blocks(size, block_size, extents) > blocks:
        size -= block_size
    return max(size, 0)


def plan(room: int, block_size: int, extents: bool, seed: int = SEED) -> list[tuple[str, int]]:
    """(path under the filler directory, size) of files taking about ROOM blocks less MARGIN
    (one block per directory included); the last file is left for `last_file`."""
    rng = random.Random(seed)
    left = room - MARGIN - DIRS - 1
    files = []
    while True:
        size = int(math.exp(rng.uniform(math.log(MIN_FILE), math.log(MAX_FILE))))
        need = map_blocks(size, block_size, extents)
        if need > left:
            return files
        files.append((f"{rng.randrange(DIRS):02d}/f{len(files):06d}", size))
        left -= need


def write(path: str, size: int) -> None:
    """One filler file, written in CHUNK-byte requests (the kernel splits them as it does)."""
    chunk = (PATTERN * (CHUNK // len(PATTERN) + 1))[:CHUNK]
    with open(path, "wb", buffering=0) as f:
        done = 0
        while done < size:
            done += f.write(chunk[:min(CHUNK, size - done)])


def lay(root: str, files: list[tuple[str, int]]) -> None:
    """The filler directories (all of them, in order) and files under ROOT."""
    for d in range(DIRS):
        os.makedirs(os.path.join(root, f"{d:02d}"), exist_ok=True)
    for rel, size in files:
        write(os.path.join(root, rel), size)


def last_file(root: str, left: int, block_size: int, extents: bool) -> int:
    """The last filler file, taking LEFT blocks (those the image's bitmaps say are still
    short of the target); returns its size."""
    size = size_for(left, block_size, extents)
    if size:
        write(os.path.join(root, "00", "last"), size)
    return size
