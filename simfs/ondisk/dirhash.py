"""The ext2/ext3/ext4 directory-index hash (``ext2fs_dirhash`` / ``ext4fs_dirhash``).

Pure Python, bit-exact with e2fsprogs 1.47 ``lib/ext2fs/dirhash.c`` and Linux
``fs/ext4/hash.c`` + ``lib/halfmd4.c`` (see docs/reference/allocation-policies.md §3.1);
``debugfs -R 'dx_hash -h VERSION -s UUID NAME' IMAGE`` is the oracle (tests/unit/test_dirhash.py).

Hash versions (``s_def_hash_version`` / ``dx_root_info.hash_version``)::

    0 legacy             3 legacy_unsigned
    1 half_md4           4 half_md4_unsigned
    2 tea                5 tea_unsigned

The "signed" variants (0..2) feed name bytes to ``str2hashbuf`` / the legacy hash as C
``signed char`` (bytes >= 0x80 are sign-extended, what x86 kernels do); the unsigned variants
(3..5) as ``unsigned char``. Only names with a byte >= 0x80 hash differently.

The seed is the superblock's ``s_hash_seed`` as its 16 raw bytes (four little-endian 32-bit
words -- the UUID bytes as mke2fs generated them). ``None`` or all-zero bytes select the
MD4 initial values, as both e2fsprogs and the kernel do.

Result: ``(hash, minor_hash)``, both unsigned 32-bit; ``hash`` is always even and never
0xFFFFFFFE (that value is the 32-bit EOF marker; it is mapped to 0xFFFFFFFC). The legacy hash
has ``minor_hash == 0``.

Hot path: readdir in hash order hashes every entry of a directory. ``DirHasher`` binds the
version and seed once; ``hasher(name)`` is the scalar entry point (``dx_hash`` is for one-off
use) and ``hasher.many(names)`` hashes a whole directory, running the half_md4/TEA transforms
vectorised with numpy over all names of one length class (the legacy hash stays scalar). The
scalar transforms are unrolled, work on locals, and mask to 32 bits only where a value feeds
a shift or is kept. Throughput: ``python -m benchmarks.bench_dirhash``.
"""

from __future__ import annotations

from struct import Struct

import numpy as np

__all__ = ["DX_HASH_LEGACY", "DX_HASH_HALF_MD4", "DX_HASH_TEA", "DX_HASH_LEGACY_UNSIGNED",
           "DX_HASH_HALF_MD4_UNSIGNED", "DX_HASH_TEA_UNSIGNED", "HASH_VERSIONS",
           "EXT2_FLAGS_SIGNED_HASH", "EXT2_FLAGS_UNSIGNED_HASH", "DirHasher", "dx_hash",
           "hash_params", "hash_version", "hash2pos"]

DX_HASH_LEGACY = 0
DX_HASH_HALF_MD4 = 1
DX_HASH_TEA = 2
DX_HASH_LEGACY_UNSIGNED = 3
DX_HASH_HALF_MD4_UNSIGNED = 4
DX_HASH_TEA_UNSIGNED = 5

HASH_VERSIONS = {
    "legacy": DX_HASH_LEGACY,
    "half_md4": DX_HASH_HALF_MD4,
    "tea": DX_HASH_TEA,
    "legacy_unsigned": DX_HASH_LEGACY_UNSIGNED,
    "half_md4_unsigned": DX_HASH_HALF_MD4_UNSIGNED,
    "tea_unsigned": DX_HASH_TEA_UNSIGNED,
}
_VERSION_NAMES = {v: k for k, v in HASH_VERSIONS.items()}

# superblock s_flags
EXT2_FLAGS_SIGNED_HASH = 0x0001
EXT2_FLAGS_UNSIGNED_HASH = 0x0002

_M = 0xFFFFFFFF
_DEFAULT_BUF = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
_K2 = 0o13240474631   # 0x5A827999
_K3 = 0o15666365641   # 0x6ED9EBA1
_TEA_DELTA = 0x9E3779B9
_TEA_SUMS = tuple((_TEA_DELTA * i) & _M for i in range(1, 17))
_EOF32 = 0xFFFFFFFE            # EXT2_HTREE_EOF_32BIT << 1
_EOF32_SUBST = 0xFFFFFFFC      # (EXT2_HTREE_EOF_32BIT - 1) << 1

