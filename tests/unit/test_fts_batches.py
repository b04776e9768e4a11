"""gnulib fts's reading of a directory (simfs.inprocess.verbs.fts.batches): readdir order up to
10,000 entries; past that, inode order, with the file-system type asked at the 10,001st entry;
at most 100,000 entries per batch, a getdents buffer's rest carried into the next."""

from __future__ import annotations

from types import SimpleNamespace

from simfs.inprocess.verbs.fts import MAX_READDIR, SORT_THRESHOLD, batches


class FakeKernel:
    """getdents64 over a fixed listing, `per_call` entries a call; records the calls."""

    def __init__(self, entries, per_call=1000):
        self.entries, self.per_call, self.pos, self.log = entries, per_call, 0, []

    def getdents(self, f):
        got = self.entries[self.pos:self.pos + self.per_call]
        self.pos += len(got)
        f.eof = not got
        self.log.append(("getdents", len(got)))
        return got


def _listing(n):
    """Entries in a readdir (hash-like) order whose inode numbers are not ascending."""
    return [(b"f%06d" % i, (i * 7919) % (n * 2) + 11, 0o100000) for i in range(n)]


def _run(n, per_call=1000):
    k, f = FakeKernel(_listing(n), per_call), SimpleNamespace(eof=False)

    def may_sort():
        k.log.append(("statfs", k.pos))
        return True
    return list(batches(k, f, may_sort)), k.log


def test_up_to_the_threshold_readdir_order_and_no_statfs():
    out, log = _run(SORT_THRESHOLD)
    assert [e for b, _ in out for e in b] == _listing(SORT_THRESHOLD)
    assert [last for _, last in out] == [True]
    assert not [x for x in log if x[0] == "statfs"]


def test_past_the_threshold_inode_order_and_statfs_after_the_buffer_holding_the_10001st():
    out, log = _run(SORT_THRESHOLD + 500)
    (batch, last), = out
    assert last and batch == sorted(_listing(SORT_THRESHOLD + 500), key=lambda e: e[1])
    statfs = [i for i, x in enumerate(log) if x[0] == "statfs"]
    assert len(statfs) == 1 and log[statfs[0]][1] == 10_500   # right after the 11th getdents call
    assert all(x[0] == "getdents" for x in log[statfs[0] + 1:])


def test_batches_of_at_most_max_readdir_keep_the_buffer_rest():
    n = MAX_READDIR + 1234
    out, log = _run(n, per_call=999)
    assert [len(b) for b, _ in out] == [MAX_READDIR, 1234]
    assert [last for _, last in out] == [False, True]
    assert sorted(e for b, _ in out for e in b) == sorted(_listing(n))   # nothing lost or twice
    assert out[0][0] == sorted(_listing(n)[:MAX_READDIR], key=lambda e: e[1])
    assert out[1][0] == _listing(n)[MAX_READDIR:]                       # 1,234: not sorted
    assert len([x for x in log if x[0] == "statfs"]) == 1   # the second batch is too small to ask
