"""A rotating drive: zoned platters, Lee seek curve, rotation from absolute time, segmented
read-ahead buffer and a write-back cache.

Two resources, two clocks:
  _host_free  when the drive accepts the next command (no command queue: PATA, or SATA without
              NCQ); a request's `queue` is the wait for it, and for any destage in progress.
  _mech_free  when the actuator finishes the work it has committed to (a media request or a
              destage operation).
Read-ahead is soft work: the mechanism streams on after a read miss until it reaches the target
or something else needs it, and then stops where it had got to.  Destaging happens whenever the
mechanism is free and dirty data is waiting ("eager"), and is simulated lazily: each command first
plays out the destage operations that would have started by the time it arrived (at the same
instant included: the drive decides before a command issued on the previous completion arrives).

Everything is plain float arithmetic so that a sequential stream served from read-ahead costs a
few microseconds of Python per request.
"""

from __future__ import annotations

from .base import WORK_COUNTERS, WORK_TIMES, DiskModel, DiskResult
from .params import PARAMS, validate
from .drive_cache import SegmentCache, WriteCache
from .layout import SECTOR, build_layout
from .seek import SeekCurve

MS = 1e-3
MB = 1e6
#: Most sectors one destage operation writes (512 KiB, the size of a large host request).
DESTAGE_MAX = 1024
#: Rotational waits this close to a whole revolution are float noise on a stream: no wait.
_FULL_TURN = 1.0 - 1e-7


def _start(begin: float, accepted: float) -> float:
    """When the drive began a command: `begin` (its work start less the overhead), never before
    it accepted the command (float rounding of (t + ovh) - ovh must not make queue negative)."""
    return begin if begin > accepted else accepted


