#!/usr/bin/env python3
"""Seed 004's alloctest in Python: fill an ftruncate'd MAP_SHARED file page by page.

usage: mmap_writer.py FILE SIZE [--order alloctest|shuffled|sequential] [--seed N]
                                [--pwrite] [--verify] [--quiet]

Write mode (default), as Andy Isaacson's alloctest.c (LKML, 2009-04-14) does:
    open(FILE, O_RDWR|O_CREAT, 0666); ftruncate(SIZE); mmap(MAP_SHARED);
    store into every 4 KiB page in the chosen order; msync(MS_SYNC); munmap; close.
  --order alloctest   page (i + 23) * 1000000007 % npages for i = 0..npages-1 (alloctest's
                      rnd(); a permutation because 1000000007 is prime), the default
  --order shuffled    a permutation from random.Random(--seed)
  --order sequential  0, 1, 2, ...
  --pwrite            the same order with os.pwrite instead of the mapping, then fsync
SIZE takes K/M/G suffixes (binary) or C-style integers (0x...). A partial last page is
written too (its first SIZE % 4096 bytes), so every byte of the file is checked.

Each page's bytes depend only on its page number: an 8-byte magic "SIMFSPG1", the page number
(u64 LE), then a 64-bit pattern derived from the page number repeated, and a CRC32 of the
page's first 4092 bytes in its last 4 bytes.  So files written in any order are identical.

--verify reads FILE back (plain reads, no mapping) and checks its size and every page;
exit 1 with "page N offset X: ..." on the first mismatch.

Exit codes: 0 ok; 1 verify failed; 2 bad usage or an OS error (one line on stderr).
Note: a store into a mapping that the file system cannot back (ENOSPC on msync-less
write-back, or a FUSE daemon that dies) raises SIGBUS, which ends the process with -7.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import struct
import sys
import time
import zlib

PAGE = 4096
MAGIC = b"SIMFSPG1"
PROG = "mmap_writer"
_M64 = (1 << 64) - 1


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(message)


def parse_size(s: str) -> int:
    t = s.strip().lower()
    mult = 1
    if t.endswith("ib"):
        t = t[:-2]
    elif t.endswith("b") and len(t) > 1 and t[-2] in "kmgt":
        t = t[:-1]
    if t and t[-1] in "kmgt":
        mult = 1024 ** ("kmgt".index(t[-1]) + 1)
        t = t[:-1]
    try:
        n = int(t, 0) * mult
    except ValueError:
        raise UsageError(f"bad SIZE: {s!r}") from None
    if n < 0:
        raise UsageError(f"bad SIZE: {s!r}")
    return n


def page_bytes(pgno: int) -> bytes:
    """The full 4096-byte pattern of page ``pgno``."""
    word = ((pgno + 1) * 0x9E3779B97F4A7C15) & _M64
    body = struct.pack("<Q", word) * ((PAGE - 20) // 8)
    head = MAGIC + struct.pack("<Q", pgno) + body + b"\0" * ((PAGE - 20) % 8)
    return head + struct.pack("<I", zlib.crc32(head))


def page_order(npages: int, order: str, seed: int) -> list[int] | range:
    if order == "sequential":
        return range(npages)
    if order == "alloctest":
        if npages and npages % 1000000007 == 0:  # pragma: no cover (a 4 PB file)
            raise UsageError("alloctest order is not a permutation for this size")
        return [((i + 23) * 1000000007) % npages for i in range(npages)]
    perm = list(range(npages))
    random.Random(seed).shuffle(perm)
    return perm


def write(path: str, size: int, order: str, seed: int, use_pwrite: bool) -> dict[str, float]:
    npages = (size + PAGE - 1) // PAGE
    pages = page_order(npages, order, seed)
    times: dict[str, float] = {}
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        os.ftruncate(fd, size)
        t0 = time.perf_counter()
        if size == 0:
            times["touch"] = 0.0
        elif use_pwrite:
            for p in pages:
                off = p * PAGE
                os.pwrite(fd, page_bytes(p)[: min(PAGE, size - off)], off)
            t1 = time.perf_counter()
            os.fsync(fd)
            t2 = time.perf_counter()
            times.update(touch=t1 - t0, sync=t2 - t1)
        else:
            m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                last = npages - 1
                tail = size - last * PAGE
                for p in pages:
                    off = p * PAGE
                    if p == last and tail != PAGE:
                        m[off:size] = page_bytes(p)[:tail]
                    else:
                        m[off:off + PAGE] = page_bytes(p)
                t1 = time.perf_counter()
                m.flush()  # msync(MS_SYNC) over the whole mapping
                t2 = time.perf_counter()
            finally:
                m.close()  # munmap
            t3 = time.perf_counter()
            times.update(touch=t1 - t0, sync=t2 - t1, munmap=t3 - t2)
    finally:
        t4 = time.perf_counter()
        os.close(fd)
        times["close"] = time.perf_counter() - t4
    return times


def verify(path: str, size: int) -> str | None:
    """None if FILE holds exactly the pattern of SIZE bytes, else a description."""
    with open(path, "rb", buffering=0) as f:
        actual = os.fstat(f.fileno()).st_size
        if actual != size:
            return f"size is {actual}, expected {size}"
        pgno = 0
        chunk = 256 * PAGE
        while True:
            buf = f.read(chunk)
            if not buf:
                break
            for i in range(0, len(buf), PAGE):
                got = buf[i:i + PAGE]
                want = page_bytes(pgno)[: len(got)]
                if got != want:
                    j = next(k for k in range(len(got)) if got[k] != want[k])
                    off = pgno * PAGE + j
                    return (f"page {pgno} offset {off} (0x{off:x}): byte 0x{got[j]:02x}, "
                            f"expected 0x{want[j]:02x}")
                pgno += 1
        if pgno * PAGE < size:
            return f"short read: {pgno} pages for {size} bytes"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("size")
    ap.add_argument("--order", choices=("alloctest", "shuffled", "sequential"),
                    default="alloctest")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pwrite", action="store_true")
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--quiet", "-q", action="store_true")
    try:
        a = ap.parse_args(argv)
        size = parse_size(a.size)
    except UsageError as e:
        print(f"{PROG}: usage error: {e}", file=sys.stderr)
        return 2
    try:
        if a.verify:
            problem = verify(a.file, size)
            if problem:
                print(f"{PROG}: verify failed: {a.file}: {problem}", file=sys.stderr)
                return 1
            if not a.quiet:
                print(f"verified {(size + PAGE - 1) // PAGE} pages of {a.file}")
            return 0
        t = write(a.file, size, a.order, a.seed, a.pwrite)
    except UsageError as e:
        print(f"{PROG}: usage error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        name = e.filename if e.filename is not None else a.file
        print(f"{PROG}: {name}: {e.strerror or e}", file=sys.stderr)
        return 2
    if not a.quiet:
        npages = (size + PAGE - 1) // PAGE
        how = "pwrite" if a.pwrite else "mmap"
        mb = size / (1 << 20)
        touch = t.get("touch", 0.0)
        print(f"touched {npages} pages ({a.order}, {how}) in {touch:f} seconds"
              + (f" ({mb / touch:.2f} MB/s)" if touch > 0 else ""))
        print(f"{'fsync' if a.pwrite else 'msync'} took {t.get('sync', 0.0):f} seconds")
        if "munmap" in t:
            print(f"munmap took {t['munmap']:f} seconds")
        print(f"close took {t['close']:f} seconds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
