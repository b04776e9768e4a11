"""simfs.fuse.operations.Operations, in-process: no kernel, no mount.

An Operations object is built on an in-process Volume and its async handlers are called with
trio.run, as pyfuse3's main loop would call them. pyfuse3.readdir_reply (which needs a kernel
buffer) is replaced by a collector, so readdir can be checked entry by entry, including a
full buffer. What is checked: the replies (FUSE root node 1 <-> ext2 inode 2, timeouts 0,
direct_io and keep_cache off), the lookup counts (every entry reply and readdirplus entry
is a `vol.hold`, forget gives them back, open handles are holds), the control directory
/.simfs (invisible in readdir, stats/info/mark/sync/reset/drop_caches/fault, not counted),
errno translation (FSError -> FUSEError), and what an unexpected exception does (EIO,
counted, logged, the error recorded in the image through vol.fs_error, the mount still
usable). Each test ends with the volume closed and `e2fsck -fn` clean.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections import Counter
from types import SimpleNamespace

import pyfuse3
import pytest
import trio

from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.fuse import control
from simfs.fuse.operations import FUSE_ROOT, WRITER, Operations
from simfs.ondisk.constants import ERRORS_RO, STATE_ERROR, SUPERBLOCK_OFFSET
from simfs.ondisk.mkfs import mkfs
from simfs.ondisk.superblock import Superblock
from tests.helpers import assert_fsck_clean

ROOT_CTX = SimpleNamespace(uid=0, gid=0, pid=0, umask=0o022)
USER_CTX = SimpleNamespace(uid=1000, gid=1000, pid=0, umask=0o022)


def call(ops, name, *args):
    """Run one handler as pyfuse3 would: an async call in a trio loop."""
    return trio.run(getattr(ops, name), *args)


def fuse_errno(ops, name, *args) -> int:
    with pytest.raises(pyfuse3.FUSEError) as e:
        call(ops, name, *args)
    return e.value.errno


@pytest.fixture
def image(tmp_path):
    img = tmp_path / "ops.img"
    mkfs(img, 32 << 20, block_size=4096)
    return img


@pytest.fixture
def mk(image):
    """mk(**volume_options, debug_faults=False) -> (ops, vol); every volume is closed and the
    image checked at teardown."""
    made = []

    def factory(debug_faults=False, **opts):
        opts.setdefault("disk", "ideal")
        vol = Volume.open(image, VolumeOptions(**opts))
        ops = Operations(vol, info={"image": str(image), "mountpoint": "/nowhere"}, debug_faults=debug_faults)
        made.append(vol)
        return ops, vol
    yield factory
    for vol in made:
        vol.close()
    if shutil.which("e2fsck"):
        assert_fsck_clean(image)


@pytest.fixture
def ops_vol(mk):
    return mk()


class Replies:
    """Stands in for pyfuse3.readdir_reply: collects entries; `room` entries fit the buffer."""

    def __init__(self, room=10**9):
        self.room = room
        self.entries: list[tuple[bytes, pyfuse3.EntryAttributes, int]] = []

    def __call__(self, token, name, attr, next_id):
        if len(self.entries) >= self.room:
            return False
        self.entries.append((bytes(name), attr, next_id))
        return True


def readdir(ops, monkeypatch, node, room=10**9, start=0, fh=None):
    r = Replies(room)
    monkeypatch.setattr(pyfuse3, "readdir_reply", r)
    own = fh is None
    fh = call(ops, "opendir", node, ROOT_CTX) if own else fh
    call(ops, "readdir", fh, start, None)
    if own:
        call(ops, "releasedir", fh)
    return r.entries


def create(ops, parent, name, mode=0o644, ctx=ROOT_CTX, data=b""):
    fi, entry = call(ops, "create", parent, name, mode, os.O_WRONLY, ctx)
    if data:
        assert call(ops, "write", fi.fh, 0, data) == len(data)
    call(ops, "release", fi.fh)
    return entry


# replies --------------------------------------------------------------------------------------
def test_root_is_node_1_and_entries_have_zero_timeouts(ops_vol):
    ops, vol = ops_vol
    a = call(ops, "getattr", FUSE_ROOT, ROOT_CTX)
    assert a.st_ino == FUSE_ROOT and stat.S_ISDIR(a.st_mode) and a.st_nlink == 3
    e = call(ops, "lookup", FUSE_ROOT, b"lost+found", ROOT_CTX)
    assert e.st_ino == 11 and stat.S_ISDIR(e.st_mode)
    assert e.entry_timeout == 0 and e.attr_timeout == 0
    up = call(ops, "lookup", 11, b"..", ROOT_CTX)                     # supports_dot_lookup
    assert up.st_ino == FUSE_ROOT
    assert vol.holds == {11: 1, 2: 1}
    call(ops, "forget", [(11, 1), (FUSE_ROOT, 1)])
    assert vol.holds == {}


def test_create_write_read_release_forget(ops_vol):
    ops, vol = ops_vol
    fi, entry = call(ops, "create", FUSE_ROOT, b"f", 0o640, os.O_RDWR, ROOT_CTX)
    ino = entry.st_ino
    assert fi.fh == ino | WRITER and not fi.direct_io and not fi.keep_cache
    assert stat.S_IMODE(entry.st_mode) == 0o640 and stat.S_ISREG(entry.st_mode)
    assert vol.holds[ino] == 2                                       # the lookup reference and the handle
    data = bytes(range(256)) * 100
    assert call(ops, "write", fi.fh, 10, data) == len(data)
    assert call(ops, "read", fi.fh, 0, 30000) == bytes(10) + data
    assert fuse_errno(ops, "flush", fi.fh) == errno.ENOSYS     # no FLUSH handler: the kernel stops asking
    call(ops, "fsync", fi.fh, 0)
    assert not any(vol.cache.is_dirty(b) for _, b in vol.filemap.blocks(vol.inodes.get(ino)))
    call(ops, "release", fi.fh)
    assert vol.holds[ino] == 1
    assert call(ops, "getattr", ino, ROOT_CTX).st_size == 10 + len(data)
    fi2 = call(ops, "open", ino, os.O_WRONLY | os.O_TRUNC, ROOT_CTX)
    assert fi2.fh == ino | WRITER and vol.holds[ino] == 2
    fi3 = call(ops, "open", ino, os.O_RDONLY, ROOT_CTX)
    assert fi3.fh == ino and vol.holds[ino] == 3
    call(ops, "release", fi3.fh)
    assert call(ops, "getattr", ino, ROOT_CTX).st_size == 0         # O_TRUNC is ours to do
    call(ops, "release", fi2.fh)
    call(ops, "forget", [(ino, 1)])
    assert ino not in vol.holds
    assert ops.ops == Counter(create=1, write=1, read=1, fsync=1, release=3, getattr=2, open=2,
                              forget=1)


def test_an_unlinked_open_file_lives_until_its_last_release(ops_vol):
    ops, vol = ops_vol
    fi, entry = call(ops, "create", FUSE_ROOT, b"doomed", 0o600, os.O_RDWR, ROOT_CTX)
    ino = entry.st_ino
    call(ops, "write", fi.fh, 0, b"still here")
    free = vol.space.free_blocks
    call(ops, "unlink", FUSE_ROOT, b"doomed", ROOT_CTX)
    assert fuse_errno(ops, "lookup", FUSE_ROOT, b"doomed", ROOT_CTX) == errno.ENOENT
    assert call(ops, "read", fi.fh, 0, 100) == b"still here"
    assert call(ops, "getattr", ino, ROOT_CTX).st_nlink == 0
    call(ops, "release", fi.fh)                 # the kernel evicts it: freed, whatever it sends later
    assert not vol.space.inode_used[ino - 1] and vol.space.free_blocks == free + 1
    assert call(ops, "getattr", ino, ROOT_CTX).st_nlink == 0          # its lookup is not forgotten yet
    assert vol.stale[ino][0] == 1
    call(ops, "forget", [(ino, 1)])
    assert vol.stale == {} and vol.holds == {}
    assert fuse_errno(ops, "getattr", ino, ROOT_CTX) == errno.ENOENT


def test_namespace_handlers_take_references(ops_vol):
    ops, vol = ops_vol
    d = call(ops, "mkdir", FUSE_ROOT, b"d", 0o755, ROOT_CTX)
    s = call(ops, "symlink", d.st_ino, b"s", b"../target", ROOT_CTX)
    f = create(ops, d.st_ino, b"f", data=b"x")
    ln = call(ops, "link", f.st_ino, FUSE_ROOT, b"hard", ROOT_CTX)
    n = call(ops, "mknod", d.st_ino, b"p", stat.S_IFIFO | 0o600, 0, ROOT_CTX)
    assert ln.st_ino == f.st_ino and ln.st_nlink == 2
    assert call(ops, "readlink", s.st_ino, ROOT_CTX) == b"../target"
    assert stat.S_ISFIFO(n.st_mode)
    assert vol.holds == {d.st_ino: 1, s.st_ino: 1, f.st_ino: 2, n.st_ino: 1}
    call(ops, "rename", d.st_ino, b"f", FUSE_ROOT, b"moved", 0, ROOT_CTX)
    assert call(ops, "lookup", FUSE_ROOT, b"moved", ROOT_CTX).st_ino == f.st_ino
    call(ops, "forget", [(i, n) for i, n in vol.holds.items()])
    assert vol.holds == {}


def test_rename_whiteout_is_the_callers_and_takes_no_reference(ops_vol):
    """RENAME_WHITEOUT (4): the whiteout is owned by the caller (the kernel let it through
    with CAP_MKNOD), as its mknod would be; the kernel holds no reference to it."""
    ops, vol = ops_vol
    f = create(ops, FUSE_ROOT, b"f")
    call(ops, "forget", [(f.st_ino, 1)])
    call(ops, "rename", FUSE_ROOT, b"f", FUSE_ROOT, b"g", 4, USER_CTX)
    wh = vol.lookup(vol.root_ino, b"f")
    assert stat.S_ISCHR(wh.st_mode) and wh.st_rdev == 0 and (wh.st_uid, wh.st_gid) == (1000, 1000)
    assert vol.holds == {}


def test_readdir_skips_the_control_dir_and_holds_each_entry(ops_vol, monkeypatch):
    ops, vol = ops_vol
    inos = {b"file%02d" % i: create(ops, FUSE_ROOT, b"file%02d" % i).st_ino for i in range(12)}
    call(ops, "forget", [(i, 1) for i in inos.values()])
    assert vol.holds == {}
    entries = readdir(ops, monkeypatch, FUSE_ROOT)
    names = [n for n, _, _ in entries]
    assert names[:2] == [b".", b".."] and control.NAME not in names
    assert set(names[2:]) == set(inos) | {b"lost+found"}
    by_name = {n: a for n, a, _ in entries}
    assert by_name[b"."].st_ino == FUSE_ROOT and by_name[b".."].st_ino == FUSE_ROOT
    assert by_name[b"file03"].st_ino == inos[b"file03"] and stat.S_ISREG(by_name[b"file03"].st_mode)
    assert all(a.entry_timeout == 0 and a.attr_timeout == 0 for _, a, _ in entries)
    assert vol.holds == {**{i: 1 for i in inos.values()}, 11: 1}     # not for . and ..
    call(ops, "forget", [(i, 1) for i in vol.holds])
    # a buffer that fills: the entry that did not fit is not held, and the next call resumes there
    fh = call(ops, "opendir", FUSE_ROOT, ROOT_CTX)
    first = readdir(ops, monkeypatch, FUSE_ROOT, room=5, fh=fh)
    assert len(first) == 5 and sum(vol.holds.values()) == 3
    rest = readdir(ops, monkeypatch, FUSE_ROOT, start=first[-1][2], fh=fh)
    call(ops, "releasedir", fh)
    assert [n for n, _, _ in first + rest] == names
    assert sum(vol.holds.values()) == len(names) - 2
    assert fh not in ops.dir_handles


def test_readdirplus_attributes_are_not_charged(mk, monkeypatch):
    """The fidelity contract: readdir (readdirplus) hands out attributes without charging
    inode reads; the tool's own lookup/stat is what pays."""
    ops, vol = mk(disk="sata7200")
    d = call(ops, "mkdir", FUSE_ROOT, b"d", 0o755, ROOT_CTX).st_ino
    files = [create(ops, d, b"f%d" % i).st_ino for i in range(40)]
    call(ops, "forget", [(i, 1) for i in files])               # the kernel let go: nothing pinned
    vol.drop_caches()
    call(ops, "getattr", d, ROOT_CTX)          # d is held: cold all the same, its stat pays
    before = vol.counters.get("disk_requests_inode", 0)
    entries = readdir(ops, monkeypatch, d)
    assert len(entries) == 42 and all(a.st_mode for _, a, _ in entries)
    assert vol.counters.get("disk_requests_inode", 0) == before       # readdirplus: no inode reads
    call(ops, "lookup", d, b"f7", ROOT_CTX)
    assert vol.counters.get("disk_requests_inode", 0) > before         # the tool's lookup pays
    call(ops, "forget", list(vol.holds.items()))


