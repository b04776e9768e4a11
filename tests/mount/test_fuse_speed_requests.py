"""What the kernel sends a simfs mount, read from libfuse's own trace of each request
(-o fuse_debug): after the first close() no FLUSH (simfs has no FLUSH handler: ENOSYS, and the
kernel stops asking), while every other request of a create-write-close still arrives, served
by the request loop of simfs.fuse.requestloop."""

import re
from collections import Counter

import pytest

pytestmark = pytest.mark.mount


def test_close_sends_one_flush_per_mount_not_one_per_file(simfs_factory):
    m = simfs_factory("fuse_debug")
    for i in range(20):
        (m.mnt / f"f{i}").write_bytes(b"x" * 5000)
    assert [(m.mnt / f"f{i}").stat().st_size for i in range(20)] == [5000] * 20
    ops = m.stats()["ops"]
    m.umount()
    sent = Counter(re.findall(r"opcode: ([A-Z_]+)", m.log_text()))
    assert sent["CREATE"] == 20 and sent["WRITE"] == 20 and sent["RELEASE"] >= 20
    assert sent["FLUSH"] == 1                   # the first close's, answered ENOSYS
    assert "flush" not in ops and ops["create"] == 20 and ops["write"] == 20
