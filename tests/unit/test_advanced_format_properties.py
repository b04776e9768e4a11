"""Properties of the 4K/512e model (disk_models/advanced_format.py): an aligned workload never
pays a read-modify-write, a misaligned write of whole 4 KiB blocks written through always does,
and the same requests give the same times."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disk_models import make_disk

BLOCKS = (1 << 30) // 4096          # a 1 GiB span, in 4 KiB blocks

block_requests = st.lists(
    st.tuples(st.sampled_from("WWR"),
              st.one_of(st.integers(0, BLOCKS - 64), st.just(-1)),   # -1: right after the last one
              st.sampled_from([1, 1, 2, 8, 32]),                      # blocks
              st.sampled_from([0.0, 0.0, 1e-4, 2e-3, 0.05]),          # gap before issue
              st.booleans()),                                          # sync (FUA)
    min_size=1, max_size=50)


def run(spec, reqs):
    """Issue 4 KiB-block requests (partition-relative LBAs, multiples of 8); (results, end)."""
    disk = make_disk(spec)
    t, last, out = 0.0, 0, []
    for op, blk, n, gap, sync in reqs:
        blk = last if blk < 0 else blk
        r = disk.submit(op, blk * 8, n * 8, t + gap, sync and op == "W")
        out.append(r)
        t, last = r.finish, blk + n
    return out, disk.flush(t)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_requests, st.sampled_from([0, 40, 48, 2048]))
def test_an_aligned_workload_never_pays_a_read_modify_write(reqs, offset):
    results, _ = run(f"wd-ears,partition_offset={offset}", reqs)
    assert all(r.rmw == 0 for r in results)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_requests, st.sampled_from([34, 37, 39, 41]))
def test_a_misaligned_write_through_always_pays_a_read_modify_write(reqs, offset):
    # every write of whole 4 KiB blocks at these offsets covers two physical sectors partly;
    # written through (FUA) on a drive that holds nothing yet, the first one must pre-read.
    # (Total times are not compared: a shifted partition changes every rotational position,
    # so a single misaligned request can be served sooner than the aligned one.)
    writes = [(op, blk, n, gap, True) for op, blk, n, gap, _ in reqs if op == "W"]
    if writes:
        results, _ = run(f"wd-ears,partition_offset={offset}", writes)
        assert results[0].rmw > 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_requests, st.sampled_from([40, 41]))
def test_the_same_requests_give_the_same_times(reqs, offset):
    spec = f"wd-ears,partition_offset={offset}"
    assert run(spec, reqs) == run(spec, reqs)