def test_setattr_and_owners(ops_vol):
    ops, vol = ops_vol
    f = create(ops, FUSE_ROOT, b"suid", mode=0o4755, data=b"abcdef")
    attr = pyfuse3.EntryAttributes()
    attr.st_size, attr.st_mode, attr.st_uid = 2, 0, 1234
    fields = SimpleNamespace(update_mode=False, update_uid=False, update_gid=False, update_size=True,
                             update_atime=False, update_mtime=False, update_ctime=False)
    assert call(ops, "setattr", f.st_ino, attr, fields, None, ROOT_CTX).st_size == 2
    fields.update_size, fields.update_uid = False, True
    a = call(ops, "setattr", f.st_ino, attr, fields, None, ROOT_CTX)
    assert a.st_uid == 1234 and stat.S_IMODE(a.st_mode) == 0o755      # chown cleared set-user-ID
    # a non-member creating a group-executable set-group-ID file in a set-group-ID directory
    sg = call(ops, "mkdir", FUSE_ROOT, b"sg", 0o2777, ROOT_CTX)
    assert sg.st_mode & stat.S_ISGID and sg.st_gid == 0
    mine = create(ops, sg.st_ino, b"mine", mode=0o2755, ctx=USER_CTX)
    assert mine.st_uid == 1000 and mine.st_gid == 0 and not mine.st_mode & stat.S_ISGID
    roots = create(ops, sg.st_ino, b"roots", mode=0o2755, ctx=ROOT_CTX)
    assert roots.st_mode & stat.S_ISGID
    call(ops, "forget", list(vol.holds.items()))


