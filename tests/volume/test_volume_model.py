"""Random operation sequences against Volume and a plain in-memory model must agree,
and every image they leave behind must be e2fsck-clean (the external oracle)."""

import errno
import os
import stat
import tempfile

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from simfs.errors import FSError
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import RENAME_EXCHANGE, RENAME_NOREPLACE, Volume
from tests.helpers import assert_fsck_clean, needs_e2fsprogs

NAMES = st.sampled_from([b"a", b"b", b"c", b"dd", b"e" * 40, "é".encode()])
UID = 1000


class MFile:
    def __init__(self):
        self.data, self.mode, self.xattrs = bytearray(), 0o644, {}


class MDir:
    def __init__(self):
        self.children, self.mode, self.xattrs = {}, 0o755, {}


class MLink:
    def __init__(self, target):
        self.target, self.mode, self.xattrs = target, 0o777, {}


def _payload(seed: int, n: int) -> bytes:
    return (seed.to_bytes(4, "little") * (n // 4 + 1))[:n]


class VolumeMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.img = os.path.join(self.tmp.name, "img")
        mkfs(self.img, 24 << 20, block_size=1024, inodes_per_group=256)
        self.vol = Volume.open(self.img)
        self.root = MDir()
        self.root.children[b"lost+found"] = MDir()
        self.root.children[b"lost+found"].mode = 0o700

    def teardown(self):
        if hasattr(self, "vol"):
            self.vol.close()
            assert_fsck_clean(self.img)
            self.tmp.cleanup()

    # model helpers -------------------------------------------------------------------------
    def _walk(self, node=None, path=()):
        node = node or self.root
        yield path, node
        if isinstance(node, MDir):
            for name, child in sorted(node.children.items()):
                yield from self._walk(child, path + (name,))

    def _dirs(self):
        return [p for p, n in self._walk() if isinstance(n, MDir)]

    def _files(self):
        return [p for p, n in self._walk() if isinstance(n, MFile)]

    def _node(self, path):
        node = self.root
        for name in path:
            node = node.children[name]
        return node

    def _ino(self, path):
        ino = self.vol.root_ino
        for name in path:
            ino = self.vol.lookup(ino, name).st_ino
        return ino

    def _expect(self, err, fn, *args, **kw):
        try:
            result = fn(*args, **kw)
        except FSError as e:
            assert e.errno == err, f"{fn.__name__}{args}: got {errno.errorcode[e.errno]}, expected " \
                                   f"{errno.errorcode.get(err, 'success')}"
            return None
        assert err is None, f"{fn.__name__}{args} succeeded, expected {errno.errorcode[err]}"
        return result

    # rules -------------------------------------------------------------------------------
    @rule(data=st.data(), name=NAMES, kind=st.sampled_from(["file", "dir", "symlink"]),
          link_target=st.binary(min_size=1, max_size=120).filter(lambda t: b"\0" not in t))
    def make(self, data, name, kind, link_target):
        dpath = data.draw(st.sampled_from(self._dirs()))
        d = self._node(dpath)
        err = errno.EEXIST if name in d.children else None
        dino = self._ino(dpath)
        if kind == "file":
            ok = self._expect(err, self.vol.create, dino, name, 0o644, UID, UID)
            node = MFile()
        elif kind == "dir":
            ok = self._expect(err, self.vol.mkdir, dino, name, 0o755, UID, UID)
            node = MDir()
            if d.mode & stat.S_ISGID:   # BSD group semantics, as ext2 gives them
                node.mode |= stat.S_ISGID
        else:
            ok = self._expect(err, self.vol.symlink, dino, name, link_target, UID, UID)
            node = MLink(link_target)
        if ok is not None:
            d.children[name] = node

    @precondition(lambda self: self._files())
    @rule(data=st.data(), offset=st.integers(0, 300_000), length=st.integers(0, 70_000), seed=st.integers(0, 2**32 - 1))
    def write(self, data, offset, length, seed):
        path = data.draw(st.sampled_from(self._files()))
        f = self._node(path)
        payload = _payload(seed, length)
        assert self.vol.write(self._ino(path), offset, payload) == length
        if length:
            if len(f.data) < offset:
                f.data.extend(bytes(offset - len(f.data)))
            f.data[offset:offset + length] = payload

    @precondition(lambda self: self._files())
    @rule(data=st.data(), size=st.integers(0, 400_000))
    def truncate(self, data, size):
        path = data.draw(st.sampled_from(self._files()))
        f = self._node(path)
        self.vol.setattr(self._ino(path), size=size)
        f.data = f.data[:size] + bytearray(max(0, size - len(f.data)))

    @rule(data=st.data(), name=NAMES)
    def unlink(self, data, name):
        dpath = data.draw(st.sampled_from(self._dirs()))
        d = self._node(dpath)
        node = d.children.get(name)
        err = errno.ENOENT if node is None else errno.EISDIR if isinstance(node, MDir) else None
        self._expect(err, self.vol.unlink, self._ino(dpath), name)
        if err is None:
            del d.children[name]

    @rule(data=st.data(), name=NAMES)
    def rmdir(self, data, name):
        dpath = data.draw(st.sampled_from(self._dirs()))
        d = self._node(dpath)
        node = d.children.get(name)
        err = (errno.ENOENT if node is None else errno.ENOTDIR if not isinstance(node, MDir)
               else errno.ENOTEMPTY if node.children else None)
        self._expect(err, self.vol.rmdir, self._ino(dpath), name)
        if err is None:
            del d.children[name]

    @rule(data=st.data(), name=NAMES)
    def link(self, data, name):
        files = self._files()
        if not files:
            return
        src = data.draw(st.sampled_from(files))
        dpath = data.draw(st.sampled_from(self._dirs()))
        d = self._node(dpath)
        err = errno.EEXIST if name in d.children else None
        if self._expect(err, self.vol.link, self._ino(src), self._ino(dpath), name) is not None:
            d.children[name] = self._node(src)

    @rule(data=st.data(), old=NAMES, new=NAMES, flags=st.sampled_from([0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE]))
    def rename(self, data, old, new, flags):
        sp = data.draw(st.sampled_from(self._dirs()))
        dp = data.draw(st.sampled_from(self._dirs()))
        sd, dd = self._node(sp), self._node(dp)
        s, t = sd.children.get(old), dd.children.get(new)
        inside = lambda node, path: isinstance(node, MDir) and path[:len(sp) + 1] == sp + (old,)  # noqa: E731
        if s is None:
            err = errno.ENOENT
        elif flags == RENAME_EXCHANGE:
            if t is None:
                err = errno.ENOENT
            elif sp != dp and (inside(s, dp) or (isinstance(t, MDir) and sp[:len(dp) + 1] == dp + (new,))):
                err = errno.EINVAL
            else:
                err = None
        elif t is not None and flags == RENAME_NOREPLACE:
            err = errno.EEXIST
        elif sp != dp and inside(s, dp):
            err = errno.EINVAL
        elif t is s:
            err = "noop"
        elif t is not None and isinstance(s, MDir) and not isinstance(t, MDir):
            err = errno.ENOTDIR
        elif t is not None and not isinstance(s, MDir) and isinstance(t, MDir):
            err = errno.EISDIR
        elif isinstance(t, MDir) and t.children:
            err = errno.ENOTEMPTY
        else:
            err = None
        self._expect(None if err == "noop" else err, self.vol.rename, self._ino(sp), old, self._ino(dp), new, flags)
        if err is None:
            if flags == RENAME_EXCHANGE:
                sd.children[old], dd.children[new] = t, s
            else:
                del sd.children[old]
                dd.children[new] = s

    @rule(data=st.data(), key=st.sampled_from([b"user.a", b"user.long" * 5, b"trusted.t"]),
          value=st.binary(max_size=300), remove=st.booleans())
    def xattr(self, data, key, value, remove):
        path, node = data.draw(st.sampled_from([(p, n) for p, n in self._walk() if not isinstance(n, MLink)]))
        ino = self._ino(path)
        if remove:
            err = None if key in node.xattrs else errno.ENODATA
            self._expect(err, self.vol.removexattr, ino, key)
            node.xattrs.pop(key, None)
        else:
            self.vol.setxattr(ino, key, value)
            node.xattrs[key] = value

    @rule(data=st.data(), mode=st.integers(0, 0o7777))
    def chmod(self, data, mode):
        path, node = data.draw(st.sampled_from([(p, n) for p, n in self._walk() if not isinstance(n, MLink)]))
        self.vol.setattr(self._ino(path), mode=mode)
        node.mode = mode

    @rule()
    def remount(self):
        self.vol.close()
        assert_fsck_clean(self.img)
        self.vol = Volume.open(self.img)

    @invariant()
    def agrees(self):
        if not hasattr(self, "vol"):
            return
        names_of = {}
        for path, node in self._walk():
            names_of.setdefault(id(node), []).append(path)
        for path, node in self._walk():
            ino = self._ino(path)
            a = self.vol.getattr(ino)
            assert stat.S_IMODE(a.st_mode) == node.mode, path
            if isinstance(node, MDir):
                assert stat.S_ISDIR(a.st_mode)
                listed = {n for n, _, _ in self.vol.readdir(ino)} - {b".", b".."}
                assert listed == set(node.children), path
                assert a.st_nlink == 2 + sum(isinstance(c, MDir) for c in node.children.values()), path
            elif isinstance(node, MFile):
                assert stat.S_ISREG(a.st_mode) and a.st_size == len(node.data), path
                assert self.vol.read(ino, 0, len(node.data) + 10) == bytes(node.data), path
                assert a.st_nlink == len(names_of[id(node)]), path
            else:
                assert self.vol.readlink(ino) == node.target, path
            if not isinstance(node, MLink):
                assert dict.fromkeys(self.vol.listxattr(ino)) == dict.fromkeys(node.xattrs) or \
                    set(self.vol.listxattr(ino)) == set(node.xattrs), path
                for k, v in node.xattrs.items():
                    assert self.vol.getxattr(ino, k) == v


TestVolumeModel = needs_e2fsprogs(VolumeMachine.TestCase)
TestVolumeModel.settings = settings(max_examples=100, stateful_step_count=35, deadline=None,
                                    suppress_health_check=list(HealthCheck))
