"""`simfs frag [-v] [-B] [-e] FILE...` (or `--image IMG /PATH...`): a file's extents, printed as
e2fsprogs' filefrag prints them; the counting is simfs.fs.inspection's (fiemap_extents,
fibmap_extents, perfection). A file that cannot be read: one line on stderr, exit status 1.

`simfs frag` reads the virtual extended attribute `user.simfs.extents` of a file on a
mounted simfs (simfs/fuse/operations.py; FIEMAP cannot reach a FUSE daemon), or asks
`Volume.extents` of an image opened read-only. Its output is filefrag's (e2fsprogs 1.47,
misc/filefrag.c) for a block-mapped file of the Linux kernel's ext2, and for an extent-mapped
file (ext4 profile) of its ext4, whose FIEMAP rows are the leaf extents, `unwritten` or
unflagged (no `merged`):

* default (filefrag's FIEMAP path): one table row per run of logically and physically
  consecutive blocks, as the kernel's ext2 reports them (Linux 6.18, checked against filefrag
  on a loop mount of the image); every row is flagged `merged` (the kernel merges a
  block-mapped file's blocks into extents), the last `last`, those reaching the end of file
  `eof`. A row counts as a new extent unless it continues the previous one physically
  (filefrag's `expected` / `expected_dense`): an indirect block between two runs makes two
  extents. No "perfection" clause: filefrag prints it only on the FIBMAP path.
* `-B` (filefrag's FIBMAP path): block by block; at logical blocks where the ext2 map needs
  new indirect blocks the expected next block moves past them (filefrag's `is_ext2` rule),
  so indirect blocks placed inline do not fragment. `-v` prints filefrag's "Discontinuity"
  lines, and the summary says ", perfection would be M extents" when M < N, with
  M = data blocks / (8 * block size - inodes / 8 / groups - 3) + 1 (filefrag's formula;
  e2fsprogs 1.47 never increments the block count it divides, so it always says 1).
  An extent-mapped file (EXT4_EXTENTS_FL, ext4 profile) is not `is_ext2`: no indirect-block
  rule, no perfection clause, no "cylinder groups" line, as filefrag prints it for a file of
  the kernel's ext4.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import sys

from simfs.cli.common import fail
from simfs.fs.inspection import PAGED_LISTS, fiemap_extents, fibmap_extents, frag_counts, is_ext2, perfection

EXTENTS_XATTR = "user.simfs.extents"


class _Fail(Exception):
    pass


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "frag", help="a file's extents, filefrag style",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Report how fragmented files are, as e2fsprogs' filefrag does for a file of "
                    "the kernel's ext2. On a mount the data comes from the virtual xattr "
                    "user.simfs.extents (no simulated time is charged for it); with --image, "
                    "from an unmounted image opened read-only (paths are inside the file system).",
        epilog="examples:\n  simfs frag /mnt/sim/big.iso\n  simfs frag -v /mnt/sim/big.iso\n"
               "  simfs frag -B /mnt/sim/big.iso     # ext2 count: inline indirect blocks do not "
               "fragment;\n                                     # 'perfection would be N extents'\n"
               "  simfs frag --image disk.img -v /src/Makefile\n"
               "  simfs frag --json /mnt/sim/f | jq .extents\n\n" + __doc__.split("\n\n", 1)[1])
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="print the extent table (filefrag -v)")
    p.add_argument("-B", "--bmap", action="store_true",
                   help="filefrag's FIBMAP path: block by block (a block-mapped file: the "
                        "indirect-block rule, perfection clause)")
    p.add_argument("-e", "--extent-format", action="store_true",
                   help="print the extent table, with -B too (filefrag -e; implies -v)")
    p.add_argument("--image", metavar="IMG", help="read FILEs (paths inside the file system) from this image")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document per file: runs, indirect blocks, both counts")
    p.set_defaults(func=cmd_frag)


def read_extents(path: str) -> dict:
    """The user.simfs.extents of a file on a mounted simfs, all pages joined."""
    try:
        raw = os.getxattr(path, EXTENTS_XATTR)
    except OSError as e:
        if e.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise _Fail(f"{path}: not on a simfs mount (no {EXTENTS_XATTR} attribute)") from None
        raise _Fail(f"{path}: {e.strerror}") from None
    doc = json.loads(raw)
    for k in range(1, doc.get("pages", 1)):
        more = json.loads(os.getxattr(path, f"{EXTENTS_XATTR}.{k}"))
        for key in PAGED_LISTS:
            doc[key] += more.get(key, [])
    return doc


def _image_extents(vol, path: str) -> dict:
    from simfs.errors import FSError
    ino = vol.root_ino
    for part in [p for p in path.split("/") if p]:
        try:
            ino = vol.lookup(ino, os.fsencode(part)).st_ino
        except FSError as e:
            raise _Fail(f"{path}: {os.strerror(e.errno)} (in {vol.path})") from None
    return vol.extents(ino)


def _log10(n: int) -> int:
    """filefrag's int_log10: floor(log10(n)), 0 for n < 10."""
    l = 0
    n //= 10
    while n:
        l += 1
        n //= 10
    return l


_FLAG_ORDER = ("last", "unknown_loc", "delalloc", "unwritten", "merged")