class RotatingDrive(DiskModel):
    """A conventional drive with 512-byte sectors (see AdvancedFormatDrive for 4K sectors)."""

    model = "rotating"
    summary = ("rotating drive: zones, Lee seek curve, rotation from absolute time, skews, "
               "segmented read-ahead buffer, write-back cache")
    PARAMS = PARAMS
    #: logical sectors per physical sector
    phys = 1
    #: where read-ahead after a read ending at b stops (None: b + readahead); a subclass's rule
    #: (DiskSim's "Buffer continuous read": to the track's or cylinder's end, ...)
    _ra_rule = None
    #: False: a segment drops its oldest data as soon as read-ahead is asked to go past its size;
    #: True (DiskSim's disk_buffer_segment_wrap): only as the sectors are actually read
    _wrap_as_read = False
    #: a read may be served from dirty write-cache data (DiskSim's "Allow read hits on write data")
    _dirty_hits = True

    @classmethod
    def check_values(cls, values: dict) -> None:
        validate(values)

    def __init__(self, spec):
        v = spec.values
        self.spec = spec
        self.name = spec.name
        self.capacity = v["capacity"]
        self.offset = v["partition_offset"]
        self.sectors = self.capacity - self.offset
        self.rpm = v["rpm"]
        self.t_rev = 60.0 / self.rpm
        self._inv_rev = 1.0 / self.t_rev
        t2t, avg, full = v["seek_t2t"] * MS, v["seek_avg"] * MS, v["seek_full"] * MS
        self.head_switch = v["head_switch"] * MS
        self.write_settle = v["write_settle"] * MS
        self.layout = build_layout(self.capacity, v["heads"], self.rpm, v["zones"], v["od_rate"] * MB,
                                   v["id_rate"] * MB, self.head_switch, t2t,
                                   align=v["physical_sector"] // SECTOR)
        self.seek = SeekCurve(t2t, avg, full, self.layout.cylinders)
        self.ovh = v["overhead"] * MS
        self.ovh_hit = v["overhead_hit"] * MS
        self.iface = SECTOR / (v["interface"] * MB)          # seconds per sector on the bus
        cache = int(v["drive_cache"] * 2 ** 20) // SECTOR
        self.nseg = v["segments"] if cache else 0
        self.seg_sectors = cache // v["segments"] if cache else 0
        ra = v["readahead"]
        # default: half a segment ahead of the host; the other half keeps what was read last,
        # so re-reads and short backward jumps (an indirect block read ahead of its data) hit
        ra = self.seg_sectors // 2 if ra is None else int(ra * 1024) // SECTOR
        self.readahead = min(ra, self.seg_sectors)
        self.wc_on = bool(v["write_cache"]) and cache > 0
        wb = v["write_buffer"]
        self.wc_sectors = cache // 2 if wb is None else int(wb * 2 ** 20) // SECTOR
        if self.wc_on and self.wc_sectors < 8:
            self.wc_on = False
        self.reset()

    # -- state ----------------------------------------------------------------------------
    def reset(self) -> None:
        self._host_free = 0.0
        self._mech_free = 0.0
        self._cyl = 0
        self._head = 0
        self._cursor = 0                  # LBA after the last media access (destage elevator)
        self._segs = SegmentCache(max(1, self.nseg), self.seg_sectors)
        self._wc = WriteCache(self.wc_sectors if self.wc_on else 0)
        self._ra_seg = None               # segment of the current stream
        self._ra_on = False               # read-ahead running (or ran to its target, lazily)
        self._ra_lba0 = 0                 # a sector of the stream ...
        self._ra_t0 = 0.0                 # ... and when it started under the head
        self._ra_tend = 0.0               # when read-ahead reaches the segment's end
        # the mechanism's state as DiskSim records it (mech_state): the last sector transferred
        # (None: the track in _rec_trk) and when it passed (positioning(..., recorded=True))
        self._rec_t = 0.0
        self._rec_x: int | None = None
        self._rec_trk = (0, 0)
        #: set by disk_models.queue for the command it starts: how long it waited in the drive
        #: before the drive took it; its command overhead ran meanwhile (DiskSim: overhead_done
        #: = arrival + overhead, disk_read_arrive / disk_write_arrive), so only the rest is paid
        self.waited = 0.0
        self.work_counters = dict.fromkeys(WORK_COUNTERS, 0)    # destaging: see DiskModel
        self.work_time = dict.fromkeys(WORK_TIMES, 0.0)

    def drop_buffer(self, now: float) -> None:
        """Empty the read segments and stop read-ahead at `now` (the head stays where it got
        to); the write cache keeps what is dirty."""
        self._stop_ra(now if now > self._host_free else self._host_free)
        self._segs.drop()
        self._ra_seg = None
        self._ra_on = False

    @property
    def busy_until(self) -> float:
        return self._host_free

    # -- requests -------------------------------------------------------------------------
    def submit(self, op, lba, sectors, issue_time, sync=False):
        if sectors <= 0 or lba < 0 or lba + sectors > self.sectors:
            self.check(op, lba, sectors)
        a = lba + self.offset
        b = a + sectors
        ts = self._host_free
        if issue_time > ts:
            ts = issue_time
        if self._wc.dirty:
            if op == "R" and ts == self._mech_free and self._dirty_hits and self._wc.covers(a, b):
                # the destage that starts now still has this data in the buffer
                return self._buffer_hit(None, a, b, issue_time, ts)
            self._advance(ts)
        if op == "R":
            seg = self._ra_seg
            if self._wrap_as_read and self._ra_on:
                got = self._wrap(seg, ts)
                if seg.start <= a <= seg.end and a >= got and self._ra_tend > ts:
                    # DiskSim (disk_buffer_check_read_segments): a read whose first block is not
                    # read yet is no hit; it stops the read-ahead and goes to the media
                    self._stop_ra(ts)
            if self._ra_on and seg.start <= a <= seg.end and (b <= seg.end or self._ra_tend > ts):
                return self._stream_hit(seg, a, b, issue_time, ts)
            return self._read(a, b, issue_time, ts)
        if op == "W":
            return self._write(a, b, issue_time, ts, sync)
        self.check(op, lba, sectors)

    def _stream_hit(self, seg, a, b, t, ts):
        """A read inside (or extending) the segment being read ahead: wait for the data if
        read-ahead has not got there yet, and keep reading ahead of the stream."""
        L = self.layout
        x = b - 1
        if x >= self._ra_lba0:
            tl = self._ra_t0 + L.start_time(self._ra_lba0, x)
            self._ra_lba0 = x             # rebase, so the next lookup is short
            self._ra_t0 = tl
            tav = tl + L.zst[L.zone(x)]
        else:
            tav = 0.0
        ovh = self.ovh_hit
        if self.waited:
            ovh = ovh - self.waited if ovh > self.waited else 0.0
        ifc = (b - a) * self.iface
        ready = ts + ovh + ifc
        if tav > ready:
            finish, wait = tav, tav - ready
        else:
            finish, wait = ready, 0.0
        want = b + self.readahead if self._ra_rule is None else self._ra_rule(b)
        if want > self.capacity:
            want = self.capacity
        if want > seg.end:
            if self._ra_tend > ts:
                seg.end = want
                self._ra_tend = self._ra_t0 + L.stream_time(self._ra_lba0, want)
            else:
                self._restart_ra(seg, ts, want)
            if not self._wrap_as_read and seg.start < want - self.seg_sectors:
                seg.start = want - self.seg_sectors
        self._host_free = finish
        return DiskResult(t, ts, finish, ts - t, ovh, 0.0, 0.0, wait, ifc, 0.0, True)

    def _buffer_hit(self, seg, a, b, t, ts):
        """A read the buffer holds whole: overhead and the bus, no mechanism."""
        if seg is not None:
            self._segs.touch(seg)
        ovh = self.ovh_hit
        if self.waited:
            ovh = ovh - self.waited if ovh > self.waited else 0.0
        ifc = (b - a) * self.iface
        finish = ts + ovh + ifc
        self._host_free = finish
        return DiskResult(t, ts, finish, ts - t, ovh, 0.0, 0.0, 0.0, ifc, 0.0, True)

    def _read(self, a, b, t, ts):
        seg = self._segs.find(a) if self.nseg else None
        if seg is not None and seg is self._ra_seg and self._ra_on:
            self._stop_ra(ts)             # read-ahead finished before this command came
        if self._wrap_as_read and seg is not None and a > seg.end:
            seg = None                    # read-ahead stopped short of this read (DiskSim)
        if (seg is not None and b <= seg.end) or (self._wc.dirty and self._dirty_hits and self._wc.covers(a, b)):
            return self._buffer_hit(seg, a, b, t, ts)
        # media read: a miss, or the rest of a segment's stream from where it stopped
        m0 = seg.end if seg is not None else a
        self._m0 = m0
        L = self.layout
        ovh = self.ovh
        if self.waited:
            ovh = ovh - self.waited if ovh > self.waited else 0.0
        tw = ts + ovh
        self._stop_ra(tw, False)          # the media read records the head's state
        if self._mech_free > tw:
            tw = self._mech_free
        seek, rot = self._position(tw, m0, False)
        t1 = tw + seek + rot
        xfer = L.stream_time(m0, b)
        t2 = t1 + xfer
        extra = (b - a) * self.iface - xfer
        if extra < 0.0:
            extra = 0.0
        finish = t2 + extra
        self._cyl, self._head = L.track(b - 1)
        self._rec_t = t2
        self._rec_x = b - 1
        self._cursor = b
        self._mech_free = t2
        self._host_free = finish
        if self.nseg:
            if seg is None:
                seg = self._segs.allocate(a)
            else:
                self._segs.touch(seg)
            want = b + self.readahead if self._ra_rule is None else self._ra_rule(b)
            if want > self.capacity:
                want = self.capacity
            seg.end = want if want > b else b
            if seg.start < (b if self._wrap_as_read else want) - self.seg_sectors:
                seg.start = (b if self._wrap_as_read else want) - self.seg_sectors
            self._ra_seg = seg
            if want > b:
                self._ra_on = True
                self._ra_lba0 = m0
                self._ra_t0 = t1
                self._ra_tend = t1 + L.stream_time(m0, want)
        start = _start(tw - ovh, ts)
        return DiskResult(t, start, finish, start - t, ovh, seek, rot, xfer, extra, 0.0, False)

    def _write(self, a, b, t, ts, sync):
        n = b - a
        wc = self._wc
        if self.wc_on and not sync and n <= wc.capacity:
            # write-back: the command ends when the data is in the buffer
            ovh = self.ovh_hit
            if self.waited:
                ovh = ovh - self.waited if ovh > self.waited else 0.0
            tw = ts + ovh
            if wc.dirty + n > wc.capacity:
                while wc.dirty + n > wc.capacity:
                    self._destage_one()
                if self._mech_free > tw:
                    tw = self._mech_free
            ifc = n * self.iface
            finish = tw + ifc
            if wc.dirty:
                self._advance(finish)
            if self._ra_on:
                self._stop_ra(finish)     # the mechanism turns to destaging
            wc.add(a, b)
            if self._mech_free < finish:
                self._mech_free = finish
            self._host_free = finish
            start = _start(tw - ovh, ts)
            return DiskResult(t, start, finish, start - t, ovh, 0.0, 0.0, 0.0, ifc, 0.0, True)
        # write-through (cache off) or FUA
        ovh = self.ovh
        if self.waited:
            ovh = ovh - self.waited if ovh > self.waited else 0.0
        tw = ts + ovh
        self._stop_ra(tw, False)
        if self._mech_free > tw:
            tw = self._mech_free
        if wc.dirty:
            wc.discard(a, b)
        seek, rot, xfer, rmw, t2 = self._media_write(a, b, tw)
        self._rec_t = t2
        self._rec_x = None                # the head's track as the write left it
        self._rec_trk = (self._cyl, self._head)
        extra = tw + n * self.iface - t2
        if extra < 0.0:
            extra = 0.0
        finish = t2 + extra
        self._mech_free = t2
        self._host_free = finish
        start = _start(tw - ovh, ts)
        return DiskResult(t, start, finish, start - t, ovh, seek, rot, xfer, extra, rmw, False)

    def flush(self, now: float) -> float:
        ts = now if now > self._host_free else self._host_free
        wc = self._wc
        if wc.dirty:
            self._advance(ts)
            while wc.dirty:
                self._destage_one()
        finish = ts + self.ovh_hit
        if self._mech_free > finish:
            finish = self._mech_free
        self._host_free = finish
        return finish

    # -- the command queue's view (disk_models.queue) --------------------------------------
    queueing = True
    #: `positioning` takes `recorded` (DiskSim's SPTF key: disk_models.queue)
    positioning_recorded = True

    def _target(self, lba: int) -> int:
        """The first media sector a request for partition-relative `lba` positions to."""
        return lba + self.offset

    def positioning(self, op, lba, sectors, t, cache=False, sync=False, recorded=False):
        """Seek + rotational wait if the drive took this request at t. `cache` False: the buffer
        is not consulted (SPTF); True (SPCTF): a read the buffer holds, or that the read-ahead in
        progress is bringing in, costs 0, one partly held positions to where the media read
        would start (with `recorded`: costs 1e-12 s, DiskSim's BUFFER_PARTIAL_SERVTIME).

        `recorded` False (the schedulers sptf-now, spctf-now): from where the head is when the
        drive would start it - after the command overhead, once the mechanism is free, read-ahead
        in progress stopped where it has got to. True (sptf, spctf: DiskSim's definition,
        disk_buffer_estimate_servtime): from the mechanism's state as DiskSim records it
        (mech_state) - the track of the last sector transferred and the platter's angle when
        that sector passed, not advanced to t (DiskSim updates the angle only as sectors pass
        under the head, disk_buffer_sector_done), no command overhead; a read-ahead still
        running is not counted (DiskSim reads none while another command waits,
        disk_buffer_request_complete), one that has stopped counts to its last sector.

        A write the write cache takes (on, not FUA, no larger than the cache) is no media
        access: it costs 0 while the cache has room, under either key, as DiskSim takes a write's
        data into a segment when it arrives (disk_write_arrive) and queues only media work. With
        the cache full it waits for the destage the cache's elevator picks next: its positioning
        is that destage's. (Ranked by its own sectors' position, SPTF chose which writes entered
        the cache - near the head - and random 4K writes lost IOPS with depth.)"""
        a = self._target(lba)
        if op == "W" and self.wc_on and not sync and sectors <= self._wc.capacity:
            wc = self._wc
            if wc.dirty + sectors <= wc.capacity:
                return 0.0
            a = wc.starts[wc.pick(self._cursor)]
        elif cache and op == "R" and self.nseg:
            seg = self._segs.find(a)
            if seg is not None:
                if seg is self._ra_seg and self._ra_on:
                    return 0.0
                if self._target(lba + sectors - 1) < seg.end:
                    return 0.0
                if recorded:              # DiskSim: BUFFER_PARTIAL_SERVTIME, 1e-9 ms
                    return 1e-12
                a = seg.end
        cyl, head = self._cyl, self._head
        if recorded:
            tw = self._rec_t
            x = self._rec_x
            self._cyl, self._head = self._rec_trk if x is None else self.layout.track(x)
        else:
            tw = t + self.ovh
            if self._mech_free > tw:
                tw = self._mech_free
            if self._ra_on:
                seg = self._ra_seg
                if tw >= self._ra_tend:
                    reached = seg.end
                else:
                    reached = self.layout.reach(self._ra_lba0, tw - self._ra_t0)
                    reached = seg.end if reached > seg.end else seg.start if reached < seg.start else reached
                self._cyl, self._head = self.layout.track(reached - 1 if reached > self._ra_lba0 else self._ra_lba0)
        try:
            seek, rot = self._position(tw, a, op == "W")
        finally:
            self._cyl, self._head = cyl, head
        return seek + rot

    # -- mechanism ------------------------------------------------------------------------
    def _position(self, t: float, lba: int, write: bool) -> tuple[float, float]:
        """Seek and rotational wait to reach the start of `lba`, starting at time t.  Moves the
        head to lba's track."""
        cyl, head, ang = self.layout.locate(lba)
        d = cyl - self._cyl
        if d:
            seek = self.seek(d if d > 0 else -d)
            if write:
                seek += self.write_settle
        elif head != self._head:
            seek = self.head_switch
        else:
            seek = 0.0
        self._cyl = cyl
        self._head = head
        w = (ang - (t + seek) * self._inv_rev) % 1.0
        if w > _FULL_TURN:
            w = 0.0
        return seek, w * self.t_rev

    def _media_write(self, a: int, b: int, t: float):
        """Write [a, b) to the platters starting at t: (seek, rotation, transfer, rmw, end)."""
        seek, rot = self._position(t, a, True)
        L = self.layout
        xfer = L.stream_time(a, b)
        self._cyl, self._head = L.track(b - 1)
        self._cursor = b
        return seek, rot, xfer, 0.0, t + seek + rot + xfer

    def _stop_ra(self, t: float, record: bool = True) -> None:
        """The mechanism is needed at t: read-ahead stops where it has got to (`record`: the
        head's state DiskSim records follows it; False when a media access follows at once)."""
        if not self._ra_on:
            return
        self._ra_on = False
        seg = self._ra_seg
        if t >= self._ra_tend:
            reached, tend = seg.end, self._ra_tend
        else:
            reached = self.layout.reach(self._ra_lba0, t - self._ra_t0)
            if reached > seg.end:
                reached = seg.end
            if reached < seg.start:
                reached = seg.start
            seg.end = reached
            tend = t
        if self._wrap_as_read and seg.start < reached - self.seg_sectors:
            seg.start = reached - self.seg_sectors
        last = reached - 1 if reached > self._ra_lba0 else self._ra_lba0
        self._cyl, self._head = self.layout.track(last)
        if record and reached > self._ra_lba0:        # it read on: when its last sector passed
            self._rec_t = tend if tend == self._ra_tend else self._ra_t0 + self.layout.stream_time(self._ra_lba0, reached)
            self._rec_x = last
        self._cursor = reached
        if tend > self._mech_free:
            self._mech_free = tend

    def _wrap(self, seg, t: float) -> int:
        """Read-ahead has read on to where it is at t (returned): the segment keeps its last
        seg_sectors."""
        if t >= self._ra_tend:
            reached = seg.end
        else:
            reached = self.layout.reach(self._ra_lba0, t - self._ra_t0)
        if seg.start < reached - self.seg_sectors:
            seg.start = reached - self.seg_sectors
        return reached

    def _restart_ra(self, seg, t: float, want: int) -> None:
        """Read-ahead had filled the segment and stopped; the host has read on, so resume."""
        self._stop_ra(t)
        tw = t if t > self._mech_free else self._mech_free
        x = seg.end
        seek, rot = self._position(tw, x, False)
        self._ra_lba0 = x
        self._ra_t0 = tw + seek + rot
        seg.end = want
        self._ra_seg = seg
        self._ra_on = True
        self._ra_tend = self._ra_t0 + self.layout.stream_time(x, want)

    # -- write cache ----------------------------------------------------------------------
    def _advance(self, t: float) -> None:
        """Play out the destage operations that start by t.  Dirty data is queued work, as a fast
        write's media write sits in DiskSim's queue: it takes the mechanism the moment the
        mechanism frees up, so a command arriving at that very moment (a host issuing on the
        previous completion) comes after it, as it would a nanosecond later; and read-ahead
        stops only where a destage takes its place."""
        wc = self._wc
        if not wc.dirty or self._mech_free > t:
            return
        if self._ra_on:
            self._stop_ra(self._mech_free)
        while wc.dirty and self._mech_free <= t:
            self._destage_one()

    def _destage_one(self) -> None:
        """One destage operation, chosen by the elevator, starting when the mechanism is free."""
        wc = self._wc
        i = wc.pick(self._cursor)
        a, e = wc.starts[i], wc.ends[i]
        b = self._chunk_end(i, a, e)
        t = self._mech_free
        spent = self.work_time
        pre = self._prereads(a, b, e)
        if pre:
            self._mech_free = self._preread(pre, t)
            self._cursor = b
            spent["destage_rmw"] += self._mech_free - t
            return
        seek, rot, xfer, rmw, t2 = self._media_write(a, b, t)
        self._rec_t = t2
        self._rec_x = None
        self._rec_trk = (self._cyl, self._head)
        wc.remove_head(i, b)
        self._mech_free = t2
        done = self.work_counters
        done["drive_destages"] += 1
        done["sectors_destaged"] += b - a
        spent["destage_seek"] += seek
        spent["destage_rotation"] += rot
        spent["destage_transfer"] += xfer
        spent["destage_rmw"] += rmw

    def _chunk_end(self, i: int, a: int, e: int) -> int:
        return e if e - a <= DESTAGE_MAX else a + DESTAGE_MAX

    def _prereads(self, a: int, b: int, e: int):
        """Physical sectors to read before [a, b) can be written (none on a 512-byte drive)."""
        return ()

    def _preread(self, parts, t: float) -> float:
        return t

    # -- description ----------------------------------------------------------------------
    def derived(self) -> dict:
        """Figures the model computes from the parameters: name -> (value, unit, how)."""
        L = self.layout
        ms = lambda s: round(s * 1e3, 4)  # noqa: E731
        return {
            "revolution": (ms(self.t_rev), "ms", "60 / rpm; mean rotational wait is half of it"),
            "cylinders": (L.cylinders, "", "capacity / (heads x mean sectors per track), equal per zone"),
            "spt_od": (L.zspt[0], "sectors", "outer zone sectors per track, solved for od_rate"),
            "spt_id": (L.zspt[-1], "sectors", "inner zone sectors per track, solved for id_rate"),
            "media_od": (round(L.zspt[0] * SECTOR / self.t_rev / MB, 2), "MB/s", "instantaneous, outer zone"),
            "media_id": (round(L.zspt[-1] * SECTOR / self.t_rev / MB, 2), "MB/s", "instantaneous, inner zone"),
            "sustained_od": (round(L.zone_rate(0) / MB, 2), "MB/s", "with skews: heads*spt*512/(heads*t_rev+skews)"),
            "sustained_id": (round(L.zone_rate(L.nzones - 1) / MB, 2), "MB/s", "with skews"),
            "track_skew_od": (L.ztsk[0], "sectors", "head_switch rounded up to sectors"),
            "cyl_skew_od": (L.zcsk[0], "sectors", "seek_t2t rounded up to sectors"),
            "seek_a": (round(self.seek.a * 1e3, 6), "ms", "Lee curve: a*sqrt(x-1)"),
            "seek_b": (round(self.seek.b * 1e3, 9), "ms", "Lee curve: b*(x-1)"),
            "seek_mean": (ms(self.seek.mean_random_pairs()), "ms", "mean over random distinct cylinder pairs"),
            "segment": (self.seg_sectors * SECTOR // 1024, "KiB", "drive_cache / segments"),
            "readahead_sectors": (self.readahead, "sectors", "read-ahead after a media read"),
            "write_buffer_sectors": (self.wc_sectors if self.wc_on else 0, "sectors",
                                     "dirty-data limit (0: write-through)"),
        }