_BE8 = Struct(">8I").unpack
_BE4 = Struct(">4I").unpack
_LE4 = Struct("<4I").unpack
_PADB = tuple(bytes((n,)) for n in range(256))
_ZERO = b"\0"

# legacy hash: (c * 7152373) as u32 for c = unsigned / signed char value of each byte
_LEGACY_U = tuple((b * 7152373) & _M for b in range(256))
_LEGACY_S = tuple(((b - 256 if b >= 128 else b) * 7152373) & _M for b in range(256))


def hash_version(version: int | str, signed: bool | None = None) -> int:
    """Normalise a version (0..5 or a name) and an optional signedness into 0..5.

    ``signed=None`` keeps the version as given. ``signed=False`` turns 0..2 into 3..5;
    ``signed=True`` on an unsigned version (3..5) is a contradiction and raises ValueError.
    """
    if isinstance(version, str):
        try:
            v = HASH_VERSIONS[version.strip().lower()]
        except KeyError:
            from plugin_registry import did_you_mean
            raise ValueError(f"unknown directory hash '{version}'; choose one of: "
                             f"{', '.join(HASH_VERSIONS)}" + did_you_mean(version, HASH_VERSIONS)) from None
    else:
        v = int(version)
        if not 0 <= v <= 5:
            raise ValueError(f"unsupported directory hash version {v} (supported: 0..5)")
    if signed is None:
        return v
    if signed:
        if v >= 3:
            raise ValueError(f"hash version {v} ({_VERSION_NAMES[v]}) is unsigned, signed=True")
        return v
    return v if v >= 3 else v + 3


def hash_params(def_hash_version: int, s_flags: int, seed: bytes) -> tuple[int, bytes]:
    """(version, seed) the kernel uses for a directory hashed with the superblock defaults.

    As ext4_fill_super + ext4_htree_fill_tree: if ``s_flags`` has EXT2_FLAGS_UNSIGNED_HASH
    (0x2), versions 0..2 become 3..5; else (signed flag 0x1, or neither flag, which an x86
    kernel treats as signed) they stay. Versions 3..5 are used as stored. The seed is
    returned as its 16 raw bytes (all-zero means the default seed; ``dx_hash`` handles that).
    Raises ValueError for a version simfs cannot compute (e.g. 6, SipHash for casefold).
    """
    seed = bytes(seed)
    if len(seed) != 16:
        raise ValueError("s_hash_seed must be 16 bytes")
    v = hash_version(def_hash_version)
    if v <= DX_HASH_TEA and s_flags & EXT2_FLAGS_UNSIGNED_HASH:
        v += 3
    return v, seed


def hash2pos(hash_: int, minor: int) -> int:
    """ext4's 64-bit readdir position for a hash: ``((hash >> 1) << 32) | minor``."""
    return ((hash_ >> 1) << 32) | minor


def _seed_buf(seed: bytes | None) -> tuple[int, int, int, int]:
    if seed is None:
        return _DEFAULT_BUF
    seed = bytes(seed)
    if len(seed) != 16:
        raise ValueError("hash seed must be 16 bytes (or None)")
    words = _LE4(seed)
    return words if any(words) else _DEFAULT_BUF


def _str2hashbuf_generic(msg: bytes, length: int, num: int, signed: bool) -> list[int]:
    """Literal transcription of str2hashbuf; used when the remaining length exceeds 255
    (the fast path below assumes the pad word is one byte repeated)."""
    pad = (length | (length << 8)) & _M
    pad = (pad | (pad << 16)) & _M
    val = pad
    if length > num * 4:
        length = num * 4
    out = []
    for i in range(length):
        c = msg[i]
        if signed and c >= 0x80:
            c -= 256
        val = (c + (val << 8)) & _M
        if i % 4 == 3:
            out.append(val)
            val = pad
            num -= 1
    num -= 1
    if num >= 0:
        out.append(val)
    while num > 0:
        out.append(pad)
        num -= 1
    return out


def _chunk_buf(name: bytes, off: int, nb: int, fill: bytes) -> bytes:
    """The nb bytes whose big-endian words are str2hashbuf(name[off:], rem, nb // 4) for a
    remaining length rem = len(name) - off <= 255, when ``fill`` is the pad byte
    ``bytes((rem,))``: full words of name bytes, then the last partial word (the pad word
    shifted left by the remaining 1..3 bytes), then pad words. With fill = b"\\0" the same
    layout with the pad bytes zeroed (input to the signed correction)."""
    chunk = name[off:off + nb]
    k = len(chunk)
    r = k & 3
    if r:
        q4 = k - r
        return chunk[:q4] + fill * (4 - r) + chunk[q4:] + fill * (nb - q4 - 4)
    return chunk + fill * (nb - k)


