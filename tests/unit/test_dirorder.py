"""Properties of the directory-order policies (policies.dirorder).

The expected orders are written here independently, as sort keys, from the definitions in
reference/allocation-policies.md §3; the hash values come from simfs.ondisk.dirhash, which
tests/unit/test_dirhash.py checks against debugfs.
"""

from __future__ import annotations

import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.ondisk.dirhash import DirHasher, hash2pos
from policies.dirorder import (DIR_ORDERS, BadCookie, DirOrder, HashOrder, make_dir_order)

POLICIES = ["linear", "hash", "inode", "name"]
COOKIE_MAX = (1 << 63) - 2
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

name_st = st.binary(min_size=1, max_size=24).filter(
    lambda n: b"/" not in n and b"\0" not in n and n not in (b".", b".."))
hasher_st = st.builds(DirHasher, st.integers(0, 5),
                      st.one_of(st.none(), st.binary(min_size=16, max_size=16)))


@st.composite
def directories(draw, min_size=0, max_size=40):
    """Entries in on-disk order: '.' at 0, '..' at 12, then 4-byte aligned slots."""
    names = draw(st.lists(name_st, min_size=min_size, max_size=max_size, unique=True))
    # small inode range: hard links (equal inode numbers) happen
    inos = draw(st.lists(st.integers(1, 60), min_size=len(names), max_size=len(names)))
    gaps = draw(st.lists(st.integers(1, 20), min_size=len(names), max_size=len(names)))
    entries = [(b".", 2, 2, 0), (b"..", 2, 2, 12)]
    pos = 24
    for name, ino, gap in zip(names, inos, gaps):
        entries.append((name, ino, 1, pos))
        pos += 4 * gap
    return entries


@st.composite
def changes(draw, entries):
    """Remove some entries (never the dots), add new ones in freed or new slots."""
    real = entries[2:]
    removed = set(draw(st.lists(st.sampled_from(real), unique=True)) if real else [])
    kept = [e for e in entries if e not in removed]
    used_names = {e[0] for e in entries}
    new_names = draw(st.lists(name_st.filter(lambda n: n not in used_names), max_size=10,
                              unique=True))
    free = sorted(e[3] for e in removed)
    end = max(e[3] for e in entries) + 4
    added = []
    for name in new_names:
        if free and draw(st.booleans()):
            pos = free.pop(draw(st.integers(0, len(free) - 1)))
        else:
            pos = end
            end += 4 * draw(st.integers(1, 20))
        added.append((name, draw(st.integers(1, 60)), 1, pos))
    return sorted(kept + added, key=lambda e: e[3]), removed, added


def spec_key(policy: str, entry, hasher):
    name, ino, _, pos = entry
    rank = {b".": 0, b"..": 1}.get(name, 2)
    if policy == "linear":
        return (pos,)
    if policy == "inode":
        return (rank, ino if rank == 2 else 0, pos)
    if policy == "name":
        return (rank, name if rank == 2 else b"", pos)
    if policy == "hash":
        h, minor = hasher(name) if rank == 2 else (0, 0)
        return (rank, h, minor, pos)
    raise AssertionError(policy)


def spec_order(policy, entries, hasher):
    return sorted(entries, key=lambda e: spec_key(policy, e, hasher))


# --- the order itself ---------------------------------------------------------------------

@SETTINGS
@given(st.sampled_from(POLICIES), directories(), hasher_st)
def test_order_matches_definition(policy, entries, hasher):
    p = make_dir_order(policy)
    listing = p.order(entries, hasher, p.new_state())
    got = [e for e, _ in listing]
    assert sorted(got, key=lambda e: e[3]) == entries            # a permutation
    assert got == spec_order(policy, entries, hasher)
    if policy != "linear":
        assert [e[0] for e in got[:2]] == [b".", b".."]
    else:
        assert got == entries                                    # the order given
    cookies = [c for _, c in listing]
    assert all(1 <= c <= COOKIE_MAX for c in cookies)
    assert len(set(cookies)) == len(cookies)
    if policy != "name":
        assert cookies == sorted(cookies)                        # monotone in readdir order


