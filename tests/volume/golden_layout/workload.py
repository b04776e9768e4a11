"""The golden-layout workload: one image, one list of operations, run by the kernel's ext4
(make.py, through the mounted file system) and by simfs in-process (test_placement_golden.py).

The image: simfs's own mkfs, ext4 profile, 32 MiB of 1 KiB blocks (4 groups: one flex group,
so that Orlov's start for a top-level directory - a hash of the name in the kernel, a seeded
random number in simfs - cannot matter), fixed UUID, hash seed and time. The operations:
files written 4 KiB at a time (a page: the kernel's nodelalloc asks for its blocks one by one,
simfs's `mballoc` too), small and large, in the root and in directories two deep, an append
to an earlier file after others were written, a sparse file, and a file rewritten in place.
"""

from __future__ import annotations

KIB = 1024
SIZE = 32 << 20
MKFS = dict(block_size=1024, profile="ext4", uuid=bytes(range(16)), hash_seed=bytes(range(16, 32)),
            now=1_700_000_000, uid=0, gid=0)
CHUNK = 4096
#: the writer's pid % 16: nodelalloc's goal for a file's first block is the colour's sixteenth
#: of the group (ext4_inode_to_goal_block); simfs's allocator is given the same
COLOUR = 0

#: (op, path, args): mkdir PATH | write PATH offset size (one open, 4 KiB writes, close)
OPS = [
    ("write", "a", 0, 1 * KIB),
    ("write", "b", 0, 5 * KIB),
    ("write", "c", 0, 16 * KIB),
    ("write", "d", 0, 17 * KIB),
    ("write", "e", 0, 40 * KIB),
    ("mkdir", "dir1"),
    ("write", "dir1/f", 0, 3 * KIB),
    ("write", "dir1/g", 0, 100 * KIB),
    ("mkdir", "dir1/sub"),
    ("write", "dir1/sub/h", 0, 300 * KIB),
    ("write", "dir1/sub/i", 0, 12 * KIB),
    ("write", "b", 5 * KIB, 20 * KIB),            # b grows past 16 blocks after others were written
    ("write", "j", 0, 1200 * KIB),
    ("write", "k", 0, 2600 * KIB),                # past 2 MiB: the aligned windows
    ("write", "sparse", 512 * KIB, 64 * KIB),     # a hole first
    ("write", "sparse", 0, 8 * KIB),
    ("write", "e", 8 * KIB, 8 * KIB),             # in place: nothing allocated
    ("mkdir", "dir2"),
    ("write", "dir2/l", 0, 70 * KIB),
    ("write", "dir2/m", 0, 2 * KIB),
]


def payload(path: str, offset: int, n: int) -> bytes:
    seed = sum(path.encode()) % 251 + 1
    return bytes([seed]) * n


def paths() -> list[str]:
    """Every file and directory the operations make, in order of first appearance."""
    out = []
    for op in OPS:
        if op[1] not in out:
            out.append(op[1])
    return out


def run_on_directory(root: str) -> None:
    """The operations through the system calls, under `root` (the kernel's mount)."""
    import os
    for op in OPS:
        path = os.path.join(root, op[1])
        if op[0] == "mkdir":
            os.mkdir(path, 0o755)
            continue
        _, _, offset, size = op
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for off in range(offset, offset + size, CHUNK):
                n = min(CHUNK, offset + size - off)
                assert os.pwrite(fd, payload(op[1], off, n), off) == n
        finally:
            os.close(fd)


def run_on_volume(vol) -> dict[str, int]:
    """The same operations on a simfs Volume; returns path -> inode."""
    import stat
    inos = {"": vol.root_ino}
    for op in OPS:
        parent, _, name = op[1].rpartition("/")
        if op[0] == "mkdir":
            inos[op[1]] = vol.mkdir(inos[parent], name.encode(), 0o755, 0, 0).st_ino
            continue
        _, path, offset, size = op
        if path not in inos:
            inos[path] = vol.create(inos[parent], name.encode(), stat.S_IFREG | 0o644, 0, 0).st_ino
        ino = inos[path]
        vol.open_file(ino)
        for off in range(offset, offset + size, CHUNK):
            n = min(CHUNK, offset + size - off)
            assert vol.write(ino, off, payload(path, off, n)) == n
        vol.release_file(ino, True)
    return inos
