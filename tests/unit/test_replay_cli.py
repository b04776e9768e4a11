"""`simfs replay`, in-process (simfs.cli.main.main): output, and bad input refused with one line
on stderr and exit status 2, the image left e2fsck-clean (untouched when refused before the
replay starts)."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import pytest

from simfs.cli.main import main
from simfs.inprocess.oplog import RecordingVolume
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, write_file

UUID = "00112233-4455-6677-8899-aabbccddeeff"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A small run: a directory and 40 files of 48 KiB, a mark, a read-back; its log and a copy
    of the image from before it."""
    d = tmp_path_factory.mktemp("replaycli")
    img = d / "rec.img"
    mkfs(img, 32 << 20, block_size=4096, uuid=UUID)
    shutil.copyfile(img, d / "pristine.img")
    vol = RecordingVolume.start(Volume.open(img, VolumeOptions(disk="sata7200", stats=str(d / "rec.json"))),
                                str(d / "run.log"), "test")
    top = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
    for i in range(40):
        write_file(vol, top, b"f%d" % i, 48 << 10)
    vol.mark("readback")
    vol.drop_caches()
    for i in range(40):
        ino = vol.lookup(top, b"f%d" % i).st_ino
        vol.read(ino, 0, 48 << 10)
    vol.close()
    return d


def image(recorded, name="b.img"):
    shutil.copyfile(recorded / "pristine.img", recorded / name)
    return recorded / name


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(capsys, *argv, match: str, img=None):
    before = sha(img) if img is not None else None
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("simfs replay: "), err
    assert match in err[0], err[0]
    if img is not None:
        assert sha(img) == before, "a refused replay changed the image"
        assert_fsck_clean(img)
    return err[0]