@SETTINGS
@given(directories(min_size=1), hasher_st)
def test_hash_order_sorted_by_hash_and_ext4_positions(entries, hasher):
    p = make_dir_order("hash")
    listing = p.order(entries, hasher)
    hashes = [hasher(e[0]) for e, _ in listing[2:]]
    assert hashes == sorted(hashes)
    for (e, cookie) in listing[2:]:
        h, minor = hasher(e[0])
        if hasher.minor_is_zero:      # legacy: the slot position stands in for the minor hash
            assert cookie == 3 + (((h >> 1) << 32) | e[3])
        else:                         # ext4's hash2pos (+3: after '.' = 1 and '..' = 2)
            assert cookie == 3 + hash2pos(h, minor)


def test_inode_order_spd_readdir_example():
    entries = [(b".", 11, 2, 0), (b"..", 2, 2, 12), (b"c", 30, 1, 24), (b"a", 14, 1, 36),
               (b"link", 14, 1, 48), (b"b", 12, 1, 64)]
    got = [e[0] for e, _ in make_dir_order("inode").order(entries)]
    assert got == [b".", b"..", b"b", b"a", b"link", b"c"]


# --- resuming -----------------------------------------------------------------------------

@SETTINGS
@given(st.sampled_from(POLICIES), directories(), hasher_st)
def test_resume_unchanged(policy, entries, hasher):
    p = make_dir_order(policy)
    state = p.new_state()
    listing = p.order(entries, hasher, state)
    for i, (_, cookie) in enumerate(listing):
        assert list(p.iterate(entries, cookie, hasher, state)) == listing[i + 1:]
    assert list(p.iterate(entries, 0, hasher, state)) == listing


@SETTINGS
@given(st.sampled_from(POLICIES), directories(min_size=1), hasher_st, st.data())
def test_resume_after_adds_and_removes(policy, entries, hasher, data):
    """Resuming from an entry's cookie returns the current entries that sort after it --
    every survivor not yet seen, no removed entry -- even if that entry itself is gone."""
    p = make_dir_order(policy)
    state = p.new_state()
    listing = p.order(entries, hasher, state)
    i = data.draw(st.integers(0, len(listing) - 1))
    last, cookie = listing[i]
    new_entries, removed, added = data.draw(changes(entries))
    got = [e for e, _ in p.iterate(new_entries, cookie, hasher, state, generation=1)]
    k = spec_key(policy, last, hasher)
    expected = [e for e in spec_order(policy, new_entries, hasher)
                if spec_key(policy, e, hasher) > k]
    assert got == expected
    seen = {e for e, _ in listing[:i + 1]}
    survivors_unseen = [e for e in entries if e not in removed and e not in seen]
    assert set(survivors_unseen) <= set(got)
    assert not set(got) & removed


@SETTINGS
@given(st.sampled_from(POLICIES), directories(), hasher_st, st.integers(1, 7), st.data())
def test_readdir_loop_with_concurrent_changes(policy, entries, hasher, batch, data):
    """A reader taking `batch` entries per call while the directory changes between calls
    sees every entry that exists throughout exactly once and none it could not see, and
    finishes once the changes stop. (A writer that never stops can keep it going: in linear
    order, as on ext2 without dir_index, entries added at the end behind the reader's cursor
    faster than it reads them are all its to read.)"""
    p = make_dir_order(policy)
    state = p.new_state()
    current = list(entries)
    ever_removed: set = set()
    ever_present = set(entries)
    seen: list = []
    cookie = 0
    generation = 0
    changing = 40                   # calls after which the directory may change
    for call in range(changing + len(entries) + 10 * changing + 2):   # changes add at most 10
        got = []
        for e, c in p.iterate(current, cookie, hasher, state, generation):
            got.append(e)
            cookie = c
            if len(got) == batch:
                break
        if not got:
            break
        seen += got
        if call < changing and data.draw(st.booleans()):
            current, removed, added = data.draw(changes(current))
            ever_removed |= removed
            ever_present |= set(added)
            generation += 1
    else:
        raise AssertionError("readdir did not terminate after the changes stopped")
    assert len(seen) == len(set(seen)), "an entry was returned twice"
    survivors = set(entries) - ever_removed
    assert survivors <= set(seen)
    assert set(seen) <= ever_present


# --- hash collisions: duplicates, never skips ------------------------------------------------

class CollidingHash:
    """Only three (hash, minor) values: every directory has big collision groups."""

    minor_is_zero = False

    def __call__(self, name: bytes):
        return (zlib.crc32(name) % 3) * 0x20000000, 7


