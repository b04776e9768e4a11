"""`simfs policies`, `simfs frag` and `simfs layout`: what policies exist, and where they put things.

    simfs policies                      every allocator, inode placement, directory order and
                                        write-back policy, one line each, grouped by kind
    simfs policies show NAME            one policy in full (its module's description)
    simfs frag [-v] [-B] FILE...        a file's extents, as `filefrag` prints them on ext2
    simfs frag --image IMG /PATH...     the same, read from an unmounted image
    simfs layout IMAGE -o map.png       the volume drawn as a block map, coloured by owner

The top-level parser (simfs/cli.py) calls `register(subparsers)`. Bad input: one line on
stderr, exit status 2.

`simfs frag` reads the virtual extended attribute `user.simfs.extents` of a file on a
mounted simfs (simfs/fuse_ops.py; FIEMAP cannot reach a FUSE daemon), or asks
`Volume.extents` of an image opened read-only. Its output is filefrag's (e2fsprogs 1.47,
misc/filefrag.c) for a block-mapped file of the Linux kernel's ext2:

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
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import stat
import sys

from simfs.fs.inspect import fiemap_extents, fibmap_extents, frag_counts, perfection

EXTENTS_XATTR = "user.simfs.extents"

WRITEBACK_SUMMARIES = {
    "sync": "FFS's default mount: inodes, directory and new indirect blocks written synchronously "
            "when an operation changes them; data, bitmaps and descriptors delayed",
    "async": "everything delayed (an async mount): written by the syncer, on memory pressure, "
             "sync, fsync and unmount",
    "softdep": "everything delayed, written back in soft-updates order: bitmaps and descriptors, "
               "then inode blocks, then directory blocks, then the rest",
}


class _Fail(Exception):
    pass


def _fail(cmd: str, msg: str) -> int:
    print(f"simfs {cmd}: {msg}", file=sys.stderr)
    return 2


def register(subparsers) -> None:
    _register_policies(subparsers)
    _register_frag(subparsers)
    _register_layout(subparsers)


# policies ---------------------------------------------------------------------------------------
def _register_policies(subparsers) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "policies", help="list allocators, inode placements, directory orders, write-back",
        formatter_class=fmt,
        description="Every policy a mount can choose, with a one-line summary, grouped by kind "
                    "and the mount option that selects it. Defaults are marked '*'.",
        epilog="examples:\n  simfs policies\n  simfs policies --markdown\n"
               "  simfs policies show ext2fs-2010\n"
               "  simfs mount disk.img /mnt/sim -o alloc=ext2fs-2010,dirorder=hash")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_policies)
    sub = p.add_subparsers(dest="policies_command", metavar="{show}")
    s = sub.add_parser("show", help="one policy in full",
                       description="Print one policy's kind, option, summary and the description "
                                   "of the algorithm it replicates (its module's documentation).")
    s.add_argument("name")
    s.set_defaults(func=cmd_policies_show)


def policy_table() -> list[dict]:
    """[{kind, option, name, summary, default, ...}] for every policy, grouped by kind."""
    from policies import ALLOCATORS, INODE_PLACERS
    from policies.dirorder import DIR_ORDERS
    from simfs.blockio.cache import WRITEBACK_POLICIES
    from simfs.fs.volume import VolumeOptions

    d = VolumeOptions()
    rows = []
    for name, cls in ALLOCATORS.items():
        rows.append(dict(kind="allocator", option="alloc", name=name, summary=cls.summary,
                         default=name == d.alloc, decides=cls.decides, placement=cls.placer,
                         module=cls.__module__))
    for name, cls in INODE_PLACERS.items():
        rows.append(dict(kind="inode placement", option="inode_placement", name=name,
                         summary=cls.summary, default=False, module=cls.__module__))
    for name, cls in DIR_ORDERS.items():
        rows.append(dict(kind="directory order", option="dirorder", name=name, summary=cls.summary,
                         default=name == d.dirorder, module=cls.__module__))
    for name in WRITEBACK_POLICIES:
        rows.append(dict(kind="write-back", option="writeback", name=name,
                         summary=WRITEBACK_SUMMARIES.get(name, ""), default=name == d.writeback,
                         module="simfs.blockio.cache"))
    return rows


def _summary(r: dict) -> str:
    s = r["summary"]
    if r["kind"] == "allocator":
        when = "at write-back (delayed)" if r["decides"] == "flush" else "at write"
        s += f" [decides {when}; inodes: {r['placement']}]"
    return s


def cmd_policies(a) -> int:
    rows = policy_table()
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    if a.markdown:
        print("| kind | option | name | summary |")
        print("|---|---|---|---|")
        for r in rows:
            name = f"`{r['name']}`" + (" (default)" if r["default"] else "")
            print(f"| {r['kind']} | `{r['option']}=` | {name} | {_summary(r).replace('|', '/')} |")
        return 0
    width = max(len(r["name"]) for r in rows) + 2
    kind = None
    for r in rows:
        if r["kind"] != kind:
            if kind is not None:
                print()
            kind = r["kind"]
            note = " (default: the allocator's own, shown in [])" if kind == "inode placement" else ""
            print(f"{kind} (-o {r['option']}=NAME){note}")
        mark = "*" if r["default"] else " "
        print(f"  {mark}{r['name']:<{width}}{_summary(r)}")
    return 0


def cmd_policies_show(a) -> int:
    import importlib

    rows = [r for r in policy_table() if r["name"] == a.name]
    if not rows:
        names = sorted({r["name"] for r in policy_table()})
        return _fail("policies", f"unknown policy {a.name!r}; choose one of: {', '.join(names)}")
    for i, r in enumerate(rows):
        if i:
            print("\n" + "-" * 78 + "\n")
        print(f"{r['name']}: {r['kind']} (-o {r['option']}={r['name']})"
              + ("  [default]" if r["default"] else ""))
        print(f"  {r['summary']}")
        if r["kind"] == "allocator":
            print(f"  decides: {'at write-back (delayed allocation)' if r['decides'] == 'flush' else 'at write (immediate)'}")
            print(f"  inode placement unless -o inode_placement=: {r['placement']}")
        doc = (importlib.import_module(r["module"]).__doc__ or "").strip()
        if doc and r["kind"] != "write-back":
            print(f"\n{r['module']}:\n")
            print("\n".join("  " + ln if ln else "" for ln in doc.splitlines()))
    return 0


# frag --------------------------------------------------------------------------------------------
def _register_frag(subparsers) -> None:
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
               "  simfs frag --json /mnt/sim/f | jq .extents\n\n" + __doc__.split("\n\n", 3)[3])
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="print the extent table (filefrag -v)")
    p.add_argument("-B", "--bmap", action="store_true",
                   help="filefrag's FIBMAP path: ext2 extent count, perfection clause")
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
        for key in ("runs", "indirect", "delalloc"):
            doc[key] += more[key]
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


_FLAG_ORDER = ("last", "unknown_loc", "delalloc", "merged")


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
    flags += "".join(f + "," for f in _FLAG_ORDER if f in names)
    if (r["logical"] + r["length"]) * bs >= size:
        flags += "eof,"
    flags = flags[:-1]
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
    """filefrag_fibmap for an ext2 file: (extents found, data blocks, lines). As filefrag
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
    if verbose and first:
        lines.append("Filesystem type is: ef53")
        cyl = -(-doc["f_blocks"] // (bs * 8)) if doc["f_blocks"] else 0
        lines.append(f"Filesystem cylinder groups approximately {cyl}")
    nblocks = -(-doc["size"] // bs)
    if verbose:
        lines.append(f"File size of {name} is {doc['size']} ({nblocks} block{'' if nblocks == 1 else 's'} "
                     f"of {bs} bytes)")
    info = {"head": len(lines)}
    if bmap:
        n, count, body = frag_fibmap(doc, verbose, extent_format)
        best = perfection(doc, count)
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
        try:
            vol = Volume.open(a.image, VolumeOptions(read_only=True, disk="ideal"))
        except ImageError as e:
            return _fail("frag", str(e))
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


# layout ------------------------------------------------------------------------------------------
def _register_layout(subparsers) -> None:
    p = subparsers.add_parser(
        "layout", help="draw an image's block map (PNG), coloured by owner",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Open IMAGE read-only, walk its tree and draw every block as a cell coloured by "
                    "what owns it: free, file-system metadata (superblock and descriptor copies, "
                    "bitmaps, inode tables), directories, indirect blocks, extended-attribute "
                    "blocks, and the files of each top-level directory in a colour of its own "
                    "(or one hue per file). Cells run left to right, rows top to bottom; group "
                    "boundaries are drawn. With more blocks than cells, a cell mixes the colours "
                    "of its blocks, so sparse use looks pale.",
        epilog="examples:\n  simfs layout disk.img -o map.png\n"
               "  simfs layout disk.img -o g0.png --group 0 --title 'ext2fs-2010, tar x'\n"
               "  simfs layout disk.img -o map.png --width 512 --color-by file\n"
               "  simfs layout disk.img -o part.png --blocks 0:20000")
    p.add_argument("image", metavar="IMAGE")
    p.add_argument("-o", "--output", required=True, metavar="PNG")
    p.add_argument("--width", type=int, default=None, help="cells per row (default 256, or a divisor "
                                                          "of the group size near it)")
    p.add_argument("--group", type=int, default=None, metavar="N", help="draw only group N, one cell per block")
    p.add_argument("--blocks", default=None, metavar="FIRST:END", help="draw only blocks FIRST..END-1")
    p.add_argument("--cells", type=int, default=None, metavar="K",
                   help="blocks per cell (default: as few as keep the map under ~1000 rows)")
    p.add_argument("--color-by", choices=("top", "file"), default="top",
                   help="files coloured by top-level directory (default) or one hue per file")
    p.add_argument("--title", default=None, help="title (e.g. the allocator: it is not stored in the image)")
    p.add_argument("--dpi", type=int, default=100)
    p.set_defaults(func=cmd_layout)


def cmd_layout(a) -> int:
    from simfs.cli import layout
    from simfs.errors import ImageError
    rng = None
    if a.blocks:
        try:
            first, _, end = a.blocks.partition(":")
            rng = (int(first or 0), int(end) if end else None)
        except ValueError:
            return _fail("layout", f"--blocks {a.blocks!r}: expected FIRST:END (block numbers)")
    if a.width is not None and a.width < 1:
        return _fail("layout", "--width must be at least 1")
    if a.cells is not None and a.cells < 1:
        return _fail("layout", "--cells must be at least 1")
    try:
        m = layout.block_owners(a.image)
    except ImageError as e:
        return _fail("layout", str(e))
    try:
        info = layout.draw(m, a.output, width=a.width, group=a.group, blocks=rng, cells=a.cells,
                           color_by=a.color_by, title=a.title, dpi=a.dpi)
    except ValueError as e:
        return _fail("layout", str(e))
    except OSError as e:
        return _fail("layout", f"cannot write {a.output}: {e.strerror or e}")
    print(layout.format_summary(m, info))
    print(f"map written to {a.output}")
    return 0
