"""The op log's templates (simfs.inprocess.oplog: getattr, lookup and hold written from string
templates, not by the JSON encoder) give the encoder's bytes.

Two levels, on random records (hypothesis): each template against `_encode` of the record it
stands for (names of any bytes: UTF-8, surrogate escapes, quotes, backslashes, control
characters; any errno, known or not; handles and counts of any size); and whole logs, a random
sequence of lookups, getattrs and holds (some failing) on a stand-in volume recorded by the
RecordingVolume and by the same class with the three methods as they were before the templates
(`_run` and `write`, the encoder), with and without process records: the files are the same
byte for byte.
"""

from __future__ import annotations

import errno
import gzip

from hypothesis import given, settings
from hypothesis import strategies as st

from simfs.errors import FSError
from simfs.inprocess import oplog
from simfs.inprocess.oplog import LogWriter, RecordingVolume, enc
from simfs.inprocess.processlog import ProcessRecorder

_encode = oplog._encode
handles = st.integers(min_value=0, max_value=1 << 70)
names = st.binary(min_size=0, max_size=40) | st.sampled_from(
    [b"xfs_io.c", b"a\"b", b"back\\slash", b"\x00\x1f\x7f", "é€𝄞".encode(), b"\xff\xfe\x80", b"/"])
errnos = st.sampled_from(sorted(errno.errorcode)) | st.integers(min_value=-5, max_value=100000)


@settings(max_examples=500, deadline=None)
@given(h=handles, p=handles, name=names, e=errnos, n=st.integers(min_value=-(1 << 40), max_value=1 << 40))
def test_each_template_is_the_encoders_bytes(h, p, name, e, n):
    s, err = oplog._jstr(enc(name)), oplog._jstr(oplog.errname(e))
    assert oplog._GETATTR % h == _encode(["getattr", None, h])
    assert oplog._GETATTR_ERR % (err, h) == _encode(["getattr", oplog.errname(e), h])
    assert oplog._LOOKUP % (h, p, s) == _encode(["lookup", h, p, enc(name)])
    assert oplog._LOOKUP_ERR % (err, p, s) == _encode(["lookup", oplog.errname(e), p, enc(name)])
    assert oplog._HOLD % (h, n) == _encode(["hold", None, h, n])


class _Attr:
    def __init__(self, ino):
        self.st_ino = ino


class _StandIn:
    """A volume whose lookups, getattrs and holds answer from a script: an inode number, or an
    errno to fail with."""
    root_ino = 1

    def __init__(self, answers):
        self.answers = list(answers)
        self.closed = False

    def _next(self):
        a = self.answers.pop(0)
        if isinstance(a, FSError):
            raise a
        return _Attr(a)

    def lookup(self, parent, name):
        return self._next()

    def getattr(self, ino):
        return self._next()

    def hold(self, ino, n=1):
        return None


class _Encoder(RecordingVolume):
    """The three methods as they were before the templates: every line through the encoder."""

    def lookup(self, parent, name):
        return self._run("lookup", [self._h(parent), enc(name)], self._vol.lookup, parent, name,
                         result=lambda a: self._h(a.st_ino))

    def getattr(self, ino):
        return self._run("getattr", [self._h(ino)], self._vol.getattr, ino)

    def hold(self, ino, n=1):
        self._log.write(["hold", None, self._h(ino), n])
        return self._vol.hold(ino, n)


class _Proc:
    def __init__(self, n):
        self.n = n


inos = st.integers(min_value=1, max_value=30)
steps = st.lists(st.one_of(
    st.tuples(st.just("lookup"), inos, names, inos | errnos.map(lambda e: FSError(e, "x"))),
    st.tuples(st.just("getattr"), inos, inos | errnos.map(lambda e: FSError(e, "x"))),
    st.tuples(st.just("hold"), inos, st.integers(min_value=0, max_value=1 << 33) | st.just(True)),
    st.tuples(st.just("process"), st.none() | st.integers(min_value=0, max_value=5), st.booleans()),
), max_size=60)


def _record(cls, path, script, processes):
    answers = [s[3] if s[0] == "lookup" else s[2] for s in script if s[0] in ("lookup", "getattr")]
    rv = cls(_StandIn(answers), LogWriter(str(path), {"format": "t"}))
    if processes:
        rv._log = ProcessRecorder(rv._log)
    for s in script:
        try:
            if s[0] == "lookup":
                rv.lookup(s[1], s[2])
            elif s[0] == "getattr":
                rv.getattr(s[1])
            elif s[0] == "hold":
                rv.hold(s[1], s[2])
            elif processes:
                rv._log.request(None if s[1] is None else _Proc(s[1]), s[2])
        except FSError:
            pass
    rv._log.close()
    return path.read_bytes()


@settings(max_examples=300, deadline=None)
@given(script=steps, processes=st.booleans(), gz=st.booleans())
def test_a_recording_is_the_encoders_byte_for_byte(tmp_path_factory, script, processes, gz):
    d = tmp_path_factory.mktemp("logs")
    suffix = ".log.gz" if gz else ".log"
    got = _record(RecordingVolume, d / ("t" + suffix), script, processes)
    want = _record(_Encoder, d / ("e" + suffix), script, processes)
    assert got == want
    text = gzip.decompress(got) if gz else got
    records = [ln for ln in text.split(b"\n")[1:] if ln and not ln.startswith((b'["on"', b'["ctl"'))]
    assert len(records) == sum(1 for s in script if s[0] != "process")     # one line an operation


def test_a_long_recording_crosses_chunks(tmp_path):
    """More lines than a chunk (CHUNK_LINES): the templates' lines are counted and flushed as
    the encoder's are."""
    script = [("getattr", 1 + i % 7, 1 + i % 7) if i % 3 else ("hold", 1 + i % 5, 1)
              for i in range(3 * oplog.CHUNK_LINES + 17)]
    got = _record(RecordingVolume, tmp_path / "t.log", script, False)
    assert got == _record(_Encoder, tmp_path / "e.log", script, False)
    assert got.count(b"\n") == len(script) + 1
