"""drop-caches reaches the drive: after `drop_buffer` a re-read is served by the media, not
by the drive's read segments (docs/statistics.md: the next phase starts cold everywhere)."""

import pytest

import disk_models


@pytest.mark.parametrize("preset", ["sata7200", "wd-ears", "wd1200jb"])
def test_reread_hits_the_buffer_until_dropped(preset):
    d = disk_models.make_disk(preset)
    t = d.submit("R", 1 << 20, 256, 0.0).finish
    warm = d.submit("R", 1 << 20, 256, t + 1.0)
    assert warm.cache_hit
    d.drop_buffer(warm.finish)
    cold = d.submit("R", 1 << 20, 256, warm.finish + 1.0)
    assert not cold.cache_hit
    assert cold.finish - cold.issue > warm.finish - warm.issue


def test_dirty_writes_survive_a_drop():
    d = disk_models.make_disk("sata7200")
    w = d.submit("W", 4096, 64, 0.0)
    assert w.cache_hit                       # absorbed by the write cache
    d.drop_buffer(w.finish)
    assert d.flush(w.finish) > w.finish      # still destaged to the media


def test_ideal_disk_accepts_a_drop():
    d = disk_models.make_disk("ideal")
    d.drop_buffer(0.0)
    assert d.submit("R", 0, 8, 1.0).finish == 1.0
