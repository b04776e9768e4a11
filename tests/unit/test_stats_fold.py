"""The statistics fold latencies in bulk (Histogram.add_many, Phase.fold): the same counts,
sums to the last bit, min, max and percentiles as adding each value when it happened."""

import random
from types import SimpleNamespace

from simfs.blockio import stats as stats_mod
from simfs.blockio.histogram import Histogram
from simfs.blockio.stats import Stats


def _values(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(0.0 if r < 0.05 else rng.choice((1e-7, 3e-6, 1e-3, 0.25)) * rng.random())
    return out


def test_add_many_is_add_one_by_one():
    values = _values(1, 5000)
    one, bulk = Histogram(), Histogram()
    for v in values:
        one.add(v)
    bulk.add_many(values[:1234])
    bulk.add_many([])
    bulk.add_many(values[1234:])
    assert bulk.to_dict() == one.to_dict()
    assert bulk.summary() == one.summary()


def _result(rng):
    issue = rng.random()
    parts = {k: rng.random() * 1e-3 for k in stats_mod.DISK_COMPONENTS}
    return SimpleNamespace(issue=issue, start=issue + 1e-4, finish=issue + sum(parts.values()) + 1e-4,
                           cache_hit=rng.random() < 0.3, **parts)


def _reference_op(phase, name, seconds):
    """What Stats.op did before it batched: one update per operation."""
    entry = phase.ops.get(name)
    if entry is None:
        phase.ops[name] = [1, seconds]
    else:
        entry[0] += 1
        entry[1] += seconds
    phase.op_lat.setdefault(name, Histogram()).add(seconds)


def test_snapshot_matches_one_by_one(monkeypatch):
    """Operations and disk requests over two phases, with folds forced mid-run, give the
    snapshot that adding each latency at once gives."""
    monkeypatch.setattr(stats_mod, "FOLD_EVERY", 7)
    rng = random.Random(2)
    names = ["lookup", "getattr", "write", "create"]
    script = []
    for i in range(3000):
        script.append(("op", rng.choice(names), rng.random() * 1e-3) if rng.random() < 0.8
                      else ("disk", rng.choice("RW"), rng.choice(("data", "inode")), _result(rng)))
    batched, reference = Stats(), Stats()
    now = 0.0
    for i, step in enumerate(script):
        now += 1e-3
        if i == 1500:
            batched.mark("second", now)
            reference.mark("second", now)
        if step[0] == "op":
            batched.op(step[1], step[2], now)
            _reference_op(reference.phase, step[1], step[2])
            reference.phase.end = now
        else:
            for s in (batched, reference):
                s.disk(step[1], i * 64, 8, step[3], step[2])
            reference.phase.fold()          # the reference's disk latencies, folded at once
    assert batched.snapshot(now) == reference.snapshot(now)


def test_the_vector_fold_is_add_one_by_one():
    """add_many's numpy path (a long batch) gives what adding each value gives, to the last
    bit: halves of a nanosecond (round half to even), powers of two at the bucket edges, zeros,
    large values; batches with a negative or a huge value and short ones take the loop."""
    assert Histogram()._add_vector(_values(2, 100))             # the path under test is taken
    assert not Histogram()._add_vector(_values(3, 100) + [-1e-6])
    rng = random.Random(5)
    edges = [((1 << b) + d) * 1e-9 for b in range(8, 45) for d in (-1, 0, 1)]
    halves = [(k + 0.5) * 1e-9 for k in range(0, 3000, 7)] + [k * 0.5e-9 for k in range(1, 2000)]
    batches = [_values(2, 5000), edges, halves, [0.0, -0.0] * 50 + [3e-9] * 30,
               [rng.random() * 10 ** rng.randrange(-9, 5) for _ in range(3000)],
               _values(3, 100) + [-1e-6], _values(4, 100) + [2e6], _values(6, 10)]
    for values in batches:
        one, bulk = Histogram(), Histogram()
        for v in values:
            one.add(v)
        bulk.add_many(values[:len(values) // 3])
        bulk.add_many(values[len(values) // 3:])
        assert bulk.to_dict() == one.to_dict()
        assert repr(bulk.total) == repr(one.total) and bulk.count == one.count
        assert (bulk.min, bulk.max) == (one.min, one.max)
