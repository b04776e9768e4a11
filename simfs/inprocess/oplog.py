"""The op log: what a mount asked of its Volume, recorded so that `simfs replay` can ask it again.

Format (JSON lines, gzip-compressed when the path ends in .gz; the reader sniffs gzip itself):

  line 1   the header: {"format": "simfs-oplog", "version": 3, "simfs": VERSION,
           "image": {"uuid", "block_size", "blocks_count", "inodes_count"},
           "options": the mount's VolumeOptions, "processes": true on a -o clocks=process mount}
  line 2+  one operation each: [OP, RESULT, ARGS...]; with "processes", also the process
           records ["process", null, N, PARENT], ["exited", null, N, PARENT], ["on", null, N],
           ["ctl", null, N] (simfs.inprocess.processlog): which process each operation ran
           for and what the mount's per-process clocks did between requests

Versions: 3 added the process records (a log without "processes" holds the same lines as a
version 2 one: a clocks=mount mount, or the in-process verbs, which drive one process); 2
records opens as "open" (1 logged them as holds, which a replay cannot tell from a kernel
reference: refused). This simfs reads versions 2 and 3.

Inodes appear as *handles*, not the run's inode numbers: the root is 0 and every other inode
gets the next number the first time it appears in the log (an inode an operation creates always
gets a new one, so a freed number the allocator hands out again is a new handle). RESULT is the
handle an operation returned (lookup, create, mkdir, mknod, symlink, link, and the whiteout of
a rename with RENAME_WHITEOUT, logged as "rename_whiteout" with its owner), the byte count of a
read or write, the new handles of the entries a readdir revealed ([[name, handle], ...]), an
errno name ("ENOENT") when it failed, or null. Names, symlink targets and xattr names and values
are recorded as they are (bytes as str: UTF-8, other bytes as surrogate escapes); written data by
its length only (replay writes filler: the model's timing does not depend on the bytes).

Recorded: every Volume call of the FUSE layer that the model charges or whose state it changes -
namespace, file I/O, xattrs, statfs, holds and drops (kernel references), opens and releases of files (["open", null, H],
["release", null, H, WRITER]), readdir
handles (opened as ["opendir", ID], closed as ["releasedir", ID]), sync, drop_caches, mark,
reset_stats - and the unmount ("close"). Not recorded: peek_attr
and the inspection calls (extents), which charge nothing and change nothing, and real durability
(commits), which never changes simulated time.

The writer buffers lines and writes them in chunks (a gzip stream is sync-flushed at each chunk),
flushes at sync, fsync and the control operations, and fsyncs the file at close. After a crash
the log holds whole chunks, and the reader stops at its last complete line.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import json
import os
from json.encoder import encode_basestring_ascii as _jstr     # the encoder's own string escaping

import simfs.outfile as outfile
from simfs.errors import FSError
from simfs.fs.types import RENAME_WHITEOUT
from simfs.inprocess.processlog import ProcessRecorder

FORMAT = "simfs-oplog"
VERSION = 3                     # 3: process records; 2: opens recorded as "open" (1: as holds)
READS = (2, 3)                  # the versions this simfs replays
GZIP_MAGIC = b"\x1f\x8b"
CHUNK_LINES = 4096
_encode = json.JSONEncoder(separators=(",", ":")).encode      # one encoder: json.dumps makes one a call
# The three commonest records (getattr, lookup and hold: 98 % of a git-aging recording's lines)
# are formatted from these templates instead of by the encoder: the same bytes as _encode's
# (an int as %d, a str through the encoder's own escaping; tests/unit/test_oplog_templates.py
# compares them on random records), about a tenth of its CPU a record.
_GETATTR = '["getattr",null,%d]'
_GETATTR_ERR = '["getattr",%s,%d]'
_LOOKUP = '["lookup",%d,%d,%s]'
_LOOKUP_ERR = '["lookup",%s,%d,%s]'
_HOLD = '["hold",null,%d,%d]'


class LogError(Exception):
    """The log cannot be used: missing, unreadable, not an op log (message for the user)."""


def enc(b: bytes) -> str:
    """Bytes as a JSON string: exact (UTF-8, and surrogate escapes for anything else)."""
    return bytes(b).decode("utf-8", "surrogateescape")


def dec(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def errname(e: int) -> str:
    return errno.errorcode.get(e, str(e))


def image_identity(sb) -> dict:
    return {"uuid": sb.uuid_str, "block_size": sb.block_size, "blocks_count": sb.blocks_count,
            "inodes_count": sb.inodes_count}


# writing --------------------------------------------------------------------------------------
class LogWriter:
    """Buffered JSON lines into PATH (gzip when it ends in .gz)."""

    def __init__(self, path: str, header: dict):
        self.path = path
        self._raw = open(outfile.open_stream(path), "wb")      # (never through a link)
        self._out = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0) \
            if path.endswith(".gz") else self._raw
        self._buf: list[str] = []
        self.lines = 0
        self.write(header)
        self.flush()

    def write(self, rec) -> None:
        self.line(_encode(rec))

    def line(self, text: str) -> None:
        """A record already formatted as _encode would (one of the templates above)."""
        self._buf.append(text)
        self.lines += 1
        if len(self._buf) >= CHUNK_LINES:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self._out.write(("\n".join(self._buf) + "\n").encode("ascii"))
            self._buf.clear()
        self._out.flush()               # GzipFile: Z_SYNC_FLUSH, whole lines readable
        if self._out is not self._raw:
            self._raw.flush()

    def close(self) -> None:
        if self._raw.closed:
            return
        try:
            self.flush()
            if self._out is not self._raw:
                self._out.close()
            self._raw.flush()
            os.fsync(self._raw.fileno())
        finally:
            self._raw.close()


class _DirState:
    """A readdir state handed to the FUSE layer: the volume's own, and its number in the log."""
    __slots__ = ("sid", "state")

    def __init__(self, sid: int, state):
        self.sid, self.state = sid, state