def _widths(doc: dict) -> tuple[int, int]:
    nblocks = -(-doc["size"] // doc["block_size"])
    return max(8, _log10(nblocks)), max(10, _log10(doc["f_blocks"]))


def _row_text(i: int, r: dict, expected: int, size: int, bs: int, lw: int, pw: int) -> str:
    unknown = "unknown_loc" in r["flags"]
    if expected and not unknown:
        flags = f"{expected:>{pw}}: "
    else:
        flags = " " * min(pw, 19) + "  "
    names = set(r["flags"])
    flags = (flags + "".join(f + "," for f in _FLAG_ORDER if f in names))[:-1]
    if (r["logical"] + r["length"]) * bs >= size:
        flags += ",eof"         # filefrag 1.47's print_flags cut the last character, flag or not
    length = 0 if unknown else r["length"]
    last_phys = r["physical"] + (0 if unknown else r["length"] - 1)
    return (f"{i:4d}: {r['logical']:>{lw}}..{r['logical'] + r['length'] - 1:>{lw}}: "
            f"{r['physical']:>{pw}}..{last_phys:>{pw}}: {length:6d}: {flags}")


def _header(lw: int, pw: int) -> str:
    return f" ext: {'logical_offset:':>{lw * 2 + 3}} {'physical_offset:':>{pw * 2 + 3}} length: " \
           f"{'expected:':>{pw + 1}} flags:"


def frag_fiemap(doc: dict, verbose: bool) -> tuple[int, list[str]]:
    """filefrag_fiemap: (extents found, table lines)."""
    total, rows = fiemap_extents(doc)
    lw, pw = _widths(doc)
    lines = [_header(lw, pw)] if rows and verbose else []
    if verbose:
        lines += [_row_text(i, r, r["expected"], doc["size"], doc["block_size"], lw, pw)
                  for i, r in enumerate(rows)]
    return total, lines


def frag_fibmap(doc: dict, verbose: bool, extent_format: bool) -> tuple[int, int, list[str]]:
    """filefrag_fibmap: (extents found, data blocks, lines). As filefrag
    prints them: with -e each extent's row, with -v a "Discontinuity" line after the row of
    every extent but the first and the last that did not start where expected."""
    extents, count = fibmap_extents(doc)
    lw, pw = _widths(doc)
    flags = ["merged"] if extent_format else []
    lines = [_header(lw, pw)] if extents and extent_format else []
    for i, e in enumerate(extents):
        if extent_format:
            lines.append(_row_text(i, dict(e, flags=flags), e["expected"], doc["size"], doc["block_size"],
                                   lw, pw))
        if verbose and e["expected"] and i < len(extents) - 1:
            lines.append(f"Discontinuity: Block {e['logical']} is at {e['physical']} (was {e['expected']})")
    return len(extents), count, lines


def frag_report(name: str, doc: dict, verbose: bool = False, bmap: bool = False,
                extent_format: bool = False, first: bool = True) -> tuple[list[str], dict]:
    """filefrag's frag_report: (output lines, numbers)."""
    bs = doc["block_size"]
    lines = []
    ext2 = is_ext2(doc)
    if verbose and first:
        lines.append("Filesystem type is: ef53")
        if ext2:
            cyl = -(-doc["f_blocks"] // (bs * 8)) if doc["f_blocks"] else 0
            lines.append(f"Filesystem cylinder groups approximately {cyl}")
    nblocks = -(-doc["size"] // bs)
    if verbose:
        lines.append(f"File size of {name} is {doc['size']} ({nblocks} block{'' if nblocks == 1 else 's'} "
                     f"of {bs} bytes)")
    info = {"head": len(lines)}
    if bmap:
        n, count, body = frag_fibmap(doc, verbose, extent_format)
        best = perfection(doc, count) if ext2 else 0
    else:
        n, body = frag_fiemap(doc, verbose)
        best = 0
    lines += body
    s = f"{name}: 1 extent found" if n == 1 else f"{name}: {n} extents found"
    if best and best < n:
        s += f", perfection would be {best} extent{'s' if best > 1 else ''}"
    lines.append(s)
    info.update(extents=n, perfection=best or None)
    return lines, info


def cmd_frag(a) -> int:
    vol = None
    if a.image:
        from simfs.errors import ImageError
        from simfs.fs.volume import Volume, VolumeOptions
        from simfs.fuse.checks import UsageError, check_image
        try:
            check_image(a.image)          # missing, a directory, unreadable
            vol = Volume.open(a.image, VolumeOptions(read_only=True, disk="ideal"))
        except (UsageError, ImageError) as e:
            return fail(str(e), "frag")
    if a.extent_format:      # filefrag -e: a table on the FIBMAP path too (implies -v)
        a.verbose = True
    status = 0
    seen_dev = set()
    try:
        for f in a.files:
            try:
                doc = _image_extents(vol, f) if vol else read_extents(f)
            except _Fail as e:
                print(f"simfs frag: {e}", file=sys.stderr)
                status = 1
                continue
            if a.json:
                out = {"file": f, **frag_counts(doc), **doc}
                print(json.dumps(out))
                continue
            dev = a.image or os.stat(f).st_dev
            lines, info = frag_report(f, doc, a.verbose, a.bmap, a.extent_format, first=dev not in seen_dev)
            seen_dev.add(dev)
            if a.bmap and stat.S_ISDIR(doc["mode"]):     # the kernel refuses FIBMAP on directories
                if info["head"]:
                    print("\n".join(lines[:info["head"]]), flush=True)
                print(f"{f}: FIBMAP unsupported", file=sys.stderr)
                status = 1
                continue
            print("\n".join(lines))
    finally:
        if vol is not None:
            vol.close()
    return status
