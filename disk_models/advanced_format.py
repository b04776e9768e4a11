"""A 4K-sector drive with 512-byte emulation (Advanced Format 512e).

The platters hold 4096-byte physical sectors; the host addresses 512-byte logical sectors,
eight to a physical sector.  Physical alignment is decided on the whole-disk LBA, i.e. after
adding the partition offset: a file system with 4 KiB blocks on a partition starting at sector
63 or 34..39/41 straddles physical sectors with every block (seed 003).

- Reads cost what they cost on a 512-byte drive: the drive reads whole physical sectors and
  hands back the part asked for (WD and Dell white papers; ref section 3).
- Reads: the drive reads whole physical sectors and hands back the part asked for (WD and
  Dell white papers; ref section 3): a misaligned media read starts at the first physical
  sector's boundary (a few sectors early); read-ahead covers the rest.  Nothing else.
- A write that covers a physical sector only partly must read it, merge, and write it back.
  Written through (write cache off, or FUA): the drive reads the partial sectors as it
  reaches them, then waits for them to come round again - about one extra revolution
  (Hitachi "Adaptive PRE_READ" disclosure).
- With the write cache on, the buffer holds whole physical sectors: a command whose partial
  end sector the drive does not hold completes only after that sector has been read from the
  media (after the destage operation in progress) - "the 512e HDD must perform READ-MODIFY-WRITE
  functions to complete the write operations" (Dell 4K FAQ), i.e. the pre-read is in the
  command's path, not deferred to destaging.  The merged whole sectors are destaged later with
  no further pre-read.  The pre-read is a media read, and the drive reads ahead after it (as
  after any read) until the next command is taken in, so a stream's next tail is often
  already in the buffer.  [inferred from the sources above and ref section 3]
- A physical sector the drive already holds (read segment, dirty whole sectors, pre-read
  earlier, or just written) needs no pre-read.

Calibration, wd-ears preset against published measurements (not seed 003); misaligned (4K+512)
time / aligned time; `simfs disks probe wd-ears` gives the first four rows:

  case                                              model   published
  1000 random FUA 4 KiB writes, 1 GiB span          2.39x   OSNews 2010: 22-24 s vs 7-8 s, ~3x
    (aligned: 7.62 ms per write)                            (7-8 ms per aligned write)
  same, whole disk                                  1.70x   Tom's Hardware / Dell: "up to 50%" loss
  1000 random cached 4 KiB writes, 1 GiB span       2.38x   Dell FAQ: random misaligned writes lose ~50%
  8000 sequential cached 4 KiB writes               11.4x   -
  2000 sequential cached 64 KiB writes              2.89x   apollo (USB 3.0 bridge): 83 vs 15.5 MB/s, 5.5x
  32768 x 4 KiB at 16 KiB stride, cache on          35x     des.no (FreeBSD, EARS): 28 s vs 73-80 s, ~2.8x

No parameter is fitted: the penalty is the pre-read's seek and rotation plus (written through)
one revolution.  Misses: OSNews' extra ~15 ms per write (~1.35 revolutions) suggests firmware
time the model leaves out; the des.no stride test is 12x too slow in the model - that drive
must hold the neighbouring physical sectors (its read-ahead or a whole-track buffer survives
its destaging), which the model does not know how to bound from a published figure; apollo's
sequential penalty went through a USB bridge with its own request sizes.
"""

from __future__ import annotations

from .base import DiskResult
from .rotating import DESTAGE_MAX, RotatingDrive, _start

#: written edge sectors remembered as clean in the buffer (bounded, oldest forgotten first)
CLEAN_MEMORY = 4096


