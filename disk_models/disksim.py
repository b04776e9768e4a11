"""A drive described by DiskSim 4.0 files (.parv -> .diskspecs -> .model, .seek): the rotating
model, fed the drive's measured layout, seek curve, overheads and cache settings.

    -o disk=disksim:PATH/cheetah9LP.parv       any DiskSim parameter file with one disk
    -o disk=disksim-cheetah9lp                 the ten drives of DiskSim's validation suite,
                                               files in disk_models/data/disksim/ (PROVENANCE.md)

Why a subclass of RotatingDrive and not a second drive: the mechanisms are the same (zones,
skews, rotation from absolute time, segmented read-ahead buffer, write-back cache); DiskSim's
files only give them measured values, plus three mechanisms the datasheet presets did not need:
a measured seek table (`seek.SeekTable`, `seek.HplSeek`), per-zone cylinders/skews/offsets
(`layout.Layout` keyword arguments) and overheads that depend on the command and on the one
before it (set per request below).

Every DiskSim parameter of a drive, used or not (times in ms, as in the files):

  parameter (file)                             here
  ---------------------------------------------------------------------------------------------
  Model, Layout Model, Mechanical Model        the blocks read (dm_disk, dm_layout_g1, dm_mech_g1)
  Block count, Number of data surfaces (.model) capacity, heads
  Number of cylinders (.model)                 the seek curve's range (with the zones' last)
  Zones: First/Last cylinder, Blocks per track Layout: per-zone cylinders (spare cylinders
    Skew for track / cylinder switch            between zones count in seek distances), sectors
    Offset of first block                       per track, skews and first-block angle in sectors
  Number of spares, Sparing scheme, Rangesize, DiskSim's LBN -> physical sector map (disksim_map:
    slips, Empty space at zone front            layout_g1.c's g1_ltop_* for every sparing scheme):
                                                the model works in physical sectors, a transfer
                                                streams over spares and slipped sectors, and
                                                repositions across spare tracks/cylinders
  defects                                      NOT modelled: a remapped defective sector (one in
                                                the suite, cheetah4LP) is read where it was
  LBN-to-PBN mapping scheme                    0 (normal) only; 1 (cylinder switches stay on
                                                surface 1, Atlas 10K) is read as 0: NOT modelled
  Seek type: extracted + Full seek curve       SeekTable: the .seek points, linear between them
  Seek type: hpl / hplplus10, HPL seek          HplSeek: V2 + V3 sqrt(d) below V1 cylinders, else
    equation values, First ten seek times        V4 + V5 d; first ten distances from the table
  Single cylinder seek time                    used by hpl only (as DiskSim)
  Average seek time, Full strobe seek time     NOT used by these seek types (DiskSim neither)
  Add. write settling delay                    added to every non-zero write positioning; may be
                                                negative (the table includes a read settle)
  Head switch time                             positioning is max(seek, head switch)
  Access time type                             trackSwitchPlusRotation only (the suite's type)
  Rotation speed, Percent error in rpms        rpm; the error is 0 in every file: NOT modelled
  Bulk sector transfer time + the bus's         per-sector bus time: the largest of the disk's and
    Read/Write block transfer time               its bus's (DiskSim's disk_get_blktranstime)
  Read hit/miss over. after read/write         command overhead, by hit/miss and previous command
  Write hit/miss over. after read/write        write hit overheads when writes are cached
  Read/Write completion overhead               added at the end of each command
  Data preparation overhead, First reselect    added to reads: data prep on every read, reselect
    overhead                                     on a read that went to the media
  First reselect overhead                      also before a written-through write's completion
  Minimum seek delay                           a write's positioning takes at least this long
  Extra write disconnect                       a write starts on the media once min(request, 10)
                                                sectors (15 from 45) are in (disk_buffer_block_
                                                available)
  Other reselect, Read disconnect after read/  NOT modelled: bus-side work overlapped with the
    write, Write disconnect, Extradisc *         seek; DiskSim 4.0 (WD) never sets the extra write
                                                disconnect flag that would use Extradisc *
  Number of buffer segments, Segment size      the read segments (LRU), size in blocks
  Maximum read-ahead                           read-ahead past the request's end, within a segment
  Minimum read-ahead                           0 in every file: NOT modelled
  Read-ahead over requested                    NOT distinguished: read-ahead always counts from
                                                the request's end
  Enable caching in buffer                     0: no read segments (no read hits)
  Fast write level                             2: write-back (immediate report); 0 and 1: written
                                                through. DiskSim's level 1 reports early only a write
                                                appending to one still being written, which
                                                one-at-a-time replay never gives
  Maximum number of write segments             write-back holds at most this many segments
  Combine seq writes                           the write cache merges adjacent writes (always)
  Allow read hits on write data                reads hit dirty data only when 1
  Buffer continuous read                       where read-ahead stops: 0 none; 1 the track's end;
                                                2 the cylinder's end; 3 Maximum read-ahead past
                                                the request; 4 DEC scheme: the end of the track
                                                holding the next block, one track more when the
                                                segment began on an earlier track (every mode
                                                within one segment: older data is pushed out)
  Write hit stop prefetch, Stop prefetch in    a new command stops read-ahead (always); read-
    sector                                       ahead continues while a stream reads on, and a
                                                hit restarts it (DiskSim raises the segment's
                                                read-ahead target on every read)
  Read-ahead on idle hit                       NOT used by DiskSim either: it checks the value
                                                and ignores it (readaheadifidle, "obsolete")
  Immed transfer partial hit                   a read whose first block is already read ahead
                                                waits for the rest (always); one whose first block
                                                is not is no hit: it stops the read-ahead and goes
                                                to the media (disk_buffer_check_read_segments)
  Read any free blocks                         NOT modelled (zero-latency reads: IBM 18ES, Atlas
                                                10K read a track's sectors in the order they pass)
  High (read) water mark, Set watermark by    a read that goes to the media reconnects once
    reqsize                                      max(1, int(min(segment, request) x mark)) sectors
                                                are in, pays reselect and data preparation, then
                                                sends at the bus rate (the last sector once read)
  Hold bus entire write xfer                   a written-through write's data crosses the bus in
                                                one tenure from the command's end (plus data
                                                preparation); each sector is written only if its
                                                data is in when it passes, else a revolution later
  Low (write) water mark                       NOT modelled: where the disk reconnects to fetch
                                                more data, for writes larger than a segment
  Use separate write segment                   a write empties the clean read segments it
                                                overlaps (disk_buffer_set_segment)
  Hold bus entire read xfer, Never disconnect, NOT modelled: bus reconnection details (a read's
    Disconnect write if seek, Immediate buffer   bus transfer overlaps its media transfer once the
    read/write, Read directly to buffer          high water mark is reached)
  Allow almost/sneaky read hits, write         0 in every file: NOT modelled
    prebuffering, Preseeking level
  Calc sector by sector                        NOT modelled (DiskSim's own event granularity)
  Per-request overhead, Time scale for         0 and 1 in every file: NOT modelled
    overheads
  Max queue length, Scheduler (disksim_ioqueue) queue_depth and scheduler (disk_models.queue):
                                                Scheduling policy 1 FCFS, 3 C-LOOK, 4 SSTF, 8
                                                SPTF, 9 SPCTF; 1 in every file of the suite (validation
                                                replays one at a time)
  Avg sectors per cylinder, Print stats        DiskSim bookkeeping: not needed
"""

