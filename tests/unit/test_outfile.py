"""simfs.outfile: the files simfs writes are its own, never reached through a link."""

from __future__ import annotations

import os

import pytest

from simfs import outfile


def test_new_and_own_files_are_written(tmp_path):
    p = tmp_path / "log"
    fd = outfile.open_append(str(p))
    os.write(fd, b"one\n")
    os.close(fd)
    fd = outfile.open_append(str(p))
    os.write(fd, b"two\n")
    os.close(fd)
    assert p.read_bytes() == b"one\ntwo\n"
    fd = outfile.open_stream(str(p))                 # a trace starts empty
    os.close(fd)
    assert p.read_bytes() == b""
    outfile.write_whole(str(p), b"{}\n")
    assert p.read_bytes() == b"{}\n" and sorted(os.listdir(tmp_path)) == ["log"]


@pytest.mark.parametrize("how", ["append", "stream", "whole", "probe", "private"])
def test_a_link_is_never_followed(tmp_path, how):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    link = tmp_path / "out"
    link.symlink_to(victim)
    call = {"append": outfile.open_append, "stream": outfile.open_stream,
            "whole": lambda p: outfile.write_whole(p, b"x"), "probe": outfile.probe,
            "private": outfile.open_private}[how]
    with pytest.raises(outfile.Refused, match="symbolic link"):
        call(str(link))
    assert victim.read_bytes() == b"keep" and link.is_symlink()


def test_a_second_name_is_refused(tmp_path):
    (tmp_path / "a").write_bytes(b"keep")
    os.link(tmp_path / "a", tmp_path / "b")
    with pytest.raises(outfile.Refused, match="2 hard links"):
        outfile.open_append(str(tmp_path / "b"))
    assert (tmp_path / "a").read_bytes() == b"keep"


def test_another_users_file_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file away")
    p = tmp_path / "theirs"
    p.write_bytes(b"theirs")
    os.chown(p, 65534, 65534)
    for call in (outfile.open_append, outfile.open_stream, lambda q: outfile.write_whole(q, b"x")):
        with pytest.raises(outfile.Refused, match="belongs to user 65534"):
            call(str(p))
    assert p.read_bytes() == b"theirs"


def test_devices_and_fifos(tmp_path):
    os.close(outfile.open_stream("/dev/null"))        # /dev: only root adds names there
    outfile.write_whole("/dev/null", b"x")
    with pytest.raises(outfile.Refused, match="not a regular file"):
        outfile.open_append("/dev/null")              # a log is read back: no device
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(outfile.Refused, match="not a regular file"):   # at once, never blocks
        outfile.open_stream(str(tmp_path / "fifo"))


def test_probe_leaves_nothing_and_changes_nothing(tmp_path):
    outfile.probe(str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").write_bytes(b"old")
    outfile.probe(str(tmp_path / "old"))
    assert (tmp_path / "old").read_bytes() == b"old"
