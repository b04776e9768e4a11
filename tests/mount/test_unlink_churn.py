"""Concurrent unlink churn on a mount: what an open descriptor reads never changes under it.

simfs frees an unlinked inode nobody has open when the unlink ends, not at the kernel's
asynchronous FORGET, and keeps the number from being handed out again while the kernel still
refers to it (Volume's docstring). Several processes, each in a directory of its own (so the
contents every file should have are known), create, rewrite, unlink, rename and open files,
hold O_RDONLY and O_PATH descriptors across those changes, and remove directories they stand
in: each descriptor must read exactly what was last written to its inode, a removed working
directory must stat with no link left, and the image must be e2fsck-clean afterwards (the
fixture's teardown).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import time

import pytest

pytestmark = pytest.mark.mount

SECONDS = 8
WORKERS = 4


def _churn(args) -> tuple[int, int]:
    root, seed = args
    r = random.Random(seed)
    d = os.path.join(root, f"w{seed}")
    os.makedirs(d, exist_ok=True)
    content: dict[int, tuple[int, int]] = {}        # inode -> (byte, size) last written
    held: list[tuple[int, bool]] = []               # (descriptor, readable)
    ops = checked = 0
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        name = os.path.join(d, f"f{r.randrange(30)}")
        op = r.randrange(10)
        try:
            if op < 3:
                b, size = r.randrange(256), r.randrange(1, 40000)
                with open(name, "wb") as f:
                    f.write(bytes([b]) * size)
                    content[os.fstat(f.fileno()).st_ino] = (b, size)
            elif op == 3:
                os.unlink(name)
            elif op == 4:
                held.append((os.open(name, os.O_RDONLY), True))
            elif op == 5:
                held.append((os.open(name, os.O_PATH), False))
            elif op == 6 and held:
                fd, readable = held.pop(r.randrange(len(held)))
                st = os.fstat(fd)
                if readable:
                    b, size = content[st.st_ino]
                    data = os.pread(fd, 50000, 0)
                    assert st.st_size == size and data == bytes([b]) * size, (seed, st.st_ino)
                    checked += 1
                os.close(fd)
            elif op == 7:
                os.rename(name, os.path.join(d, f"f{r.randrange(30)}"))
            elif op == 8:
                sub = os.path.join(d, f"s{r.randrange(5)}")
                os.mkdir(sub)
                os.chdir(sub)
                os.rmdir(sub)
                assert os.stat(".").st_nlink == 0
                os.chdir(root)
            else:
                os.stat(name)
        except (FileNotFoundError, FileExistsError):
            pass
        ops += 1
    for fd, _ in held:
        os.close(fd)
    return ops, checked


@pytest.mark.parametrize("options", ["", "alloc=delayed,writeback=softdep"])
def test_open_descriptors_survive_concurrent_unlinks(simfs_factory, options):
    m = simfs_factory(options, size="64M")
    with multiprocessing.get_context("fork").Pool(WORKERS) as pool:
        done = pool.map(_churn, [(str(m.mnt), seed) for seed in range(WORKERS)])
    assert sum(c for _, c in done) > 100, done      # enough descriptors were read back