from __future__ import annotations

from bisect import bisect_right

from . import disksim_map as dmap
from .disksim_drives import PRESETS, capacity, drive_files, drive_preset, queue_of, source_of
from .disksim_files import Block, DiskSimFileError
from .layout import Layout
from .base import DiskModel
from .params import Param
from .presets import Preset
from .rotating import RotatingDrive
from .seek import HplSeek, SeekTable

MS = 1e-3
PARAMS = {"capacity": Param("capacity", int, "sectors", "the drive's Block count (from its .model file)", 1, 2**48)}

_TRACK_SPARING, _SECTPERTRACK_SPARING = 1, 3

_USED, _NOT = "used", "not modelled"
#: every parameter of a DiskSim drive (disksim_disk, dm_disk, dm_layout_g1, its zones, dm_mech_g1)
#: -> used / not modelled; the module docstring says how each is used or what it does in DiskSim
PARAMETERS = {
    **dict.fromkeys(("Block count", "Number of data surfaces", "Number of cylinders", "Layout Model",
                     "Mechanical Model", "Sparing scheme used", "Rangesize for sparing", "Zones",
                     "First cylinder number", "Last cylinder number", "Blocks per track", "Offset of first block",
                     "Empty space at zone front", "Skew for track switch", "Skew for cylinder switch",
                     "Number of spares", "Access time type", "Seek type", "Single cylinder seek time",
                     "Full seek curve", "HPL seek equation values", "First ten seek times",
                     "Add. write settling delay", "Head switch time", "Rotation speed (in rpms)", "Model",
                     "Bulk sector transfer time", "Read hit over. after read", "Read hit over. after write",
                     "Read miss over. after read", "Read miss over. after write", "Write hit over. after read",
                     "Write hit over. after write", "Write miss over. after read", "Write miss over. after write",
                     "Minimum seek delay",
                     "Read completion overhead", "Write completion overhead", "Data preparation overhead",
                     "First reselect overhead", "Number of buffer segments", "Segment size (in blks)",
                     "Maximum read-ahead (blks)", "Enable caching in buffer", "Buffer continuous read",
                     "Fast write level", "Maximum number of write segments", "Combine seq writes",
                     "Allow read hits on write data", "Write hit stop prefetch", "Immed transfer partial hit",
                     "High (read) water mark", "Set watermark by reqsize",
                     "Hold bus entire write xfer", "Max queue length", "slips", "Extra write disconnect",
                     "Use separate write segment"), _USED),
    **dict.fromkeys(("defects", "LBN-to-PBN mapping scheme", "Average seek time", "Full strobe seek time",
                     "Percent error in rpms", "Other reselect overhead", "Read disconnect afterread",
                     "Read disconnect afterwrite", "Write disconnect overhead",
                     "Extradisc command overhead", "Extradisc disconnect overhead",
                     "Extradisc inter-disconnect delay", "Extradisc 2nd disconnect overhead",
                     "Extradisc seek delta", "Low (write) water mark", "Minimum read-ahead (blks)",
                     "Read-ahead over requested", "Stop prefetch in sector", "Read-ahead on idle hit",
                     "Read any free blocks", "Hold bus entire read xfer",
                     "Never disconnect", "Disconnect write if seek", "Immediate buffer read",
                     "Immediate buffer write", "Read directly to buffer", "Allow almost read hits",
                     "Allow sneaky full read hits", "Allow sneaky partial read hits",
                     "Allow sneaky intermediate read hits", "Allow write prebuffering", "Preseeking level",
                     "Calc sector by sector", "Per-request overhead time", "Time scale for overheads",
                     "Scheduler", "Avg sectors per cylinder", "Print stats"), _NOT),
}


