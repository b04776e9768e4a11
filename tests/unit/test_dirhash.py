"""simfs.ondisk.dirhash against the e2fsprogs oracle.

* ``debugfs -R 'dx_hash -h V -s UUID NAME'`` for 1,200 random names x {legacy, half_md4, tea}
  x {signed, unsigned} x {default seed, random UUID seed}, in one batched ``debugfs -f`` run.
* ``debugfs htree_dump`` of a directory that ``e2fsck -fD`` indexed, on images whose superblock
  hash version and signed/unsigned flags we set: checks ``hash_params`` / ``from_superblock``
  the way the kernel and e2fsprogs pick the variant.

How names reach ``dx_hash`` through ``debugfs -f CMDFILE`` (e2fsprogs 1.47.0, checked here):
the command file is read with fgets, and each line is cut at the first '\\n' and at the first
'\\r'; a NUL byte ends the C string. So the generated alphabet is bytes 0x01..0xFF without
0x0A and 0x0D (names may therefore contain '/', which ext2 names never do; the hash does not
care). The libss parser splits on space/tab and understands "double quotes" with "" for a
literal quote; every name is passed double-quoted with quotes doubled, after ``--`` so that
getopt never takes a name starting with '-' for an option. Numeric ``-h 0..5`` is used
because 1.47.0's ``e2p_string2hash`` knows only legacy/half_md4/tea (an unknown name falls
back to atoi() = 0, legacy). Without ``-s`` debugfs 1.47.0 uses an all-zero seed, which
selects the default MD4 seed -- the "default seed" case.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import uuid

import pytest

from simfs.ondisk.dirhash import (DX_HASH_HALF_MD4, DX_HASH_HALF_MD4_UNSIGNED, DX_HASH_LEGACY,
                              DX_HASH_TEA, DX_HASH_TEA_UNSIGNED, EXT2_FLAGS_SIGNED_HASH,
                              EXT2_FLAGS_UNSIGNED_HASH, DirHasher, dx_hash, hash_params,
                              hash_version)

DEBUGFS = shutil.which("debugfs") or "/sbin/debugfs"
MKFS = shutil.which("mkfs.ext2") or "/sbin/mkfs.ext2"
E2FSCK = shutil.which("e2fsck") or "/sbin/e2fsck"

pytestmark = pytest.mark.skipif(not shutil.which(DEBUGFS), reason="e2fsprogs debugfs not installed")

N_NAMES = 1200
_BAD = {0x00, 0x0A, 0x0D}
FULL_ALPHABET = bytes(b for b in range(256) if b not in _BAD)
ASCII_ALPHABET = bytes(b for b in range(0x20, 0x7F))
# lengths where str2hashbuf changes behaviour: partial words, chunk edges (16/32 bytes)
EDGE_LENGTHS = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 128,
                129, 254, 255]
HASH_LINE = re.compile(rb" is 0x([0-9a-f]+) \(minor 0x([0-9a-f]+)\)$")


def quote(name: bytes) -> bytes:
    assert not (set(name) & _BAD), name
    return b'"' + name.replace(b'"', b'""') + b'"'


def make_names(rng: random.Random, n: int) -> list[bytes]:
    names = []
    for i in range(n):
        if i < 2 * len(EDGE_LENGTHS):
            length = EDGE_LENGTHS[i % len(EDGE_LENGTHS)]
        else:
            length = rng.randint(1, 255)
        alphabet = ASCII_ALPHABET if i % 3 == 0 else FULL_ALPHABET
        names.append(bytes(rng.choice(alphabet) for _ in range(length)))
    # a few hand-picked ones: all-high bytes, pad-byte >= 0x80 lengths, quotes and spaces
    names += [b"\xff" * 200, b"\x80", b"\x7f\x80\x81", b'"', b'""', b" lead and trail ",
              b"-h", b"--", b"#x", b"a/b", "héllo wörld".encode(), "日本語のファイル名".encode(),
              b"x" * 129, b"\xe9" * 130]
    return names


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    img = tmp_path_factory.mktemp("dirhash") / "img"
    subprocess.run([MKFS, "-q", "-F", str(img), "1M"], check=True, capture_output=True)
    return img


def run_debugfs(image, cmds: list[bytes], tmp_path, write=False) -> bytes:
    cmdfile = tmp_path / "cmds"
    cmdfile.write_bytes(b"\n".join(cmds) + b"\n")
    args = [DEBUGFS] + (["-w"] if write else []) + ["-f", str(cmdfile), str(image)]
    res = subprocess.run(args, capture_output=True, check=True, timeout=120)
    return res.stdout


def oracle(image, tmp_path, queries: list[tuple[bytes, int, bytes | None]]) -> list[tuple[int, int]]:
    """(name, version, seed) -> debugfs's (hash, minor), one debugfs process for all."""
    cmds = []
    for name, version, seed in queries:
        s = b"" if seed is None else b"-s " + str(uuid.UUID(bytes=seed)).encode() + b" "
        cmds.append(b"dx_hash -h %d %s-- %s" % (version, s, quote(name)))
    out = run_debugfs(image, cmds, tmp_path)
    results = []
    for line in out.split(b"\n"):
        if line.startswith(b"Hash of "):
            m = HASH_LINE.search(line)
            assert m, line
            results.append((int(m.group(1), 16), int(m.group(2), 16)))
    assert len(results) == len(queries), (len(results), len(queries))
    return results


