"""Where DiskSim puts each logical block: dm_layout_g1's LBN -> physical sector map, with the
drive's dead space at the zone front, its spare sectors (per track, cylinder, range of cylinders
or zone, or whole spare tracks) and the sectors its factory defect list slipped.

Why: a drive's LBNs do not start at its zone's first sector; every slip pushes the later blocks
of its zone one sector on, every spare area pushes them past it.  Ignoring that puts a block on
the wrong cylinder (a zone's dead space is whole tracks) or at the wrong angle (a slip is one
sector), so seeks and rotational waits differ from DiskSim's request by request.

The drive model works in physical sectors: sector s of track k of zone z is
`zone_start[z] + k * spt[z] + s`, counting every sector of the zone (spares and slipped ones
too), so a request's stream passes over the sectors the drive skips, as the head does.
`physical(lbn)` ports diskmodel/layout_g1.c's g1_ltop_* (MAP_ADDSLIPS: the slips, not the
remapped defects, see disk_models/disksim.py) with the same integer arithmetic, including its
slip-counting loops over the zone's slips in file order.
"""

from __future__ import annotations

from bisect import bisect_right

NO_SPARING, TRACK, SECTPERCYL, SECTPERTRACK = 0, 1, 2, 3
CYL_SLIPTOEND, CYL_ATFRONT, CYL_ATFRONT_SLIPTOEND, SECTATEND = 4, 5, 6, 7
RANGE, ZONE, ZONE_SLIPTOEND = 8, 9, 10
_PERCYL = (SECTPERCYL, CYL_SLIPTOEND, CYL_ATFRONT, CYL_ATFRONT_SLIPTOEND, SECTATEND)
PERCYL = _PERCYL
_SLIPTOEND = (CYL_SLIPTOEND, CYL_ATFRONT_SLIPTOEND, SECTATEND)
SCHEMES = (NO_SPARING, TRACK, SECTPERTRACK, RANGE, ZONE, ZONE_SLIPTOEND) + _PERCYL


def blocks_in_zone(scheme: int, ncyl: int, heads: int, spt: int, dead: int, spares: int, nslips: int,
                   rangesize: int) -> int:
    """LBNs a zone holds (dm_layout_g1_compute_blksinband)."""
    n = ncyl * spt * heads - dead
    if scheme == TRACK:
        return n - spares * spt
    if scheme == SECTPERTRACK:
        return n - spares * ncyl * heads
    if scheme == SECTATEND:
        return n - nslips
    if scheme == ZONE:
        return n - spares
    if scheme == ZONE_SLIPTOEND:
        return n - spares - nslips
    if scheme in _PERCYL:
        return n - spares * ncyl - (nslips if scheme in _SLIPTOEND else 0)
    if scheme == RANGE:
        return n - spares * (ncyl // rangesize)
    return n


class Zone:
    """One zone's LBN -> physical sector (within the zone) map."""

    __slots__ = ("scheme", "spt", "bpc", "dead", "spares", "slips", "rangesize")

    def __init__(self, scheme, heads, spt, dead, spares, slips, rangesize):
        self.scheme, self.spt, self.bpc = scheme, spt, spt * heads
        self.dead, self.spares, self.slips, self.rangesize = dead, spares, list(slips), max(1, rangesize)

    def physical(self, lbn: int) -> int:
        """Zone-relative physical sector of zone-relative block `lbn` (layout_g1.c g1_ltop_*)."""
        s = self.scheme
        lbn += self.dead
        slips = self.slips
        if s == ZONE or s == ZONE_SLIPTOEND:                 # g1_ltop_sectperzonespare
            n = 0
            for x in slips:
                if x <= lbn + n:
                    n += 1
            return lbn + n
        if s in _PERCYL:                                     # g1_ltop_sectpercylspare
            bpc = self.bpc
            lpc = bpc - self.spares
            cyl, r = divmod(lbn, lpc)
            if slips:
                first = cyl * bpc
                n = 0
                toend = s in _SLIPTOEND
                for x in slips:
                    if (toend and x // bpc < cyl) or (x >= first and x - first <= r + n):
                        n += 1
                r += n
                cyl += r // lpc
                r %= lpc
            return cyl * bpc + r
        if s == RANGE:                                       # g1_ltop_sectperrangespare
            bpr = self.bpc * self.rangesize
            lpr = bpr - self.spares
            rng, r = divmod(lbn, lpr)
            first = rng * bpr
            n = 0
            for x in slips:
                if x >= first and x - first <= r + n:
                    n += 1
            return first + r + n
        if s == SECTPERTRACK:                                # g1_ltop_sectpertrackspare
            spt = self.spt
            trk, r = divmod(lbn, spt - self.spares)
            first = trk * spt
            for x in slips:
                if x >= first and x - first <= r:
                    r += 1
            return first + r
        if s == TRACK:                                       # g1_ltop_trackspare
            spt = self.spt
            trk, r = divmod(lbn, spt)
            for x in slips:
                if x <= trk:
                    trk += 1
            return trk * spt + r
        return lbn                                           # no sparing


class LbnMap:
    """The drive's LBN -> physical sector map over all zones."""

    def __init__(self, zones: list[Zone], zone_blocks: list[int], zone_sectors: list[int]):
        self.zones = zones
        self.lstart, self.pstart = [], []
        lbn = phys = 0
        for nb, ns in zip(zone_blocks, zone_sectors):
            self.lstart.append(lbn)
            self.pstart.append(phys)
            lbn += nb
            phys += ns
        self.blocks, self.sectors = lbn, phys
        # a zone without slips whose spares all lie past its last block: an offset
        self._shift = [self.pstart[z] + zn.dead
                       if not zn.slips and (zn.spares == 0 or zn.scheme in (NO_SPARING, TRACK, ZONE, ZONE_SLIPTOEND))
                       else None for z, zn in enumerate(zones)]

    def physical(self, lbn: int) -> int:
        z = bisect_right(self.lstart, lbn) - 1
        k = self._shift[z]
        if k is not None:
            return lbn - self.lstart[z] + k
        return self.pstart[z] + self.zones[z].physical(lbn - self.lstart[z])


def holes(lbn_map: LbnMap, zone_spt: list[int]) -> list[tuple[int, int]]:
    """Physical ranges [h0, h1) holding no block that a transfer cannot just stream across:
    the spare tracks and cylinders past a zone's last block, and the tracks track sparing slips.
    DiskSim reaches the next block after one by a seek (or head switch) and a rotational wait;
    a gap inside a track (a slipped sector, spares at a track's end) the head streams over."""
    out = []
    m = lbn_map
    for z, zn in enumerate(m.zones):
        start = m.lstart[z]
        nb = (m.lstart[z + 1] if z + 1 < len(m.zones) else m.blocks) - start
        if zn.scheme == TRACK and zn.slips:
            spt = zone_spt[z]
            near = sorted({t for x in zn.slips for t in range(x - len(zn.slips) - 1, x + 2) if t >= 0})
            for t in near:                      # the last block of the block-tracks near a slip
                x = t * spt + spt - 1
                if x + 1 >= nb:
                    break
                p0, p1 = zn.physical(x), zn.physical(x + 1)
                if p1 - p0 > 1:
                    out.append((m.pstart[z] + p0 + 1, m.pstart[z] + p1))
        end = m.pstart[z] + zn.physical(nb - 1) + 1
        nxt = m.pstart[z + 1] if z + 1 < len(m.zones) else m.sectors
        if nxt > end:
            out.append((end, nxt))
    return out
