"""ImageFile with dataless: data blocks never reach the journal or the image; they read as
zeros and are punched after the commit; metadata is journalled and written as usual."""

import os

from simfs.blockio import imagefile
from simfs.blockio.imagefile import ImageFile, _parse

BS = 1024


def _image(tmp_path):
    path = tmp_path / "img"
    path.write_bytes(b"\xee" * (64 * BS))          # every block non-zero, allocated
    return str(path), os.open(path, os.O_RDWR)


def test_dataless_commit_journals_metadata_only(tmp_path, monkeypatch):
    path, fd = _image(tmp_path)
    im = ImageFile(path, fd, BS, writable=True, dataless=True)
    journals = []
    real = os.pwritev

    def spy(f, pieces, off):
        if f == im._journal_fd:
            journals.append(b"".join(bytes(p) for p in pieces))
        return real(f, pieces, off)
    monkeypatch.setattr(imagefile.os, "pwritev", spy)
    im.note(5, bytearray(b"\x11" * BS), "data")
    im.note(6, bytearray(b"\x22" * BS), "dir")
    im.note(7, bytearray(b"\x33" * BS), "dir")
    im.note(7, bytearray(b"\x44" * BS), "data")      # metadata that became data: not written
    im.note(8, bytearray(b"\x55" * BS), "data")
    im.note(8, bytearray(b"\x66" * BS), "indirect")  # data that became metadata: written
    assert im.commit() == 2
    _, records = _parse(journals[0])
    assert sorted(off for off, _ in records) == [6 * BS, 8 * BS]
    raw = os.pread(fd, 64 * BS, 0)
    block = lambda b: raw[b * BS:(b + 1) * BS]       # noqa: E731
    assert block(5) == block(7) == bytes(BS)          # punched: zeros, not the old \xee
    assert block(6) == b"\x22" * BS and block(8) == b"\x66" * BS and block(9) == b"\xee" * BS
    assert os.fstat(fd).st_size == 64 * BS
    assert [bytes(b) for b in im.read(9, 1, "data")] == [bytes(BS)]    # data reads as zeros
    assert [bytes(b) for b in im.read(9, 1, "dir")] == [b"\xee" * BS]
    im.close()
    os.close(fd)


def test_normal_image_stores_data(tmp_path):
    path, fd = _image(tmp_path)
    im = ImageFile(path, fd, BS, writable=True)
    im.note(5, bytearray(b"\x11" * BS), "data")
    assert im.commit() == 1
    assert os.pread(fd, BS, 5 * BS) == b"\x11" * BS
    assert [bytes(b) for b in im.read(5, 1, "data")] == [b"\x11" * BS]
    im.close()
    os.close(fd)


def test_punch_makes_a_hole(tmp_path):
    path = tmp_path / "f"
    with open(path, "wb") as f:
        f.write(b"\x01" * (4 << 20))
    fd = os.open(path, os.O_RDWR)
    before = os.fstat(fd).st_blocks
    imagefile.punch(fd, 1 << 20, 2 << 20)
    assert os.pread(fd, 2 << 20, 1 << 20) == bytes(2 << 20)
    assert os.pread(fd, 1, (3 << 20)) == b"\x01"
    assert os.fstat(fd).st_blocks < before            # where the host can punch (ext4, tmpfs, xfs)
    os.close(fd)