def test_dx_hash_matches_debugfs(image, tmp_path):
    rng = random.Random(20240606)
    names = make_names(rng, N_NAMES)
    seeds = [None, uuid.UUID(int=rng.getrandbits(128), version=4).bytes]
    queries = [(name, v, seed) for name in names for v in range(6) for seed in seeds]
    expected = oracle(image, tmp_path, queries)
    hashers = {(v, seed): DirHasher(v, seed) for v in range(6) for seed in seeds}
    mismatches = []
    for (name, v, seed), exp in zip(queries, expected):
        got = hashers[v, seed](name)
        if got != exp:
            mismatches.append((name, v, seed, got, exp))
        # the one-off function must agree (and the signed=False spelling of 3..5)
        if v < 3:
            assert dx_hash(name, v, seed, signed=False) == hashers[v + 3, seed](name)
    assert not mismatches, f"{len(mismatches)} of {len(queries)} differ, first: {mismatches[:3]}"
    # the numpy batch path, against the same oracle answers
    by_key = dict(zip(((n, v, s) for n, v, s in queries), expected))
    for (v, seed), hasher in hashers.items():
        assert hasher.many(names) == [by_key[name, v, seed] for name in names], (v, seed)
    assert len(names) >= 1000 and len(queries) >= 12 * 1000


def test_unusual_lengths_match_debugfs(image, tmp_path):
    """Empty name (hash of the seed alone) and names longer than 255 bytes (remaining length
    > 255 makes the str2hashbuf pad word non-uniform: the generic path)."""
    rng = random.Random(7)
    seed = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
    names = [b""] + [bytes(rng.choice(FULL_ALPHABET) for _ in range(n))
                     for n in (256, 257, 300, 511, 1000, 1023)]
    queries = [(name, v, s) for name in names for v in range(6) for s in (None, seed)]
    expected = oracle(image, tmp_path, queries)
    got = [dx_hash(name, v, s) for name, v, s in queries]
    assert got == expected
    # the batch path routes these to the scalar code; mixed with a big group of short names
    short = [b"n%05d\xe9" % i for i in range(100)]
    for v in range(6):
        for s in (None, seed):
            h = DirHasher(v, s)
            assert h.many(names + short) == [h(n) for n in names + short]
            assert h.many(names) == [e for (n, vv, ss), e in zip(queries, expected)
                                     if vv == v and ss == s]


def test_final_masking_properties():
    rng = random.Random(1)
    for _ in range(2000):
        name = bytes(rng.randrange(1, 256) for _ in range(rng.randint(1, 40)))
        for v in range(6):
            h, minor = dx_hash(name, v)
            assert h & 1 == 0 and h != 0xFFFFFFFE and 0 <= h <= 0xFFFFFFFF
            assert 0 <= minor <= 0xFFFFFFFF
            if v % 3 == DX_HASH_LEGACY:
                assert minor == 0
    # all-zero seed == default seed
    assert dx_hash(b"hello", 1, bytes(16)) == dx_hash(b"hello", 1, None)
    # ASCII names do not depend on signedness; non-ASCII ones (in general) do
    assert dx_hash(b"hello", 1) == dx_hash(b"hello", 4)
    assert dx_hash("héllo".encode(), 1) != dx_hash("héllo".encode(), 4)


