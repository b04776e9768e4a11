"""Where each LBA lies on the platters, and how long a sequential stream takes.

Zoned recording: zone z has `spt[z]` sectors per track and the same number of cylinders as
every other zone; tracks fill cylinder by cylinder (all heads of a cylinder, then the next
cylinder inwards).  Sector s of track k (within its zone) starts at angle

    base[z] + (s + skew_k) / spt[z]          (in revolutions, mod 1)
    skew_k = ((k - c) * tsk + c * csk) mod spt,   c = k // heads

so each head switch shifts the next track by `tsk` sectors and each cylinder switch by `csk`
sectors: the skew that lets a sequential stream cross a track without losing a revolution
(DiskSim's "skew for track/cylinder switch").  `base[z]` chains the zones the same way.  Angles
are measured against absolute simulated time (angle(t) = t / t_rev mod 1), so a request's
rotational wait is known from its time alone.
"""

from __future__ import annotations

import math
from bisect import bisect_right

SECTOR = 512


class Layout:
    """Zoned LBA -> (cylinder, head, angle) map.  Pure arithmetic; no I/O."""

    def __init__(self, capacity: int, heads: int, t_rev: float, zone_spt: list[int], zone_cyls: list[int],
                 head_switch: float, cyl_switch: float, *, first_cyls=None, track_skews=None, cyl_skews=None,
                 first_offsets=None, zone_blocks=None):
        """Zone z: `zone_spt[z]` sectors per track over `zone_cyls[z]` cylinders.  By default
        zones are contiguous, skews are the switch times rounded up to sectors and each zone's
        first sector follows the last one's skew.  A measured layout (a DiskSim .model) gives
        instead each zone's first cylinder (`first_cyls`: spare cylinders between zones count in
        seek distances), its skews in sectors, the sector its first block starts at
        (`first_offsets`) and the blocks it holds (`zone_blocks`: spares at the zone's end)."""
        if len(zone_spt) != len(zone_cyls) or not zone_spt:
            raise ValueError("zone tables must be non-empty and of equal length")
        self.capacity, self.heads, self.t_rev = capacity, heads, t_rev
        self.zstart: list[int] = []
        self.zend: list[int] = []
        self.zcyl0: list[int] = []
        self.zcyls: list[int] = []
        self.zspt: list[int] = []
        self.zst: list[float] = []          # seconds per sector
        self.ztsk: list[int] = []           # track skew, sectors
        self.zcsk: list[int] = []           # cylinder skew, sectors
        self.zbase: list[float] = []        # angle of the zone's first sector, revolutions
        lba = cyl = 0
        base = 0.0
        for z, (spt, ncyl) in enumerate(zip(zone_spt, zone_cyls)):
            if spt < 1 or ncyl < 1:
                raise ValueError("every zone needs at least one cylinder and one sector per track")
            st = t_rev / spt
            # Skews are the head-switch and one-cylinder-seek times rounded up to whole sectors.
            tsk = min(spt - 1, math.ceil(head_switch / st - 1e-9)) if head_switch > 0 else 0
            csk = min(spt - 1, math.ceil(cyl_switch / st - 1e-9)) if cyl_switch > 0 else 0
            if track_skews is not None:
                tsk, csk = int(track_skews[z]) % spt, int(cyl_skews[z]) % spt
            if first_offsets is not None:
                base = (first_offsets[z] % spt) / spt
            elif z:
                base = (base + csk / spt) % 1.0
            if first_cyls is not None:
                if first_cyls[z] < cyl:
                    raise ValueError(f"zone {z} starts at cylinder {first_cyls[z]}, inside the zone before it")
                cyl = first_cyls[z]
            size = ncyl * heads * spt if zone_blocks is None else zone_blocks[z]
            if size < 1:
                raise ValueError(f"zone {z} holds no blocks")
            self.zstart.append(lba)
            self.zend.append(min(lba + size, capacity))
            self.zcyl0.append(cyl)
            self.zcyls.append(ncyl)
            self.zspt.append(spt)
            self.zst.append(st)
            self.ztsk.append(tsk)
            self.zcsk.append(csk)
            self.zbase.append(base)
            # angle just after the zone's last track, for chaining the next zone's base
            k = ncyl * heads - 1
            c = k // heads
            base = (base + (((k - c) * tsk + c * csk) % spt) / spt) % 1.0
            lba += size
            cyl += ncyl
            if lba >= capacity:
                break
        if lba < capacity:
            raise ValueError(f"zone table holds {lba} sectors, fewer than the capacity {capacity}")
        self.cylinders = cyl
        self.nzones = len(self.zstart)
        self._lastz = 0

    # -- lookups ---------------------------------------------------------------------------
    def zone(self, lba: int) -> int:
        z = self._lastz
        if self.zstart[z] <= lba < self.zend[z]:
            return z
        z = bisect_right(self.zstart, lba) - 1
        self._lastz = z
        return z

    def locate(self, lba: int) -> tuple[int, int, float]:
        """(cylinder, head, angle in revolutions of the sector's start)."""
        z = self.zone(lba)
        spt = self.zspt[z]
        k, s = divmod(lba - self.zstart[z], spt)
        heads = self.heads
        c = k // heads
        skew = ((k - c) * self.ztsk[z] + c * self.zcsk[z]) % spt
        return self.zcyl0[z] + c, k - c * heads, (self.zbase[z] + (s + skew) / spt) % 1.0

    def track(self, lba: int) -> tuple[int, int]:
        """(cylinder, head) of an LBA."""
        z = self.zone(lba)
        k = (lba - self.zstart[z]) // self.zspt[z]
        c = k // self.heads
        return self.zcyl0[z] + c, k - c * self.heads

    def sector_time(self, lba: int) -> float:
        return self.zst[self.zone(lba)]

    def lba_of(self, cylinder: int, head: int = 0, sector: int = 0) -> int:
        """First LBA at (cylinder, head, sector), clamped to the capacity (for probes)."""
        z = max(0, bisect_right(self.zcyl0, cylinder) - 1)
        spt = self.zspt[z]
        lba = self.zstart[z] + ((cylinder - self.zcyl0[z]) * self.heads + head) * spt + min(sector, spt - 1)
        return min(lba, self.capacity - 1)

    # -- streaming ---------------------------------------------------------------------------
    def start_time(self, a: int, x: int) -> float:
        """Seconds from the start of sector `a` passing under the head to the start of sector
        `x` (x >= a) when reading on without a break: sector times plus switch skews."""
        za = self.zone(a)
        zs = self.zstart[za]
        if x < self.zend[za]:
            spt = self.zspt[za]
            ka = (a - zs) // spt
            kx = (x - zs) // spt
            if ka == kx:
                return (x - a) * self.zst[za]
            heads = self.heads
            cc = kx // heads - ka // heads
            return ((x - a) + (kx - ka - cc) * self.ztsk[za] + cc * self.zcsk[za]) * self.zst[za]
        # across zone boundaries: to the end of this zone, then cylinder-switch skew into the next
        t = self.start_time(a, self.zend[za] - 1) + self.zst[za]
        z = za + 1
        while True:
            t += self.zcsk[z] * self.zst[z]
            if x < self.zend[z]:
                return t + self.start_time(self.zstart[z], x)
            t += self.start_time(self.zstart[z], self.zend[z] - 1) + self.zst[z]
            z += 1

    def stream_time(self, a: int, b: int) -> float:
        """Seconds to read or write sectors [a, b) once the head is at the start of `a`."""
        t = self.start_time(a, b - 1)
        return t + self.zst[self.zone(b - 1)]

    def reach(self, a: int, dt: float) -> int:
        """End (exclusive) of the sectors a stream starting at `a` has fully passed after `dt`."""
        if dt <= 0:
            return a
        x, t, cap, heads = a, 0.0, self.capacity, self.heads
        while x < cap:
            z = self.zone(x)
            spt, st, zs = self.zspt[z], self.zst[z], self.zstart[z]
            k = (x - zs) // spt
            end = min(zs + (k + 1) * spt, self.zend[z])
            tt = (end - x) * st
            if t + tt > dt:
                return x + int((dt - t) / st)
            t += tt
            x = end
            if x >= cap:
                break
            z2 = self.zone(x)
            k2 = (x - self.zstart[z2]) // self.zspt[z2]
            t += (self.zcsk[z2] if (z2 != z or k2 % heads == 0) else self.ztsk[z2]) * self.zst[z2]
            if t > dt:
                return x
        return cap

    # -- description -----------------------------------------------------------------------
    def zone_rate(self, z: int) -> float:
        """Sustained sequential rate of zone z in bytes/s (switch skews included): the
        IBM/Hitachi spec-sheet formula heads*spt*512 / (heads*t_rev + skews)."""
        spt, st, h = self.zspt[z], self.zst[z], self.heads
        per_cyl = h * spt * st + ((h - 1) * self.ztsk[z] + self.zcsk[z]) * st
        return h * spt * SECTOR / per_cyl


