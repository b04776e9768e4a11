"""Properties of the 4K/512e model (disk_models/advanced_format.py): an aligned workload never
pays a read-modify-write, a misaligned stream of whole 4 KiB blocks never costs less than the
same stream aligned, and the same requests give the same times."""

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
def test_misaligned_whole_blocks_never_cost_less_than_aligned(reqs, offset):
    # every write of whole 4 KiB blocks at offset 41 covers two physical sectors partly; the
    # same stream at offset 40 covers whole ones (reads as well as writes, cache on or off)
    writes = [q for q in reqs if q[0] == "W"]
    _, t_mis = run(f"wd-ears,partition_offset={offset}", writes)
    _, t_al = run("wd-ears,partition_offset=40", writes)
    if writes:
        assert t_mis >= t_al * 0.999
    mis, _ = run(f"wd-ears,partition_offset={offset}", writes)
    assert all(r.rmw > 0 or r.cache_hit for r in mis[:1])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_requests, st.sampled_from([40, 41]))
def test_the_same_requests_give_the_same_times(reqs, offset):
    spec = f"wd-ears,partition_offset={offset}"
    assert run(spec, reqs) == run(spec, reqs)
