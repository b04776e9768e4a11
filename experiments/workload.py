"""Seeded, deterministic generator of source-like trees (the workloads of the seed experiments).

    from experiments.workload import generate_tree
    summary = generate_tree(Path("/tmp/src"), seed=1, files=20_000)
    summary = generate_tree(Path("/tmp/wc"), seed=1, files=5_000, svn=True)   # seed 001
    summary = generate_tree(Path("/tmp/src"), seed=1, files=None, total_size="400M")  # seed 000

CLI::

    python -m experiments.workload DEST [--files N] [--seed S] [--svn] [--total-size 50M]
                                        [--max-file-size 4M] [--max-depth 8] [--json] ...

Determinism
    The same seed and options give a byte-identical tree: names, contents, file types,
    permission bits, link targets, hard-link structure, and atime/mtime (whole seconds from
    ``mtime`` = 2010-01-01T00:00:00Z by default plus a seeded offset of up to one year).  The
    creation order is deterministic too (pre-order: a directory's files, then its symlinks,
    then its hard links, then its ``.svn/``, then its subdirectories, each in name order).  Only
    ownership, inode numbers and ctimes depend on the host.  Every pseudo-random choice comes
    from ``random.Random`` seeded through SHA-256 of (seed, purpose), using only
    ``random()``/``randrange()``/``shuffle()`` (stable across CPython versions; normal variates
    through ``statistics.NormalDist.inv_cdf``), or from a 64-bit LCG for file contents; neither numpy nor hash randomisation is involved.

File-size distribution (``files`` regular files outside ``.svn``)
    A mixture modelled on a BSD/Linux ``src/`` tree, where median text files are a few KiB
    and a small fraction of generated tables, ChangeLogs, firmware blobs-as-C and big drivers
    make up a long tail:

    * 2 % empty files (at least one when ``empty_files``);
    * the body, ~93 %: log-normal, median 4.5 KiB, sigma 0.95, clamped to 0.5 - 30 KiB
      (so ~90 % of the body lies between 1 and 20 KiB, like .c/.h/Makefile/man pages);
    * the tail, ~5 %: Pareto with x_m = 24 KiB and alpha = 1.3, capped at ``max_file_size``
      (default 4 MiB): a 2000-file tree has ~100 files over 24 KiB and a handful over 256 KiB;
    * forced large files: ``files // 1000`` files log-uniform in (1 MiB, ``max_file_size``],
      so every tree of >= 1000 files has a file over 1 MiB (unless ``max_file_size`` <= 1 MiB).

    Mean ~ 13 KiB, median ~ 4.7 KiB, 10th/90th/99th percentiles ~ 1.2/21/93 KiB: 400 MiB of
    "FreeBSD src" (seed 000) comes out as ~32k files.  With ``total_size`` and a file count,
    all sizes except the forced large files are scaled to make the total exact (the large
    files are scaled as well if they would be more than a quarter of the total); with
    ``total_size`` and ``files=None`` the count comes from drawing sizes until the total is
    reached, and then the same scaling makes it exact.  ``total_size`` counts working files only, not ``.svn`` metadata.

Shape
    Every directory gets a capacity of 5-30 entries (log-normal, median 10), and directories
    are attached to random non-full parents whose depth is below ``max_depth`` (8) until the
    free slots hold all the files; a parent's level is chosen with weight (number of open
    directories there) * 0.75**depth, so trees are bushy near the top and thin out with
    depth instead of piling up at ``max_depth``: src-like trees with most directories at
    depth 3-6, some at 7-8, ~10 files per directory.  Extras, all enabled by default:

    * empty directories: ``max(1, dirs // 100)`` leaf directories with no entries;
    * symlinks: ``max(3, files // 100)``, all relative: ~75 % to a regular file, ~17 % to a
      directory that is not an ancestor of the link (no loops for ``find -L``), and ~8 %
      dangling on purpose (``missing_*`` targets); at least one of each kind;
    * hard links: ``max(1, files // 200)`` extra names for earlier-created regular files;
    * deep paths: ``1 + files // 5000`` chains of long directory names ending in a file whose
      path (relative to DEST) is 200-260 characters (beyond ustar's 100/155 limits);
    * ``svn=True``: a Subversion 1.6 (wc format 10) ``.svn/`` in every working directory:
      ``entries``, ``all-wcprops`` and sometimes ``dir-prop-base`` (0444), ``text-base/NAME.svn-base``
      (a copy of every file, or ``link TARGET`` for a symlink), ``prop-base/NAME.svn-base`` for
      files with properties (svn:keywords/eol-style on sources, svn:executable, svn:special),
      and empty ``props/``, ``tmp/text-base``, ``tmp/prop-base``, ``tmp/props`` (``tmp/`` holds
      those three): 8 directories per working directory, as in seed 001's Jenkins workspaces
      (844k directories for 2M files), and ~3 files per working file (seed 001 had 2.3 files
      per directory; these trees have ~3.5, as their directories hold ~10 files).

Contents are text: C-like code (or make/shell/roff text for non-C names) assembled from whole
lines of a per-seed corpus of ~1 MiB built from identifier and template pools, behind a
per-file header naming the file; each stretch of the corpus reuses a few local identifiers
and comment words, as real code does.  They compress like source, not like random bytes:
gzip -6 gives ~3.3x (real C trees: 3.5-5.5x; random bytes: 1x).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import random
import sys
import time
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

from simfs.units import format_mib, parse_size

__all__ = ["TreeSummary", "generate_tree", "DEFAULT_MTIME", "main"]

KiB = 1024
MiB = 1024 * KiB

DEFAULT_MTIME = 1262304000  # 2010-01-01T00:00:00Z, the era of seeds 000-002
MTIME_SPREAD = 365 * 86400  # mtimes lie in [mtime, mtime + one year)

# File-size mixture (see module docstring).
EMPTY_FRACTION = 0.02
BODY_MEDIAN = 4.5 * KiB
BODY_SIGMA = 0.95
BODY_MIN = 512
BODY_MAX = 30 * KiB
TAIL_FRACTION = 0.05
TAIL_XM = 24 * KiB
TAIL_ALPHA = 1.3
LARGE_MIN = 1 * MiB
LARGE_PER_FILES = 1000
DEFAULT_MAX_FILE_SIZE = 4 * MiB

DEPTH_DECAY = 0.75  # weight of a directory level as a parent: DEPTH_DECAY ** depth
DEEP_PATH_MIN = 200  # "deep" relative path length

_ND = NormalDist()
_M64 = (1 << 64) - 1


# --------------------------------------------------------------------------------- summary

@dataclasses.dataclass(frozen=True)
class TreeSummary:
    """What generate_tree wrote below ``root`` (the root itself is not counted).

    files/total_bytes count distinct regular-file inodes (hard-linked names once), .svn
    metadata included; ``hardlinks`` counts the extra names, so the number of regular-file
    names a walk finds is ``files + hardlinks``.  ``dirs`` includes .svn directories.
    """

    root: str
    seed: int
    files: int
    dirs: int
    symlinks: int
    hardlinks: int
    total_bytes: int
    largest_file: int          # bytes
    largest_path: str          # relative to root
    empty_files: int
    empty_dirs: int            # directories with no entries at all (.svn/tmp etc. included)
    dangling_symlinks: int
    source_files: int          # regular files outside .svn (== the ``files`` asked for)
    source_bytes: int          # their bytes (== ``total_size`` when one was asked for)
    svn_dirs: int              # number of .svn directories
    max_depth: int             # deepest working directory (root = 0, .svn not counted)
    longest_path: int          # characters in the longest relative path

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def format(self) -> str:
        lines = [
            f"tree {self.root} (seed {self.seed})",
            f"  files        {self.files:>10,}   ({self.source_files:,} outside .svn, "
            f"{self.empty_files:,} empty)",
            f"  dirs         {self.dirs:>10,}   ({self.svn_dirs:,} .svn, {self.empty_dirs:,} empty, "
            f"depth {self.max_depth})",
            f"  symlinks     {self.symlinks:>10,}   ({self.dangling_symlinks:,} dangling)",
            f"  hardlinks    {self.hardlinks:>10,}",
            f"  total bytes  {self.total_bytes:>14,}   ({format_mib(self.total_bytes)}; "
            f"{format_mib(self.source_bytes)} outside .svn)",
            f"  largest file {self.largest_file:>14,}   {self.largest_path}",
            f"  longest path {self.longest_path:>10,} chars",
        ]
        return "\n".join(lines)

    __str__ = format


# --------------------------------------------------------------------------------- helpers

def _subseed(seed: int, *parts: object) -> int:
    h = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return int.from_bytes(h[:8], "little")


def _rng(seed: int, *parts: object) -> random.Random:
    return random.Random(_subseed(seed, *parts))


def _pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


def _normal(rng: random.Random) -> float:
    u = rng.random()
    return _ND.inv_cdf(min(max(u, 1e-12), 1 - 1e-12))


# --------------------------------------------------------------------------------- corpus

_TECH = (
    "buf len dev softc ifp mbuf proc vnode inode blk cnt flags lock error ptr tbl idx req cfg "
    "addr size off data hdr ctx state queue list entry node key val cb arg tmp res ret status "
    "mask bits reg irq dma ring desc pkt sock conn sess cert ssl bio md alg cred uio iov page "
    "map obj td thr sc chan port link tx rx intr bus mem io vm pmap cache hash name path dir "
    "file fd pos cur next prev head tail count limit max min ops priv info stat time tick timer "
    "seq ack win mss opt ip tcp udp ether vlan crc sum key iv cipher digest nonce seed rand "
    "bn rsa dsa dh ec asn x509 pem evp hmac sha md5 aes des rc4 zone slab pool grp blkno lbn "
    "cg sb fs ext ufs nfs rpc xdr lbolt sched cpu pcpu mtx sx rw cv sema unit part geom disk "
    "cam ccb ata scsi usb pci acpi ioapic apic tlb pte pde kva uma malloc free alloc init fini "
    "attach detach probe start stop reset poll ioctl open close read write strategy done"
).split()
_SYL = (
    "ab ac ad al an ar as at ba be bi bo bu ca ce ci co cu da de di do du el en er es ex fi "
    "fo ga ge gi go ha he hi ho in io ir is ka ke la le li lo lu ma me mi mo mu na ne ni no "
    "nu ob od ol om on op or os ou pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to "
    "tu ul un ur us va ve vi vo xe yo za ze"
).split()
_WORDS = (
    "the a an of to in is that for it as with be on not this are by or from at which but "
    "if we can all will when there so no has have been its should must may only also than "
    "then because before after while until each every any some other such same new old "
    "first last next previous current given following above below here now still already "
    "buffer block inode vnode page map device driver interrupt request queue list entry lock "
    "unlock acquire release free allocate copy read write flush sync commit update check "
    "verify handle return error value pointer structure field flag bit mask count length size "
    "offset address table index key hash cache miss hit state context thread process kernel "
    "user memory disk sector cylinder group bitmap directory file name path link mount "
    "filesystem layout policy order sequential random fast slow cheap expensive simple "
    "complex correct wrong broken fixed race condition deadlock overflow underflow boundary "
    "case caller callee routine function macro argument parameter result status code "
    "compatibility legacy workaround note xxx todo hack assume guarantee ensure avoid "
    "prevent handle retry timeout wait sleep wakeup signal notify done start stop reset "
    "initialize destroy attach detach probe configure enable disable pending active idle "
    "valid invalid empty full partial complete remaining available required optional"
).split()
_DIR_NAMES = (
    "sys dev kern net netinet netinet6 vm fs ufs ffs ext2fs nfs nfsclient lib libc libm libz "
    "libutil contrib crypto openssl include arch amd64 i386 arm powerpc sparc64 conf modules "
    "compat linux boot geom cam scsi ata usb pci isa acpi tests doc man tools bin sbin "
    "usr.bin usr.sbin gen stdio string stdlib rpc db hash btree ssl apps engines asn1 bn evp "
    "rsa x509 x509v3 md5 sha aes des heimdal kadmin krb5 gcc binutils gdb bind lex yacc "
    "share misc etc src common util test regress bench scripts mk files"
).split()
_SOURCE_EXTS = (  # (suffix, weight, kind, mode)
    (".c", 40, "c", 0o644), (".h", 22, "c", 0o644), (".S", 2, "c", 0o644),
    (".s", 1, "c", 0o644), (".cc", 3, "c", 0o644), (".y", 1, "c", 0o644),
    (".l", 1, "c", 0o644), (".3", 4, "roff", 0o644), (".8", 2, "roff", 0o644),
    (".mk", 2, "text", 0o644), ("Makefile", 4, "text", 0o644), (".sh", 3, "text", 0o755),
    (".pl", 2, "text", 0o755), (".py", 2, "text", 0o644), (".txt", 3, "text", 0o644),
    (".awk", 1, "text", 0o644), (".in", 2, "text", 0o644), (".m4", 1, "text", 0o644),
    (".html", 1, "text", 0o644), ("README", 1, "text", 0o644),
)
_EXT_CUM: list[int] = []
_acc = 0
for _e in _SOURCE_EXTS:
    _acc += _e[1]
    _EXT_CUM.append(_acc)
del _acc, _e


_AVOID = ("anus", "nig", "fag", "cum", "tit", "sex", "fuc", "fuk", "rape", "cock", "dick",
          "shit", "puta", "kill", "nazi", "piss", "slut", "homo", "jew", "gay", "ass", "nude",
          "porn", "anal", "butt", "bitch", "poo", "pee", "dam", "hell")


def _syllables(rng: random.Random) -> str:
    """A two-syllable made-up word, avoiding a few unfortunate ones."""
    while True:
        w = _pick(rng, _SYL) + _pick(rng, _SYL)
        if not any(a in w for a in _AVOID):
            return w


class _Corpus:
    """One text pool: bytes plus the offset of every line start (and the end)."""

    __slots__ = ("data", "offs", "nlines")

    def __init__(self, lines: list[str]):
        enc = [(ln + "\n").encode("ascii") for ln in lines]
        offs = [0]
        acc = 0
        for b in enc:
            acc += len(b)
            offs.append(acc)
        self.data = b"".join(enc)
        self.offs = offs
        self.nlines = len(enc)


class _Vocab:
    def __init__(self, rng: random.Random):
        def ident(parts: int) -> str:
            out = []
            for _ in range(parts):
                if rng.random() < 0.75:
                    out.append(_pick(rng, _TECH))
                else:
                    out.append(_syllables(rng))
            return "_".join(out)

        def pool(n: int, lo: int, hi: int) -> list[str]:
            seen: dict[str, None] = {}
            while len(seen) < n:
                seen[ident(lo + rng.randrange(hi - lo + 1))] = None
            return list(seen)

        self.vars = pool(500, 1, 2)
        self.funcs = pool(700, 2, 3)
        self.structs = pool(150, 1, 2)
        self.members = pool(300, 1, 2)
        self.macros = [m.upper() for m in pool(350, 2, 3)]
        self.headers = [
            f"{_pick(rng, ('sys', 'vm', 'net', 'netinet', 'machine', 'dev', 'openssl', 'fs'))}/"
            f"{h}.h" for h in pool(150, 1, 1)
        ]
        self.types = (["int", "u_int", "long", "size_t", "ssize_t", "uint32_t", "uint64_t",
                       "uint8_t", "off_t", "daddr_t", "char *", "const char *", "void *",
                       "bool", "u_char", "int64_t"]
                      + [f"struct {s} *" for s in self.structs[:40]])
        self.authors = [_syllables(rng) + _pick(rng, ("", "r", "n", "s")) for _ in range(60)]


def _words(rng: random.Random, lo: int, hi: int, topic: list[str] | None = None) -> str:
    """lo..hi words; with ``topic``, 70 % of them from that smaller list."""
    pool = topic if topic is not None and rng.random() < 0.7 else _WORDS
    return " ".join(_pick(rng, pool) for _ in range(lo + rng.randrange(hi - lo + 1)))


def _c_lines(rng: random.Random, v: _Vocab, target: int) -> list[str]:
    lines: list[str] = []
    size = 0
    P = _pick

    class cur:  # the names one "file region" uses: real code reuses a few names a lot
        vars = v.vars
        funcs = v.funcs
        members = v.members
        macros = v.macros
        structs = v.structs
        topic: list[str] = list(_WORDS)

    def words(lo: int, hi: int) -> str:
        return _words(rng, lo, hi, cur.topic)

    def localize() -> None:
        cur.vars = [P(rng, v.vars) for _ in range(5 + rng.randrange(7))] + ["error", "i", "sc"]
        cur.funcs = [P(rng, v.funcs) for _ in range(3 + rng.randrange(6))]
        cur.members = [P(rng, v.members) for _ in range(4 + rng.randrange(10))]
        cur.macros = [P(rng, v.macros) for _ in range(4 + rng.randrange(10))]
        cur.structs = [P(rng, v.structs) for _ in range(2 + rng.randrange(4))]
        cur.topic = [P(rng, _WORDS) for _ in range(25)]

    def num() -> str:
        r = rng.random()
        if r < 0.5:
            return str(rng.randrange(0, 16))
        if r < 0.8:
            return str(rng.randrange(16, 4096))
        return f"0x{rng.randrange(1 << 16):0{_pick(rng, (2, 4, 8))}x}"

    def expr() -> str:
        r = rng.randrange(9)
        a = P(rng, cur.vars)
        if r == 0:
            return a
        if r == 1:
            return num()
        if r == 2:
            return f"{a} + {num()}"
        if r == 3:
            return f"{a}->{P(rng, cur.members)}"
        if r == 4:
            return f"{P(rng, cur.funcs)}({a})"
        if r == 5:
            return f"({a} & {P(rng, cur.macros)})"
        if r == 6:
            return f"{a} << {rng.randrange(1, 16)}"
        if r == 7:
            return f"sizeof(struct {P(rng, cur.structs)})"
        return f"{a}[{P(rng, cur.vars)}]"

    def cond() -> str:
        r = rng.randrange(7)
        a = P(rng, cur.vars)
        if r == 0:
            return f"{a} == NULL"
        if r == 1:
            return f"{a} != {num()}"
        if r == 2:
            return f"{a} < {P(rng, cur.vars)}"
        if r == 3:
            return f"({a}->{P(rng, cur.members)} & {P(rng, cur.macros)}) != 0"
        if r == 4:
            return f"!{P(rng, cur.funcs)}({a})"
        if r == 5:
            return f"{a} >= {P(rng, cur.macros)}"
        return "error != 0"

    def args() -> str:
        return ", ".join(expr() if rng.random() < 0.4 else P(rng, cur.vars)
                         for _ in range(rng.randrange(0, 4)))

    def stmt(t: str) -> list[str]:
        r = rng.randrange(20)
        if r < 4:
            return [f"{t}{P(rng, cur.vars)} = {expr()};"]
        if r < 6:
            return [f"{t}{P(rng, cur.vars)}->{P(rng, cur.members)} = {expr()};"]
        if r < 9:
            return [f"{t}{P(rng, cur.funcs)}({args()});"]
        if r < 11:
            return [f"{t}error = {P(rng, cur.funcs)}({args()});",
                    f"{t}if (error != 0)", f"{t}\tgoto out;"]
        if r == 11:
            return [f"{t}/* {words(3, 10)}. */"]
        if r == 12:
            return [f"{t}KASSERT({cond()}, (\"%s: {words(2, 5)}\", __func__));"]
        if r == 13:
            return [f"{t}mtx_lock(&{P(rng, cur.vars)}->{P(rng, cur.members)});"]
        if r == 14:
            return [f"{t}{P(rng, cur.vars)} += {num()};"]
        if r == 15:
            return [f"{t}return ({expr()});"]
        if r == 16:
            return [f"{t}printf(\"{P(rng, cur.funcs)}: {words(2, 6)} %d\\n\", {P(rng, cur.vars)});"]
        return [f"{t}{P(rng, cur.vars)}++;"] if r == 17 else [f"{t}break;"]

    def block(t: str, depth: int, n: int) -> list[str]:
        out: list[str] = []
        for _ in range(n):
            r = rng.random()
            if depth < 3 and r < 0.12:
                out.append(f"{t}if ({cond()}) {{")
                out += block(t + "\t", depth + 1, rng.randrange(1, 5))
                if rng.random() < 0.3:
                    out.append(f"{t}}} else {{")
                    out += block(t + "\t", depth + 1, rng.randrange(1, 4))
                out.append(f"{t}}}")
            elif depth < 3 and r < 0.17:
                i = P(rng, ("i", "j", "n", "k"))
                out.append(f"{t}for ({i} = 0; {i} < {expr()}; {i}++) {{")
                out += block(t + "\t", depth + 1, rng.randrange(1, 4))
                out.append(f"{t}}}")
            elif depth < 2 and r < 0.19:
                out.append(f"{t}switch ({P(rng, cur.vars)}) {{")
                for _ in range(rng.randrange(2, 6)):
                    out.append(f"{t}case {P(rng, cur.macros)}:")
                    out += block(t + "\t", depth + 2, rng.randrange(1, 3))
                    out.append(f"{t}\tbreak;")
                out.append(f"{t}default:")
                out.append(f"{t}\tbreak;")
                out.append(f"{t}}}")
            else:
                out += stmt(t)
        return out

    nchunk = 0
    while size < target:
        if nchunk % 10 == 0:
            localize()
        nchunk += 1
        r = rng.random()
        chunk: list[str] = []
        if r < 0.08:
            chunk = [f"#include <{P(rng, v.headers)}>" for _ in range(rng.randrange(2, 10))] + [""]
        elif r < 0.18:
            chunk = [f"#define\t{P(rng, cur.macros)}\t{num()}"
                     + (f"\t/* {words(2, 6)} */" if rng.random() < 0.4 else "")
                     for _ in range(rng.randrange(3, 16))] + [""]
        elif r < 0.26:
            chunk = [f"struct {P(rng, cur.structs)} {{"]
            chunk += [f"\t{P(rng, v.types)}\t{P(rng, cur.members)};"
                      + (f"\t/* {words(1, 5)} */" if rng.random() < 0.5 else "")
                      for _ in range(rng.randrange(2, 14))]
            chunk += ["};", ""]
        else:
            if rng.random() < 0.6:
                chunk += ["/*"] + [f" * {words(4, 12)}" for _ in range(rng.randrange(1, 7))]
                chunk += [" */"]
            chunk.append(("static " if rng.random() < 0.6 else "") + P(rng, v.types).rstrip())
            params = ", ".join(f"{P(rng, v.types)}{'' if P(rng, v.types).endswith('*') else ' '}"
                               f"{P(rng, cur.vars)}" for _ in range(rng.randrange(0, 4))) or "void"
            chunk.append(f"{P(rng, cur.funcs)}({params})")
            chunk.append("{")
            chunk += [f"\t{P(rng, v.types)}\t{P(rng, cur.vars)};" for _ in range(rng.randrange(1, 6))]
            chunk.append("")
            chunk += block("\t", 0, rng.randrange(4, 30))
            if rng.random() < 0.4:
                chunk += ["out:"]
            chunk += [f"\treturn ({expr()});", "}", ""]
        lines += chunk
        size += sum(len(c) + 1 for c in chunk)
    return lines


def _text_lines(rng: random.Random, v: _Vocab, target: int) -> list[str]:
    lines: list[str] = []
    size = 0
    P = _pick
    topic: list[str] = []
    nchunk = 0
    while size < target:
        if nchunk % 10 == 0:
            topic = [P(rng, _WORDS) for _ in range(25)]
        nchunk += 1
        r = rng.randrange(8)
        f = P(rng, v.funcs)
        if r == 0:
            chunk = [f".Sh {P(rng, ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'RETURN VALUES', 'ERRORS', 'SEE ALSO', 'HISTORY'))}",
                     f".Nm {f}", f".Nd {_words(rng, 3, 8, topic)}"]
            chunk += [_words(rng, 6, 14, topic) for _ in range(rng.randrange(1, 6))]
            chunk += [f".Xr {P(rng, v.funcs)} {rng.randrange(1, 10)} ,", ".Pp"]
        elif r == 1:
            chunk = ["SRCS+=\t" + " ".join(f"{P(rng, v.funcs)}.c" for _ in range(rng.randrange(1, 6)))
                     for _ in range(rng.randrange(1, 6))]
            chunk += [f"CFLAGS+= -I${{.CURDIR}}/../{P(rng, _DIR_NAMES)} -D{P(rng, v.macros)}", ""]
        elif r == 2:
            chunk = [f"{f}: {P(rng, v.funcs)}.o {P(rng, v.funcs)}.o",
                     "\t${CC} ${CFLAGS} -o ${.TARGET} ${.ALLSRC}", ""]
        elif r == 3:
            var = P(rng, v.vars)
            chunk = [f"if [ -z \"${{{var}}}\" ]; then", f"\techo \"{_words(rng, 3, 9, topic)}\"",
                     f"\t{var}={P(rng, v.funcs)}", "fi"]
        elif r == 4:
            chunk = [f"# {_words(rng, 4, 12, topic)}" for _ in range(rng.randrange(1, 5))]
        elif r == 5:
            chunk = [f"{P(rng, v.vars).upper()}=\"{_words(rng, 1, 4, topic)}\"" for _ in range(rng.randrange(1, 5))]
        else:
            chunk = [_words(rng, 6, 14, topic) for _ in range(rng.randrange(2, 8))] + [""]
        lines += chunk
        size += sum(len(c) + 1 for c in chunk)
    return lines


class _Corpora:
    def __init__(self, seed: int):
        rng = _rng(seed, "corpus")
        self.vocab = _Vocab(rng)
        self.c = _Corpus(_c_lines(rng, self.vocab, 1 * MiB))
        self.text = _Corpus(_text_lines(rng, self.vocab, 384 * KiB))


@lru_cache(maxsize=4)
def _corpora(seed: int) -> _Corpora:
    return _Corpora(seed)


_LICENSE = (
    " * All rights reserved.\n *\n"
    " * Redistribution and use in source and binary forms, with or without\n"
    " * modification, are permitted provided that the following conditions\n"
    " * are met:\n"
    " * 1. Redistributions of source code must retain the above copyright\n"
    " *    notice, this list of conditions and the following disclaimer.\n"
    " * 2. Redistributions in binary form must reproduce the above copyright\n"
    " *    notice, this list of conditions and the following disclaimer in the\n"
    " *    documentation and/or other materials provided with the distribution.\n"
    " *\n"
    " * THIS SOFTWARE IS PROVIDED BY THE AUTHOR AND CONTRIBUTORS ``AS IS'' AND\n"
    " * ANY EXPRESS OR IMPLIED WARRANTIES ARE DISCLAIMED.\n */\n\n"
)


def _content(corp: _Corpora, cseed: int, kind: str, relpath: str, size: int) -> bytes:
    """Deterministic text of exactly ``size`` bytes for one file."""
    if size <= 0:
        return b""
    x = cseed & _M64
    x = (x * 6364136223846793005 + 1442695040888963407) & _M64
    year = 1994 + (x >> 33) % 17
    author = corp.vocab.authors[(x >> 20) % len(corp.vocab.authors)]
    rev = 1 + (x >> 40) % 200
    if kind == "c":
        head = (f"/*-\n * Copyright (c) {year} {author}\n{_LICENSE}"
                f"#include <sys/cdefs.h>\n__FBSDID(\"$FreeBSD: src/{relpath},v 1.{rev} "
                f"{year}/01/01 00:00:00 {author} Exp $\");\n\n")
        pool = corp.c
    elif kind == "roff":
        head = (f".\\\" Copyright (c) {year} {author}\n.\\\" $FreeBSD: src/{relpath},v 1.{rev} $\n"
                f".Dd January 1, {year}\n.Dt {os.path.basename(relpath).upper()}\n.Os\n")
        pool = corp.text
    else:
        head = f"# $FreeBSD: src/{relpath},v 1.{rev} {year}/01/01 {author} Exp $\n#\n"
        pool = corp.text
    hb = head.encode("ascii", "replace")
    if len(hb) >= size:
        return hb[: size - 1] + b"\n"
    parts = [hb]
    have = len(hb)
    data, offs, nl = pool.data, pool.offs, pool.nlines
    while have < size:
        x = (x * 6364136223846793005 + 1442695040888963407) & _M64
        k = 8 + (x >> 58)  # 8..71 lines
        i = (x >> 16) % (nl - k)
        piece = data[offs[i]: offs[i + k]]
        parts.append(piece)
        have += len(piece)
    out = b"".join(parts)
    return out[: size - 1] + b"\n"


# --------------------------------------------------------------------------------- sizes

def _draw_size(rng: random.Random, max_size: int) -> int:
    u = rng.random()
    if u < TAIL_FRACTION:
        x = TAIL_XM / (1.0 - rng.random()) ** (1.0 / TAIL_ALPHA)
    else:
        x = BODY_MEDIAN * math.exp(BODY_SIGMA * _normal(rng))
        x = min(max(x, BODY_MIN), BODY_MAX)
    return max(1, min(int(x), max_size))


def _draw_sizes(rng: random.Random, n: int, max_size: int, empty_files: bool,
                total: int | None) -> list[int]:
    sizes = [_draw_size(rng, max_size) for _ in range(n)]
    idx = list(range(n))
    rng.shuffle(idx)
    n_large = n // LARGE_PER_FILES if max_size > LARGE_MIN else 0
    large = idx[:n_large]
    lo, hi = math.log(LARGE_MIN + 1), math.log(max_size)
    for i in large:
        sizes[i] = min(max_size, max(LARGE_MIN + 1, int(math.exp(lo + (hi - lo) * rng.random()))))
    n_empty = 0
    if empty_files and n >= 2:
        n_empty = max(1, round(n * EMPTY_FRACTION))
    empty = idx[n_large: n_large + n_empty]
    for i in empty:
        sizes[i] = 0
    if total is not None:
        _scale_sizes(sizes, set(large), set(empty), total, max_size)
    return sizes


def _scale_sizes(sizes: list[int], large: set[int], empty: set[int], total: int,
                 max_size: int) -> None:
    n = len(sizes)
    nonempty = [i for i in range(n) if i not in empty]
    if not nonempty:
        if total:
            raise ValueError("total_size > 0 but every file is empty")
        return
    if total < len(nonempty) or total > len(nonempty) * max_size:
        raise ValueError(f"total_size {total} impossible for {len(nonempty)} non-empty files "
                         f"of at most {max_size} bytes")
    fixed = [i for i in nonempty if i in large]
    if sum(sizes[i] for i in fixed) > total // 4:
        fixed = []
    fixed_set = set(fixed)
    free = [i for i in nonempty if i not in fixed_set]
    target = total - sum(sizes[i] for i in fixed)
    if not free:
        free, fixed = fixed, []
        target = total
    for _ in range(8):
        cur = sum(sizes[i] for i in free)
        if cur == target:
            break
        adjustable = [i for i in free if (sizes[i] < max_size if cur < target else sizes[i] > 1)]
        if not adjustable:
            break
        adj_sum = sum(sizes[i] for i in adjustable)
        f = (adj_sum + (target - cur)) / adj_sum
        for i in adjustable:
            sizes[i] = min(max_size, max(1, int(round(sizes[i] * f))))
    # exact residual, biggest adjustable files first
    diff = target - sum(sizes[i] for i in free)
    order = sorted(free, key=lambda i: (-sizes[i], i))
    while diff:
        moved = False
        for i in order:
            if diff > 0 and sizes[i] < max_size:
                d = min(diff, max_size - sizes[i])
            elif diff < 0 and sizes[i] > 1:
                d = -min(-diff, sizes[i] - 1)
            else:
                continue
            sizes[i] += d
            diff -= d
            moved = True
            if not diff:
                break
        if not moved:  # only reachable if the fixed large files absorb the rest
            raise ValueError(f"cannot reach total_size {total}")


def _count_for_total(seed: int, total: int, max_size: int, empty_files: bool) -> int:
    rng = _rng(seed, "count")
    acc = 0
    n = 0
    while acc < total:
        n += 1
        acc += _draw_size(rng, max_size)
        if n % LARGE_PER_FILES == 0 and max_size > LARGE_MIN:
            acc += (LARGE_MIN + max_size) // 2 - 10 * KiB
    if empty_files and n >= 2:
        n = round(n / (1 - EMPTY_FRACTION))
    return max(1, n)


# --------------------------------------------------------------------------------- plan

class _Dir:
    __slots__ = ("parent", "depth", "cap", "subdirs", "files", "symlinks", "hardlinks",
                 "name", "path", "empty", "pre", "mtime", "props")

    def __init__(self, parent: _Dir | None, depth: int, cap: int):
        self.parent = parent
        self.depth = depth
        self.cap = cap
        self.subdirs: list[_Dir] = []
        self.files: list[int] = []
        self.symlinks: list[tuple[str, str, int]] = []   # (name, target, mtime)
        self.hardlinks: list[tuple[str, int]] = []       # (name, file id)
        self.name = ""
        self.path = ""
        self.empty = False
        self.pre = -1
        self.mtime = 0
        self.props = False


class _Plan:
    def __init__(self) -> None:
        self.dirs: list[_Dir] = []     # pre-order after _finish
        self.fname: list[str] = []
        self.fdir: list[_Dir] = []
        self.fsize: list[int] = []
        self.fkind: list[str] = []
        self.fmode: list[int] = []
        self.fmtime: list[int] = []
        self.dangling = 0


def _cap(rng: random.Random, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(10 * math.exp(0.5 * _normal(rng))))))


def _unique(names: set[str], want: str) -> str:
    if want not in names:
        names.add(want)
        return want
    stem, dot, ext = want.rpartition(".") if "." in want[1:] else (want, "", "")
    k = 2
    while True:
        cand = f"{stem}{k}{dot}{ext}" if dot else f"{want}{k}"
        if cand not in names:
            names.add(cand)
            return cand
        k += 1


def _file_name(rng: random.Random, v: _Vocab) -> tuple[str, str, int]:
    r = rng.randrange(_EXT_CUM[-1])
    suffix, _, kind, mode = _SOURCE_EXTS[bisect_right(_EXT_CUM, r)]
    if not suffix.startswith("."):
        return suffix, kind, mode
    stem = _pick(rng, v.funcs) if rng.random() < 0.6 else _pick(rng, v.vars)
    return stem + suffix, kind, mode


def _dir_name(rng: random.Random, v: _Vocab, depth: int) -> str:
    if rng.random() < (0.7 if depth <= 2 else 0.3):
        return _pick(rng, _DIR_NAMES)
    return _pick(rng, v.structs if rng.random() < 0.5 else v.vars)


def _long_name(rng: random.Random, v: _Vocab, length: int) -> str:
    parts: list[str] = []
    n = 0
    while n < length:
        w = _pick(rng, v.funcs)
        parts.append(w)
        n += len(w) + 1
    return "_".join(parts)[:length].rstrip("_.") or "x"


def _plan(seed: int, n_files: int, sizes: list[int], *, max_depth: int, fanout: tuple[int, int],
          symlinks: bool, hardlinks: bool, empty_dirs: bool, deep_paths: bool,
          mtime: int) -> _Plan:
    rng = _rng(seed, "plan")
    v = _corpora(seed).vocab
    lo, hi = fanout
    plan = _Plan()
    n_deep = (1 + n_files // 5000) if deep_paths and n_files >= 1 else 0
    n_tree = n_files - n_deep

    # 1. skeleton: attach directories to random non-full parents until the slots hold n_tree
    root = _Dir(None, 0, _cap(rng, lo, hi))
    dirs = [root]
    # eligible parents by depth; a level is chosen with weight (its size * DEPTH_DECAY**depth),
    # which keeps trees bushy near the top instead of piling up at max_depth
    levels: list[list[_Dir]] = [[] for _ in range(max_depth)]
    if max_depth > 0:
        levels[0].append(root)
    n_elig = len(levels[0]) if max_depth > 0 else 0
    free_total = root.cap
    while free_total < n_tree and n_elig:
        weights = [len(lv) * DEPTH_DECAY ** k for k, lv in enumerate(levels)]
        x = rng.random() * sum(weights)
        k = 0
        while k < len(weights) - 1 and (x >= weights[k] or not levels[k]):
            x -= weights[k]
            k += 1
        lv = levels[k]
        i = rng.randrange(len(lv))
        p = lv[i]
        c = _Dir(p, p.depth + 1, _cap(rng, lo, hi))
        p.subdirs.append(c)
        dirs.append(c)
        free_total += c.cap - 1
        if len(p.subdirs) >= p.cap:
            lv[i] = lv[-1]
            lv.pop()
            n_elig -= 1
        if c.depth < max_depth:
            levels[c.depth].append(c)
            n_elig += 1

    # 2. file slots
    free = [max(0, d.cap - len(d.subdirs)) for d in dirs]
    excess = sum(free) - n_tree
    while excess > 0:
        j = rng.randrange(len(dirs))
        if free[j] > (1 if not dirs[j].subdirs else 0):
            free[j] -= 1
            excess -= 1
        elif all(f <= (1 if not d.subdirs else 0) for f, d in zip(free, dirs)):
            # trees too small for one file per leaf: drop anywhere
            j2 = next(k for k, f in enumerate(free) if f > 0)
            free[j2] -= 1
            excess -= 1
    while excess < 0:  # max_depth too small for the fan-out: overfill
        free[rng.randrange(len(dirs))] += 1
        excess += 1

    # 3. empty directories
    if empty_dirs:
        parents = [d for d in dirs if d.depth < max_depth] or [root]
        for _ in range(max(1, len(dirs) // 100)):
            p = _pick(rng, parents)
            c = _Dir(p, p.depth + 1, 0)
            c.empty = True
            p.subdirs.append(c)
            dirs.append(c)
            free.append(0)

    # 4. names of directories and files (unique per directory)
    names: dict[int, set[str]] = {id(d): {".svn"} for d in dirs}
    for d in dirs:
        for c in d.subdirs:
            c.name = _unique(names[id(d)], _dir_name(rng, v, c.depth))
    slot_dirs = [d for d, k in zip(dirs, free) for _ in range(k)]
    for d in slot_dirs:
        fname, kind, mode = _file_name(rng, v)
        fname = _unique(names[id(d)], fname)
        _add_file(plan, d, fname, kind, mode, rng, mtime)

    # 5. deep chains (paths > DEEP_PATH_MIN characters)
    _set_paths(root)
    for _ in range(n_deep):
        starts = [d for d in dirs if not d.empty and d.depth <= max(0, max_depth - 3)] or [root]
        d = _pick(rng, starts)
        target = DEEP_PATH_MIN + 10 + rng.randrange(50)
        while d.depth < max_depth and len(d.path) + 1 + 80 < target:
            c = _Dir(d, d.depth + 1, 1)
            c.name = _unique(names.setdefault(id(d), {".svn"}),
                             _long_name(rng, v, 40 + rng.randrange(41)))
            c.path = f"{d.path}/{c.name}" if d.path else c.name
            names[id(c)] = {".svn"}
            d.subdirs.append(c)
            dirs.append(c)
            d = c
        need = target - len(d.path) - (1 if d.path else 0)
        base = _long_name(rng, v, max(12, min(240, need - 2)))
        fname, kind, mode = base + ".c", "c", 0o644
        _add_file(plan, d, _unique(names[id(d)], fname), kind, mode, rng, mtime)

    # sizes: shuffled draw, one per file id
    assert len(plan.fname) == n_files, (len(plan.fname), n_files)
    plan.fsize = list(sizes)

    # 6. pre-order (children by name) and directory attributes
    pre: list[_Dir] = []
    stack = [root]
    while stack:
        d = stack.pop()
        d.pre = len(pre)
        pre.append(d)
        d.subdirs.sort(key=lambda c: c.name)
        stack.extend(reversed(d.subdirs))
    plan.dirs = pre
    _set_paths(root)
    for d in pre:
        d.mtime = mtime + rng.randrange(MTIME_SPREAD)
        d.props = rng.random() < 0.2
    for d in pre:
        d.files.sort(key=lambda f: plan.fname[f])

    # 7. symlinks
    live = [d for d in pre if not d.empty]
    if symlinks and n_files >= 1:
        n_sym = max(3, n_files // 100)
        for k in range(n_sym):
            d = _pick(rng, live)
            kind = ("file", "dir", "dangling")[k] if k < 3 else None
            if kind is None:
                r = rng.random()
                kind = "file" if r < 0.75 else ("dir" if r < 0.92 else "dangling")
            target = None
            if kind == "dir":
                anc = set()
                a: _Dir | None = d
                while a is not None:
                    anc.add(id(a))
                    a = a.parent
                cands = [c for c in pre if id(c) not in anc]
                if cands:
                    t = _pick(rng, cands)
                    target = os.path.relpath(t.path or ".", d.path or ".")
                else:
                    kind = "file"
            if kind == "file":
                f = rng.randrange(n_files)
                fd = plan.fdir[f]
                tp = f"{fd.path}/{plan.fname[f]}" if fd.path else plan.fname[f]
                target = os.path.relpath(tp, d.path or ".")
            if kind == "dangling":
                t = _pick(rng, pre)
                miss = f"missing_{_pick(rng, v.funcs)}.h"
                tp = f"{t.path}/{miss}" if t.path else miss
                target = os.path.relpath(tp, d.path or ".")
                plan.dangling += 1
            assert target is not None
            stem = _pick(rng, v.vars)
            lname = _unique(names[id(d)], stem + (".h" if kind != "dir" else ""))
            d.symlinks.append((lname, target, mtime + rng.randrange(MTIME_SPREAD)))

    # 8. hard links: the target must already exist when the link is made (pre-order)
    if hardlinks and n_files >= 1:
        n_hl = max(1, n_files // 200)
        cum = []  # files created up to and including dir with pre index i
        acc = 0
        for d in pre:
            acc += len(d.files)
            cum.append(acc)
        by_pre = [f for d in pre for f in d.files]
        made = 0
        tries = 0
        while made < n_hl and tries < 100 * n_hl:
            tries += 1
            d = _pick(rng, live)
            avail = cum[d.pre]
            if avail == 0:
                continue
            f = by_pre[rng.randrange(avail)]
            stem, dot, ext = plan.fname[f].rpartition(".")
            base = f"{stem}_{_pick(rng, v.vars)}.{ext}" if dot else f"{plan.fname[f]}_{_pick(rng, v.vars)}"
            d.hardlinks.append((_unique(names[id(d)], base), f))
            made += 1
    return plan


def _add_file(plan: _Plan, d: _Dir, fname: str, kind: str, mode: int,
              rng: random.Random, mtime: int) -> None:
    fid = len(plan.fname)
    plan.fname.append(fname)
    plan.fdir.append(d)
    plan.fkind.append(kind)
    plan.fmode.append(mode)
    plan.fmtime.append(mtime + rng.randrange(MTIME_SPREAD))
    d.files.append(fid)


def _set_paths(root: _Dir) -> None:
    stack = [root]
    root.path = ""
    while stack:
        d = stack.pop()
        for c in d.subdirs:
            c.path = f"{d.path}/{c.name}" if d.path else c.name
            stack.append(c)


# --------------------------------------------------------------------------------- svn

_SVN_URL = "http://svn.example.org/repos/project"
_SVN_UUID = "7f4a3c2e-9b1d-4e8f-a6c5-0d2b8e1f3a97"
_SVN_SUBDIRS = ("prop-base", "props", "text-base", "tmp", "tmp/prop-base", "tmp/props",
                "tmp/text-base")


def _svn_date(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000000Z"


def _svn_props(props: list[tuple[str, str]]) -> bytes:
    out = []
    for k, val in props:
        out.append(f"K {len(k)}\n{k}\nV {len(val)}\n{val}\n")
    out.append("END\n")
    return "".join(out).encode()


# --------------------------------------------------------------------------------- write

class _Writer:
    def __init__(self, root: str, seed: int, plan: _Plan, svn: bool):
        self.root = root
        self.seed = seed
        self.plan = plan
        self.svn = svn
        self.corp = _corpora(seed)
        self.cbase = _subseed(seed, "content")
        # summary counters
        self.files = 0
        self.dirs = 0
        self.symlinks = 0
        self.hardlinks = 0
        self.total = 0
        self.largest = -1
        self.largest_path = ""
        self.empty_files = 0
        self.empty_dirs = 0
        self.src_files = 0
        self.src_bytes = 0
        self.svn_dirs = 0
        self.max_depth = 0
        self.longest = 0
        self.svn_dir_list: list[tuple[str, int]] = []

    def _p(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def _rel(self, d: _Dir, name: str) -> str:
        return f"{d.path}/{name}" if d.path else name

    def _note_path(self, rel: str) -> None:
        if len(rel) > self.longest:
            self.longest = len(rel)

    def content(self, fid: int) -> bytes:
        pl = self.plan
        rel = self._rel(pl.fdir[fid], pl.fname[fid])
        cseed = self.cbase ^ ((fid + 1) * 0x9E3779B97F4A7C15 & _M64)
        return _content(self.corp, cseed, pl.fkind[fid], rel, pl.fsize[fid])

    def write_file(self, rel: str, data: bytes, mode: int, mtime: int, source: bool) -> None:
        fd = os.open(self._p(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)
            os.utime(fd, (mtime, mtime))
        finally:
            os.close(fd)
        n = len(data)
        self.files += 1
        self.total += n
        if n == 0:
            self.empty_files += 1
        if n > self.largest:
            self.largest, self.largest_path = n, rel
        if source:
            self.src_files += 1
            self.src_bytes += n
        self._note_path(rel)

    def mkdir(self, rel: str, mtime: int | None = None) -> None:
        """Make a directory; with ``mtime`` its time is set in the final pass."""
        p = self._p(rel)
        os.mkdir(p, 0o700)
        os.chmod(p, 0o755)
        self.dirs += 1
        self._note_path(rel)
        if mtime is not None:
            self.svn_dir_list.append((rel, mtime))

    def run(self) -> None:
        pl = self.plan
        for d in pl.dirs:
            if d.parent is not None:
                self.mkdir(d.path)
                self.max_depth = max(self.max_depth, d.depth)
            else:
                os.chmod(self.root, 0o755)
            entries_meta: list[tuple[str, str, int, bytes | None, int]] = []
            for fid in d.files:
                data = self.content(fid)
                rel = self._rel(d, pl.fname[fid])
                self.write_file(rel, data, pl.fmode[fid], pl.fmtime[fid], True)
                if self.svn:
                    entries_meta.append((pl.fname[fid], "file", fid, data, pl.fmtime[fid]))
            for name, target, mt in d.symlinks:
                rel = self._rel(d, name)
                p = self._p(rel)
                os.symlink(target, p)
                os.utime(p, (mt, mt), follow_symlinks=False)
                self.symlinks += 1
                self._note_path(rel)
                if self.svn:
                    entries_meta.append((name, "link", -1, f"link {target}".encode(), mt))
            for name, fid in d.hardlinks:
                rel = self._rel(d, name)
                os.link(self._p(self._rel(pl.fdir[fid], pl.fname[fid])), self._p(rel),
                        follow_symlinks=False)
                self.hardlinks += 1
                self._note_path(rel)
                if self.svn:
                    entries_meta.append((name, "file", fid, self.content(fid), pl.fmtime[fid]))
            if not self.svn and d.parent is not None and not (
                    d.files or d.symlinks or d.hardlinks or d.subdirs):
                self.empty_dirs += 1
            if self.svn:
                self.write_svn(d, entries_meta)
        # directory times last, children before parents
        for rel, mt in reversed(self.svn_dir_list):
            os.utime(self._p(rel), (mt, mt))
        for d in reversed(pl.dirs):
            os.utime(self._p(d.path), (d.mtime, d.mtime))

    def write_svn(self, d: _Dir, ents: list[tuple[str, str, int, bytes | None, int]]) -> None:
        pl = self.plan
        base = self._rel(d, ".svn")
        rev = 1000 + (d.pre * 7919) % 9000
        url = f"{_SVN_URL}/trunk/{d.path}" if d.path else f"{_SVN_URL}/trunk"
        self.mkdir(base, d.mtime)
        self.svn_dirs += 1
        for sub in _SVN_SUBDIRS:
            self.mkdir(f"{base}/{sub}", d.mtime)
        self.empty_dirs += 4  # props, tmp/prop-base, tmp/props, tmp/text-base
        has_pb = False
        ents_sorted = sorted(ents, key=lambda e: e[0])
        rec = [f"10\n\ndir\n{rev}\n{url}\n{_SVN_URL}\n\n\n\n{_svn_date(d.mtime)}\n{rev}\n"
               f"jenkins\n{'has-props' if d.props else ''}\n\nsvn:special svn:externals "
               f"svn:needs-lock\n\n\n\n\n\n\n\n\n\n\n\n{_SVN_UUID}\n\x0c\n"]
        wc = [f"K 25\nsvn:wc:ra_dav:version-url\nV {len(url) + 12}\n/repos/!svn/ver/{rev}/"
              f"{d.path}\nEND\n"]
        for name, kind, fid, data, mt in ents_sorted:
            assert data is not None
            props: list[tuple[str, str]] = []
            if kind == "link":
                props = [("svn:special", "*")]
            else:
                k = pl.fkind[fid]
                if k in ("c", "roff"):
                    props = [("svn:eol-style", "native"), ("svn:keywords", "FreeBSD=%H")]
                if pl.fmode[fid] & 0o111:
                    props.append(("svn:executable", "*"))
            md5 = hashlib.md5(data).hexdigest()
            self.write_file(f"{base}/text-base/{name}.svn-base", data, 0o444, mt, False)
            if props:
                has_pb = True
                self.write_file(f"{base}/prop-base/{name}.svn-base", _svn_props(props), 0o444,
                                mt, False)
            erev = rev - (fid if fid >= 0 else d.pre) % 500
            rec.append(f"{name}\nfile\n\n\n\n\n{_svn_date(mt)}\n{md5}\n{_svn_date(mt)}\n{erev}\n"
                       f"{_pick_author(fid)}\n{'has-props' if props else ''}\n\n\n\n\n\n\n\n"
                       f"{len(data)}\n\x0c\n")
            path = f"{d.path}/{name}" if d.path else name
            wc.append(f"{name}\nK 25\nsvn:wc:ra_dav:version-url\nV {len(path) + 22}\n"
                      f"/repos/!svn/ver/{erev}/{path}\nEND\n")
        for c in d.subdirs:
            rec.append(f"{c.name}\ndir\n\x0c\n")
        if not has_pb:
            self.empty_dirs += 1
        if not ents_sorted:
            self.empty_dirs += 1  # text-base
        self.write_file(f"{base}/entries", "".join(rec).encode(), 0o444, d.mtime, False)
        self.write_file(f"{base}/all-wcprops", "".join(wc).encode(), 0o444, d.mtime, False)
        if d.props:
            self.write_file(f"{base}/dir-prop-base",
                            _svn_props([("svn:ignore", "*.o\n*.so\n*.a\n.depend\n")]),
                            0o444, d.mtime, False)


def _pick_author(fid: int) -> str:
    return ("jenkins", "builder", "dev1", "dev2", "release")[fid % 5 if fid >= 0 else 0]


# --------------------------------------------------------------------------------- API

def generate_tree(
    dest: Path | str,
    *,
    seed: int = 0,
    files: int | None = 2000,
    total_size: int | str | None = None,
    max_file_size: int | str = DEFAULT_MAX_FILE_SIZE,
    max_depth: int = 8,
    fanout: tuple[int, int] = (5, 30),
    svn: bool = False,
    symlinks: bool = True,
    hardlinks: bool = True,
    empty_files: bool = True,
    empty_dirs: bool = True,
    deep_paths: bool = True,
    mtime: int = DEFAULT_MTIME,
) -> TreeSummary:
    """Write a deterministic source-like tree below ``dest`` and return what was written.

    ``dest`` must be missing or an empty directory.  ``files`` is the number of distinct
    regular files outside ``.svn`` (symlinks and extra hard-link names come on top);
    ``files=None`` with ``total_size`` derives the count from the size distribution.
    ``total_size`` (bytes, or a string like "50M") makes the working files' sizes sum to
    exactly that.  See the module docstring for the distributions.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError("seed must be a non-negative int")
    max_size = parse_size(max_file_size)
    if max_size < 1:
        raise ValueError("max_file_size must be >= 1")
    total = parse_size(total_size) if total_size is not None else None
    if files is None:
        if total is None:
            raise ValueError("give files, total_size or both")
        files = _count_for_total(seed, total, max_size, empty_files)
    if files < 1:
        raise ValueError("files must be >= 1")
    lo, hi = fanout
    if not (1 <= lo <= hi):
        raise ValueError("fanout must be (lo, hi) with 1 <= lo <= hi")
    if max_depth < 0:
        raise ValueError("max_depth must be >= 0")

    dest = Path(dest)
    if dest.exists():
        if not dest.is_dir() or dest.is_symlink():
            raise FileExistsError(f"{dest} exists and is not a directory")
        if any(os.scandir(dest)):
            raise FileExistsError(f"{dest} is not empty")
    else:
        dest.mkdir(parents=True)

    sizes = _draw_sizes(_rng(seed, "sizes"), files, max_size, empty_files, total)
    plan = _plan(seed, files, sizes, max_depth=max_depth, fanout=(lo, hi), symlinks=symlinks,
                 hardlinks=hardlinks, empty_dirs=empty_dirs, deep_paths=deep_paths, mtime=mtime)
    w = _Writer(str(dest), seed, plan, svn)
    w.run()
    return TreeSummary(
        root=str(dest), seed=seed, files=w.files, dirs=w.dirs, symlinks=w.symlinks,
        hardlinks=w.hardlinks, total_bytes=w.total, largest_file=max(0, w.largest),
        largest_path=w.largest_path, empty_files=w.empty_files, empty_dirs=w.empty_dirs,
        dangling_symlinks=plan.dangling, source_files=w.src_files, source_bytes=w.src_bytes,
        svn_dirs=w.svn_dirs, max_depth=w.max_depth, longest_path=w.longest,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.workload",
        description="Write a seeded, deterministic source-like tree and print its summary.")
    ap.add_argument("dest", type=Path, help="directory to create (missing or empty)")
    ap.add_argument("--files", type=int, default=None,
                    help="regular files outside .svn (default 2000, or derived from --total-size)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--total-size", default=None, help="exact bytes of the working files, e.g. 50M")
    ap.add_argument("--max-file-size", default="4M")
    ap.add_argument("--max-depth", type=int, default=8)
    ap.add_argument("--fanout", default="5,30", help="entries per directory, LO,HI")
    ap.add_argument("--svn", action="store_true", help="add Subversion 1.6 .svn/ directories")
    ap.add_argument("--no-symlinks", action="store_true")
    ap.add_argument("--no-hardlinks", action="store_true")
    ap.add_argument("--no-empty", action="store_true", help="no empty files or directories")
    ap.add_argument("--no-deep-paths", action="store_true")
    ap.add_argument("--mtime", type=int, default=DEFAULT_MTIME, help="base mtime (epoch seconds)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    a = ap.parse_args(argv)
    files = a.files if a.files is not None else (None if a.total_size else 2000)
    try:
        lo, hi = (int(x) for x in a.fanout.split(","))
        s = generate_tree(a.dest, seed=a.seed, files=files, total_size=a.total_size,
                          max_file_size=a.max_file_size, max_depth=a.max_depth, fanout=(lo, hi),
                          svn=a.svn, symlinks=not a.no_symlinks, hardlinks=not a.no_hardlinks,
                          empty_files=not a.no_empty, empty_dirs=not a.no_empty,
                          deep_paths=not a.no_deep_paths, mtime=a.mtime)
    except (ValueError, OSError) as e:
        print(f"workload: {e}", file=sys.stderr)
        return 2
    print(json.dumps(s.to_dict(), indent=2) if a.json else s.format())
    return 0


if __name__ == "__main__":
    sys.exit(main())