def test_statfs_and_xattrs(ops_vol):
    ops, vol = ops_vol
    s = call(ops, "statfs", ROOT_CTX)
    v = vol.statfs()
    assert (s.f_bsize, s.f_blocks, s.f_bfree, s.f_files, s.f_namemax) == (4096, v.f_blocks, v.f_bfree,
                                                                           v.f_files, 255)
    f = create(ops, FUSE_ROOT, b"x", data=b"y" * 20000).st_ino
    call(ops, "setxattr", f, b"user.colour", b"blue", ROOT_CTX)
    assert call(ops, "getxattr", f, b"user.colour", ROOT_CTX) == b"blue"
    assert call(ops, "listxattr", f, ROOT_CTX) == [b"user.colour"]      # virtual ones are not listed
    ext = json.loads(call(ops, "getxattr", f, b"user.simfs.extents", ROOT_CTX))
    want = vol.extents(f)
    assert ext["format"] == "simfs-extents-1" and ext["page"] == 0 and ext["pages"] == 1
    assert ext["runs"] == [list(r) for r in want["runs"]] and sum(n for _, _, n in ext["runs"]) == 5
    assert fuse_errno(ops, "getxattr", f, b"user.simfs.extents.1", ROOT_CTX) == pyfuse3.ENOATTR
    assert fuse_errno(ops, "getxattr", f, b"user.simfs.extents.x", ROOT_CTX) == pyfuse3.ENOATTR
    assert fuse_errno(ops, "setxattr", f, b"user.simfs.extents", b"{}", ROOT_CTX) == errno.EPERM
    assert fuse_errno(ops, "removexattr", f, b"user.simfs.other", ROOT_CTX) == errno.EPERM
    assert fuse_errno(ops, "setxattr", f, b"system.posix_acl_access", b"\2\0\0\0", ROOT_CTX) == errno.EOPNOTSUPP
    assert fuse_errno(ops, "getxattr", f, b"system.posix_acl_default", ROOT_CTX) == errno.EOPNOTSUPP
    call(ops, "removexattr", f, b"user.colour", ROOT_CTX)
    assert fuse_errno(ops, "getxattr", f, b"user.colour", ROOT_CTX) == pyfuse3.ENOATTR
    call(ops, "forget", list(vol.holds.items()))


