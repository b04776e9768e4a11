"""Op-log record and replay in-process (simfs.inprocess.oplog, simfs.inprocess.replay).

A workload is driven through a RecordingVolume (as the FUSE layer drives it under -o oplog=):
an unpack, a cold read-back, a walk with readdir and lookups, removes, renames, links, xattrs,
marks and drop_caches. Then, on copies of the image taken before the recording:

* replay with the recorded options gives the recorded run's statistics field for field, and a
  second replay the same again (determinism), also from a gzip log;
* replay with another allocator, write-back mode and disk gives other figures, the same
  operation counts, and an e2fsck-clean image;
* a log cut short replays only with partial=True, up to its last whole line;
* the format: handles, not inode numbers; names and xattr values exactly, non-UTF-8 too.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil

import pytest

from experiments.workload import generate_tree
from simfs.inprocess.oplog import RecordingVolume, iter_ops, read_header
from simfs.inprocess.replay import ReplayError, replay
from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, copy_tree_into

UUID = "00112233-4455-6677-8899-aabbccddeeff"


def walk(vol, ino, depth=0):
    """find + cat: readdir every directory (two calls, the second from the middle), look up
    every entry, read every regular file."""
    st = vol.opendir_state()
    listing = vol.readdir(ino, 0, state=st)
    half = listing[len(listing) // 2][2] if listing else 0
    listing = listing[:len(listing) // 2] + vol.readdir(ino, half, state=st)
    vol.release_state(st)
    for name, eino, _ in listing:
        if name in (b".", b".."):
            continue
        vol.hold(eino)
        a = vol.lookup(ino, name)
        if a.st_mode & 0o170000 == 0o040000:
            walk(vol, a.st_ino, depth + 1)
        elif a.st_mode & 0o170000 == 0o100000:
            vol.hold(a.st_ino)
            off = 0
            while data := vol.read(a.st_ino, off, 65536):
                off += len(data)
            vol.drop(a.st_ino)
        vol.drop(eino)


def workload(vol, tree):
    vol.mark("unpack")
    top = vol.mkdir(vol.root_ino, b"src", 0o755, 0, 0).st_ino
    copy_tree_into(vol, tree, top)
    odd = vol.create(top, b"caf\xe9-\xff.txt", 0o644, 0, 0).st_ino        # not UTF-8
    vol.setxattr(odd, b"user.bin", bytes(range(256)), 0)
    vol.symlink(top, b"link", b"caf\xe9-\xff.txt", 0, 0)
    with pytest.raises(FSError):
        vol.lookup(top, b"no-such-name")
    vol.sync()
    vol.drop_caches()
    vol.mark("readback")
    walk(vol, vol.root_ino)
    vol.mark("change")
    sub = vol.mkdir(top, b"moved", 0o755, 0, 0).st_ino
    vol.rename(top, b"caf\xe9-\xff.txt", sub, b"renamed", 0)
    vol.link(odd, top, b"hard")
    vol.unlink(top, b"hard")
    st = vol.opendir_state()
    for name, ino, _ in vol.readdir(top, 0, state=st):
        if name.startswith(b"d") and name != b"..":
            _remove_tree(vol, top, name)
            break
    vol.release_state(st)
    vol.getxattr(odd, b"user.bin")
    # an unlinked file read while open, freed at its release; one only the kernel held, freed
    # at the unlink, its FORGET coming after a new file may have taken the number
    f = vol.create(top, b"open-unlinked", 0o644, 0, 0).st_ino
    vol.hold(f)
    vol.open_file(f)
    vol.write(f, 0, b"x" * 10000)
    vol.unlink(top, b"open-unlinked")
    assert vol.read(f, 0, 4) == b"xxxx"
    vol.release_file(f, True)
    g = vol.create(top, b"held", 0o644, 0, 0).st_ino
    vol.hold(g, 2)
    vol.write(g, 0, b"y" * 5000)
    vol.unlink(top, b"held")
    h = vol.create(top, b"new", 0o644, 0, 0).st_ino
    vol.hold(h)
    vol.write(h, 0, b"z" * 5000)
    vol.drop(g, 2)
    vol.drop(f)
    vol.statfs()


def _remove_tree(vol, parent, name):
    a = vol.lookup(parent, name)
    if a.st_mode & 0o170000 == 0o040000:
        st = vol.opendir_state()
        for n, _, _ in vol.readdir(a.st_ino, 0, state=st):
            if n not in (b".", b".."):
                _remove_tree(vol, a.st_ino, n)
        vol.release_state(st)
        vol.rmdir(parent, name)
    else:
        vol.unlink(parent, name)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(directory, pristine image copy, plain log, gzip log, recorded statistics, options)."""
    d = tmp_path_factory.mktemp("replay")
    tree = d / "tree"
    generate_tree(tree, seed=3, files=150)
    img = d / "a.img"
    mkfs(img, 64 << 20, block_size=4096, uuid=UUID)
    shutil.copyfile(img, d / "pristine.img")
    opts = VolumeOptions(disk="sata7200", alloc="first-free", writeback="sync", stats=str(d / "a.json"))
    logs = []
    for log in (d / "run.log", d / "run.log.gz"):
        shutil.copyfile(d / "pristine.img", img)
        vol = RecordingVolume.start(Volume.open(img, opts), str(log), "test")
        workload(vol, tree)
        vol.close()
        logs.append(log)
    assert_fsck_clean(img)
    return d, d / "pristine.img", logs[0], logs[1], json.loads((d / "a.json").read_text()), opts