def _zones(model: Block, heads: int):
    """Per-zone tables from a dm_layout_g1 block: spt, cylinders, first cylinders, skews,
    first-block offsets, physical sectors and LBNs, and the zone's LBN -> physical map."""
    layout = model.get("Layout Model")
    if not isinstance(layout, Block) or layout.type != "dm_layout_g1":
        raise DiskSimFileError(f"{model.where}: 'Layout Model' must be a dm_layout_g1 block")
    zones = layout.get("Zones")
    if not isinstance(zones, list) or not zones or not all(isinstance(z, Block) for z in zones):
        raise DiskSimFileError(f"{layout.where}: 'Zones' must be a list of dm_layout_g1_zone blocks")
    scheme = int(layout.num("Sparing scheme used", 0))
    if scheme not in dmap.SCHEMES:
        raise DiskSimFileError(f"{layout.where}: Sparing scheme used = {scheme} is not one of DiskSim's (0-10)")
    rangesize = int(layout.num("Rangesize for sparing", 1))
    out: dict[str, list] = {k: [] for k in ("spt", "cyls", "first", "tsk", "csk", "off", "sectors", "blocks", "maps")}
    for z in zones:
        c0, c1 = int(z.num("First cylinder number")), int(z.num("Last cylinder number"))
        spt = int(z.num("Blocks per track"))
        if c1 < c0 or spt < 1:
            raise DiskSimFileError(f"{z.where}: a zone needs Last >= First cylinder and Blocks per track >= 1")
        ncyl = c1 - c0 + 1
        spares = int(z.num("Number of spares", 0))
        dead = int(z.num("Empty space at zone front", 0))
        slips = z.get("slips", [])
        if not isinstance(slips, list) or not all(isinstance(x, int) and x >= 0 for x in slips):
            raise DiskSimFileError(f"{z.where}: 'slips' must be a list of non-negative whole numbers")
        blocks = dmap.blocks_in_zone(scheme, ncyl, heads, spt, dead, spares, len(slips), rangesize)
        period = {dmap.SECTPERTRACK: spt, dmap.RANGE: spt * heads * max(1, rangesize)}.get(
            scheme, spt * heads if scheme in dmap.PERCYL else None)
        if blocks < 1 or spares < 0 or dead < 0 or (period is not None and spares >= period):
            raise DiskSimFileError(f"{z.where}: the zone's spares and dead space leave it no blocks")
        out["spt"].append(spt)
        out["cyls"].append(ncyl)
        out["first"].append(c0)
        out["tsk"].append(int(z.num("Skew for track switch", 0)))
        out["csk"].append(int(z.num("Skew for cylinder switch", 0)))
        out["off"].append(int(z.num("Offset of first block", 0)))
        out["sectors"].append(ncyl * heads * spt)
        out["blocks"].append(blocks)
        out["maps"].append(dmap.Zone(scheme, heads, spt, dead, spares, slips, rangesize))
    return out


