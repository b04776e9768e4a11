"""BufferCache eviction against delayed allocation (found by tests/test_file_data.py).

Evicting a dirty page of a not-yet-allocated block makes write-back place it first
(the cache's placer); placing changes other buffers (indirect block, bitmap, descriptor,
inode table). _evict chooses its victims before that; a victim that was clean when chosen
and was dirtied by the placement must stay, dirty, to be written back later (it was once
dropped unwritten: the new block pointer was lost).
"""

import os


import disk_models
from policies.writeback import make_writeback
from simfs.blockio.cache import BufferCache, vkey
from simfs.blockio.clock import SimClock
from simfs.blockio.imagefile import ImageFile
from simfs.blockio.stats import Stats

BS = 1024
IND = 100          # a clean indirect block the placement writes a pointer into
PLACED = 200       # where the page is placed


def test_eviction_keeps_a_victim_that_placing_a_delayed_page_dirtied(tmp_path):
    path = tmp_path / "img"
    path.write_bytes(bytes(BS * 256))
    fd = os.open(path, os.O_RDWR)
    try:
        stats = Stats()
        clock = SimClock(disk_models.make_disk("ideal"), stats, BS // 512)
        image = ImageFile(str(path), fd, BS, writable=True)
        cache = BufferCache(image, BS, 64, stats, clock, writeback=make_writeback("async"))
        key = vkey(12, 0)
        page = cache.page(key, "data", 12)
        page[:] = b"d" * BS
        cache.mark_dirty(key, page, "data", 12)
        cache.bread(IND, "indirect", 12)           # next to the page in LRU order: victims together

        class Placer:                              # as simfs.fs.delalloc: map the block
            def place(self, keys):
                buf = cache.bread(IND, "indirect", 12)
                buf[:4] = PLACED.to_bytes(4, "little")
                cache.mark_dirty(IND, buf, "indirect", 12)
                cache.rekey(key, PLACED)
                return {key: PLACED}

        cache.placer = Placer()
        for b in range(1, 64):                     # fill the cache: the last miss evicts
            cache.bread(b, "data")
        assert cache.is_dirty(IND)                 # kept for write-back, not dropped
        cache.sync()
        assert not cache.is_dirty(IND)
        image.commit()
        assert os.pread(fd, BS, PLACED * BS) == b"d" * BS
        assert int.from_bytes(os.pread(fd, 4, IND * BS), "little") == PLACED
    finally:
        os.close(fd)
