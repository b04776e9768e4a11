"""A mounted image whose own host file system fills up: a sparse image on a small tmpfs.

The commit that cannot be written must cost nothing: the daemon goes on (it used to die, the
mount with it), keeps what was written in memory, refuses changes with ENOSPC and fails the
fsync that needed the commit; `simfs umount` will not unmount meanwhile (it would lose the
changes) and says why in one line; once the host has room again, the next commit writes
everything, and the unmount then leaves an e2fsck-clean image with every byte.
"""

import errno
import os
import random
import time

import pytest

from tests.conftest import SimfsMount, fill_host, fuse_mounts, make_image, run_simfs

pytestmark = pytest.mark.mount

COMMIT = 1.0


def _same(got: bytes, want: bytes) -> bool:
    """Equal, or say where not in one line (pytest's diff of 16 MiB takes minutes)."""
    if got == want:
        return True
    first = next((i for i in range(0, min(len(got), len(want)), 4096) if got[i:i + 4096] != want[i:i + 4096]), None)
    raise AssertionError(f"{len(got)} bytes read, {len(want)} expected; first differing 4 KiB at {first}")


def _write_until_enospc(path, data: bytes) -> tuple[int, OSError]:
    """Write `data` to a new file and fsync it; (bytes the writes returned, the error that
    stopped them at a write or at the fsync)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    written = 0
    try:
        while written < len(data):
            written += os.write(fd, data[written:written + (1 << 20)])
        os.fsync(fd)
    except OSError as e:
        return written, e
    finally:
        os.close(fd)
    raise AssertionError("the writes and the fsync went through on a full host")


def test_a_full_host_loses_nothing_the_mount_holds(small_host, tmp_path):
    img = make_image(small_host / "i.img", "1G")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    m = SimfsMount(img, mnt, f"commit={COMMIT:g}")
    m.mount()
    try:
        (mnt / "kept").write_bytes(b"kept\n")
        time.sleep(COMMIT + 1)                                # committed
        fill_host(small_host, 8 << 20)                        # leave the host 8 MB
        data = random.Random(1).randbytes(16 << 20)
        # its commit needs 32 MB: the fsync fails, or, if a timed commit came first (a slow
        # or loaded machine), a write did; either way the bytes written before are held
        written, e = _write_until_enospc(mnt / "big", data)
        assert e.errno == errno.ENOSPC
        data = data[:written]
        assert (mnt / "kept").read_bytes() == b"kept\n"      # the daemon is alive
        assert _same((mnt / "big").read_bytes(), data)      # and holds what was written
        with pytest.raises(OSError) as e:
            (mnt / "new").write_bytes(b"x")
        assert e.value.errno == errno.ENOSPC
        r = run_simfs("umount", mnt, check=False)
        assert r.returncode == 1 and "not unmounting" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert os.path.realpath(mnt) in fuse_mounts()
        assert "No space left on device" in m.log_text()

        (small_host / "filler").unlink()                     # room again: the retried commit
        deadline = time.monotonic() + 10 * COMMIT
        while True:
            try:
                (mnt / "new").write_bytes(b"x")
                break
            except OSError:
                assert time.monotonic() < deadline, "no commit after the host had room again"
                time.sleep(0.2)
        m.umount()
        m.assert_clean()
        m.mount()
        assert _same((mnt / "big").read_bytes(), data)
        assert (mnt / "kept").read_bytes() == b"kept\n" and (mnt / "new").read_bytes() == b"x"
        m.umount()
    finally:
        m.force_cleanup()
