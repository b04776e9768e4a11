"""simfs.blockio.softdeps with the buffer cache: soft updates' ordering, on its own.

Random operations (each dirties a few blocks of random kinds, under soft updates' rules)
interleaved with the cache's write-back paths (dirty thresholds, the per-second syncer,
fsync, sync), on the recording clock of test_cache. Properties: an update is only ever
carried by a write that starts after everything it needs is on the disk; after sync every
dependency is satisfied and nothing is dirty; the same sequence gives the same requests.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.writeback import BLOCK_KINDS, Softdep, rule_cycle
from simfs.blockio import softdeps
from tests.unit.test_cache import make

OPS = sorted(Softdep.DEPENDENCIES)
KINDS = ("bitmap", "gdt", "inode", "dir", "data", "indirect")

step = st.one_of(
    st.tuples(st.just("op"), st.sampled_from(OPS),
              st.lists(st.tuples(st.integers(0, 40), st.sampled_from(KINDS), st.booleans()),
                       min_size=1, max_size=6)),
    st.tuples(st.just("tick"), st.floats(0.0, 3.0)),
    st.tuples(st.just("bufdaemon"), st.integers(1, 10)),
    st.tuples(st.just("fsync"), st.lists(st.integers(0, 40), max_size=4)),
)


class Checked(softdeps.DepTracker):
    """The tracker, checking at every write that what it carries was ready when it started."""

    def __init__(self):
        super().__init__()
        self.violations = []
        self.carried = 0

    def start_write(self, blkno, now):
        out = super().start_write(blkno, now)
        for u in out or ():
            for n in u.needs:
                if n.done_at is None or n.done_at > now:
                    self.violations.append((blkno, u.tag, n.tag))
        self.carried += len(out or ())
        return out


def run(steps):
    c, clock, stats, _ = make(capacity=64, writeback="softdep")
    c.deps = Checked()
    for s in steps:
        if s[0] == "op":
            c.begin_op(s[1])
            for b, kind, fresh in s[2]:
                buf = c.getblk(b, kind) if fresh else c.bread(b, kind)
                c.mark_dirty(b, buf, kind)
            c.end_op()
        elif s[0] == "tick":
            clock.now += s[1]
            c.begin_op("read")
            c.end_op()
        elif s[0] == "bufdaemon":
            c._flush_oldest(s[1], wait=False)
        else:
            c.flush_blocks(s[1])
        # a block with updates still to carry is never marked clean (nor dropped)
        assert all(b in c.buffers and c.buffers[b].dirty for b in c.deps.pending)
    c.sync()
    return c, clock, stats


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=30))
def test_never_complete_before_what_it_depends_on_and_all_satisfied_after_sync(steps):
    c, clock, stats = run(steps)
    assert c.deps.violations == []
    assert not c.deps.pending and c.deps.live == 0
    assert c.ndirty == 0 and not any(b.dirty for b in c.buffers.values())


@settings(max_examples=50, deadline=None)
@given(st.lists(step, max_size=25))
def test_same_steps_same_requests(steps):
    a, b = run(steps), run(steps)
    assert a[1].ios == b[1].ios and a[1].now == b[1].now and a[2].totals() == b[2].totals()


def test_a_write_before_the_prerequisite_finished_is_rolled_back():
    t = softdeps.DepTracker()
    t.begin((("dir", "inode"),))
    t.dirtied(5, "inode")
    t.dirtied(9, "dir")
    assert t.end(lambda b: True, 0.0) == 2
    assert t.blocked(9, 0.0) and not t.blocked(5, 0.0)
    carried = t.start_write(9, 0.0)
    assert carried == [] and not t.finish_write(9, carried, 1.0)          # rolled back
    assert t.finish_write(5, t.start_write(5, 0.0), 2.0)                  # inode on disk at 2
    assert t.blocked(9, 1.5) and not t.blocked(9, 2.0)                     # not before it finished
    assert t.finish_write(9, t.start_write(9, 2.0), 3.0) and t.live == 0


def test_freeing_a_prerequisite_releases_its_dependents():
    t = softdeps.DepTracker()
    t.begin((("dir", "inode"),))
    t.dirtied(5, "inode")
    t.dirtied(9, "dir")
    t.end(lambda b: True, 0.0)
    t.cancel(5, 4.0)
    assert not t.blocked(9, 4.0) and t.live == 1


def test_softdep_rules_are_acyclic_and_use_known_kinds():
    for op, rules in Softdep.DEPENDENCIES.items():
        assert not rule_cycle(rules), op
        for tag in (t for r in rules for t in r):
            assert tag.removeprefix("new ") in BLOCK_KINDS, (op, tag)
    assert rule_cycle((("dir", "inode"), ("inode", "dir")))