def _hashbuf(name: bytes, off: int, num: int, signed: bool):
    """str2hashbuf(name[off:], len(name) - off, num) as a sequence of num ints."""
    rem = len(name) - off
    if rem > 255:
        return _str2hashbuf_generic(name[off:], rem, num, signed)
    unpack = _BE8 if num == 8 else _BE4
    nb = 4 * num
    words = unpack(_chunk_buf(name, off, nb, _PADB[rem]))
    if not signed or name[off:off + nb].isascii():
        return words
    # signed char: a byte >= 0x80 contributes (b - 256) instead of b, i.e. subtract
    # 0x100 << 8*j = (0x80 << 8*j) << 1 for that byte; the pad bytes are not affected.
    cw = unpack(_chunk_buf(name, off, nb, _ZERO))
    return [(w - ((c & 0x80808080) << 1)) & _M for w, c in zip(words, cw)]


def _md4_rounds(a, b, c, d, x0, x1, x2, x3, x4, x5, x6, x7, M=_M, K2=_K2, K3=_K3):
    """The 24 steps of half_md4_transform on (a, b, c, d); the caller adds them to buf.

    Works on Python ints and on numpy uint32 arrays alike. With Python ints only the value
    fed to a rotation is masked; a..d may carry bits above 32, which never reach the low 32
    bits of later sums or bitwise results, and the caller masks the final additions.
    """
    # round 1: F(x,y,z) = z ^ (x & (y ^ z)); shifts 3, 7, 11, 19
    t = (a + (d ^ (b & (c ^ d))) + x0) & M; a = (t << 3) | (t >> 29)
    t = (d + (c ^ (a & (b ^ c))) + x1) & M; d = (t << 7) | (t >> 25)
    t = (c + (b ^ (d & (a ^ b))) + x2) & M; c = (t << 11) | (t >> 21)
    t = (b + (a ^ (c & (d ^ a))) + x3) & M; b = (t << 19) | (t >> 13)
    t = (a + (d ^ (b & (c ^ d))) + x4) & M; a = (t << 3) | (t >> 29)
    t = (d + (c ^ (a & (b ^ c))) + x5) & M; d = (t << 7) | (t >> 25)
    t = (c + (b ^ (d & (a ^ b))) + x6) & M; c = (t << 11) | (t >> 21)
    t = (b + (a ^ (c & (d ^ a))) + x7) & M; b = (t << 19) | (t >> 13)
    # round 2: G(x,y,z) = majority = (x & y) | (z & (x | y)); K2; shifts 3, 5, 9, 13
    t = (a + ((b & c) | (d & (b | c))) + x1 + K2) & M; a = (t << 3) | (t >> 29)
    t = (d + ((a & b) | (c & (a | b))) + x3 + K2) & M; d = (t << 5) | (t >> 27)
    t = (c + ((d & a) | (b & (d | a))) + x5 + K2) & M; c = (t << 9) | (t >> 23)
    t = (b + ((c & d) | (a & (c | d))) + x7 + K2) & M; b = (t << 13) | (t >> 19)
    t = (a + ((b & c) | (d & (b | c))) + x0 + K2) & M; a = (t << 3) | (t >> 29)
    t = (d + ((a & b) | (c & (a | b))) + x2 + K2) & M; d = (t << 5) | (t >> 27)
    t = (c + ((d & a) | (b & (d | a))) + x4 + K2) & M; c = (t << 9) | (t >> 23)
    t = (b + ((c & d) | (a & (c | d))) + x6 + K2) & M; b = (t << 13) | (t >> 19)
    # round 3: H(x,y,z) = x ^ y ^ z; K3; shifts 3, 9, 11, 15
    t = (a + (b ^ c ^ d) + x3 + K3) & M; a = (t << 3) | (t >> 29)
    t = (d + (a ^ b ^ c) + x7 + K3) & M; d = (t << 9) | (t >> 23)
    t = (c + (d ^ a ^ b) + x2 + K3) & M; c = (t << 11) | (t >> 21)
    t = (b + (c ^ d ^ a) + x6 + K3) & M; b = (t << 15) | (t >> 17)
    t = (a + (b ^ c ^ d) + x1 + K3) & M; a = (t << 3) | (t >> 29)
    t = (d + (a ^ b ^ c) + x5 + K3) & M; d = (t << 9) | (t >> 23)
    t = (c + (d ^ a ^ b) + x0 + K3) & M; c = (t << 11) | (t >> 21)
    t = (b + (c ^ d ^ a) + x4 + K3) & M; b = (t << 15) | (t >> 17)
    return a, b, c, d


