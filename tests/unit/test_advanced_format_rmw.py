"""The 4K/512e model's read-modify-write of a write written through (FUA), stated from its
docstring (disk_models/advanced_format.py, after Hitachi's "Adaptive PRE_READ" and the WD and
Dell white papers): the drive reads the partly covered physical sectors as a read (no write
settle), then waits for them to come round again - one revolution on the same track - and
a physical sector its read buffer already holds needs no pre-read."""

import pytest

from disk_models import make_disk

SPEC = "wd-ears,partition_offset=40"     # an aligned partition: LBA 8k is a physical boundary
REV = 60.0 / 5400                        # wd-ears turns at 5400 rpm


def test_a_misaligned_fua_write_costs_a_pre_read_and_one_revolution():
    lba = 5_000_001                      # both ends partial, one track, far from the head
    w = make_disk(SPEC).submit("W", lba, 8, 0.0, True)
    r = make_disk(SPEC).submit("R", lba, 8, 0.0)     # the same sectors read by a cold drive
    # the first positioning is the pre-read's: a read's seek and rotational wait
    assert (w.seek, w.rotation) == (r.seek, r.rotation)
    assert w.rmw == pytest.approx(REV, rel=1e-9)
    assert w.finish - w.issue == pytest.approx(w.overhead + w.seek + w.rotation + w.transfer + w.rmw)


def test_an_aligned_fua_write_pays_nothing_more():
    w = make_disk(SPEC).submit("W", 5_000_000, 8, 0.0, True)
    assert w.rmw == 0.0


def test_sectors_in_the_read_buffer_need_no_pre_read():
    d = make_disk(SPEC)
    r = d.submit("R", 800, 32, 0.0)                  # holds physical sectors 840..871
    w = d.submit("W", 801, 8, r.finish, True)        # partial 840 and 848: both held
    assert w.rmw == 0.0