# errors ---------------------------------------------------------------------------------------
def test_fs_errors_become_fuse_errors_and_are_counted(ops_vol):
    ops, vol = ops_vol
    d = call(ops, "mkdir", FUSE_ROOT, b"d", 0o755, ROOT_CTX).st_ino
    create(ops, d, b"f")
    assert fuse_errno(ops, "lookup", FUSE_ROOT, b"nope", ROOT_CTX) == errno.ENOENT
    assert fuse_errno(ops, "lookup", FUSE_ROOT, b"n" * 256, ROOT_CTX) == errno.ENAMETOOLONG
    assert fuse_errno(ops, "mkdir", FUSE_ROOT, b"d", 0o755, ROOT_CTX) == errno.EEXIST
    assert fuse_errno(ops, "rmdir", FUSE_ROOT, b"d", ROOT_CTX) == errno.ENOTEMPTY
    assert fuse_errno(ops, "unlink", FUSE_ROOT, b"d", ROOT_CTX) == errno.EISDIR
    assert fuse_errno(ops, "getxattr", d, b"user.none", ROOT_CTX) == errno.ENODATA
    assert fuse_errno(ops, "getattr", 99999, ROOT_CTX) == errno.ENOENT
    assert ops.errors == Counter(ENOENT=2, ENAMETOOLONG=1, EEXIST=1, ENOTEMPTY=1, EISDIR=1, ENODATA=1)
    assert ops.unexpected == 0
    call(ops, "forget", list(vol.holds.items()))