class RecordingVolume:
    """A Volume that records every call made on it (see the module docstring); anything not
    recorded (attributes, peek_attr, extents, commit_if_due, ...) is the volume's own."""

    def __init__(self, vol, log: LogWriter):
        self._vol = vol
        self._log: LogWriter | ProcessRecorder = log
        self._handles: dict[int, int] = {vol.root_ino: 0}
        self._next_handle = 1
        self._next_sid = 0

    @classmethod
    def start(cls, vol, path: str, simfs_version: str = "", processes: bool = False) -> "RecordingVolume":
        """Open PATH (raises OSError) and write the header for `vol`. `processes`: the log will
        hold process records (a mount with -o clocks=process; see record_processes)."""
        header = {"format": FORMAT, "version": VERSION, "simfs": simfs_version,
                  "image": image_identity(vol.sb), "options": dataclasses.asdict(vol.options)}
        if processes:
            header["processes"] = True
        rv = cls(vol, LogWriter(path, header))
        rv._processes = processes
        return rv

    _processes = False

    def record_processes(self):
        """The ProcessRecorder a mount's RequestClocks tells which process each request is for
        (simfs.fuse.processes), every later line written through it; None unless the header
        announced process records."""
        if not self._processes:
            return None
        if not isinstance(self._log, ProcessRecorder):
            self._log = ProcessRecorder(self._log)
        return self._log

    def __getattr__(self, name):
        return getattr(self._vol, name)

    # handles ------------------------------------------------------------------------------------
    def _h(self, ino: int) -> int:
        h = self._handles.get(ino)
        if h is None:
            h = self._mint(ino)
        return h

    def _mint(self, ino: int) -> int:
        h = self._handles[ino] = self._next_handle
        self._next_handle += 1
        return h

    def _run(self, op: str, args: list, fn, *call, result=None, **kw):
        """Call the volume; record [op, result(out) or the errno name, *args]."""
        try:
            out = fn(*call, **kw)
        except FSError as e:
            self._log.write([op, errname(e.errno)] + args)
            raise
        self._log.write([op, result(out) if result else None] + args)
        return out

    def _new_inode(self, op, args, fn, *call):
        return self._run(op, args, fn, *call, result=lambda a: self._mint(a.st_ino))

    # namespace ------------------------------------------------------------------------------------
    # lookup, getattr and hold write their lines from templates (_LOOKUP, ...): the records and
    # their order are _run's, the bytes _encode's
    def lookup(self, parent, name):
        ph = self._h(parent)
        ename = _jstr(enc(name))
        try:
            a = self._vol.lookup(parent, name)
        except FSError as e:
            self._log.line(_LOOKUP_ERR % (_jstr(errname(e.errno)), ph, ename))
            raise
        self._log.line(_LOOKUP % (self._h(a.st_ino), ph, ename))
        return a

    def getattr(self, ino):
        h = self._h(ino)
        try:
            out = self._vol.getattr(ino)
        except FSError as e:
            self._log.line(_GETATTR_ERR % (_jstr(errname(e.errno)), h))
            raise
        self._log.line(_GETATTR % h)
        return out

    def setattr(self, ino, **kw):
        return self._run("setattr", [self._h(ino), {k: v for k, v in kw.items() if v is not None}],
                         self._vol.setattr, ino, **kw)

    def readlink(self, ino):
        return self._run("readlink", [self._h(ino)], self._vol.readlink, ino)

    def create(self, parent, name, mode, uid, gid):
        return self._new_inode("create", [self._h(parent), enc(name), mode, uid, gid],
                               self._vol.create, parent, name, mode, uid, gid)

    def mkdir(self, parent, name, mode, uid, gid):
        return self._new_inode("mkdir", [self._h(parent), enc(name), mode, uid, gid],
                               self._vol.mkdir, parent, name, mode, uid, gid)

    def mknod(self, parent, name, mode, rdev, uid, gid):
        return self._new_inode("mknod", [self._h(parent), enc(name), mode, rdev, uid, gid],
                               self._vol.mknod, parent, name, mode, rdev, uid, gid)

    def symlink(self, parent, name, target, uid, gid):
        return self._new_inode("symlink", [self._h(parent), enc(name), enc(target), uid, gid],
                               self._vol.symlink, parent, name, target, uid, gid)

    def link(self, ino, new_parent, new_name):
        return self._run("link", [self._h(ino), self._h(new_parent), enc(new_name)], self._vol.link,
                         ino, new_parent, new_name, result=lambda a: self._h(a.st_ino))

    def unlink(self, parent, name):
        return self._run("unlink", [self._h(parent), enc(name)], self._vol.unlink, parent, name)

    def rmdir(self, parent, name):
        return self._run("rmdir", [self._h(parent), enc(name)], self._vol.rmdir, parent, name)

    def rename(self, old_parent, old_name, new_parent, new_name, flags=0, uid=0, gid=0):
        args = [self._h(old_parent), enc(old_name), self._h(new_parent), enc(new_name), flags]
        if flags & RENAME_WHITEOUT:     # makes an inode (its handle the result), as a mknod
            return self._new_inode("rename_whiteout", args + [uid, gid], self._vol.rename,
                                   old_parent, old_name, new_parent, new_name, flags, uid, gid)
        return self._run("rename", args, self._vol.rename, old_parent, old_name, new_parent, new_name, flags)

    def opendir_state(self):
        sid = self._next_sid
        self._next_sid += 1
        self._log.write(["opendir", sid])
        return _DirState(sid, self._vol.opendir_state())

    def release_state(self, state):
        if isinstance(state, _DirState):
            self._log.write(["releasedir", state.sid])

    def readdir(self, ino, cookie=0, state=None):
        def revealed(listing):
            return [[enc(name), self._mint(eino)] for name, eino, _ in listing
                    if eino not in self._handles]
        sid, real = (state.sid, state.state) if isinstance(state, _DirState) else (None, state)
        return self._run("readdir", [self._h(ino), cookie, sid], self._vol.readdir, ino, cookie,
                         state=real, result=revealed)

    def statfs(self):
        return self._run("statfs", [], self._vol.statfs)

    # holds -----------------------------------------------------------------------------------------
    def hold(self, ino, n=1):
        if type(n) is int:              # (a bool or another int type: the encoder's spelling)
            self._log.line(_HOLD % (self._h(ino), n))
        else:
            self._log.write(["hold", None, self._h(ino), n])
        return self._vol.hold(ino, n)

    def drop(self, ino, n=1):
        self._log.write(["drop", None, self._h(ino), n])
        return self._vol.drop(ino, n)

    def open_file(self, ino):
        self._log.write(["open", None, self._h(ino)])
        return self._vol.open_file(ino)

    def release_file(self, ino, writer):
        self._log.write(["release", None, self._h(ino), bool(writer)])
        return self._vol.release_file(ino, writer)

    # file I/O ----------------------------------------------------------------------------------------
    def read(self, ino, offset, size):
        return self._run("read", [self._h(ino), offset, size], self._vol.read, ino, offset, size,
                         result=len)

    def write(self, ino, offset, data):
        return self._run("write", [self._h(ino), offset, len(data)], self._vol.write, ino, offset,
                         data, result=lambda n: n)

    def fsync(self, ino, datasync=False):
        try:
            return self._run("fsync", [self._h(ino), bool(datasync)], self._vol.fsync, ino, datasync)
        finally:
            self._log.flush()

    # xattrs --------------------------------------------------------------------------------------------
    def getxattr(self, ino, name):
        return self._run("getxattr", [self._h(ino), enc(name)], self._vol.getxattr, ino, name)

    def listxattr(self, ino):
        return self._run("listxattr", [self._h(ino)], self._vol.listxattr, ino)

    def setxattr(self, ino, name, value, flags=0):
        return self._run("setxattr", [self._h(ino), enc(name), enc(value), flags],
                         self._vol.setxattr, ino, name, value, flags)

    def removexattr(self, ino, name):
        return self._run("removexattr", [self._h(ino), enc(name)], self._vol.removexattr, ino, name)

    # control and unmount --------------------------------------------------------------------------------
    def _control(self, op: str, args: list, fn, *call):
        try:
            return self._run(op, args, fn, *call)
        finally:
            self._log.flush()

    def sync(self):
        return self._control("sync", [], self._vol.sync)

    def drop_caches(self):
        return self._control("drop_caches", [], self._vol.drop_caches)

    def mark(self, name):
        return self._control("mark", [name], self._vol.mark, name)

    def reset_stats(self):
        return self._control("reset_stats", [], self._vol.reset_stats)

    def close(self):
        if self._vol.closed:
            return self._log.close()
        self._log.write(["close", None])
        try:
            self._log.flush()
            self._vol.close()
        finally:
            self._log.close()