@SETTINGS
@given(directories(min_size=1))
def test_hash_collision_groups_repeat_but_never_skip(entries):
    p = HashOrder()
    h = CollidingHash()
    state = p.new_state()
    listing = p.order(entries, h, state)
    got = [e for e, _ in listing]
    assert got == spec_order("hash", entries, h)       # groups ordered by position
    for i, (e, cookie) in enumerate(listing):
        rest = [x for x, _ in p.iterate(entries, cookie, h, state)]
        remaining = got[i + 1:]
        assert rest[len(rest) - len(remaining):] == remaining   # nothing skipped
        extra = rest[:len(rest) - len(remaining)]                # re-emitted group members
        if e[0] not in (b".", b".."):
            assert all(h(x[0]) == h(e[0]) for x in extra)
            group_so_far = [x for x in got[:i + 1]
                            if x[0] not in (b".", b"..") and h(x[0]) == h(e[0])]
            assert extra in (group_so_far, [])
            if i + 1 < len(got) and got[i + 1][0] not in (b".", b"..") \
                    and h(got[i + 1][0]) == h(e[0]):
                assert extra   # inside a group: the cookie restarts the group
            else:
                assert not extra


def test_legacy_collisions_resume_exactly():
    """The legacy hash's 31 bits collide; its cookies carry the position instead of the
    (always zero) minor hash, so even colliding names resume exactly."""
    h = DirHasher("legacy")
    by_hash: dict = {}
    i = 0
    while True:       # find two names with equal legacy hash
        name = b"f%d" % i
        prev = by_hash.setdefault(h(name), name)
        if prev != name:
            break
        i += 1
    entries = [(b".", 2, 2, 0), (b"..", 2, 2, 12), (prev, 20, 1, 24), (name, 21, 1, 40),
               (b"other", 22, 1, 56)]
    p = make_dir_order("hash")
    state = p.new_state()
    listing = p.order(entries, h, state)
    for k, (_, cookie) in enumerate(listing):
        assert list(p.iterate(entries, cookie, h, state)) == listing[k + 1:]


# --- state, caching, errors ----------------------------------------------------------------

def test_generation_cache_reuses_listing():
    p = make_dir_order("name")
    state = p.new_state()
    e1 = [(b".", 2, 2, 0), (b"..", 2, 2, 12), (b"b", 5, 1, 24), (b"a", 6, 1, 36)]
    first = p.order(e1, None, state)
    e2 = e1 + [(b"c", 7, 1, 48)]
    # same generation: the caller promised "unchanged", the cached listing is served
    assert list(p.iterate(e2, 0, None, state, generation=None)) != first
    list(p.iterate(e1, 0, None, state, generation=5))
    assert list(p.iterate(e2, 0, None, state, generation=5)) == first
    assert [e[0] for e, _ in p.iterate(e2, 0, None, state, generation=6)] == \
        [b".", b"..", b"a", b"b", b"c"]


def test_name_cookies_are_stable_tickets():
    p = make_dir_order("name")
    state = p.new_state()
    entries = [(b".", 2, 2, 0), (b"..", 2, 2, 12), (b"b", 5, 1, 24), (b"a", 6, 1, 36)]
    c1 = dict((e[0], c) for e, c in p.order(entries, None, state))
    c2 = dict((e[0], c) for e, c in p.order(entries[::-1], None, state))
    assert c1 == c2
    with pytest.raises(BadCookie):
        list(p.iterate(entries, 99, None, state))
    with pytest.raises(BadCookie):
        p.iterate(entries, c1[b"a"], None, p.new_state())     # another handle's cookie
    with pytest.raises(BadCookie):
        p.iterate(entries, -1, None, state)


def test_registry_and_errors():
    assert sorted(n for n in DIR_ORDERS if DIR_ORDERS.origin(n) == "built-in") == sorted(POLICIES)
    for name, cls in DIR_ORDERS.items():
        p = make_dir_order(name)
        assert isinstance(p, DirOrder) and p.name == name and cls.summary
        assert "\n" not in cls.summary
    with pytest.raises(ValueError, match="hash, inode, linear, name"):
        make_dir_order("random")
    with pytest.raises(ValueError, match="hash context"):
        make_dir_order("hash").order([(b".", 2, 2, 0)])
    with pytest.raises(ValueError):
        make_dir_order("inode").order([(b"x", 5, 1, 26)])      # unaligned slot
    with pytest.raises(ValueError):
        make_dir_order("linear").order([], None, make_dir_order("inode").new_state())