def _tea_rounds(x, y, a, b, c, d, M=_M, SUMS=_TEA_SUMS):
    """16 rounds of TEA_transform on (buf[0], buf[1]); ints or numpy uint32 arrays."""
    for s in SUMS:
        x = (x + (((y << 4) + a) ^ (y + s) ^ ((y >> 5) + b))) & M
        y = (y + (((x << 4) + c) ^ (x + s) ^ ((x >> 5) + d))) & M
    return x, y


def _half_md4(name: bytes, buf: tuple[int, int, int, int], signed: bool) -> tuple[int, int]:
    M = _M
    h0, h1, h2, h3 = buf
    n = len(name)
    off = 0
    while off < n:
        a, b, c, d = _md4_rounds(h0, h1, h2, h3, *_hashbuf(name, off, 8, signed))
        h0 = (h0 + a) & M
        h1 = (h1 + b) & M
        h2 = (h2 + c) & M
        h3 = (h3 + d) & M
        off += 32
    h = h1 & 0xFFFFFFFE
    if h == _EOF32:
        h = _EOF32_SUBST
    return h, h2


def _tea(name: bytes, buf: tuple[int, int, int, int], signed: bool) -> tuple[int, int]:
    M = _M
    b0, b1 = buf[0], buf[1]
    n = len(name)
    off = 0
    while off < n:
        x, y = _tea_rounds(b0, b1, *_hashbuf(name, off, 4, signed))
        b0 = (b0 + x) & M
        b1 = (b1 + y) & M
        off += 16
    h = b0 & 0xFFFFFFFE
    if h == _EOF32:
        h = _EOF32_SUBST
    return h, b1


def _legacy(name: bytes, buf, signed: bool) -> tuple[int, int]:
    M = _M
    table = _LEGACY_S if signed else _LEGACY_U
    h0 = 0x12A3FE2D
    h1 = 0x37ABE8F9
    for ch in name:
        h = (h1 + (h0 ^ table[ch])) & M
        if h & 0x80000000:
            h -= 0x7FFFFFFF
        h1 = h0
        h0 = h
    h = (h0 << 1) & 0xFFFFFFFE
    if h == _EOF32:
        h = _EOF32_SUBST
    return h, 0


# --- batch versions (numpy, vectorised over names) ---------------------------------------

# below this many names (per chunk count) the per-op overhead of numpy is not worth it
_NP_MIN = 24


def _words_np(names: list[bytes], off: int, num: int, signed: bool):
    """str2hashbuf for many names at once -> tuple of num uint32 arrays (word i of each).
    Every name must have 1 <= len(name) - off <= 255 (the caller guarantees it)."""
    nb = 4 * num
    bufs = [_chunk_buf(name, off, nb, _PADB[len(name) - off]) for name in names]
    w = np.frombuffer(b"".join(bufs), dtype=">u4").reshape(-1, num).T.astype(np.uint32, order="C")
    if signed:
        high = [not name[off:off + nb].isascii() for name in names]
        if any(high):
            zero = _ZERO * nb
            cbufs = [_chunk_buf(name, off, nb, _ZERO) if h else zero
                     for name, h in zip(names, high)]
            cw = np.frombuffer(b"".join(cbufs), dtype=">u4").reshape(-1, num).T.astype(
                np.uint32, order="C")
            w -= (cw & np.uint32(0x80808080)) << np.uint32(1)
    return tuple(w)


