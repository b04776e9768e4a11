"""`simfs layout IMAGE -o map.png`: an image drawn as a block map, every block coloured by what
owns it (simfs.pictures.blockmap finds the owners, simfs.pictures.drawmap draws them), and
its figures (blockmap.summary_json) as tables (simfs/cli/tables.py). Bad input: one line on
stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import os

from simfs.cli import tables
from simfs.cli.common import fail
from simfs.pictures.blockmap import block_owners, groups, summary_json
from simfs.pictures.drawmap import BASE_DPI, DPI_RANGE, GROUP_AND_BLOCKS, MAX_WIDTH, draw


def register(subparsers) -> None:
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
               "  simfs layout disk.img -o part.png --blocks 0:20000 --color-by depth\n"
               "  simfs layout disk.img --json | jq .by_owner")
    p.add_argument("image", metavar="IMAGE")
    p.add_argument("-o", "--output", default=None, metavar="PNG", help="the map to write (optional with --json)")
    p.add_argument("--json", action="store_true",
                   help="print blocks by owner and per top-level directory as JSON (no text summary)")
    p.add_argument("--width", type=int, default=None, help="cells per row, 1 to %d (default 256, or a "
                                                          "divisor of the group size near it)" % MAX_WIDTH)
    p.add_argument("--group", type=int, default=None, metavar="N",
                   help="draw only group N, one cell per block (not with --blocks)")
    p.add_argument("--blocks", default=None, metavar="FIRST:END",
                   help="draw only blocks FIRST..END-1 (not with --group)")
    p.add_argument("--cells", type=int, default=None, metavar="K",
                   help="blocks per cell (default: as few as keep the map under ~1000 rows); at most "
                        "the blocks drawn / cells per row, so the map fills one row at least")
    p.add_argument("--color-by", choices=("auto", "top", "dir", "depth", "file"), default="auto",
                   help="file data coloured by top-level directory (top), by the directory the file "
                        "is in (dir: the biggest are named in the legend), by depth below / (depth), "
                        "one hue per file (file); auto (default): top when the files are spread over "
                        "3 or more top-level entries, else dir")
    p.add_argument("--title", default=None, help="title (e.g. the allocator: it is not stored in the image)")
    p.add_argument("--dpi", type=int, default=BASE_DPI,
                   help="resolution of the PNG, %d to %d (default %d: the map about 1,000 pixels wide; "
                        "200 doubles every dimension)" % (*DPI_RANGE, BASE_DPI))
    tables.add_markdown_option(p)
    p.set_defaults(func=cmd_layout)


def summary_tables(doc: dict) -> list:
    """What `--json` says (blockmap.summary_json), as text and tables: the geometry, blocks by
    owner with their share of the image, file data per top-level directory, the layout score
    and what was drawn."""
    total = doc["blocks"]
    out = [f"{os.path.basename(doc['image'])}: {total:,} blocks of {doc['block_size']} bytes, "
           f"{groups(doc['groups'])}",
           tables.Table("blocks by owner", ["owner", "blocks", "share"],
                        [(k, f"{n:,}", f"{100 * n / total:.1f}%") for k, n in doc["by_owner"].items() if n])]
    tops = sorted(doc["by_top_level_dir"], key=lambda t: -t["blocks"])
    if tops:
        out.append(tables.Table("file data by top-level dir", ["dir", "blocks", "files", "runs/file"],
                                [(t["dir"], f"{t['blocks']:,}", f"{t['files']:,}",
                                  f"{t['runs'] / t['files']:.2f}" if t["files"] else "0.00") for t in tops]))
    if doc.get("layout_score") is not None:
        out.append(f"layout score (files' blocks that follow their previous block): {doc['layout_score']:.3f}")
    d = doc.get("drawn")
    if d:
        out.append(f"drawn: blocks {d['first']:,}..{d['end'] - 1:,}, {d['cells_per_block']} "
                   f"block(s) per cell, {d['width']} x {d['rows']} cells")
    return out


def cmd_layout(a) -> int:
    from simfs.errors import ImageError
    rng = None
    if a.blocks:
        try:
            first, _, end = a.blocks.partition(":")
            rng = (int(first or 0), int(end) if end else None)
        except ValueError:
            return fail(f"--blocks {a.blocks!r}: expected FIRST:END (block numbers)", "layout")
    if a.group is not None and rng is not None:
        return fail(GROUP_AND_BLOCKS, "layout")
    if a.width is not None and a.width < 1:
        return fail("--width must be at least 1", "layout")
    if a.width is not None and a.width > MAX_WIDTH:
        return fail(f"--width {a.width}: at most {MAX_WIDTH} cells per row", "layout")
    if a.cells is not None and a.cells < 1:
        return fail("--cells must be at least 1", "layout")
    if not DPI_RANGE[0] <= a.dpi <= DPI_RANGE[1]:
        return fail(f"--dpi {a.dpi}: give {DPI_RANGE[0]} to {DPI_RANGE[1]} (default {BASE_DPI})", "layout")
    if a.output:
        from simfs.cli.common import picture_problem, same_file
        if same_file(a.output, a.image):
            return fail(f"-o {a.output} is the image: it would be written over; give another file", "layout")
        why = picture_problem(a.output, "-o")
        if why:
            return fail(why, "layout")
    from simfs.fuse.checks import UsageError, check_image
    try:
        check_image(a.image)          # missing, a directory, unreadable
        m = block_owners(a.image)
    except (UsageError, ImageError) as e:
        return fail(str(e), "layout")
    info = None
    if a.output is None:
        if a.json:
            import json
            print(json.dumps(summary_json(m), indent=1))
            return 0
        return fail("-o PNG is required (or --json for the figures alone)", "layout")
    try:
        info = draw(m, a.output, width=a.width, group=a.group, blocks=rng, cells=a.cells,
                    color_by=a.color_by, title=a.title, dpi=a.dpi)
    except ValueError as e:
        return fail(str(e), "layout")
    except OSError as e:
        return fail(f"cannot write {a.output}: {e.strerror or e}", "layout")
    if a.json:
        import json
        doc = summary_json(m, info)
        doc["output"] = a.output
        print(json.dumps(doc, indent=1))
        return 0
    tables.echo(summary_tables(summary_json(m, info)), a.markdown)
    print(f"map written to {a.output}")
    return 0