def _copy(recorded, name):
    d, pristine = recorded[0], recorded[1]
    shutil.copyfile(pristine, d / name)
    return d / name


def _opts(recorded, **kw):
    return dataclasses.replace(recorded[5], stats="", **kw)


def test_replay_reproduces_the_recorded_statistics(recorded):
    _, _, log, gzlog, stats, _ = recorded
    a = replay(str(log), str(_copy(recorded, "b.img")), _opts(recorded))
    assert a["time"] == stats, "replay differs from the recorded run"
    b = replay(str(gzlog), str(_copy(recorded, "c.img")), _opts(recorded))
    assert b["time"] == a["time"] and b["counters"] == a["counters"], "two replays differ"
    phases = {p["name"] for p in stats["phases"]}
    assert {"unpack", "readback", "change"} <= phases
    assert stats["total"]["counters"]["disk_reads"] > 0 and stats["now"] > 0
    assert_fsck_clean(recorded[0] / "b.img")


def test_replay_with_another_configuration(recorded):
    _, _, log, _, stats, _ = recorded
    img = _copy(recorded, "other.img")
    other = replay(str(log), str(img), _opts(recorded, alloc="cg", writeback="async", disk="wd1200jb"))
    t = other["time"]
    assert t["alloc"] != stats["alloc"] and t["writeback"] == "async" and t["disk"] == "wd1200jb"
    assert t["now"] != stats["now"]
    ops = lambda doc: {k: v["count"] for k, v in doc["total"]["operations"].items()}  # noqa: E731
    assert ops(t) == ops(stats), "the same operations were asked"
    assert_fsck_clean(img)


def test_the_log_holds_handles_names_and_lengths(recorded):
    _, _, log, gzlog, _, opts = recorded
    head = read_header(str(log))
    assert head["format"] == "simfs-oplog" and head["image"]["uuid"] == UUID
    assert head["options"]["alloc"] == opts.alloc
    ops = [rec for _, rec in iter_ops(str(log))]
    # the same run into a gzip log (the source tree's access times moved in between)
    assert [rec[:3] for _, rec in iter_ops(str(gzlog))] == [rec[:3] for rec in ops]
    assert ops[0] == ["mark", None, "unpack"] and ops[-1] == ["close", None]
    mk = ops[1]
    assert mk[0] == "mkdir" and mk[1] == 1 and mk[2] == 0     # handle 1, made in the root (0)
    create = next(r for r in ops if r[0] == "create" and r[3].startswith("caf"))
    assert create[3].encode("utf-8", "surrogateescape") == b"caf\xe9-\xff.txt"
    xa = next(r for r in ops if r[0] == "setxattr")
    assert xa[4].encode("utf-8", "surrogateescape") == bytes(range(256))
    writes = [r for r in ops if r[0] == "write"]
    assert writes and all(isinstance(r[4], int) and r[1] == r[4] for r in writes)
    assert any(r[0] == "lookup" and r[1] == "ENOENT" for r in ops)
    seen = [0]                          # handles in order of first appearance: 0, 1, 2, ...
    for r in ops:
        if r[0] in ("lookup", "create", "mkdir", "mknod", "symlink", "link") and isinstance(r[1], int):
            seen.append(r[1])
        elif r[0] == "readdir" and isinstance(r[1], list):
            seen += [h for _, h in r[1]]
    first = list(dict.fromkeys(seen))
    assert first == list(range(len(first))), "handles are numbered by first appearance"
    assert any(r[0] == "readdir" and r[1] and r[1][0][0] == "lost+found" for r in ops)
    assert sum(r[0] == "open" for r in ops) == 1 and any(r[0] == "release" for r in ops)
    # every readdir state is closed again, so a replay need not keep them all
    opened = [r[1] for r in ops if r[0] == "opendir"]
    assert opened and sorted(r[1] for r in ops if r[0] == "releasedir") == sorted(opened)


