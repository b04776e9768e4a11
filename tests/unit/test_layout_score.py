"""Conway et al.'s dynamic layout score (FAST'17 section 3), counted per phase from the disk
requests: 1 - (reads not starting where the previous read ended) / (4 KiB blocks read)."""

from disk_models import make_disk
from simfs.blockio.clock import SimClock
from simfs.blockio.stats import Stats, layout_score


def run(requests, sectors_per_block=8):
    stats = Stats()
    clock = SimClock(make_disk("sata7200"), stats, sectors_per_block)
    for op, block, count in requests:
        if op == "mark":
            stats.mark(block, clock.now)
            continue
        clock.io(op, block, count, "data")
    return stats.snapshot(clock.now)


def test_a_sequential_read_scores_one():
    doc = run([("R", 1000 + 4 * i, 4) for i in range(50)])
    total = doc["total"]
    assert total["counters"]["read_discontiguities"] == 0
    assert total["layout_score"] == 1.0


def test_each_jump_is_one_discontiguity_over_the_4k_blocks_read():
    # 10 requests of 2 blocks; every other one jumps away: 5 discontiguities over 20 blocks
    reqs = []
    for i in range(5):
        reqs += [("R", 10000 * i, 2), ("R", 10000 * i + 2, 2)]
    total = run(reqs)["total"]
    assert total["counters"]["read_discontiguities"] == 4          # the first read has no predecessor
    assert total["layout_score"] == 1 - 4 / 20


def test_writes_neither_break_nor_count():
    total = run([("R", 100, 1), ("W", 5000, 8), ("R", 101, 1)])["total"]
    assert total["counters"]["read_discontiguities"] == 0
    assert total["layout_score"] == 1.0


def test_blocks_are_4k_whatever_the_block_size():
    # 1 KiB file-system blocks (2 sectors): 8 blocks read = 2 4-KiB blocks, one jump
    total = run([("R", 0, 4), ("R", 1000, 4)], sectors_per_block=2)["total"]
    assert total["counters"]["sectors_read"] == 16
    assert total["layout_score"] == 1 - 1 / 2


def test_each_phase_starts_afresh():
    doc = run([("R", 0, 4), ("mark", "grep", 0), ("R", 9000, 4), ("R", 9004, 4)])
    grep = [p for p in doc["phases"] if p["name"] == "grep"][0]
    assert grep["counters"]["read_discontiguities"] == 0 and grep["layout_score"] == 1.0


def test_no_read_no_score():
    assert layout_score({"sectors_read": 0}) is None
    assert run([("W", 0, 4)])["total"]["layout_score"] is None