class AdvancedFormatDrive(RotatingDrive):
    model = "advanced-format"
    summary = ("rotating drive with 4 KiB physical sectors behind 512-byte logical ones (512e), "
               "partition offset, read-modify-write of partly covered sectors")
    phys = 8

    def reset(self) -> None:
        super().reset()
        self._pre: set[int] = set()          # pre-read for pending dirty extents (never evicted)
        self._clean: dict[int, None] = {}    # edge sectors just written (FIFO-bounded)
        self._ra_pre = False                 # the read-ahead running follows a pre-read

    # -- what the drive holds -------------------------------------------------------------
    def _have(self, p: int, a: int, b: int) -> bool:
        """Does the drive hold every sector of physical sector p that [a, b) does not cover?"""
        if p in self._pre or p in self._clean:
            return True
        if self.nseg and self._segs.holds(p, p + 8):
            return True
        wc = self._wc
        if wc.dirty:
            return (a <= p or wc.covers(p, a)) and (b >= p + 8 or wc.covers(b, p + 8))
        return False

    def _edges(self, a: int, b: int) -> list[int]:
        """Physical sectors (first LBA) at the ends of [a, b) that need a pre-read."""
        pa = a & ~7
        out = []
        if a != pa and not self._have(pa, a, b):
            out.append(pa)
        if b & 7:
            tail = b & ~7
            if (tail != pa or a == pa) and not self._have(tail, a, b):
                out.append(tail)
        return out

    def _remember(self, p: int) -> None:
        clean = self._clean
        clean[p] = None
        if len(clean) > CLEAN_MEMORY:
            del clean[next(iter(clean))]

    # -- host commands --------------------------------------------------------------------
    def _read(self, a, b, t, ts):
        """The drive reads whole physical sectors: a media read starts at the physical sector
        holding `a` (its rotational target); the read-ahead that follows covers the rest of the
        last one.  (The bus time is charged for the whole sectors: at most 7 x 1.7 us more, and
        hidden under the slower media transfer.)"""
        return super()._read(a & ~7, b, t, ts)

    def _write(self, a, b, t, ts, sync):
        """Write-back, with a partly covered physical sector the buffer does not hold: the buffer
        keeps whole physical sectors, so the command completes only when the drive has read that
        sector from the media (after the destage operation in progress).  The merged, whole
        sectors are destaged later without a further pre-read.  The pre-read is a media read,
        and the drive reads ahead after it as after any read, until the next command comes."""
        wc = self._wc
        n = b - a
        if not (self.wc_on and not sync and n <= wc.capacity) or not (a & 7 or b & 7):
            return super()._write(a, b, t, ts, sync)
        parts = self._edges(a, b)
        if not parts:
            return super()._write(a, b, t, ts, sync)
        ovh = self.ovh
        tw = ts + ovh
        self._stop_ra(tw)
        while wc.dirty + n > wc.capacity:
            self._destage_one()
        if self._mech_free > tw:
            tw = self._mech_free
        t1 = self._preread(parts, tw)
        ifc = n * self.iface
        finish = t1 if t1 > ts + ovh + ifc else ts + ovh + ifc
        wc.add(a, b)
        self._mech_free = t1
        self._host_free = finish
        self._readahead_from(parts[-1], t1)
        start = _start(tw - ovh, ts)
        rmw = finish - start - ovh
        return DiskResult(t, start, finish, start - t, ovh, 0.0, 0.0, 0.0, 0.0, rmw, False)

    def _readahead_from(self, p: int, t1: float) -> None:
        """Read ahead after the pre-read of physical sector p, which ended at t1."""
        if not self.nseg or self.readahead <= 0:
            return
        want = min(self.capacity, p + 8 + self.readahead)
        seg = self._segs.find(p) or self._segs.allocate(p)
        self._segs.touch(seg)
        seg.start, seg.end = p, want
        self._ra_seg = seg
        self._ra_on = True
        self._ra_pre = True
        self._ra_lba0 = p + 8
        self._ra_t0 = t1
        self._ra_tend = t1 + self.layout.stream_time(p + 8, want)

    def _advance(self, t: float) -> None:
        """Read-ahead after a pre-read runs until the next command is taken in (then destaging
        resumes);
        other read-ahead gives way to destaging at once, as on the rotating drive."""
        if self._ra_on and self._ra_pre:
            self._stop_ra(t + self.ovh)      # it goes on while the drive takes the command in
        self._ra_pre = False
        super()._advance(t)

    # -- media writes ---------------------------------------------------------------------
    def _media_write(self, a: int, b: int, t: float):
        pa = a & ~7
        pb = (b + 7) & ~7
        if pa == a and pb == b:
            return super()._media_write(a, b, t)
        parts = self._edges(a, b)
        if not parts:
            res = super()._media_write(pa, pb, t)
        else:
            L = self.layout
            p0 = parts[0]
            seek, rot = self._position(t, p0, False)
            t1 = t + seek + rot + L.stream_time(p0, p0 + 8)
            self._cyl, self._head = L.track(p0 + 7)
            for p in parts[1:]:
                s2, r2 = self._position(t1, p, False)
                t1 += s2 + r2 + L.stream_time(p, p + 8)
                self._cyl, self._head = L.track(p + 7)
            s3, r3 = self._position(t1, pa, True)
            xfer = L.stream_time(pa, pb)
            t2 = t1 + s3 + r3 + xfer
            self._cyl, self._head = L.track(pb - 1)
            self._cursor = pb
            res = (seek, rot, xfer, t2 - t - seek - rot - xfer, t2)
        self._pre.discard(pa)
        self._pre.discard(pb - 8)
        self._remember(pa)
        self._remember(pb - 8)
        return res

    # -- destaging ------------------------------------------------------------------------
    def _chunk_end(self, i: int, a: int, e: int) -> int:
        """Destage whole physical sectors; while the host is still appending to this extent,
        keep its partial last sector back, for the next write may complete it."""
        b = e
        if b & 7 and i == self._wc._last and (b & ~7) > a:
            b &= ~7
        if b - a > DESTAGE_MAX:
            b = (a + DESTAGE_MAX) & ~7
        return b

    def _prereads(self, a: int, b: int, e: int):
        parts = self._edges(a, b)
        if parts and e != b and e & 7:
            # the held-back tail of the extent is usually on the same track: read it in passing
            tail = e & ~7
            if tail not in parts and not self._have(tail, a, e):
                parts.append(tail)
        return parts

    def _preread(self, parts, t: float) -> float:
        L = self.layout
        for p in parts:
            s, r = self._position(t, p, False)
            t += s + r + L.stream_time(p, p + 8)
            self._cyl, self._head = L.track(p + 7)
            self._pre.add(p)
        return t