def test_version_names_and_errors():
    assert hash_version("half_md4") == 1 and hash_version("tea_unsigned") == 5
    assert hash_version("half_md4", signed=False) == 4
    assert hash_version(2, signed=True) == 2
    with pytest.raises(ValueError):
        hash_version(4, signed=True)
    with pytest.raises(ValueError):
        hash_version(6)
    with pytest.raises(ValueError, match="half_md4"):
        hash_version("md5")
    with pytest.raises(ValueError):
        dx_hash(b"x", 1, b"short")


def test_hash_params_rules():
    seed = bytes(range(16))
    assert hash_params(1, EXT2_FLAGS_SIGNED_HASH, seed) == (DX_HASH_HALF_MD4, seed)
    assert hash_params(1, EXT2_FLAGS_UNSIGNED_HASH, seed) == (DX_HASH_HALF_MD4_UNSIGNED, seed)
    assert hash_params(1, 0, seed) == (DX_HASH_HALF_MD4, seed)          # x86: neither = signed
    assert hash_params(2, 3, seed) == (DX_HASH_TEA_UNSIGNED, seed)      # unsigned wins
    assert hash_params(5, EXT2_FLAGS_SIGNED_HASH, seed) == (DX_HASH_TEA_UNSIGNED, seed)
    assert hash_params(2, 0, seed)[0] == DX_HASH_TEA
    with pytest.raises(ValueError):
        hash_params(6, 0, seed)                                         # siphash


# --- end to end: superblock fields -> hash_params -> what e2fsck -D / htree_dump compute ---

SB = 1024
OFF_HASH_SEED, OFF_DEF_HASH, OFF_FLAGS = 0xEC, 0xFC, 0x160
DUMP_LINE = re.compile(rb"^\d+ 0x([0-9a-f]{8})-([0-9a-f]{8}) \(\d+\) ")


@pytest.mark.parametrize("def_hash,flags", [
    (1, EXT2_FLAGS_SIGNED_HASH), (1, EXT2_FLAGS_UNSIGNED_HASH),
    (2, EXT2_FLAGS_SIGNED_HASH), (2, EXT2_FLAGS_UNSIGNED_HASH),
    (0, EXT2_FLAGS_SIGNED_HASH), (0, EXT2_FLAGS_UNSIGNED_HASH),
])
def test_superblock_params_match_htree_dump(tmp_path, def_hash, flags):
    img = tmp_path / "img"
    subprocess.run([MKFS, "-q", "-F", "-b", "1024", "-N", "256", str(img), "2M"], check=True,
                   capture_output=True)
    rng = random.Random(def_hash * 10 + flags)
    seed = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
    with open(img, "r+b") as f:
        f.seek(SB)
        sb = bytearray(f.read(1024))
        sb[OFF_HASH_SEED:OFF_HASH_SEED + 16] = seed
        sb[OFF_DEF_HASH] = def_hash
        old = struct.unpack_from("<I", sb, OFF_FLAGS)[0]
        struct.pack_into("<I", sb, OFF_FLAGS, (old & ~3) | flags)
        f.seek(SB)
        f.write(sb)
    # 120 names of ~30 bytes (non-ASCII, so signedness matters) fill several 1K blocks
    names = []
    for i in range(120):
        stem = bytes(rng.choice(FULL_ALPHABET.replace(b"/", b"")) for _ in range(rng.randint(8, 40)))
        names.append(b"%04d" % i + stem + b"\xe9")
    run_debugfs(img, [b"mknod " + quote(n) + b" p" for n in names], tmp_path, write=True)
    subprocess.run([E2FSCK, "-fyD", str(img)], capture_output=True)   # rc 1: fs modified
    out = run_debugfs(img, [b"htree_dump /"], tmp_path)
    dumped = sorted((int(a, 16), int(b, 16)) for a, b in
                    (m.groups() for m in map(DUMP_LINE.match, out.split(b"\n")) if m))
    with open(img, "rb") as f:
        f.seek(SB)
        sb = f.read(1024)
    hasher = DirHasher.from_superblock(sb[OFF_DEF_HASH],
                                       struct.unpack_from("<I", sb, OFF_FLAGS)[0],
                                       sb[OFF_HASH_SEED:OFF_HASH_SEED + 16])
    assert hasher.version == def_hash + (3 if flags == EXT2_FLAGS_UNSIGNED_HASH else 0)
    # htree_dump lists every leaf entry; "." and ".." live in the dx_root block, not a leaf
    ours = sorted(hasher(n) for n in [b"lost+found"] + names)
    assert len(dumped) == len(names) + 1
    assert dumped == ours