def test_the_inline_fast_paths_map_the_root_and_keep_control_requests_apart(ops_vol):
    """GETATTR, LOOKUP, GETXATTR, READ, WRITE and RELEASE test a control number and map node 1
    to inode 2 inline (no call each): the same answers and counts as the helpers give."""
    ops, vol = ops_vol
    call(ops, "setxattr", FUSE_ROOT, b"user.k", b"v", ROOT_CTX)
    assert call(ops, "getxattr", FUSE_ROOT, b"user.k", ROOT_CTX) == b"v"     # node 1 is inode 2
    assert vol.getxattr(vol.root_ino, b"user.k") == b"v"
    assert fuse_errno(ops, "getxattr", FUSE_ROOT, b"security.capability", ROOT_CTX) == errno.ENODATA
    assert call(ops, "getattr", FUSE_ROOT, ROOT_CTX).st_ino == FUSE_ROOT
    assert call(ops, "lookup", FUSE_ROOT, b".", ROOT_CTX).st_ino == FUSE_ROOT
    counted = Counter(ops.ops)
    stats_ino = ctl_ino(ops, b"stats")
    assert fuse_errno(ops, "getxattr", stats_ino, b"security.capability", ROOT_CTX) == pyfuse3.ENOATTR
    assert call(ops, "getattr", stats_ino, ROOT_CTX).st_ino == stats_ino
    assert json.loads(read_ctl(ops, b"stats"))["ops"]["getxattr"] == 2
    assert ops.ops == counted and ops.ctl_ops["getxattr"] == 1 and ops.ctl_ops["read"] >= 1
    assert ops.errors == Counter(ENODATA=2)                               # (ENOATTR is ENODATA)
    call(ops, "forget", list(vol.holds.items()))


def test_forget_answers_nothing_even_on_an_error(ops_vol, monkeypatch):
    ops, vol = ops_vol
    call(ops, "lookup", FUSE_ROOT, b"lost+found", ROOT_CTX)

    def refuse(ino, n=1):
        raise FSError(errno.EIO)
    monkeypatch.setattr(vol, "drop", refuse)
    assert call(ops, "forget", [(11, 1)]) is None                      # forget has no reply
    assert ops.errors == Counter(EIO=1) and ops.unexpected == 0
    monkeypatch.undo()
    call(ops, "forget", [(11, 1)])


def image_state(vol) -> int:
    return Superblock(os.pread(vol.fd, 1024, SUPERBLOCK_OFFSET)).state


def test_an_unexpected_exception_is_eio_counted_and_recorded_in_the_image(ops_vol, caplog, monkeypatch):
    ops, vol = ops_vol
    assert not image_state(vol) & STATE_ERROR

    def broken(ino):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(vol, "getattr", broken)
    assert fuse_errno(ops, "getattr", FUSE_ROOT, ROOT_CTX) == errno.EIO
    assert ops.unexpected == 1 and ops.errors["EIO"] == 1
    assert "unexpected exception in getattr" in caplog.text and "ZeroDivisionError" in caplog.text
    assert vol.mount_state & STATE_ERROR and image_state(vol) & STATE_ERROR   # on the image already
    monkeypatch.undo()
    assert call(ops, "getattr", FUSE_ROOT, ROOT_CTX).st_ino == FUSE_ROOT        # the mount goes on
    create(ops, FUSE_ROOT, b"after")                                           # errors=continue
    assert json.loads(read_ctl(ops, b"stats"))["unexpected_exceptions"] == 1
    call(ops, "forget", list(vol.holds.items()))


