"""File contents: text of exactly the planned size, C-like code (or make/shell/roff text for
non-C names) assembled from whole lines of a per-seed corpus of ~1 MiB built from the
vocabulary, behind a per-file header naming the file. They compress like source (gzip -6:
~3.3x), not like random bytes."""

from __future__ import annotations

import os
import random
from functools import lru_cache

from simfs.units import KiB, MiB

from .names import DIR_NAMES, WORDS, Vocab, phrase
from .rng import M64, pick, seeded


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


def _c_lines(rng: random.Random, v: Vocab, target: int) -> list[str]:
    lines: list[str] = []
    size = 0
    P = pick

    class cur:  # the names one "file region" uses: real code reuses a few names a lot
        vars = v.vars
        funcs = v.funcs
        members = v.members
        macros = v.macros
        structs = v.structs
        topic: list[str] = list(WORDS)

    def words(lo: int, hi: int) -> str:
        return phrase(rng, lo, hi, cur.topic)

    def localize() -> None:
        cur.vars = [P(rng, v.vars) for _ in range(5 + rng.randrange(7))] + ["error", "i", "sc"]
        cur.funcs = [P(rng, v.funcs) for _ in range(3 + rng.randrange(6))]
        cur.members = [P(rng, v.members) for _ in range(4 + rng.randrange(10))]
        cur.macros = [P(rng, v.macros) for _ in range(4 + rng.randrange(10))]
        cur.structs = [P(rng, v.structs) for _ in range(2 + rng.randrange(4))]
        cur.topic = [P(rng, WORDS) for _ in range(25)]

    def num() -> str:
        r = rng.random()
        if r < 0.5:
            return str(rng.randrange(0, 16))
        if r < 0.8:
            return str(rng.randrange(16, 4096))
        return f"0x{rng.randrange(1 << 16):0{pick(rng, (2, 4, 8))}x}"

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


def _text_lines(rng: random.Random, v: Vocab, target: int) -> list[str]:
    lines: list[str] = []
    size = 0
    P = pick
    topic: list[str] = []
    nchunk = 0
    while size < target:
        if nchunk % 10 == 0:
            topic = [P(rng, WORDS) for _ in range(25)]
        nchunk += 1
        r = rng.randrange(8)
        f = P(rng, v.funcs)
        if r == 0:
            chunk = [f".Sh {P(rng, ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'RETURN VALUES', 'ERRORS', 'SEE ALSO', 'HISTORY'))}",
                     f".Nm {f}", f".Nd {phrase(rng, 3, 8, topic)}"]
            chunk += [phrase(rng, 6, 14, topic) for _ in range(rng.randrange(1, 6))]
            chunk += [f".Xr {P(rng, v.funcs)} {rng.randrange(1, 10)} ,", ".Pp"]
        elif r == 1:
            chunk = ["SRCS+=\t" + " ".join(f"{P(rng, v.funcs)}.c" for _ in range(rng.randrange(1, 6)))
                     for _ in range(rng.randrange(1, 6))]
            chunk += [f"CFLAGS+= -I${{.CURDIR}}/../{P(rng, DIR_NAMES)} -D{P(rng, v.macros)}", ""]
        elif r == 2:
            chunk = [f"{f}: {P(rng, v.funcs)}.o {P(rng, v.funcs)}.o",
                     "\t${CC} ${CFLAGS} -o ${.TARGET} ${.ALLSRC}", ""]
        elif r == 3:
            var = P(rng, v.vars)
            chunk = [f"if [ -z \"${{{var}}}\" ]; then", f"\techo \"{phrase(rng, 3, 9, topic)}\"",
                     f"\t{var}={P(rng, v.funcs)}", "fi"]
        elif r == 4:
            chunk = [f"# {phrase(rng, 4, 12, topic)}" for _ in range(rng.randrange(1, 5))]
        elif r == 5:
            chunk = [f"{P(rng, v.vars).upper()}=\"{phrase(rng, 1, 4, topic)}\"" for _ in range(rng.randrange(1, 5))]
        else:
            chunk = [phrase(rng, 6, 14, topic) for _ in range(rng.randrange(2, 8))] + [""]
        lines += chunk
        size += sum(len(c) + 1 for c in chunk)
    return lines


class Corpora:
    def __init__(self, seed: int):
        rng = seeded(seed, "corpus")
        self.vocab = Vocab(rng)
        self.c = _Corpus(_c_lines(rng, self.vocab, 1 * MiB))
        self.text = _Corpus(_text_lines(rng, self.vocab, 384 * KiB))


@lru_cache(maxsize=4)
def corpora(seed: int) -> Corpora:
    return Corpora(seed)


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


def source_text(corp: Corpora, cseed: int, kind: str, relpath: str, size: int) -> bytes:
    """Deterministic text of exactly ``size`` bytes for one file."""
    if size <= 0:
        return b""
    x = cseed & M64
    x = (x * 6364136223846793005 + 1442695040888963407) & M64
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
        x = (x * 6364136223846793005 + 1442695040888963407) & M64
        k = 8 + (x >> 58)  # 8..71 lines
        i = (x >> 16) % (nl - k)
        piece = data[offs[i]: offs[i + k]]
        parts.append(piece)
        have += len(piece)
    out = b"".join(parts)
    return out[: size - 1] + b"\n"
