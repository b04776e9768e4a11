"""Lesson "1 block used, 7 free" (seed 000): FreeBSD's ext2fs allocator of 2010 ("first try to get
8 contiguous blocks") put a block where the block bitmap had a whole free byte, 8 free blocks, and
took the first of them, so small files sat 8 blocks apart with 7 free between, and reading them
back cost a seek (or a drive-cache read) per block. The same tree is unpacked with
the 2010 allocator and with its fix, on the seed's drive (WD1200JB), then read back cold."""

from __future__ import annotations

import numpy as np

from . import common

NAME = "seven-free"
SEED = "000"
TITLE = "1 block used, 7 free (seed 000)"
ALLOCS = ("ext2fs-2010", "ext2fs-2010-fixed")
EXPECT = ("tar read time, ext2fs-2010 / ext2fs-2010-fixed", ">")
STEPS = 3 * len(ALLOCS) + 1         # per allocator: unpack, read back, block map; the pictures

QUESTIONS = [
    "In the 2010 map, count the cells between two consecutive blocks of one colour. Where does the "
    "number 8 come from? (Hint: how the 2010 code searches the block bitmap, `policies/freebsd_ext2fs.py`.)",
    "Both images hold the same files and use the same number of data blocks. Why does the 2010 image "
    "need a longer stretch of the disk for them, and what does that do to the read-back?",
    "The read-back of the 2010 layout makes far more requests, but many of them are drive-cache "
    "hits. What is the drive doing, and why does it not save the 2010 layout completely?",
    "The seed measured 8.8x for `tar cf` with 4 KiB blocks. Run `simfs experiment run ext2fs-2010 "
    "--only '*1K*'` and explain why the effect is smaller with 1 KiB blocks.",
    "Which workload would not notice this bug at all? (Think of one large file written in one go.)",
]


def _gap8(m) -> float:
    """Of the steps from one file-data block to the next in the densest 4,096 blocks, the share
    that are exactly 8 blocks: 1 used, 7 free."""
    from simfs.pictures.blockmap import ROOTFILES, TOP0
    data = np.flatnonzero((m.owner == ROOTFILES) | (m.owner >= TOP0))
    if len(data) < 2:
        return 0.0
    start = data.min()
    d = data[data < start + 4096]
    gaps = np.diff(d)
    return float((gaps == 8).mean()) if len(gaps) else 0.0


def run(out, quick: bool, work, progress=common.quiet) -> common.Page:
    from simfs.blockio.trace import read_trace
    from simfs.pictures.blockmap import ROOTFILES, TOP0, block_owners
    from simfs.pictures.drawmap import draw
    from simfs.pictures.seekplot import movie, phase_series, plot_series

    files = 250 if quick else 1500
    page = common.Page(TITLE, out)
    page.say(f"""
A generated source tree ({files:,} files, seed 1) is unpacked (`tar xpf`, in-process) onto two fresh
4 KiB-block ext2 images on the WD1200JB model, one with FreeBSD's ext2fs allocator of 2010 and one
with the fix; then each is read back cold with `tar cf /dev/zero` and traced. Run it yourself:
`simfs lesson {NAME}{' --quick' if quick else ''}`.""")
    rows, series, fig = [], [], {"files": files, "tar_read_s": {}, "disk_reads": {}, "seeks": {},
                                "drive_cache_hits": {}, "runs_per_file": {}, "gap8_share": {}}
    for alloc in ALLOCS:
        progress(f"{alloc}: unpack")
        img = common.make_image(work / f"{alloc}.img", 256 << 20)
        spec = f"alloc={alloc},writeback=async,dataless,disk=wd1200jb"
        common.verb(img, spec, "unpack", "src", mkdir=True, source=common.tree(1, files))
        progress(None)
        progress(f"{alloc}: tar read")
        trace = work / f"{alloc}.csv"
        r = common.verb(img, spec + f",trace={trace}", "tar-read", "src")
        progress(None)
        progress(f"{alloc}: block map")
        c = r["time"]["total"]["counters"]
        m = block_owners(str(img))
        nfiles = sum(m.files.values())
        runs = sum(m.runs.values()) / nfiles if nfiles else 0.0
        first = int(np.flatnonzero((m.owner == ROOTFILES) | (m.owner >= TOP0)).min())
        draw(m, out / f"map-{alloc}.png", blocks=(first, first + 64 * 40), width=64, color_by="file",
             title=f"{alloc}: the first 2,560 blocks of file data")
        fig["tar_read_s"][alloc] = r["sim_cmd"]
        fig["disk_reads"][alloc] = c.get("disk_reads", 0)
        fig["seeks"][alloc] = c.get("seeks", 0)
        fig["drive_cache_hits"][alloc] = c.get("drive_cache_hits", 0)
        fig["runs_per_file"][alloc] = round(runs, 3)
        fig["gap8_share"][alloc] = round(_gap8(m), 3)
        rows.append([alloc, f"{r['sim_cmd']:.3f}", f"{c.get('disk_reads', 0):,}", f"{c.get('seeks', 0):,}",
                     f"{c.get('drive_cache_hits', 0):,}", f"{runs:.2f}", f"{100 * _gap8(m):.0f} %"])
        series.append((alloc, phase_series(read_trace(trace), None)))
        progress(None)
    a, b = (fig["tar_read_s"][x] for x in ALLOCS)
    fig["key"] = {"label": EXPECT[0], "num": a, "den": b, "ratio": a / b, "expect": EXPECT[1]}
    page.table(["allocator", "tar read (simulated s)", "disk reads", "seeks", "drive-cache hits",
                "data runs per file", "next block 8 further"], rows)
    page.say(f"""
**The 2010 layout reads back {a / b:.1f} times slower** ({a:.3f} s against {b:.3f} s; the seed measured
8.8x with 4 KiB blocks on its drive). In the 2010 image {100 * fig['gap8_share'][ALLOCS[0]]:.0f} % of the
steps from one data block to the next are exactly 8 blocks: the allocator looked for a whole free
byte of the block bitmap (8 free blocks) and took its first block. Compare with the full experiment,
`simfs experiment run ext2fs-2010` (a larger tree copied with two tars in a pipe; its figures are in
results/summary).""")
    page.picture(f"map-{ALLOCS[0]}.png", "ext2fs-2010: one cell per block, 64 per row, a colour per file. "
                 "Columns of single blocks 8 apart: 1 used, 7 free (white).")
    page.picture(f"map-{ALLOCS[1]}.png", "ext2fs-2010-fixed: the same files, each file's blocks together, "
                 "rows filled.")
    progress("pictures")
    plot_series(series, out / "tar-read.png", title="tar cf /dev/zero, cold: ext2fs-2010 vs fixed")
    page.picture("tar-read.png", "The cold read-back, seekwatcher-style: disk offset of every request, "
                 "MB/s, seeks/s and IO/s against simulated time.")
    movie(series[0][1], str(out / "tar-read-2010.gif"), frames=8 if quick else 60,
          title="ext2fs-2010: the head during tar cf /dev/zero")
    page.picture("tar-read-2010.gif", "The head over the disk during the 2010 read-back (a movie).")
    progress(None)
    page.questions(QUESTIONS)
    page.figures.update(fig)
    return page