def test_errors_remount_read_only_when_the_superblock_says_so(mk, monkeypatch):
    ops, vol = mk()
    vol.sb.errors = ERRORS_RO
    monkeypatch.setattr(vol, "lookup", lambda parent, name: 1 / 0)
    assert fuse_errno(ops, "lookup", FUSE_ROOT, b"x", ROOT_CTX) == errno.EIO
    monkeypatch.undo()
    assert vol.options.read_only
    assert fuse_errno(ops, "mkdir", FUSE_ROOT, b"d", 0o755, ROOT_CTX) == errno.EROFS


def test_an_unexpected_exception_in_forget_is_swallowed(ops_vol, monkeypatch):
    ops, vol = ops_vol
    monkeypatch.setattr(vol, "drop", lambda ino, n=1: 1 / 0)
    assert call(ops, "forget", [(11, 1)]) is None
    assert ops.unexpected == 1 and ops.errors["EIO"] == 1


def test_injected_faults_are_eio_but_not_file_system_errors(mk):
    ops, vol = mk(debug_faults=True)
    write_ctl(ops, b"fault", b"mkdir 2\n")
    for name in (b"a", b"b"):
        assert fuse_errno(ops, "mkdir", FUSE_ROOT, name, 0o755, ROOT_CTX) == errno.EIO
    call(ops, "mkdir", FUSE_ROOT, b"c", 0o755, ROOT_CTX)
    assert ops.unexpected == 2 and not vol.mount_state & STATE_ERROR and not image_state(vol) & STATE_ERROR
    assert fuse_errno(ops, "lookup", FUSE_ROOT, b"a", ROOT_CTX) == errno.ENOENT   # nothing was made
    with pytest.raises(pyfuse3.FUSEError) as e:
        write_ctl(ops, b"fault", b"forget 1\n")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(pyfuse3.FUSEError):
        write_ctl(ops, b"fault", b"no_such_op\n")
    write_ctl(ops, b"fault", b"getattr 5\nclear\n")
    call(ops, "getattr", FUSE_ROOT, ROOT_CTX)
    call(ops, "forget", list(vol.holds.items()))


# the control directory ----------------------------------------------------------------------------
def ctl_ino(ops, name: bytes) -> int:
    return call(ops, "lookup", control.DIR_INO, name, ROOT_CTX).st_ino


def read_ctl(ops, name: bytes) -> bytes:
    fi = call(ops, "open", ctl_ino(ops, name), os.O_RDONLY, ROOT_CTX)
    assert fi.direct_io and not fi.keep_cache
    try:
        return call(ops, "read", fi.fh, 0, 1 << 20)
    finally:
        call(ops, "release", fi.fh)


def write_ctl(ops, name: bytes, data: bytes) -> None:
    fi = call(ops, "open", ctl_ino(ops, name), os.O_WRONLY, ROOT_CTX)
    try:
        assert call(ops, "write", fi.fh, 0, data) == len(data)
    finally:
        call(ops, "release", fi.fh)


def test_control_directory_resolves_but_is_not_counted_or_held(ops_vol, monkeypatch):
    ops, vol = ops_vol
    e = call(ops, "lookup", FUSE_ROOT, control.NAME, ROOT_CTX)
    assert e.st_ino == control.DIR_INO and stat.S_ISDIR(e.st_mode) and stat.S_IMODE(e.st_mode) == 0o555
    names = [n for n, _, _ in readdir(ops, monkeypatch, control.DIR_INO)]
    assert names == [b".", b"..", b"stats", b"info", b"sync", b"drop_caches", b"reset", b"mark"]
    assert fuse_errno(ops, "lookup", control.DIR_INO, b"nope", ROOT_CTX) == errno.ENOENT
    stats_ino = ctl_ino(ops, b"stats")
    a = call(ops, "getattr", stats_ino, ROOT_CTX)
    assert stat.S_ISREG(a.st_mode) and a.st_size == 0
    assert vol.holds == {}
    up = call(ops, "lookup", control.DIR_INO, b"..", ROOT_CTX)          # .. is the root, a real reference
    assert up.st_ino == FUSE_ROOT and vol.holds == {2: 1}
    call(ops, "forget", [(control.DIR_INO, 1), (stats_ino, 3)])         # control nodes: nothing to drop
    assert vol.holds == {2: 1}
    call(ops, "forget", [(FUSE_ROOT, 1)])
    assert ops.ops == Counter(forget=1)                                  # the rest addressed .simfs
    assert ops.ctl_ops["lookup"] >= 4 and ops.ctl_ops["forget"] == 1


