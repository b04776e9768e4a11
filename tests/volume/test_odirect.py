"""O_DIRECT through the volume (Volume.write_direct/read_direct, the FUSE direct_io path):
the data goes to and comes from the drive while the caller waits, as the kernel's direct I/O;
buffered I/O of the same bytes stays in the cache."""

from __future__ import annotations

import pytest

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs

DATA = bytes(range(256)) * 1024            # 256 KiB


@pytest.fixture(params=["ext2", "mballoc"])
def vol(request, tmp_path):
    img = tmp_path / "a.img"
    mkfs(img, 64 << 20, block_size=4096)
    v = Volume.open(img, VolumeOptions(disk="sata7200", alloc=request.param))
    yield v
    v.close()


def _charged(vol, fn, *args):
    """(result, simulated seconds, blocks written to, blocks read from the drive) of one call."""
    c0, t0 = vol.counters, vol.clock.now
    out = fn(*args)
    c1 = vol.counters
    return (out, vol.clock.now - t0, c1.get("blocks_written", 0) - c0.get("blocks_written", 0),
            (c1.get("sectors_read", 0) - c0.get("sectors_read", 0)) // 8)


def test_direct_writes_are_charged_to_the_drive_and_buffered_ones_are_not(vol):
    a = vol.create(2, b"direct", 0o100644, 0, 0).st_ino
    b = vol.create(2, b"buffered", 0o100644, 0, 0).st_ino
    n, t, written, _ = _charged(vol, vol.write_direct, a, 0, DATA)
    assert n == len(DATA) and written >= len(DATA) // 4096
    assert t > 1e-3                          # 256 KiB on a 7200 rpm drive: milliseconds
    n, tb, written_b, _ = _charged(vol, vol.write, b, 0, DATA)
    assert n == len(DATA) and written_b == 0 and tb < t / 10
    assert vol.read(a, 0, len(DATA)) == DATA


def test_direct_reads_go_to_the_drive_even_when_cached(vol):
    a = vol.create(2, b"f", 0o100644, 0, 0).st_ino
    vol.write(a, 0, DATA)                      # dirty in the cache (placed late under mballoc)
    out, t, written, read = _charged(vol, vol.read_direct, a, 4096, 64 * 1024)
    assert out == DATA[4096:4096 + 64 * 1024]
    assert written >= 16 and read == 16       # the range written back first, then read
    out, t, written, read = _charged(vol, vol.read_direct, a, 4096, 64 * 1024)
    assert out == DATA[4096:4096 + 64 * 1024] and written == 0 and read == 16 and t > 0
    _, t, _, read = _charged(vol, vol.read, a, 4096, 64 * 1024)
    assert read == 0                           # a buffered read still hits the cache


def test_direct_read_of_a_hole_and_past_the_end(vol):
    a = vol.create(2, b"h", 0o100644, 0, 0).st_ino
    vol.write_direct(a, 3 * 4096, b"z" * 10)
    assert vol.read_direct(a, 0, 4 * 4096) == bytes(3 * 4096) + b"z" * 10
    assert vol.read_direct(a, 10 * 4096, 100) == b""
