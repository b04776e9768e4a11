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


class _CText:
    """C-like text, chunk by chunk (includes, defines, structs, functions), from a few names
    that change every ten chunks, as real code reuses a few names a lot."""

    def __init__(self, rng: random.Random, v: Vocab):
        self.rng = rng
        self.v = v
        self.vars = v.vars
        self.funcs = v.funcs
        self.members = v.members
        self.macros = v.macros
        self.structs = v.structs
        self.topic: list[str] = list(WORDS)

    def words(self, lo: int, hi: int) -> str:
        return phrase(self.rng, lo, hi, self.topic)

    def localize(self) -> None:
        rng, v = self.rng, self.v
        self.vars = [pick(rng, v.vars) for _ in range(5 + rng.randrange(7))] + ["error", "i", "sc"]
        self.funcs = [pick(rng, v.funcs) for _ in range(3 + rng.randrange(6))]
        self.members = [pick(rng, v.members) for _ in range(4 + rng.randrange(10))]
        self.macros = [pick(rng, v.macros) for _ in range(4 + rng.randrange(10))]
        self.structs = [pick(rng, v.structs) for _ in range(2 + rng.randrange(4))]
        self.topic = [pick(rng, WORDS) for _ in range(25)]

    def num(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.5:
            return str(rng.randrange(0, 16))
        if r < 0.8:
            return str(rng.randrange(16, 4096))
        return f"0x{rng.randrange(1 << 16):0{pick(rng, (2, 4, 8))}x}"

    def expr(self) -> str:
        rng = self.rng
        r = rng.randrange(9)
        a = pick(rng, self.vars)
        if r == 0:
            return a
        if r == 1:
            return self.num()
        if r == 2:
            return f"{a} + {self.num()}"
        if r == 3:
            return f"{a}->{pick(rng, self.members)}"
        if r == 4:
            return f"{pick(rng, self.funcs)}({a})"
        if r == 5:
            return f"({a} & {pick(rng, self.macros)})"
        if r == 6:
            return f"{a} << {rng.randrange(1, 16)}"
        if r == 7:
            return f"sizeof(struct {pick(rng, self.structs)})"
        return f"{a}[{pick(rng, self.vars)}]"

    def cond(self) -> str:
        rng = self.rng
        r = rng.randrange(7)
        a = pick(rng, self.vars)
        if r == 0:
            return f"{a} == NULL"
        if r == 1:
            return f"{a} != {self.num()}"
        if r == 2:
            return f"{a} < {pick(rng, self.vars)}"
        if r == 3:
            return f"({a}->{pick(rng, self.members)} & {pick(rng, self.macros)}) != 0"
        if r == 4:
            return f"!{pick(rng, self.funcs)}({a})"
        if r == 5:
            return f"{a} >= {pick(rng, self.macros)}"
        return "error != 0"

    def args(self) -> str:
        rng = self.rng
        return ", ".join(self.expr() if rng.random() < 0.4 else pick(rng, self.vars)
                         for _ in range(rng.randrange(0, 4)))

    def stmt(self, t: str) -> list[str]:
        rng = self.rng
        r = rng.randrange(20)
        if r < 4:
            return [f"{t}{pick(rng, self.vars)} = {self.expr()};"]
        if r < 6:
            return [f"{t}{pick(rng, self.vars)}->{pick(rng, self.members)} = {self.expr()};"]
        if r < 9:
            return [f"{t}{pick(rng, self.funcs)}({self.args()});"]
        if r < 11:
            return [f"{t}error = {pick(rng, self.funcs)}({self.args()});",
                    f"{t}if (error != 0)", f"{t}\tgoto out;"]
        if r == 11:
            return [f"{t}/* {self.words(3, 10)}. */"]
        if r == 12:
            return [f"{t}KASSERT({self.cond()}, (\"%s: {self.words(2, 5)}\", __func__));"]
        if r == 13:
            return [f"{t}mtx_lock(&{pick(rng, self.vars)}->{pick(rng, self.members)});"]
        if r == 14:
            return [f"{t}{pick(rng, self.vars)} += {self.num()};"]
        if r == 15:
            return [f"{t}return ({self.expr()});"]
        if r == 16:
            return [f"{t}printf(\"{pick(rng, self.funcs)}: {self.words(2, 6)} %d\\n\", {pick(rng, self.vars)});"]
        return [f"{t}{pick(rng, self.vars)}++;"] if r == 17 else [f"{t}break;"]

    def block(self, t: str, depth: int, n: int) -> list[str]:
        rng = self.rng
        out: list[str] = []
        for _ in range(n):
            r = rng.random()
            if depth < 3 and r < 0.12:
                out.append(f"{t}if ({self.cond()}) {{")
                out += self.block(t + "\t", depth + 1, rng.randrange(1, 5))
                if rng.random() < 0.3:
                    out.append(f"{t}}} else {{")
                    out += self.block(t + "\t", depth + 1, rng.randrange(1, 4))
                out.append(f"{t}}}")
            elif depth < 3 and r < 0.17:
                i = pick(rng, ("i", "j", "n", "k"))
                out.append(f"{t}for ({i} = 0; {i} < {self.expr()}; {i}++) {{")
                out += self.block(t + "\t", depth + 1, rng.randrange(1, 4))
                out.append(f"{t}}}")
            elif depth < 2 and r < 0.19:
                out.append(f"{t}switch ({pick(rng, self.vars)}) {{")
                for _ in range(rng.randrange(2, 6)):
                    out.append(f"{t}case {pick(rng, self.macros)}:")
                    out += self.block(t + "\t", depth + 2, rng.randrange(1, 3))
                    out.append(f"{t}\tbreak;")
                out.append(f"{t}default:")
                out.append(f"{t}\tbreak;")
                out.append(f"{t}}}")
            else:
                out += self.stmt(t)
        return out

    def chunk(self) -> list[str]:
        """One chunk: includes, defines, a struct or a function."""
        rng, v = self.rng, self.v
        r = rng.random()
        chunk: list[str] = []
        if r < 0.08:
            chunk = [f"#include <{pick(rng, v.headers)}>" for _ in range(rng.randrange(2, 10))] + [""]
        elif r < 0.18:
            chunk = [f"#define\t{pick(rng, self.macros)}\t{self.num()}"
                     + (f"\t/* {self.words(2, 6)} */" if rng.random() < 0.4 else "")
                     for _ in range(rng.randrange(3, 16))] + [""]
        elif r < 0.26:
            chunk = [f"struct {pick(rng, self.structs)} {{"]
            chunk += [f"\t{pick(rng, v.types)}\t{pick(rng, self.members)};"
                      + (f"\t/* {self.words(1, 5)} */" if rng.random() < 0.5 else "")
                      for _ in range(rng.randrange(2, 14))]
            chunk += ["};", ""]
        else:
            if rng.random() < 0.6:
                chunk += ["/*"] + [f" * {self.words(4, 12)}" for _ in range(rng.randrange(1, 7))]
                chunk += [" */"]
            chunk.append(("static " if rng.random() < 0.6 else "") + pick(rng, v.types).rstrip())
            params = ", ".join(f"{pick(rng, v.types)}{'' if pick(rng, v.types).endswith('*') else ' '}"
                               f"{pick(rng, self.vars)}" for _ in range(rng.randrange(0, 4))) or "void"
            chunk.append(f"{pick(rng, self.funcs)}({params})")
            chunk.append("{")
            chunk += [f"\t{pick(rng, v.types)}\t{pick(rng, self.vars)};" for _ in range(rng.randrange(1, 6))]
            chunk.append("")
            chunk += self.block("\t", 0, rng.randrange(4, 30))
            if rng.random() < 0.4:
                chunk += ["out:"]
            chunk += [f"\treturn ({self.expr()});", "}", ""]
        return chunk


def _c_lines(rng: random.Random, v: Vocab, target: int) -> list[str]:
    """At least `target` bytes of C-like lines."""
    text = _CText(rng, v)
    lines: list[str] = []
    size = 0
    nchunk = 0
    while size < target:
        if nchunk % 10 == 0:
            text.localize()
        nchunk += 1
        chunk = text.chunk()
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