def sustained_rate(spt: int, heads: int, t_rev: float, head_switch: float, cyl_switch: float) -> float:
    """Bytes/s a zone with `spt` sectors per track sustains (see Layout.zone_rate)."""
    st = t_rev / spt
    tsk = min(spt - 1, math.ceil(head_switch / st - 1e-9)) if head_switch > 0 else 0
    csk = min(spt - 1, math.ceil(cyl_switch / st - 1e-9)) if cyl_switch > 0 else 0
    return heads * spt * SECTOR / (heads * t_rev + ((heads - 1) * tsk + csk) * st)


def spt_for_rate(rate: float, heads: int, t_rev: float, head_switch: float, cyl_switch: float,
                 align: int = 1) -> int:
    """Sectors per track (a multiple of `align`) whose sustained rate is closest to `rate` bytes/s."""
    guess = rate * (heads * t_rev + (heads - 1) * head_switch + cyl_switch) / (heads * SECTOR)
    base = max(align, int(round(guess / align)) * align)
    best = min((base + i * align for i in range(-3, 4) if base + i * align >= align),
               key=lambda s: abs(sustained_rate(s, heads, t_rev, head_switch, cyl_switch) - rate))
    return best


def build_layout(capacity: int, heads: int, rpm: float, zones: int, od_rate: float, id_rate: float,
                 head_switch: float, cyl_switch: float, align: int = 1) -> Layout:
    """A zone table whose outermost and innermost zones sustain `od_rate` and `id_rate` bytes/s.

    Rates fall linearly from zone to zone (equal cylinders per zone, so linearly with radius, as
    linear bit density makes them); the cylinder count is whatever holds `capacity`."""
    t_rev = 60.0 / rpm
    rates = [od_rate + (id_rate - od_rate) * z / (zones - 1) for z in range(zones)] if zones > 1 else [od_rate]
    spts = [spt_for_rate(r, heads, t_rev, head_switch, cyl_switch, align) for r in rates]
    per_cyl = heads * sum(spts)
    ncyl = max(2, -(-capacity // per_cyl))
    return Layout(capacity, heads, t_rev, spts, [ncyl] * zones, head_switch, cyl_switch)