def test_replay_prints_and_writes_the_recorded_statistics(recorded, capsys, tmp_path):
    out = tmp_path / "again.json"
    assert main(["replay", str(recorded / "run.log"), str(image(recorded)), "--stats", str(out),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rec = json.loads((recorded / "rec.json").read_text())
    assert json.loads(out.read_text()) == rec == doc["time"]
    assert doc["operations_replayed"] > 80 and doc["counters"]["bytes_written"] == 40 * (48 << 10)
    assert main(["replay", str(recorded / "run.log"), str(image(recorded))]) == 0
    text = capsys.readouterr().out
    assert "| readback" in text and "elapsed (s)" in text and "operations_replayed" in text


def test_missing_log(recorded, capsys, tmp_path):
    img = image(recorded)
    refused(capsys, "replay", tmp_path / "nope.log", img, match="no such log file", img=img)


def test_missing_image(recorded, capsys, tmp_path):
    refused(capsys, "replay", recorded / "run.log", tmp_path / "nope.img", match="does not exist")


@pytest.mark.parametrize("content, match", [
    (b"", "not an op log (empty)"),
    (b"hello world\n", "the first line is not JSON"),
    (b'{"format": "something-else"}\n["close", null]\n', "no simfs-oplog header"),
    (b'{"format": "simfs-oplog", "version": 99, "image": {}, "options": {}}\n', "format version 99"),
    (gzip.compress(b"not json at all\n", mtime=0), "the first line is not JSON"),
    (b"\x1f\x8b\x08garbage", "not an op log"),
])
def test_foreign_log(recorded, capsys, tmp_path, content, match):
    log = tmp_path / "foreign.log"
    log.write_bytes(content)
    img = image(recorded)
    refused(capsys, "replay", log, img, match=match, img=img)


def test_bad_line_inside_the_log(recorded, capsys, tmp_path):
    lines = (recorded / "run.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "bad.log"
    log.write_bytes(b"".join(lines[:5] + [b"{oops\n"] + lines[5:]))
    img = image(recorded)
    refused(capsys, "replay", log, img, match="line 6 is not JSON", img=img)


@pytest.mark.parametrize("line, match", [
    (b'["Q",null,0]\n', "line 31 is not an operation simfs records ('Q')"),
    (b'[null,0]\n', "line 31 is not an operation simfs records"),
])
def test_unknown_operation_deep_inside_the_log(recorded, capsys, tmp_path, line, match):
    """Refused before the replay starts: the operations before it are not applied."""
    lines = (recorded / "run.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "bad.log"
    log.write_bytes(b"".join(lines[:30] + [line] + lines[30:]))
    img = image(recorded)
    refused(capsys, "replay", log, img, match=match, img=img)


def test_truncated_log(recorded, capsys, tmp_path):
    lines = (recorded / "run.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "cut.log"
    log.write_bytes(b"".join(lines[:30]) + lines[30][:5])
    img = image(recorded)
    refused(capsys, "replay", log, img, match="ends after 29 operations without the unmount", img=img)
    assert main(["replay", "--partial", str(log), str(img), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["operations_replayed"] == 29
    assert_fsck_clean(img)


def test_log_of_another_image(recorded, capsys, tmp_path):
    other = tmp_path / "other.img"
    mkfs(other, 32 << 20, block_size=4096, uuid="99999999-4455-6677-8899-aabbccddeeff")
    refused(capsys, "replay", recorded / "run.log", other, match="recorded on another image (uuid",
            img=other)
    assert main(["replay", "--force", str(recorded / "run.log"), str(other)]) == 0
    capsys.readouterr()
    assert_fsck_clean(other)


def test_replay_that_runs_out_of_space(recorded, capsys, tmp_path):
    small = tmp_path / "small.img"
    mkfs(small, 1 << 20, block_size=1024, uuid=UUID)        # 1 MiB for 1.9 MiB of files
    line = refused(capsys, "replay", "--force", recorded / "run.log", small,
                   match="ran out of space")
    assert "operation " in line and "(write)" in line
    assert_fsck_clean(small)


@pytest.mark.parametrize("opt, match", [
    ("bogus=1", "unknown mount option 'bogus'"),
    ("alloc=nosuch", "unknown allocator 'nosuch'"),
    ("log=/tmp/x", "front-end option"),
    ("dirorder=hash", "recorded with dirorder=linear"),
])
def test_bad_options(recorded, capsys, opt, match):
    img = image(recorded)
    refused(capsys, "replay", recorded / "run.log", img, "-o", opt, match=match, img=img)


def test_unwritable_stats_file(recorded, capsys, tmp_path):
    img = image(recorded)
    refused(capsys, "replay", recorded / "run.log", img, "--stats", tmp_path / "no" / "s.json",
            match="cannot write the stats file", img=img)


@pytest.mark.parametrize("line, match", [
    (b'["mkdir",7,0,"t",16877,4294967296,0]\n', "(mkdir) failed with EINVAL"),
    (b'["mknod",7,0,"n",8612,4294967296,0,0]\n', "(mknod) failed with EINVAL"),
    (b'["create",7,0,"f",33188,-1,0]\n', "(create) failed with EINVAL"),
    (b'["setattr",null,0,{"mtime_ns":1.5}]\n', "(setattr) failed with EINVAL"),
    (b'["setattr",null,0,{"size":"x"}]\n', "(setattr) failed with EINVAL"),
    (b'["setattr",null,0,{"frob":1}]\n', "is not a set of attributes"),
])
def test_arguments_no_kernel_sends_leave_the_image_clean(recorded, capsys, tmp_path, line, match):
    """An edited line whose arguments the volume cannot store (an id past 32 bits, a time
    that is no integer, an unknown attribute) is refused before the operation changes
    anything: one line, and the image neither inconsistent nor marked with an error."""
    lines = (recorded / "run.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "edited.log"
    log.write_bytes(b"".join(lines[:1] + [line] + lines[1:]))
    img = image(recorded)
    rc = main(["replay", str(log), str(img)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and match in err[0], err
    assert_fsck_clean(img)
    vol = Volume.open(img, VolumeOptions(disk="ideal", read_only=True))   # no error recorded
    assert vol.sb.state == 1, vol.sb.state
    vol.close()


def test_a_line_with_too_few_arguments_is_malformed(recorded, capsys, tmp_path):
    lines = (recorded / "run.log").read_bytes().splitlines(keepends=True)
    log = tmp_path / "short.log"
    log.write_bytes(b"".join(lines[:1] + [b'["write",0,0,0]\n'] + lines[1:]))
    img = image(recorded)
    assert main(["replay", str(log), str(img)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["simfs replay: operation 1 (line 2, write) is malformed: write takes 3 "
                   "arguments, the line gives 2"], err
    assert_fsck_clean(img)