# reading ----------------------------------------------------------------------------------------------
def _open_text(path: str):
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise LogError(f"{path}: no such log file") from None
    except IsADirectoryError:
        raise LogError(f"{path}: is a directory, not an op log") from None
    except OSError as e:
        raise LogError(f"{path}: cannot read: {e.strerror}") from None
    magic = f.read(2)
    f.seek(0)
    return _GzipReader(f) if magic == GZIP_MAGIC else f


class _GzipReader(gzip.GzipFile):
    """A gzip stream that closes the file under it, as gzip.open's does (a GzipFile given a
    file object leaves it open)."""

    def __init__(self, raw):
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self):
        try:
            super().close()
        finally:
            self._raw.close()


def read_header(path: str) -> dict:
    """The header of the log at PATH; LogError if it is not an op log this simfs reads."""
    f = _open_text(path)
    try:
        first = f.readline(1 << 20)
    except (OSError, EOFError) as e:
        raise LogError(f"{path}: not an op log (damaged gzip data: {e})") from None
    finally:
        f.close()
    if not first.strip():
        raise LogError(f"{path}: not an op log (empty)")
    try:
        head = json.loads(first)
    except ValueError:
        raise LogError(f"{path}: not an op log (the first line is not JSON)") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise LogError(f"{path}: not an op log (no {FORMAT} header)")
    if head.get("version") not in READS:
        raise LogError(f"{path}: op log format version {head.get('version')!r}; this simfs reads "
                       f"versions {', '.join(map(str, READS))}")
    if head.get("processes", False) not in (True, False) or (head.get("processes") and head["version"] < 3):
        raise LogError(f"{path}: not an op log (its header's \"processes\" is {head.get('processes')!r} "
                       f"in a version {head['version']} log)")
    if not isinstance(head.get("image"), dict) or not isinstance(head.get("options"), dict):
        raise LogError(f"{path}: not an op log (its header lacks the image or the options)")
    from simfs.fs.types import VolumeOptions
    known = {f.name for f in dataclasses.fields(VolumeOptions)}
    unknown = [k for k in head["options"] if k not in known]
    if unknown:         # replay would drop it and run another configuration than the recorded one
        raise LogError(f"{path}: its header has the option {unknown[0]!r}, which this simfs does not "
                       f"know (a log from another simfs version?)")
    return head


