"""policies.linux_ext2: the window search of alloc_new_reservation (_reserve, and _chain after
many retries) gives the same window and the same tree as the kernel's loop written plainly
(find_next_reservable_window, then again from the first free block), on random trees."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from policies import linux_ext2
from policies.groupscan import first_free
from policies.linux_ext2 import Ext2, Window


def _find_next(tree, head, my_rsv, start_block, last_block) -> int:
    size = my_rsv.goal_size
    cur = start_block
    i = head
    rsv = tree.nodes[i]
    while True:
        if cur <= rsv.end:
            cur = rsv.end + 1
        if cur > last_block:
            return -1
        prev = rsv
        if i + 1 >= len(tree.nodes):
            break
        i += 1
        rsv = tree.nodes[i]
        if cur + size <= rsv.start:
            break
    if prev is not my_rsv and not my_rsv.empty:
        tree.remove(my_rsv)
    if prev is my_rsv:
        j = tree.index(my_rsv)
        my_rsv.start, my_rsv.end = cur, cur + size - 1
        tree.starts[j] = cur
        tree.ends[j] = my_rsv.end
    else:
        my_rsv.start, my_rsv.end = cur, cur + size - 1
        tree.add(my_rsv)
    my_rsv.alloc_hit = 0
    return 0


def _reference(alloc, my_rsv, start_block, gfb, gend, bits, bpg) -> int:
    head = alloc.tree.search(start_block)
    while True:
        if _find_next(alloc.tree, head, my_rsv, start_block, gend) < 0:
            alloc._discard(my_rsv)
            return -1
        ffb = first_free(bits, my_rsv.start - gfb, bpg)
        if ffb < 0:
            alloc._discard(my_rsv)
            return -1
        start_block = ffb + gfb
        if my_rsv.start <= start_block <= my_rsv.end:
            return 0
        head = alloc.tree.index(my_rsv)


def _scenario(rng: random.Random, bpg: int, gfb: int):
    alloc = Ext2()
    pos = gfb - rng.randrange(40)
    wins = []
    while pos < gfb + bpg + 40:
        pos += rng.choice((0, 0, 1, 2, 3, 5, 8, 9, 12, 30))
        size = rng.choice((1, 2, 4, 8, 8, 8, 16))
        w = Window(size)
        w.start, w.end = pos, pos + size - 1
        alloc.tree.add(w)
        wins.append(w)
        pos += size
    density = rng.choice((0.5, 0.9, 0.97, 1.0))
    bits = np.array([rng.random() < density for _ in range(bpg)], dtype=bool)
    if rng.random() < 0.5 and wins:
        my = rng.choice(wins)
    else:
        my = Window(rng.choice((3, 8, 16)))
    my.goal_size = rng.choice((3, 8, 16, my.goal_size))
    start = gfb + rng.randrange(bpg)
    return alloc, wins, my, bits, start


def _state(alloc, wins, my):
    return ([(w.start, w.end) for w in alloc.tree.nodes], list(alloc.tree.starts),
            list(alloc.tree.ends), alloc.tree.nodes.index(my) if not my.empty else -1,
            (my.start, my.end, my.alloc_hit, my.goal_size))


@pytest.mark.parametrize("chain_after,chain_slice", [(12, 64), (1, 2), (2, 1), (1, 64)])
def test_reserve_same_as_kernel_loop(monkeypatch, chain_after, chain_slice):
    monkeypatch.setattr(linux_ext2, "CHAIN_AFTER", chain_after)
    monkeypatch.setattr(linux_ext2, "CHAIN_SLICE", chain_slice)
    rng = random.Random(1234 + chain_after * 7 + chain_slice)
    bpg, gfb = 256, 1024
    for _ in range(1500):
        alloc, wins, my, bits, start = _scenario(rng, bpg, gfb)
        a2 = copy.deepcopy((alloc, wins, my))
        r_ref = _reference(alloc, my, start, gfb, gfb + bpg - 1, bits, bpg)
        alloc2, wins2, my2 = a2
        r_new = alloc2._reserve(my2, start, gfb, gfb + bpg - 1, bits, bpg)
        assert r_new == r_ref
        assert _state(alloc2, wins2, my2) == _state(alloc, wins, my)
