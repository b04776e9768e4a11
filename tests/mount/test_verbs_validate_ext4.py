"""The in-process verbs against the real tools on ext4-profile images (issue 41).

The check of tests/mount/test_verbs_validate.py (experiments.verbcheck: the same case mounted
with the real tool and in-process with the verb, on identical copies of one image; simulated
time and every disk counter within 3%) on images made as `simfs mkfs --profile ext4` makes
them: flex_bg, extent-mapped files, htree directories, inode-table read-ahead. The allocators
rotate over ext4's own (mballoc, mballoc-delalloc) and ext2's, the directory orders over all
three. A directory of 3,000 entries is an htree on this profile (the generated tree's
directories fit one block), so hash-order readdir and lookups through its index are checked
too.
"""

from __future__ import annotations

import pytest

from experiments import verbcheck

pytestmark = pytest.mark.mount

PROFILE = "ext4"
CASES = [("find", "mballoc-delalloc", "hash"), ("cp-a", "mballoc", "linear"),
         ("tar-read", "ext2", "inode"), ("rm-rf", "mballoc-delalloc", "hash"),
         ("grep", "mballoc", "hash"), ("unpack", "mballoc-delalloc", "hash")]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("verbcheck-ext4")


@pytest.fixture(scope="module")
def tarball(work):
    d = work / "generated"
    d.mkdir()
    return verbcheck.tarball_of(None, 120, d)


@pytest.fixture(scope="module")
def htree_directory(work):
    """One directory of 3,000 files with 22-byte names: an htree of 33 leaf blocks (debugfs htree)."""
    src = work / "htree-src" / "d"
    src.mkdir(parents=True)
    for i in range(3_000):
        (src / f"file-with-a-name-{i:05d}").write_bytes(b"y" * (i % 2 * 100))
    d = work / "htree"
    d.mkdir()
    return verbcheck.tarball_of(str(src.parent), 0, d)


def _opts(alloc: str, order: str) -> str:
    return f"alloc={alloc},dirorder={order},disk=sas10k,writeback=async"


@pytest.mark.parametrize("verb,alloc,order", CASES, ids=[c[0] for c in CASES])
def test_verb_matches_the_real_tool_on_the_ext4_profile(verb, alloc, order, tarball):
    r = verbcheck.check(verbcheck.CASES[verb], _opts(alloc, order), tarball, tarball.parent, PROFILE)
    assert r["ok"], f"{verb} ({_opts(alloc, order)}) on the ext4 profile: {r['why']}"


@pytest.mark.parametrize("verb", ["find", "grep"])
def test_an_htree_directory_reads_the_same_mounted_and_in_process(verb, htree_directory):
    r = verbcheck.check(verbcheck.CASES[verb], _opts("mballoc-delalloc", "hash"), htree_directory,
                        htree_directory.parent, PROFILE)
    assert r["ok"], f"{verb} over a 3,000-entry htree directory: {r['why']}"