def _seek(mech: Block, files, cylinders: int):
    kind = mech.get("Seek type")
    if kind == "extracted":
        d, t = files.seek
        return SeekTable(d, [x * MS for x in t], cylinders)
    if kind in ("hpl", "hplplus10"):
        values = mech.get("HPL seek equation values")
        first = mech.get("First ten seek times") if kind == "hplplus10" else None
        try:
            return HplSeek(values if isinstance(values, list) else [], first, mech.num("Single cylinder seek time"),
                           cylinders)
        except (TypeError, ValueError) as e:
            raise DiskSimFileError(f"{mech.where}: {e}") from None
    raise DiskSimFileError(f"{mech.where}: seek type {kind!r} is not modelled (extracted, hpl, hplplus10 are)")


class _Layout(Layout):
    """The drive's physical layout; a transfer across a hole with no blocks (spare tracks and
    cylinders at a zone's end, a slipped track) repositions as DiskSim does: seek or head
    switch to the next block, then the rotational wait for it."""

    holes: list = []
    jump = None

    def set_holes(self, holes, seek, head_switch):
        self.holes = holes
        self._h0 = [h[0] for h in holes]
        self._seekf = seek
        self._hsw = head_switch

    def stream_time(self, a: int, b: int) -> float:
        if self.holes:
            i = bisect_right(self._h0, a)
            if i < len(self._h0) and self._h0[i] < b:
                h0, h1 = self.holes[i]
                if h1 >= b:
                    return Layout.stream_time(self, a, h0)
                c0, k0, g0 = self.locate(h0 - 1)
                c1, k1, g1 = self.locate(h1)
                d = c1 - c0 if c1 > c0 else c0 - c1
                seek = self._seekf(d) if d else 0.0
                if k1 != k0 and self._hsw > seek:
                    seek = self._hsw
                end = g0 + 1.0 / self.zspt[self.zone(h0 - 1)]
                wait = ((g1 - end - seek / self.t_rev) % 1.0) * self.t_rev
                return Layout.stream_time(self, a, h0) + seek + wait + self.stream_time(h1, b)
        return Layout.stream_time(self, a, b)