def test_a_real_simfs_entry_in_the_image_is_shadowed(ops_vol, monkeypatch):
    ops, vol = ops_vol
    real = vol.mkdir(vol.root_ino, control.NAME, stat.S_IFDIR | 0o700, 0, 0).st_ino   # made without FUSE
    assert call(ops, "lookup", FUSE_ROOT, control.NAME, ROOT_CTX).st_ino == control.DIR_INO
    names = [n for n, _, _ in readdir(ops, monkeypatch, FUSE_ROOT)]
    assert control.NAME not in names and b"lost+found" in names
    assert real not in vol.holds
    call(ops, "forget", list(vol.holds.items()))
    vol.rmdir(vol.root_ino, control.NAME)


def test_control_names_cannot_be_made_or_removed(ops_vol):
    ops, vol = ops_vol
    assert fuse_errno(ops, "mkdir", FUSE_ROOT, control.NAME, 0o755, ROOT_CTX) == errno.EEXIST
    assert fuse_errno(ops, "create", FUSE_ROOT, control.NAME, 0o644, os.O_WRONLY, ROOT_CTX) == errno.EEXIST
    assert fuse_errno(ops, "unlink", FUSE_ROOT, control.NAME, ROOT_CTX) == errno.EPERM
    assert fuse_errno(ops, "rmdir", FUSE_ROOT, control.NAME, ROOT_CTX) == errno.EPERM
    assert fuse_errno(ops, "create", control.DIR_INO, b"new", 0o644, os.O_WRONLY, ROOT_CTX) == errno.EPERM
    assert fuse_errno(ops, "rename", FUSE_ROOT, b"lost+found", FUSE_ROOT, control.NAME, 0, ROOT_CTX) == errno.EPERM
    assert fuse_errno(ops, "open", control.DIR_INO, os.O_RDONLY, ROOT_CTX) == errno.EISDIR
    assert fuse_errno(ops, "setxattr", control.DIR_INO, b"user.x", b"1", ROOT_CTX) == errno.ENOTSUP
    assert call(ops, "listxattr", control.DIR_INO, ROOT_CTX) == []
    fi = call(ops, "open", ctl_ino(ops, b"stats"), os.O_WRONLY, ROOT_CTX)
    assert fuse_errno(ops, "write", fi.fh, 0, b"x") == errno.EBADF       # stats is read-only
    call(ops, "release", fi.fh)


def test_stats_info_mark_reset(ops_vol):
    ops, vol = ops_vol
    create(ops, FUSE_ROOT, b"a", data=b"hello")
    fuse_errno(ops, "lookup", FUSE_ROOT, b"missing", ROOT_CTX)
    doc = json.loads(read_ctl(ops, b"stats"))
    assert doc["ops"] == {"create": 1, "write": 1, "release": 1, "lookup": 1}
    assert doc["ops_total"] == 4 and doc["errors"] == {"ENOENT": 1} and doc["unexpected_exceptions"] == 0
    assert doc["image"] == str(vol.path) and doc["counters"]["bytes_written"] == 5
    assert doc["time"]["disk"] == "ideal" and doc["time"]["phases"][0]["name"] == "all"
    info = json.loads(read_ctl(ops, b"info"))
    assert info["image"] == str(vol.path) and info["mountpoint"] == "/nowhere" and info["pid"] == os.getpid()
    assert set(info["control_files"]) == {"stats", "info", "sync", "drop_caches", "reset", "mark"}
    write_ctl(ops, b"mark", b"readback\n")
    assert [p.name for p in vol.stats.phases] == ["all", "readback"]
    for bad in (b"  \n", b"x" * 256, b"two\nlines"):
        with pytest.raises(pyfuse3.FUSEError) as e:
            write_ctl(ops, b"mark", bad)
        assert e.value.errno == errno.EINVAL, bad
    write_ctl(ops, b"mark", b"y" * 255)
    write_ctl(ops, b"mark", b"readback\n")
    call(ops, "lookup", FUSE_ROOT, b"a", ROOT_CTX)
    doc = json.loads(read_ctl(ops, b"stats"))
    assert [p["name"] for p in doc["time"]["phases"]] == ["all", "readback", "y" * 255, "readback"]
    assert doc["time"]["phases"][-1]["operations"]["lookup"]["count"] == 1
    write_ctl(ops, b"reset", b"1")
    doc = json.loads(read_ctl(ops, b"stats"))
    assert doc["ops"] == {} and doc["errors"] == {} and [p["name"] for p in doc["time"]["phases"]] == ["all"]
    call(ops, "forget", list(vol.holds.items()))