def test_a_log_cut_short_replays_with_partial_only(recorded):
    d, _, log, gzlog, _, _ = recorded
    lines = log.read_bytes().splitlines(keepends=True)
    cut = d / "cut.log"
    cut.write_bytes(b"".join(lines[:len(lines) // 2]) + lines[len(lines) // 2][:7])
    img = _copy(recorded, "cut.img")
    with pytest.raises(ReplayError, match="without the unmount"):
        replay(str(cut), str(img), _opts(recorded))
    r = replay(str(cut), str(img), _opts(recorded), partial=True)
    assert r["operations"] == len(lines) // 2 - 1
    assert_fsck_clean(img)
    # a gzip log cut mid-stream: the whole lines before the cut
    raw = gzlog.read_bytes()
    gzcut = d / "cut.log.gz"
    gzcut.write_bytes(raw[:len(raw) // 2])
    n = sum(1 for _ in iter_ops(str(gzcut)))
    full = len(gzip.decompress(raw).splitlines()) - 1
    assert 0 < n < full


def test_replay_on_another_image_is_refused_unless_forced(recorded):
    d, _, log, _, _, _ = recorded
    other = d / "foreign.img"
    mkfs(other, 64 << 20, block_size=4096, uuid="ffffffff-4455-6677-8899-aabbccddeeff")
    with pytest.raises(ReplayError, match="recorded on another image"):
        replay(str(log), str(other), _opts(recorded))
    assert replay(str(log), str(other), _opts(recorded), force=True)["operations"] > 0
    assert_fsck_clean(other)


def test_replay_that_runs_out_of_space_names_the_operation(recorded):
    d, _, log, _, _, _ = recorded
    small = d / "small.img"
    mkfs(small, 1 << 20, block_size=1024, uuid=UUID)    # 1 MiB: the tree is 1.4 MiB of data
    with pytest.raises(ReplayError, match=r"operation \d+ \(\w+\) ran out of space") as e:
        replay(str(log), str(small), _opts(recorded), force=True)
    assert "write" in str(e.value) or "create" in str(e.value) or "mkdir" in str(e.value)
    assert_fsck_clean(small)


def test_a_run_that_diverges_stops_at_the_operation(tmp_path):
    """A log that found a file this copy of the image lacks (made before the file): the lookup
    fails where it succeeded, and the replay stops there."""
    img, other = tmp_path / "x.img", tmp_path / "y.img"
    mkfs(img, 16 << 20, block_size=4096, uuid=UUID)
    shutil.copyfile(img, other)
    vol = Volume.open(img, VolumeOptions(disk="ideal"))
    vol.create(vol.root_ino, b"there", 0o644, 0, 0)
    vol.close()
    vol = RecordingVolume.start(Volume.open(img, VolumeOptions(disk="ideal")), str(tmp_path / "l"), "t")
    vol.getattr(vol.lookup(vol.root_ino, b"there").st_ino)
    vol.close()
    with pytest.raises(ReplayError, match=r"^operation 1 \(lookup\) failed with ENOENT where the "
                                          r"recording succeeded$"):
        replay(str(tmp_path / "l"), str(other), VolumeOptions(disk="ideal"))
    assert_fsck_clean(other)


def test_a_read_or_write_of_another_length_stops_the_replay(recorded, tmp_path):
    """Each read's and write's recorded length is checked: a read that returns another length
    (a write edited into a read: the file stays empty) or a write that writes more than the
    recording did stops the replay there, with what differs."""
    lines = recorded[2].read_text().splitlines()
    w = next(i for i, line in enumerate(lines) if line.startswith('["write",'))
    rec = json.loads(lines[w])
    for name, edit, match in (
            ("as-read", ["read"] + rec[1:], r"\(read\) read 0 bytes where the recording read"),
            ("short", ["write", rec[1] - 1] + rec[2:], r"\(write\) wrote \d+ bytes where the recording wrote")):
        log = tmp_path / f"{name}.log"
        log.write_text("\n".join(lines[:w] + [json.dumps(edit)] + lines[w + 1:]) + "\n")
        img = _copy(recorded, f"{name}.img")
        with pytest.raises(ReplayError, match=rf"^operation {w} {match}"):
            replay(str(log), str(img), _opts(recorded))
        assert_fsck_clean(img)