class DiskSimDrive(RotatingDrive):
    """The rotating model with a DiskSim drive's measured parameters (see the module docstring)."""

    model = "disksim"
    _wrap_as_read = True
    summary = ("rotating drive from DiskSim 4.0 files: measured zones and skews, seek table, "
               "per-command overheads, segmented cache (disk=disksim:PATH.parv)")
    PARAMS = PARAMS
    presets = PRESETS

    @classmethod
    def check_values(cls, values: dict) -> None:
        pass

    @classmethod
    def preset_for(cls, path: str) -> Preset:
        """The preset `disk=disksim:PATH` stands for: the file's drive, its Block count (or the
        known correction of a short one: the same capacity as the suite's preset of that file)."""
        if not path:
            raise ValueError("disk=disksim:PATH needs the path of a DiskSim .parv file")
        f = drive_files(path)
        return drive_preset(f"disksim:{path}", path, f.disk.name, *capacity(f))

    def __init__(self, spec):
        f = drive_files(source_of(spec.preset))
        self.files = f
        d, m = f.disk, f.model
        mech = m.get("Mechanical Model")
        if not isinstance(mech, Block):
            raise DiskSimFileError(f"{m.where}: no 'Mechanical Model' block")
        self.spec = spec
        self.name = spec.name
        heads = int(m.num("Number of data surfaces"))
        if heads < 1:
            raise DiskSimFileError(f"{m.where}: Number of data surfaces must be at least 1")
        z = _zones(m, heads)
        mapped = sum(z["blocks"])                  # what the zone table maps: DiskSim serves all of it
        self.lbn_map = dmap.LbnMap(z["maps"], z["blocks"], z["sectors"])
        self.capacity = spec.values["capacity"]
        if self.capacity > mapped:
            raise ValueError(f"capacity={self.capacity} exceeds the {mapped} blocks the zones of "
                             f"{f.disk.name} map")
        self.offset = 0
        self.sectors = self.capacity
        self.rpm = mech.num("Rotation speed (in rpms)")
        if not 100 <= self.rpm <= 100000:
            raise DiskSimFileError(f"{mech.where}: Rotation speed {self.rpm} rpm is not a drive's")
        self.t_rev = 60.0 / self.rpm
        self._inv_rev = 1.0 / self.t_rev
        self.head_switch = mech.num("Head switch time") * MS
        self.write_settle = mech.num("Add. write settling delay", 0.0) * MS
        self.min_seek_w = d.num("Minimum seek delay", 0.0) * MS
        self.extra_disc = int(d.num("Extra write disconnect", 0)) != 0
        try:
            # in physical sectors: every sector of every zone, spares and slipped ones too
            self.layout = _Layout(self.lbn_map.sectors, heads, self.t_rev, z["spt"], z["cyls"], 0.0, 0.0,
                                 first_cyls=z["first"], track_skews=z["tsk"], cyl_skews=z["csk"],
                                 first_offsets=z["off"], zone_blocks=z["sectors"])
        except ValueError as e:
            raise DiskSimFileError(f"{m.where}: {e}") from None
        ncyl = max(int(m.num("Number of cylinders")), self.layout.cylinders)   # HP C2490A: one more
        self.seek = _seek(mech, f, ncyl)
        self.capacity = self.layout.capacity      # RotatingDrive works in physical sectors
        self.layout.set_holes(dmap.holes(self.lbn_map, z["spt"]), self.seek, self.head_switch)
        # per-sector bus time: the slower of the disk's and its bus's (disk_get_blktranstime)
        bulk = d.num("Bulk sector transfer time", 0.0)
        self.bus_r = max(bulk, f.bus_read) * MS
        self.bus_w = max(bulk, f.bus_write) * MS
        self.iface = self.bus_r
        n = lambda key: d.num(key, 0.0) * MS  # noqa: E731
        # [previous command was a write][...]
        self.ov_read_hit = (n("Read hit over. after read"), n("Read hit over. after write"))
        self.ov_read_miss = (n("Read miss over. after read"), n("Read miss over. after write"))
        self.ov_write_hit = (n("Write hit over. after read"), n("Write hit over. after write"))
        self.ov_write_miss = (n("Write miss over. after read"), n("Write miss over. after write"))
        self.ov_done_r = n("Read completion overhead")
        self.ov_done_w = n("Write completion overhead")
        self.ov_prep = n("Data preparation overhead")
        self.ov_reselect = n("First reselect overhead")
        self.ovh, self.ovh_hit = self.ov_read_miss[0], self.ov_read_hit[0]
        self.high_water = d.num("High (read) water mark", 0.0) if int(d.num("Set watermark by reqsize", 1)) else 0.0
        cache_on = int(d.num("Enable caching in buffer", 1)) != 0
        nseg = int(d.num("Number of buffer segments", 0))
        seg = int(d.num("Segment size (in blks)", 0))
        self.nseg = nseg if cache_on and nseg > 0 and seg > 0 else 0
        self.seg_sectors = seg if self.nseg else 0
        self.readahead = min(int(d.num("Maximum read-ahead (blks)", 0)), self.seg_sectors)
        self.contread = int(d.num("Buffer continuous read", 3))
        if self.contread == 0:
            self.readahead = 0
        self._ra_rule = {1: self._ra_until_track, 2: self._ra_until_cyl, 4: self._ra_dec}.get(self.contread)
        self.fast_write = int(d.num("Fast write level", 0))
        self.wc_on = self.fast_write >= 1 and seg > 0
        self.wc_sectors = seg * max(1, int(d.num("Maximum number of write segments", 1)))
        self._dirty_hits = int(d.num("Allow read hits on write data", 1)) != 0
        self.reset()

    def _ra_until_track(self, b: int) -> int:
        """Buffer continuous read 1: on to the end of the track the head is on (b - 1's)."""
        L = self.layout
        z = L.zone(b - 1)
        spt, zs = L.zspt[z], L.zstart[z]
        end = zs + ((b - 1 - zs) // spt + 1) * spt
        return min(b + self.readahead, end, L.zend[z])

    def _ra_until_cyl(self, b: int) -> int:
        """Buffer continuous read 2: on to the end of the cylinder the head is on."""
        L = self.layout
        z = L.zone(b - 1)
        per = L.zspt[z] * L.heads
        zs = L.zstart[z]
        end = zs + ((b - 1 - zs) // per + 1) * per
        return min(b + self.readahead, end, L.zend[z])

    def _ra_dec(self, b: int) -> int:
        """Buffer continuous read 4 (DiskSim's BUFFER_DEC_PREFETCH_SCHEME): to the end of the
        track holding block b, and one track more when the segment began on an earlier track
        (disk_buffer_get_max_readahead)."""
        L = self.layout
        if b >= L.capacity:
            return b
        z = L.zone(b)
        spt, zs = L.zspt[z], L.zstart[z]
        start = zs + ((b - zs) // spt) * spt
        end = min(start + spt, L.zend[z])
        seg = self._segs.find(b - 1) if self.nseg else None
        if seg is not None and seg.start < start:
            end += spt
        return end

    def reset(self) -> None:
        super().reset()
        self._wdata = 0.0                 # bus time of the data of a written-through write
        self._last_write = 0              # 1 when the previous command was a write

    # -- requests -------------------------------------------------------------------------
    def check(self, op: str, lba: int, sectors: int) -> None:
        """RotatingDrive.submit sees physical sectors (`submit` checked the LBNs): any range of
        the platters is valid there."""
        if op in ("R", "W") and sectors > 0 and lba >= 0 and lba + sectors <= self.layout.capacity:
            return
        super().check(op, lba, sectors)

    def submit(self, op, lba, sectors, issue_time, sync=False):
        if sectors <= 0 or lba < 0 or lba + sectors > self.sectors or (op != "R" and op != "W"):
            DiskModel.check(self, op, lba, sectors)
        # blocks -> the physical sectors they span (slips and spares inside pass under the head);
        # the bus carries only the blocks: `iface` is scaled to spread their time over the span
        m = self.lbn_map.physical
        p = m(lba)
        n = m(lba + sectors - 1) + 1 - p
        scale = sectors / n if n != sectors else 1.0
        lba = p
        w = self._last_write
        if op == "W":
            if self.nseg:
                self._empty_overlapping(lba, lba + n, issue_time if issue_time > self._host_free else self._host_free)
            self.iface = self.bus_w * scale
            self._wdata = 0.0 if self.wc_on and not sync else sectors * self.bus_w
            self.ovh_hit = self.ov_write_hit[w]
            self.ovh = self.ov_write_hit[w] if self.fast_write else self.ov_write_miss[w]
            r = super().submit(op, lba, n, issue_time, sync)
            # a write that went to the media reconnects to report it (DiskSim: the disk disconnects
            # once it has the data, and pays the reselect before the completion)
            extra = self.ov_done_w if r.cache_hit else self.ov_done_w + self.ov_reselect
            self._last_write = 1
        else:
            self.iface = self.bus_r * scale
            self.ovh_hit = self.ov_read_hit[w]
            self.ovh = self.ov_read_miss[w]
            r = super().submit(op, lba, n, issue_time, sync)
            extra = self.ov_done_r + self.ov_prep
            if not r.cache_hit and r.transfer > 0.0:
                # the drive reconnects once the high water mark's sectors are buffered
                # (max(1, int(min(segment, request) x mark)), disk_request_needs_bus), pays the
                # reselect and data preparation, then sends at the bus rate; the last sector goes
                # out after it is read
                t1 = r.finish - r.interface - r.transfer          # first sector under the head
                k = int((n if not self.seg_sectors or n < self.seg_sectors else self.seg_sectors)
                        * self.high_water)
                k = 1 if k < 1 else n if k > n else k
                m0 = self._m0                     # where the media read began (after a part
                if m0 - lba >= k:                 # already buffered): enough is in at once
                    t0 = t1 - r.seek - r.rotation
                else:
                    t0 = t1 + self.layout.stream_time(m0, lba + k)
                finish = t0 + self.ov_reselect + self.ov_prep + n * self.iface
                # then sector x goes out once read and after the ones before it: the bus ends no
                # sooner than (x read) + (sectors from x on) x bus time, for every x; within a
                # track that bound is largest at its first or last sector
                L = self.layout
                b = lba + n
                iface = self.iface
                x = m0 if m0 > lba else lba
                while x < b:
                    z = L.zone(x)
                    zs, spt = L.zstart[z], L.zspt[z]
                    e = zs + ((x - zs) // spt + 1) * spt
                    if e > b:
                        e = b
                    f = t1 + L.stream_time(m0, x + 1) + (b - x) * iface
                    if f > finish:
                        finish = f
                    f = t1 + L.stream_time(m0, e) + iface
                    if f > finish:
                        finish = f
                    x = e
                r.interface += finish - r.finish
                r.finish = finish
                self._host_free = finish
                extra = self.ov_done_r
            elif not r.cache_hit:
                extra += self.ov_reselect
            self._last_write = 0
        if extra:
            r.finish += extra
            r.overhead += extra
            self._host_free = r.finish
        return r

    @classmethod
    def queue_defaults(cls, preset) -> dict:
        """The drive's queue as its .parv gives it (disk_models.disksim_drives.queue_of)."""
        return queue_of(drive_files(source_of(preset.name)))

    def _target(self, lba: int) -> int:
        return self.lbn_map.physical(lba)

    def _empty_overlapping(self, a: int, b: int, t: float) -> None:
        """A write empties every clean read segment it overlaps (disk_buffer_set_segment: "clear
        out clean, non-active, overlapping segments"); a segment still reading ahead is not clean."""
        if self._ra_on and self._ra_tend <= t:
            self._stop_ra(t)                      # its read-ahead has finished: clean
        active = self._ra_seg if self._ra_on else None
        for seg in self._segs.segs:
            if seg is not active and seg.start < seg.end and a < seg.end and b > seg.start:
                seg.start = seg.end = -1
                seg.used = 0

    def _media_write(self, a: int, b: int, t: float):
        """A written-through write: the head positions while the data crosses the bus (from the
        command's end plus the data preparation overhead, in one bus tenure), and each sector is
        written only if its data is in the buffer when it passes under the head, else the write
        waits a revolution for it (disk_buffer_update_outbuffer counts the blocks the bus has
        delivered by then, disk_buffer_block_available checks them)."""
        seek, rot = self._position(t, a, True)
        L = self.layout
        xfer = L.stream_time(a, b)
        if self._wdata:
            per = self._wdata / (b - a)
            bus0 = t + self.ov_prep
            start = t + seek + rot
            lag = 0.0                     # how late the head would be for the worst sector
            x = a
            while x < b:                  # track by track: the head gains on (or loses to)
                z = L.zone(x)             # the bus within a track and loses a skew between
                zs, spt = L.zstart[z], L.zspt[z]
                end = zs + ((x - zs) // spt + 1) * spt
                if end > b:
                    end = b
                # within a track the gap changes linearly: its first or last sector is the worst
                late = bus0 + (x - a + 1) * per - (start + L.start_time(a, x))
                if late > lag:
                    lag = late
                late = bus0 + (end - a) * per - (start + L.start_time(a, end - 1))
                if late > lag:
                    lag = late
                x = end
            if self.extra_disc:
                # "Extra write disconnect" drives start writing a new segment only once
                # min(request, 10) sectors (15 for requests of 45 or more) are in
                # (disk_buffer_block_available)
                need = (b - a if b - a < 10 else 10) if b - a < 45 else 15
                late = bus0 + need * per - start
                if late > lag:
                    lag = late
            if lag > 0.0:
                rot += -(-lag // self.t_rev) * self.t_rev
        self._cyl, self._head = L.track(b - 1)
        self._cursor = b
        return seek, rot, xfer, 0.0, t + seek + rot + xfer

    def _position(self, t: float, lba: int, write: bool) -> tuple[float, float]:
        """DiskSim's trackSwitchPlusRotation: max(seek, head switch), plus the write settle when
        that is not zero, then the rotational wait."""
        cyl, head, ang = self.layout.locate(lba)
        d = cyl - self._cyl
        seek = self.seek(d if d > 0 else -d) if d else 0.0
        if head != self._head and self.head_switch > seek:
            seek = self.head_switch
        if write:
            if seek:
                seek += self.write_settle
                if seek < 0.0:
                    seek = 0.0
            if seek < self.min_seek_w:      # Minimum seek delay (disk_check_hda's mintime)
                seek = self.min_seek_w
        self._cyl = cyl
        self._head = head
        w = (ang - (t + seek) * self._inv_rev) % 1.0
        if w > 1.0 - 1e-7:
            w = 0.0
        return seek, w * self.t_rev

    def derived(self) -> dict:
        L = self.layout
        ms = lambda s: round(s * 1e3, 4)  # noqa: E731
        return {
            "source": (self.files.path, "", "the DiskSim parameter file"),
            "drive": (self.files.disk.name, "", "disksim_disk block"),
            "revolution": (ms(self.t_rev), "ms", "60 / Rotation speed"),
            "zones": (L.nzones, "", "from the .model file"),
            "cylinders": (L.cylinders, "", "last zone's last cylinder + 1"),
            "spt_od": (L.zspt[0], "sectors", "Blocks per track, first zone"),
            "spt_id": (L.zspt[-1], "sectors", "Blocks per track, last zone"),
            "seek_1": (ms(self.seek(1)), "ms", "one cylinder"),
            "seek_full": (ms(self.seek(L.cylinders - 1)), "ms", "full stroke"),
            "seek_mean": (ms(self.seek.mean_random_pairs()), "ms", "mean over random cylinder pairs"),
            "bus_read": (ms(self.bus_r), "ms/sector", "max(Bulk sector transfer time, bus Read block transfer time)"),
            "segments": (self.nseg, "", "Number of buffer segments (0: caching off)"),
            "segment": (self.seg_sectors, "sectors", "Segment size (in blks)"),
            "readahead": (self.readahead, "sectors", "Maximum read-ahead, within a segment"),
            "write_back": (self.wc_on, "", "Fast write level 2"),
        }