def test_sync_and_drop_caches_through_the_control_files(mk):
    ops, vol = mk(writeback="async", commit=3600)
    create(ops, FUSE_ROOT, b"data", data=b"z" * 100_000)
    assert vol.cache.ndirty > 0
    commits = vol.image.commits
    write_ctl(ops, b"sync", b"1")
    assert vol.cache.ndirty == 0 and vol.image.commits > commits and not vol.image.noted
    create(ops, FUSE_ROOT, b"more", data=b"q" * 5000)
    write_ctl(ops, b"drop_caches", b"1")
    assert vol.cache.ndirty == 0 and set(vol.cache.buffers) == vol.cache.held   # (superblock, descriptors)
    call(ops, "forget", list(vol.holds.items()))


# a random walk of requests against the kernel's lookup counts ------------------------------------
def test_lookup_counts_follow_the_kernel(ops_vol, monkeypatch):
    """Random requests; the kernel's view (how many references it holds per node, which
    handles are open) is kept here, and the volume's holds and, for inodes freed at their
    unlink or last release, its stale references must add up to it throughout; forgetting
    everything leaves none."""
    import random
    rng = random.Random(12)
    ops, vol = ops_vol
    refs: Counter = Counter()            # volume inode -> references the "kernel" holds
    handles: list[int] = []
    names: dict[bytes, int] = {}

    def vino(node):
        return 2 if node == FUSE_ROOT else node

    for step in range(300):
        what = rng.choice(["create", "lookup", "lookup", "open", "release", "readdir", "forget", "unlink"])
        name = b"n%d" % rng.randrange(12)
        try:
            if what == "create":
                fi, e = call(ops, "create", FUSE_ROOT, name, 0o644, os.O_WRONLY, ROOT_CTX)
                refs[e.st_ino] += 1
                handles.append(fi.fh)
                names[name] = e.st_ino
            elif what == "lookup":
                e = call(ops, "lookup", FUSE_ROOT, name, ROOT_CTX)
                refs[vino(e.st_ino)] += 1
            elif what == "open" and names:
                ino = rng.choice(sorted(names.values()))
                if refs[ino]:                                   # the kernel opens what it knows
                    handles.append(call(ops, "open", ino, os.O_RDONLY, ROOT_CTX).fh)
            elif what == "release" and handles:
                call(ops, "release", handles.pop(rng.randrange(len(handles))))
            elif what == "readdir":
                for n, a, _ in readdir(ops, monkeypatch, FUSE_ROOT, room=rng.randrange(1, 20)):
                    if n not in (b".", b".."):
                        refs[a.st_ino] += 1
            elif what == "forget" and +refs:
                ino = rng.choice(sorted(+refs))
                n = rng.randint(1, refs[ino])
                call(ops, "forget", [(FUSE_ROOT if ino == 2 else ino, n)])
                refs[ino] -= n
            elif what == "unlink" and name in names:
                call(ops, "unlink", FUSE_ROOT, name, ROOT_CTX)
                del names[name]
        except pyfuse3.FUSEError as e:
            assert e.errno in (errno.ENOENT, errno.EEXIST), (step, what, e.errno)
        want = +refs + Counter(fh & ~WRITER for fh in handles)
        stale = Counter({i: refs for i, (refs, _) in vol.stale.items()})
        assert Counter(vol.holds) + stale == want, (step, what)
        assert not set(vol.holds) & set(vol.stale), (step, what)     # no number reused meanwhile
    for fh in handles:
        call(ops, "release", fh)
    call(ops, "forget", [(FUSE_ROOT if i == 2 else i, n) for i, n in (+refs).items()])
    assert vol.holds == {} and vol.stale == {} and ops.unexpected == 0
