"""O_DIRECT through a mount (issue 53, item 4): an open with O_DIRECT is served around simfs's
buffer cache (FUSE direct_io), so its writes are charged to the drive while the writer waits,
and its reads come from the drive though the data is cached; the same bytes written without
O_DIRECT stay in the cache."""

from __future__ import annotations

import mmap
import os

import pytest

from tests.conftest import run_simfs

pytestmark = pytest.mark.mount

CHUNK = 64 * 1024
CHUNKS = 16                                   # 1 MiB


def _phase(m, name: str, fn) -> dict:
    run_simfs("ctl", m.mnt, "mark", name)
    fn()
    run_simfs("ctl", m.mnt, "mark", name + "-end")
    phase = [p for p in m.stats()["time"]["phases"] if p["name"] == name][-1]
    return phase


def _write(path, flags) -> None:
    buf = mmap.mmap(-1, CHUNK)                # page-aligned, as O_DIRECT wants
    buf.write(b"d" * CHUNK)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        for i in range(CHUNKS):
            assert os.pwritev(fd, [buf], i * CHUNK) == CHUNK
    finally:
        os.close(fd)


def _read(path, flags) -> bytes:
    buf = mmap.mmap(-1, CHUNK)
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        assert os.preadv(fd, [buf], 0) == CHUNK
    finally:
        os.close(fd)
    return bytes(buf)


def test_direct_writes_and_reads_are_charged_to_the_drive(simfs_factory):
    m = simfs_factory("writeback=async", size="64M")
    buffered = _phase(m, "buffered", lambda: _write(m.mnt / "b", 0))
    direct = _phase(m, "direct", lambda: _write(m.mnt / "d", os.O_DIRECT))
    assert buffered["counters"].get("sectors_written", 0) == 0           # in the cache
    assert direct["counters"].get("sectors_written", 0) >= CHUNKS * CHUNK // 512
    assert direct["counters"].get("direct_blocks_written", 0) >= CHUNKS * CHUNK // 4096
    reread = _phase(m, "direct-read", lambda: _read(m.mnt / "b", os.O_DIRECT))
    assert reread["counters"].get("direct_blocks_read", 0) == CHUNK // 4096
    assert reread["counters"].get("sectors_read", 0) >= CHUNK // 512     # though the data is cached
    assert _read(m.mnt / "d", os.O_DIRECT) == b"d" * CHUNK