def _many(names, buf, signed: bool, version: int, one) -> list[tuple[int, int]]:
    out: list = [None] * len(names)
    groups: dict[int, list[int]] = {}
    step = 32 if version == DX_HASH_HALF_MD4 else 16
    for i, name in enumerate(names):
        n = len(name)
        # empty and over-long names (generic str2hashbuf) take the scalar path
        key = (n + step - 1) // step if 0 < n <= 255 else -1
        groups.setdefault(key, []).append(i)
    for nchunks, idx in groups.items():
        if nchunks < 0 or len(idx) < _NP_MIN:
            for i in idx:
                out[i] = one(names[i], buf, signed)
            continue
        group = [names[i] for i in idx]
        k = len(idx)
        if version == DX_HASH_HALF_MD4:
            h0, h1, h2, h3 = (np.full(k, v, dtype=np.uint32) for v in buf)
            for j in range(nchunks):
                a, b, c, d = _md4_rounds(h0, h1, h2, h3, *_words_np(group, 32 * j, 8, signed))
                h0 = h0 + a
                h1 = h1 + b
                h2 = h2 + c
                h3 = h3 + d
            major, minor = h1, h2
        else:
            b0, b1 = (np.full(k, v, dtype=np.uint32) for v in buf[:2])
            for j in range(nchunks):
                x, y = _tea_rounds(b0, b1, *_words_np(group, 16 * j, 4, signed))
                b0 = b0 + x
                b1 = b1 + y
            major, minor = b0, b1
        major = major & np.uint32(0xFFFFFFFE)
        major[major == np.uint32(_EOF32)] = np.uint32(_EOF32_SUBST)
        for i, h, m in zip(idx, major.tolist(), minor.tolist()):
            out[i] = (h, m)
    return out


_ALGOS = (_legacy, _half_md4, _tea)


class DirHasher:
    """A directory hash bound to one version and seed: ``hasher(name) -> (hash, minor)``.

    Build it once per file system (``DirHasher.from_superblock``) and call it per entry.
    Attributes: ``version`` (0..5), ``signed`` (bool), ``seed`` (16 bytes or None),
    ``minor_is_zero`` (True for the legacy hash, whose minor hash is always 0).
    """

    __slots__ = ("version", "signed", "seed", "minor_is_zero", "_fn", "_buf")

    def __init__(self, version: int | str = DX_HASH_HALF_MD4, seed: bytes | None = None,
                 signed: bool | None = None):
        v = hash_version(version, signed)
        self.version = v
        self.signed = v < 3
        self.seed = None if seed is None else bytes(seed)
        self.minor_is_zero = v % 3 == DX_HASH_LEGACY
        self._fn = _ALGOS[v % 3]
        self._buf = _seed_buf(seed)

    @classmethod
    def from_superblock(cls, def_hash_version: int, s_flags: int, seed: bytes) -> "DirHasher":
        v, s = hash_params(def_hash_version, s_flags, seed)
        return cls(v, s)

    def __call__(self, name: bytes) -> tuple[int, int]:
        return self._fn(name, self._buf, self.signed)

    def hash(self, name: bytes) -> tuple[int, int]:
        return self._fn(name, self._buf, self.signed)

    def many(self, names) -> list[tuple[int, int]]:
        """[self(name) for name in names], vectorised with numpy for large batches (the
        half_md4 and TEA transforms run once per chunk over all names of the same length
        class); the legacy hash, a byte-serial recurrence, stays scalar."""
        names = names if isinstance(names, list) else list(names)
        fn, buf, signed = self._fn, self._buf, self.signed
        if fn is _legacy or len(names) < _NP_MIN:
            return [fn(name, buf, signed) for name in names]
        return _many(names, buf, signed, self.version % 3, fn)

    def __repr__(self) -> str:
        return f"DirHasher({_VERSION_NAMES[self.version]!r}, seed={self.seed!r})"


def dx_hash(name: bytes, version: int | str = DX_HASH_HALF_MD4, seed: bytes | None = None,
            signed: bool | None = None) -> tuple[int, int]:
    """ext2fs_dirhash(version, name, len(name), seed) -> (hash, minor_hash).

    ``version``: 0..5 or a name from HASH_VERSIONS. ``signed``: None = as the version says
    (0..2 signed, 3..5 unsigned); False turns 0..2 into their unsigned variants; True with an
    unsigned version raises ValueError. ``seed``: the 16 raw ``s_hash_seed`` bytes, or None;
    all-zero means the default seed.
    """
    v = hash_version(version, signed)
    if not isinstance(name, (bytes, bytearray, memoryview)):
        raise TypeError("name must be bytes")
    return _ALGOS[v % 3](bytes(name), _seed_buf(seed), v < 3)
