"""One open file's page cache and read-ahead state in the kernel model (simfs.inprocess.kernel):
which pages a read finds cached and which READ requests the kernel's read-ahead sends."""

from __future__ import annotations

PAGE = 4096


class ReadAhead:
    """One open file's page cache and read-ahead state, as Linux 6.18's filemap_read and
    mm/readahead.c drive them (file_ra_state is per open file; FUSE without keep_cache drops
    the pages at open, so a fresh open starts empty).

    A read of pages [index, last) goes page by page, as filemap_get_pages' batches do (a batch
    stops at a page flagged PG_readahead, so every flagged page in range is met in order):
    - a page not cached: page_cache_sync_ra(req = last - index, unclipped by the file size):
      at page 0, for a request larger than ra_pages, or right after the previous read
      (index - prev_pos/PAGE in {0, 1}) a fresh window of get_init_ra_size(req) pages whose
      async part is size - req (size/2 when the request fills it); otherwise the pages cached
      just before (page_cache_prev_miss over ra_pages) decide: no longer run than the request,
      read just the request (state untouched); else a window of min(run + req, ra_pages)
      (run doubled if cached from page 0) with one async page;
    - a flagged page: page_cache_async_ra: at the expected marker the window moves on and
      grows (get_next_ra_size), all of it async; elsewhere the cached run after the page sets
      the size (page_cache_next_miss).
    A window reads the pages not cached (clipped to the file) and flags the page
    start + size - async_size. Folios are order 0 (no large-folio alignment): a tar read of a
    35-page file was READs of 4, 8, 16 and 7 pages on the mount, a 1 MiB dd read windows of 32
    pages always one window ahead."""

    def __init__(self, ra_pages: int):
        self.max = ra_pages
        self.cached: set[int] = set()
        self.flagged: set[int] = set()
        self.start = self.size = self.async_size = 0
        self.prev_pos = -1                              # file_ra_state_init

    def _init_size(self, req: int) -> int:
        new = 1 << (max(req, 1) - 1).bit_length()
        if new <= self.max // 32:
            return new * 4
        if new <= self.max // 4:
            return new * 2
        return self.max

    def _next_size(self, cur: int) -> int:
        if cur < self.max // 16:
            return 4 * cur
        if cur <= self.max // 2:
            return 2 * cur
        return self.max

    def _ra(self, first: int, count: int, lookahead: int, npages: int, runs: list) -> None:
        """page_cache_ra_unbounded: read [first, first+count) clipped to the file, skipping
        cached pages; flag the page count - lookahead into the window."""
        mark = first + count - lookahead
        last = min(first + count, npages)
        i = first
        while i < last:
            if i in self.cached:
                i += 1
                continue
            j = i
            while j < last and j not in self.cached:
                self.cached.add(j)
                if j == mark:
                    self.flagged.add(j)
                j += 1
            runs.append((i, j - i))
            i = j

    def _window(self, npages: int, runs: list) -> None:
        self._ra(self.start, self.size, self.async_size, npages, runs)

    def _prev_miss(self, index: int, scan: int) -> int:
        """page_cache_prev_miss: the highest gap in [index - scan + 1, index]; -1 (ULONG_MAX)
        when everything down to page 0 is cached; index - scan when there is no gap."""
        i = index
        for _ in range(scan):
            if i < 0:
                return -1
            if i not in self.cached:
                return i
            i -= 1
        return -1 if i < 0 else i

    def _next_miss(self, index: int, scan: int) -> int:
        for i in range(index, index + scan):
            if i not in self.cached:
                return i
        return index + scan

    def _sync(self, index: int, req: int, npages: int, runs: list) -> None:
        mx = self.max
        prev_index = self.prev_pos // PAGE if self.prev_pos >= 0 else None
        if (index == 0 or req > mx
                or (prev_index is not None and 0 <= index - prev_index <= 1)):
            self.start, self.size = index, self._init_size(req)
            self.async_size = self.size - req if self.size > req else self.size >> 1
            self._window(npages, runs)
            return
        miss = self._prev_miss(index - 1, mx)
        contig = index - miss - 1
        if contig <= req:                               # a small random read: just the request
            self._ra(index, req, 0, npages, runs)
            return
        if miss == -1:
            contig *= 2
        self.start, self.size, self.async_size = index, min(contig + req, mx), 1
        self._window(npages, runs)

    def _async(self, index: int, req: int, npages: int, runs: list) -> None:
        mx = self.max
        if index == self.start + self.size - self.async_size:
            self.start += self.size
            self.size = max(self.size, self._next_size(self.size))
            self.async_size = self.size
        else:
            start = self._next_miss(index + 1, mx)
            if not start or start - index > mx:
                return
            self.start = start
            self.size = self._next_size(start - index + req)
            self.async_size = self.size
        self._window(npages, runs)

    def access(self, first: int, last: int, npages: int, req_last: int | None = None
               ) -> list[tuple[int, int]]:
        """The read requests (first page, pages) a read of pages [first, last) sends; `last`
        is clipped to the file, `req_last` (default `last`) is the request's own end page."""
        if req_last is None:
            req_last = last
        runs: list[tuple[int, int]] = []
        for i in range(first, min(last, npages)):
            if i not in self.cached:
                self._sync(i, req_last - i, npages, runs)
            if i in self.flagged:
                self.flagged.discard(i)
                self._async(i, req_last - i, npages, runs)
        return runs
