"""Words and names of the generated trees: identifier and word pools, a per-seed vocabulary
(Vocab), and the names of files (suffix by a src/ tree's mix), directories and the long
components of deep paths, unique within their directory."""

from __future__ import annotations

import random
from bisect import bisect_right

from .rng import pick


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
WORDS = (
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
DIR_NAMES = (
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
        w = pick(rng, _SYL) + pick(rng, _SYL)
        if not any(a in w for a in _AVOID):
            return w


class Vocab:
    def __init__(self, rng: random.Random):
        def ident(parts: int) -> str:
            out = []
            for _ in range(parts):
                if rng.random() < 0.75:
                    out.append(pick(rng, _TECH))
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
            f"{pick(rng, ('sys', 'vm', 'net', 'netinet', 'machine', 'dev', 'openssl', 'fs'))}/"
            f"{h}.h" for h in pool(150, 1, 1)
        ]
        self.types = (["int", "u_int", "long", "size_t", "ssize_t", "uint32_t", "uint64_t",
                       "uint8_t", "off_t", "daddr_t", "char *", "const char *", "void *",
                       "bool", "u_char", "int64_t"]
                      + [f"struct {s} *" for s in self.structs[:40]])
        self.authors = [_syllables(rng) + pick(rng, ("", "r", "n", "s")) for _ in range(60)]


def phrase(rng: random.Random, lo: int, hi: int, topic: list[str] | None = None) -> str:
    """lo..hi words; with ``topic``, 70 % of them from that smaller list."""
    pool = topic if topic is not None and rng.random() < 0.7 else WORDS
    return " ".join(pick(rng, pool) for _ in range(lo + rng.randrange(hi - lo + 1)))


def unique_name(names: set[str], want: str) -> str:
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


def file_name(rng: random.Random, v: Vocab) -> tuple[str, str, int]:
    r = rng.randrange(_EXT_CUM[-1])
    suffix, _, kind, mode = _SOURCE_EXTS[bisect_right(_EXT_CUM, r)]
    if not suffix.startswith("."):
        return suffix, kind, mode
    stem = pick(rng, v.funcs) if rng.random() < 0.6 else pick(rng, v.vars)
    return stem + suffix, kind, mode


def dir_name(rng: random.Random, v: Vocab, depth: int) -> str:
    if rng.random() < (0.7 if depth <= 2 else 0.3):
        return pick(rng, DIR_NAMES)
    return pick(rng, v.structs if rng.random() < 0.5 else v.vars)


def long_name(rng: random.Random, v: Vocab, length: int) -> str:
    parts: list[str] = []
    n = 0
    while n < length:
        w = pick(rng, v.funcs)
        parts.append(w)
        n += len(w) + 1
    return "_".join(parts)[:length].rstrip("_.") or "x"
