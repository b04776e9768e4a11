"""FreeBSD newfs (UFS2) as a request pattern on a modelled disk: seed 003 timed `newfs -f 4096
-b 32768` on a 10 GB partition, not mke2fs.

The pattern follows the UFS2 mkfs.c of 2009/2010 (sbin/newfs/mkfs.c; the copy read for this is
the one FreeBSD and OpenBSD share, docs/reference/disk-models.md section 3.1):
  * wtfs(fssize - 1, sectorsize): a one-sector test write at the end of the partition;
  * per cylinder group, initcg(): ONE wtfs of iobufsize = 4 * fs_bsize bytes (fs_bsize >=
    SBLOCKSIZE) at cgsblock(cg) - the superblock copy, the cylinder-group block and the first
    two blocks of inodes in a single write;
  * fsinit(): the root directory - alloc() reads and rewrites cg 0's block (fs_cgsize), one
    fragment of directory data, then iput() reads and rewrites cg 0 and reads and rewrites the
    inode block (fs_bsize); FreeBSD also makes .snap the same way;
  * wtfs of the superblock (SBLOCKSIZE at SBLOCK_UFS2 = 64 KiB), then the summary area
    (fs_cssize, fs_bsize at a time) at fs_csaddr.
wtfs/rdfs are pread/pwrite on the raw device: synchronous, one at a time, no buffer cache.
The geometry (fragments per group) is the largest whose cylinder-group block fits in one
fs_bsize block (CGSIZE in ufs/ffs/fs.h), with newfs's default density of 4 fragments per inode.
"""

from __future__ import annotations

from dataclasses import dataclass

import disk_models

SECTOR = 512
SBLOCK_UFS2 = 65536
SBLOCKSIZE = 8192
SIZEOF_CG = 168           # struct cg (UFS2 layout, ufs/ffs/fs.h)
SIZEOF_CSUM = 16          # struct csum
DINODE2 = 256             # struct ufs2_dinode
NFPI = 4                  # newfs default: bytes per inode = NFPI * fsize
MAXPHYS = 128 << 10       # maxcontig = MAXPHYS / bsize (newfs default)
FS_MAXCONTIG = 16


@dataclass(frozen=True)
class Geometry:
    size_frags: int
    fsize: int
    bsize: int
    fpg: int
    ipg: int
    ncg: int
    cgsize: int

    @property
    def frag(self) -> int:
        return self.bsize // self.fsize

    def cgbase(self, cg: int) -> int:
        return self.fpg * cg

    @property
    def sblkno(self) -> int:       # roundup(howmany(SBLOCK_UFS2 + SBLOCKSIZE, fsize), frag)
        n = -(-(SBLOCK_UFS2 + SBLOCKSIZE) // self.fsize)
        return -(-n // self.frag) * self.frag

    @property
    def cblkno(self) -> int:
        n = -(-SBLOCKSIZE // self.fsize)
        return self.sblkno + -(-n // self.frag) * self.frag

    @property
    def iblkno(self) -> int:
        return self.cblkno + self.frag

    @property
    def dblkno(self) -> int:
        return self.iblkno + self.ipg * DINODE2 // self.fsize

    @property
    def cssize(self) -> int:
        return -(-self.ncg * SIZEOF_CSUM // self.fsize) * self.fsize


def _cgsize(fpg: int, ipg: int, bsize: int, fsize: int) -> int:
    contig = min(MAXPHYS // bsize, FS_MAXCONTIG)
    return (SIZEOF_CG + 4 + 4 + 2 + -(-ipg // 8) + -(-fpg // 8)
            + (contig * 4 + -(-(fpg // (bsize // fsize)) // 8) if contig > 1 else 0))


def geometry(size_bytes: int, bsize: int = 32768, fsize: int = 4096) -> Geometry:
    """The largest cylinder group whose map fits in one block (fs_fpg), at the default density."""
    frag = bsize // fsize
    inopb = bsize // DINODE2
    density = NFPI * fsize

    def ipg_for(fpg):
        return -(-(fpg * fsize // density) // inopb) * inopb

    fpg = frag
    step = 1 << 20
    while step >= frag:                  # binary-ish search for the largest fitting fpg
        while _cgsize(fpg + step, ipg_for(fpg + step), bsize, fsize) <= bsize:
            fpg += step
        step //= 2
    fpg = fpg // frag * frag
    size_frags = size_bytes // fsize
    ncg = -(-size_frags // fpg)
    ipg = ipg_for(fpg)
    g = Geometry(size_frags, fsize, bsize, fpg, ipg, ncg, 0)
    # a last group too small for its own metadata is dropped, as mkfs does
    if ncg > 1 and size_frags - (ncg - 1) * fpg < g.dblkno + frag:
        ncg -= 1
        size_frags = ncg * fpg
    cgsize = -(-_cgsize(fpg, ipg, bsize, fsize) // fsize) * fsize
    return Geometry(size_frags, fsize, bsize, fpg, ipg, ncg, cgsize)


def requests(g: Geometry) -> list[tuple[str, int, int]]:
    """newfs's requests, in order: (op, byte offset in the partition, bytes)."""
    f = g.fsize
    iobufsize = 4 * g.bsize if g.bsize >= SBLOCKSIZE else SBLOCKSIZE + 3 * g.bsize
    out = [("W", g.size_frags * f - SECTOR, SECTOR)]                   # last-sector test write
    for cg in range(g.ncg):
        out.append(("W", (g.cgbase(cg) + g.sblkno) * f, iobufsize))      # initcg
    cg0 = g.cblkno * f                                                  # cgtod(fs, 0)
    csaddr = g.dblkno                                                   # summary: first data frags of cg 0
    data = csaddr + -(-g.cssize // f)
    data = -(-data // g.frag) * g.frag                                  # alloc() takes a whole block
    ino_blk = g.iblkno * f                                              # ino_to_fsba(ROOTINO), (.snap: same block)
    for d in range(2):                                                  # / and .snap (fsinit)
        out += [("R", cg0, g.cgsize), ("W", cg0, g.cgsize),             # alloc()
                ("W", (data + d * g.frag) * f, f),                      # the directory's fragment
                ("R", cg0, g.cgsize), ("W", cg0, g.cgsize),             # iput(): the inode bitmap
                ("R", ino_blk, g.bsize), ("W", ino_blk, g.bsize)]       # iput(): the inode block
    out.append(("W", SBLOCK_UFS2, SBLOCKSIZE))                          # sbwrite
    for i in range(0, g.cssize, g.bsize):
        out.append(("W", csaddr * f + i, min(g.bsize, g.cssize - i)))   # the summary area
    return out


def timed_newfs(disk: str, size_bytes: int, bsize: int = 32768, fsize: int = 4096,
                flush: bool = True) -> dict:
    """Issue newfs's requests one at a time (each waits for the previous, as pwrite on a raw
    device does) on a fresh `disk`; with `flush`, the drive's cache is written out at the end
    (the close of the device).  Returns the time and request counts."""
    g = geometry(size_bytes, bsize, fsize)
    model = disk_models.make_disk(disk)
    t = 0.0
    reads = writes = 0
    for op, off, n in requests(g):
        t = model.submit(op, off // SECTOR, n // SECTOR, t).finish
        reads += op == "R"
        writes += op == "W"
    t_cmd = t
    if flush:
        t = model.flush(t)
    return {"sim": t, "sim_cmd": t_cmd, "sim_drain": t - t_cmd,
            "counters": {"disk_reads": reads, "disk_writes": writes},
            "extra": {"cylinder_groups": g.ncg}}