def iter_ops(path: str):
    """(line number, operation) for each complete operation line after the header. A last line
    cut short (a crash while recording) is left out; a bad line elsewhere raises LogError."""
    f = _open_text(path)
    try:
        f.readline()
        lineno = 1
        while True:
            try:
                line = f.readline()
            except (OSError, EOFError):         # a gzip stream cut short: stop at what is whole
                return
            if not line.endswith(b"\n"):
                return                          # the end, or a last line cut short
            lineno += 1
            try:
                rec = json.loads(line)
            except ValueError:
                raise LogError(f"{path}: line {lineno} is not JSON") from None
            if not isinstance(rec, list) or len(rec) < 2 or not isinstance(rec[0], str):
                raise LogError(f"{path}: line {lineno} is not an operation")
            yield lineno, rec
    finally:
        f.close()


def _is_close(line: bytes) -> bool:
    if b'"close"' not in line:          # cheap: only a line naming "close" is decoded
        return False
    try:
        rec = json.loads(line)
    except ValueError:
        return False
    return isinstance(rec, list) and rec[:1] == ["close"]


def scan(path: str, ops: frozenset = frozenset()) -> tuple[int, bool]:
    """(number of complete operations, whether the last one is the unmount), before a replay
    touches the image. Lines are checked for their shape only (a JSON list starting with the
    operation's name, which must be one of `ops` if given); only the last is parsed, and the
    lines that name "close", so a log of millions of operations is not decoded twice. An
    operation after the unmount is a LogError (the log was edited or concatenated)."""
    known = {op.encode() for op in ops}
    f = _open_text(path)
    n, last, lineno = 0, b"", 1
    try:
        f.readline()
        while True:
            try:
                line = f.readline()
            except (OSError, EOFError):
                break
            if not line.endswith(b"\n"):
                break
            lineno += 1
            if line[:1] != b"[" or line[-2:-1] != b"]":
                try:
                    json.loads(line)
                except ValueError:
                    raise LogError(f"{path}: line {lineno} is not JSON") from None
                raise LogError(f"{path}: line {lineno} is not an operation")
            if known:
                name = line[2:line.find(b'"', 2)] if line[1:2] == b'"' else b""
                if name not in known:
                    raise LogError(f"{path}: line {lineno} is not an operation simfs records"
                                   + (f" ({name.decode(errors='replace')!r})" if name else ""))
            if last and _is_close(last):
                raise LogError(f"{path}: operation {n + 1} (line {lineno}) follows the unmount "
                               f"(operation {n}, line {lineno - 1}): a log ends at its unmount")
            n, last = n + 1, line
    finally:
        f.close()
    if not last:
        return 0, False
    try:
        rec = json.loads(last)
    except ValueError:
        raise LogError(f"{path}: line {lineno} is not JSON") from None
    return n, isinstance(rec, list) and rec[:1] == ["close"]

