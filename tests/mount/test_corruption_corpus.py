"""The corruption corpus (issue 38): every corruption of tests/corruption.py mounted and driven.

One small populated image (8 MiB, 1 KiB blocks, two groups) is made once per session by
`simfs mkfs` and a simfs mount; each corruption is applied to two copies of it. The base is
populated twice (POPULATIONS): on the allocator and write-back the corpus was written against
(first-free, sync), for every corruption; and on a default mount (Orlov, async), whose other
block choices the corruptions that name blocks or inodes the allocators chose (LAYOUT_PREFIXES:
bitmaps, block pointers, indirect blocks) are run against again. The kernel's
ext2 (read-write loop mount) drives one copy, simfs the other, with the same real tools under
timeouts (tests/corruption_drive.py). simfs passes a corruption when:

- its mount succeeds, or is refused with one line on stderr and exit status 2 (image untouched);
- no step hangs, nothing prints a traceback (tools, `simfs mount`/`umount`, the daemon's log);
- the daemon lives and the mount answers (perhaps with an error) until the unmount, after which
  the daemon exits and logs no ERROR (what `simfs umount` checks);
- the image file does not grow;
- e2fsck -fn finds no multiply-claimed block that it did not find before simfs ran (see
  new_claims for the one case not counted), and no block of an undamaged file changed (simfs
  wrote only into blocks of the files it wrote);
- wherever the kernel refused (EUCLEAN, EIO, ...) to stat or read a file, or to do a step,
  simfs refused too (a short read is a refusal only where reading the file again with the
  kernel's tool, head, ends in an error: tar takes any short read for a file that shrank, on the
  kernel's ext2 as on simfs); every name the kernel listed and did not
  refuse, simfs lists (a listing is not cut short). See _compare for the one scoping;
- where the kernel refused the whole mount with EUCLEAN, simfs refuses it too.

The kernel's side needs loop mounts (root, /dev/loop-control): without them only simfs's own
criteria are checked.

Beside them, the flex_bg descriptor cases (tests/corruption.py flex_descriptor_corpus, on an
ext4-profile image: one group's bitmap or inode table over another's tables or a backup
superblock) carry the kernel's ext4 answer recorded with each; test_flex_descriptor_case checks
the record against the running kernel and `simfs mount` against the record.

The corruptions run in a small pool (SIMFS_CORPUS_JOBS, default 3: the steps mostly wait) as
the session starts; each test waits for its own. A failing test names its corruption and says
every problem, with what the kernel did on the same copy.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import e2fsck as fsck, run_simfs, simfs_argv
from simfs.ondisk.mkfs import mkfs
from tests.corruption import (
    FLEX_MKFS, S_IFMT, S_IFREG, Layout, corpus, corrupted, desc_corrupted, flex_descriptor_corpus, population,
)
from tests.corruption_drive import (
    corruption_error, e2fsck, kernel_run, mounted, multiply_claimed, new_claims, refused, simfs_run, tool,
)
from tests.helpers import can_loop_mount

pytestmark = pytest.mark.mount

JOBS = int(os.environ.get("SIMFS_CORPUS_JOBS", "3"))
REPORT = os.environ.get("SIMFS_CORPUS_REPORT")      # a file: one JSON line per corruption run
MKFS = ("--size", "8M", "--block-size", "1024", "--blocks-per-group", "4096",
        "--uuid", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        "--hash-seed", "00000000-0000-0000-0000-000000000001")


#: how the base image is populated (`simfs mount` options): the layout the corpus was written
#: against, first-free with sync metadata, and a default mount's (alloc=ext2: Orlov, async)
POPULATIONS = {"first-free": ("-o", "alloc=first-free,writeback=sync"), "default": ()}
#: the corruptions run on both bases: those that name a block or an inode the allocators chose
#: (a bitmap's bits, a block pointer, an indirect block's entries), so that which live blocks
#: they hit, and which free blocks a damaged map appears to claim, depends on the layout
LAYOUT_PREFIXES = ("bbm-", "ibm-", "ino-block0-", "ino-block5-", "ino-file-acl-", "ind-", "dind-", "tind-",
                   "sparse-", "indblk-", "dindblk-")


def _populate(root: Path) -> None:
    for path, what in population():
        p = root / path.lstrip("/")
        if what == "dir":
            p.mkdir()
        elif isinstance(what, bytes):
            p.write_bytes(what)
        elif what[0] == "symlink":
            p.symlink_to(what[1])
        elif what[0] == "link":
            os.link(root / what[1].lstrip("/"), p)
        elif what[0] == "sparse":
            with open(p, "wb") as f:
                f.seek(what[1])
                f.write(what[2])


class Base:
    """The pristine populated image, its layout, and the session's scratch directory."""

    def __init__(self, where: Path, population: str = "first-free"):
        self.where = where
        self.population = population
        img = where / "base.img"
        run_simfs("mkfs", "-q", img, *MKFS)
        mnt = where / "base.mnt"
        mnt.mkdir()
        # which blocks each corruption names depends on the population's layout; the
        # corrupted copies are driven on a default mount whatever it was
        run_simfs("mount", img, mnt, *POPULATIONS[population])
        try:
            _populate(mnt)
        finally:
            run_simfs("umount", mnt)
        rc, out = fsck(img)
        assert rc == 0, out
        self.img = img.read_bytes()
        self.layout = Layout(self.img)
        self.corruptions = {c.name: c for c in corpus(self.layout)}
        self.src300 = where / "src300"
        self.src300.write_bytes(random.Random(300).randbytes(300 * 1024))


def _file_blocks(L: Layout, skip: str) -> dict[int, str]:
    """Data blocks of the regular files but `skip` (what the drive deletes) and anything in it:
    block -> path."""
    out = {}
    for path, f in L.files.items():
        if (f.mode & S_IFMT) == S_IFREG and path != skip and not path.startswith(skip + "/"):
            for b in f.data:
                out[b] = path
    return out


def _block(img: bytes, bs: int, n: int) -> bytes:
    return img[n * bs:(n + 1) * bs]


def _damage(base: Base, before: bytes, after: bytes, victim: str, claimed_before: set) -> list[str]:
    """Blocks of undamaged files (same bytes before the run as in the pristine image, claimed
    once) whose bytes changed: somebody wrote into a file it was not writing."""
    L, bs = base.layout, base.layout.bs
    dup = {b for _, b in claimed_before}
    changed = {}
    for b, path in sorted(_file_blocks(L, victim).items()):
        if b in dup or _block(before, bs, b) != _block(base.img, bs, b):
            continue
        if _block(after, bs, b) != _block(before, bs, b):
            changed.setdefault(path, []).append(b)
    return [f"{p}: block(s) {', '.join(map(str, bl[:8]))}{' ...' if len(bl) > 8 else ''} overwritten"
            for p, bl in changed.items()]


def run_one(base: Base, name: str) -> dict:
    """Everything the corpus learns about one corruption; 'problems' empty means simfs passed."""
    c = base.corruptions[name]
    t0 = time.monotonic()
    work = base.where / name
    work.mkdir()
    try:
        buf = bytes(corrupted(base.img, base.layout, c))
        kimg, simg = work / "kernel.img", work / "simfs.img"
        kimg.write_bytes(buf)
        simg.write_bytes(buf)
        _, rep0 = e2fsck(simg)
        claimed0 = multiply_claimed(rep0)
        v = base.layout.files.get(c.victim)
        victim_is_file = v is not None and (v.mode & S_IFMT) == S_IFREG
        out = {"name": name, "e2fsck_before": rep0}

        kmount = kdrive = None
        out["kernel"] = []
        if can_loop_mount() is None:
            kmount, kdrive = kernel_run(kimg, work / "k.mnt", c.victim, base.src300, victim_is_file)
            out["kernel"] = _kernel_notes(base, c, kimg, buf, claimed0, kmount)
        kimg.unlink()

        t1 = time.monotonic()
        r = simfs_run(simfs_argv(), simg, work / "s.mnt", c.victim, base.src300, victim_is_file)
        out["problems"] = problems = _judge(base, c, r, simg, buf, claimed0, kmount, kdrive)
        out["seconds"] = {"kernel": round(t1 - t0, 2), "simfs": round(time.monotonic() - t1, 2)}
        out["simfs_mount"] = r.mount.show()
        out["kernel_mount"] = kmount.show() if kmount else "(no loop mounts here)"
        out["kernel_refused"] = sorted(f"{p}: {m}" for p, m in kdrive.read_refused.items()) if kdrive else []
        out["kernel_steps"] = {n: st.show() for n, st in kdrive.steps.items() if st.failed} if kdrive else {}
        out["simfs_steps"] = {n: st.show() for n, st in r.drive.steps.items() if st.failed} if r.drive else {}
        if problems:
            out["log_tail"] = r.log[-3000:]
        if REPORT:
            with open(REPORT, "a") as f:
                f.write(json.dumps(out) + "\n")
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _kernel_notes(base: Base, c, kimg: Path, buf: bytes, claimed0: set, kmount) -> list[str]:
    """What the kernel's own run did to its copy by the corpus's damage criteria (none on any
    corruption so far: the criteria are ones ext2 meets), and whether it refused the mount."""
    notes = []
    _, krep = e2fsck(kimg)
    knew = new_claims(claimed0, multiply_claimed(krep))
    if knew:
        notes.append(f"kernel made new multiply-claimed blocks: {sorted(knew)[:10]}")
    notes += [f"kernel: {d}" for d in _damage(base, buf, kimg.read_bytes(), c.victim, claimed0)]
    if kmount.failed:
        notes.append(f"kernel refused the mount: {kmount.err.strip()}")
    return notes


def _judge(base: Base, c, r, simg: Path, buf: bytes, claimed0: set, kmount, kdrive) -> list[str]:
    """simfs's run against the criteria of the module's docstring: the problems found."""
    problems = []
    grown = simg.stat().st_size             # (a pointer to 0x7fffffff, written through: 2 TiB, sparse)
    with open(simg, "rb") as f:
        after = f.read(len(buf))
    texts = [r.mount.err, r.umount.err if r.umount else "", r.log]
    if r.drive:
        texts += [s.err + s.out for s in r.drive.steps.values()]
    if any("Traceback" in t for t in texts):
        where = next(t for t in texts if "Traceback" in t)
        i = where.index("Traceback")
        problems.append("traceback:\n" + where[i:i + 2500])

    if r.mount.failed:
        lines = r.mount.err.strip().splitlines()
        if r.mount.hung:
            problems.append("hang: simfs mount did not return")
        elif r.mount.rc != 2 or len(lines) != 1:
            problems.append(f"mount refused without one line and exit status 2: {r.mount.show()}")
        if after != buf or grown != len(buf):
            problems.append("a refused mount wrote to the image")
        return problems
    d = r.drive
    for step in d.hung():
        problems.append(f"hang: {d.steps[step].show()}")
    if not r.alive_at_end:
        problems.append(f"daemon crash or dead mount before unmount: {r.end_problem}")
    if r.umount is None or r.umount.failed:
        problems.append(f"umount failed: {r.umount.show() if r.umount else 'not run'}")
    if not r.daemon_exited:
        problems.append("the daemon did not exit within 30 s of the unmount (killed)")
    if r.close_errors:
        problems.append("the daemon failed after the unmount (`simfs umount` would exit 1):\n"
                        + "\n".join(r.close_errors[:3]))
    if grown > len(buf):
        problems.append(f"image grew from {len(buf)} to {grown} bytes")
    _, rep1 = e2fsck(simg)
    new = new_claims(claimed0, multiply_claimed(rep1))
    if new:
        problems.append(f"new multiply-claimed blocks (inode, block): {sorted(new)[:12]}"
                        f"{' ...' if len(new) > 12 else ''}\n{_excerpt(rep1, 'Multiply-claimed')}")
    problems += _damage(base, buf, after, c.victim, claimed0)
    if kdrive is not None:
        problems += _compare(base, buf, kdrive, d)
    if refused(kmount):
        # (a refusal as EINVAL, "bad superblock", is the kernel's own limits, not required)
        problems.append(f"the kernel refused the mount ({refused(kmount)}); simfs mounted")
    return problems


def _excerpt(report: str, word: str, n: int = 1200) -> str:
    i = report.find(word)
    return report[max(0, i - 200):i + n] if i >= 0 else ""


def _intact(base: Base, img: bytes, path: str) -> bool:
    """Whether a file's directory entry, inode, block-map blocks and data blocks hold the
    pristine bytes."""
    L, f = base.layout, base.layout.files.get("/" + path)
    if f is None:
        return False
    blk, off, n = L.dirent_at["/" + path]
    if img[blk * L.bs + off:blk * L.bs + off + n] != base.img[blk * L.bs + off:blk * L.bs + off + n]:
        return False
    off = L.inode_off(f.ino)
    if img[off:off + 128] != base.img[off:off + 128]:
        return False
    blocks = f.data + [b for b in (f.ind, f.dind) if b] + f.dind_children
    return all(_block(img, L.bs, b) == _block(base.img, L.bs, b) for b in blocks)


def _compare(base: Base, img: bytes, k, s) -> list[str]:
    """Where the kernel refused, simfs must refuse; what the kernel listed, simfs must list.

    One scoping: a file the kernel refused to open or read although its inode, block map and
    data are intact (the refusal came from elsewhere: the kernel's lookup gives up at the first
    bad block of a directory) may be served; everything about a damaged file, every step and
    every stat or listing the kernel refused must be refused."""
    problems = []
    refused_names = set(k.read_refused) | {n for n in k.seen - k.listed if _find_error(k.steps["find"], n)}
    missing = sorted(k.listed - s.seen - refused_names)
    if missing and not s.hung():
        problems.append(f"listing cut short: {len(missing)} name(s) the kernel lists (and opens) are "
                        f"missing, e.g. {missing[:5]} (simfs saw {len(s.seen)}, the kernel {len(k.seen)})")
    # and an intact file (entry, inode, map and data as made) that the kernel let find stat,
    # simfs lets it stat: a damaged directory block fails no more lookups than the kernel's
    # search fails (issue 51 item 9)
    unstat = sorted(n for n in (k.listed & s.seen) - s.listed
                    if _find_error(s.steps["find"], n) and _intact(base, img, n))
    if unstat and not s.hung():
        problems.append(f"simfs refused to stat {len(unstat)} name(s) the kernel stats, e.g. " + ", ".join(
            f"{n} ({_find_error(s.steps['find'], n)})" for n in unstat[:5]))
    # find names what it could not stat, or (a directory) open: the kernel refused those
    not_served = {n for n in k.seen - k.listed}
    served = sorted(n for n in not_served if n in s.listed and _find_error(k.steps["find"], n))
    if served:
        problems.append("the kernel refused to stat or list " + ", ".join(
            f"{n} ({_find_error(k.steps['find'], n)})" for n in served[:5]) + "; simfs served them")
    read = sorted(p for p, msg in k.read_refused.items() if corruption_error(msg)
                  and (p in s.read_ok or p in s.read_short) and not _intact(base, img, p))
    if read:
        problems.append("the kernel refused to read " + ", ".join(
            f"{p} ({k.read_refused[p]})" + (" [simfs: a short read, tar: file shrank]" if p in s.read_short else "")
            for p in read[:5]) + "; simfs served data")
    for step in ("overwrite", "delete"):                 # operations on the corrupted object
        ks, ss = k.steps.get(step), s.steps.get(step)
        why = refused(ks)
        if why and ss is not None and not ss.failed:
            problems.append(f"the kernel refused `{step}` ({why}); simfs did it")
    # the creations (a directory, a file in it, a new 300 KB file): which of them first meets a
    # corrupt inode bitmap or block bitmap is up to the inode and block placers, which are
    # simfs's plug-ins and differ from the kernel's by design; so simfs must refuse as many of
    # them as the kernel did, not the same ones
    creating = ("mkdir", "create", "write")
    k_refused = [st for st in creating if refused(k.steps.get(st))]
    s_refused = [st for st in creating if refused(s.steps.get(st))]
    if len(s_refused) < len(k_refused) and all(st in s.steps for st in creating):
        problems.append(f"the kernel refused {', '.join(f'`{st}` ({refused(k.steps[st])})' for st in k_refused)}"
                        f"; simfs refused {', '.join(f'`{st}`' for st in s_refused) or 'none of them'}")
    return problems


def _find_error(find_step, name: str) -> str | None:
    """The corruption-type error find gave for `name` (could not stat it, or open it)."""
    lines = [ln for ln in find_step.err.splitlines() if f"/{name}’: " in ln or f"/{name}': " in ln]
    return corruption_error("\n".join(lines))


# the session's pool ------------------------------------------------------------------------------
class Runner:
    """One pool for the corruptions of every base: (population, name) -> its run."""

    def __init__(self, bases: dict[str, Base], wanted: list[tuple[str, str]]):
        self.bases = bases
        self.pool = concurrent.futures.ThreadPoolExecutor(max(1, JOBS))
        self.futures = {(p, n): self.pool.submit(run_one, bases[p], n) for p, n in wanted}

    def result(self, population: str, name: str) -> dict:
        key = population, name
        if key not in self.futures:
            self.futures[key] = self.pool.submit(run_one, self.bases[population], name)
        return self.futures[key].result()


class Bases(dict):
    """The base images, each made when first wanted."""

    def __init__(self, tmp_path_factory):
        super().__init__()
        self.factory = tmp_path_factory

    def __missing__(self, population: str) -> Base:
        base = self[population] = Base(self.factory.mktemp(f"corpus-{population}"), population)
        return base


@pytest.fixture(scope="session")
def corpus_bases(tmp_path_factory) -> Bases:
    return Bases(tmp_path_factory)


@pytest.fixture(scope="session")
def corpus_base(corpus_bases) -> Base:
    return corpus_bases["first-free"]


@pytest.fixture(scope="session")
def corpus_runner(request, corpus_bases) -> Runner:
    population_of = {test: p for p, test in _TEST_OF.items()}
    wanted = [(population_of[item.originalname], item.callspec.params["name"])
              for item in request.session.items
              if item.originalname in population_of and hasattr(item, "callspec")]
    for base in dict.fromkeys(p for p, _ in wanted):
        corpus_bases[base]                              # made before the pool starts on it
    runner = Runner(corpus_bases, wanted)
    yield runner
    runner.pool.shutdown(wait=True, cancel_futures=True)


def _corpus_names() -> list[str]:
    """The corpus's names without an image (collection needs no mount): corpus() only builds
    closures and reads nothing but the block count until a corruption is applied."""
    class _Blocks:
        blocks = 8192
    return [c.name for c in corpus(_Blocks())]


CORPUS_NAMES = _corpus_names()


LAYOUT_NAMES = [n for n in CORPUS_NAMES if n.startswith(LAYOUT_PREFIXES)]
#: the test that runs each population's corruptions
_TEST_OF = {"first-free": "test_corruption", "default": "test_corruption_default_base"}


@pytest.mark.parametrize("population", list(POPULATIONS))
def test_corpus_size_and_determinism(corpus_bases, population):
    """At least 100 named corruptions, each changing the image, the same bytes every time
    (on the second base, those it runs)."""
    base = corpus_bases[population]
    L = base.layout
    assert len(base.corruptions) >= 100
    assert list(base.corruptions) == CORPUS_NAMES
    assert len(L.files["/bigdir"].data) >= 4, "the large directory spans several blocks"
    assert L.files["/ind"].ind and L.files["/dind"].dind and L.files["/dind"].dind_children
    again = Layout(base.img)
    names = CORPUS_NAMES if population == "first-free" else LAYOUT_NAMES
    for c in corpus(again):
        if c.name in names:
            assert corrupted(base.img, again, c) == corrupted(base.img, L, base.corruptions[c.name])


def test_the_populations_differ_where_the_second_is_run(corpus_bases):
    """The default mount's base is worth its time: the same tree, its files and directories
    in other blocks and inodes, so the corruptions run on it hit other things."""
    a, b = corpus_bases["first-free"], corpus_bases["default"]
    assert a.layout.files.keys() == b.layout.files.keys()
    assert a.layout.files["/ind"].data != b.layout.files["/ind"].data
    assert a.layout.files["/ind"].ind != b.layout.files["/ind"].ind
    assert a.layout.files["/d1"].ino != b.layout.files["/d1"].ino        # Orlov spreads directories
    for g in range(a.layout.groups):                                    # the bitmaps hold other bits
        for bm in ("block_bitmap", "inode_bitmap"):
            assert a.layout.block(a.layout.gd[g][bm]) != b.layout.block(b.layout.gd[g][bm])
    assert 30 <= len(LAYOUT_NAMES) < len(CORPUS_NAMES) // 2


#: corruptions simfs does not contain yet for want of a mechanism: (population, name) -> what is
#: missing (strict: one that starts passing must leave this list)
MISSING: dict[tuple[str, str], str] = {}


def _params(population: str, names: list[str]) -> list:
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=MISSING[population, n]))
            if (population, n) in MISSING else n for n in names]


def _check(corpus_runner, population: str, name: str) -> None:
    res = corpus_runner.result(population, name)
    note = ("\n(the kernel's ext2 on the same copy: " + "; ".join(res["kernel"]) + ")") if res["kernel"] else ""
    assert not res["problems"], f"{name} ({population} base):\n- " + "\n- ".join(res["problems"]) + note


@pytest.mark.parametrize("name", _params("first-free", CORPUS_NAMES))
def test_corruption(corpus_runner, name):
    _check(corpus_runner, "first-free", name)


#: on the second base, `make test` runs the block-pointer corruptions (the gap that base found);
#: `make test-long` the rest of LAYOUT_NAMES
SHORT_ON_DEFAULT = ("ind-", "dind-", "tind-")


@pytest.mark.parametrize("name", [n if n.startswith(SHORT_ON_DEFAULT) else
                                  pytest.param(n, marks=pytest.mark.long) for n in _params("default", LAYOUT_NAMES)])
def test_corruption_default_base(corpus_runner, name):
    _check(corpus_runner, "default", name)


# flex_bg group descriptors (issue 51 item 11): each case's recorded kernel answer, checked ------
#: run by `make test`: one the kernel refuses and one it mounts; the rest are `long`
FLEX_SHORT = ("flex-gd1-inode-table-is-gd0s", "flex-gd2-inode-table-moved-to-free-blocks")


@pytest.fixture(scope="module")
def flex_base(tmp_path_factory) -> bytes:
    img = tmp_path_factory.mktemp("flex-corpus") / "base.img"
    args = dict(FLEX_MKFS)
    mkfs(str(img), args.pop("size"), now=1_700_000_000, uid=0, gid=0, **args)
    return img.read_bytes()


@pytest.mark.parametrize("case", [c if c.name in FLEX_SHORT else pytest.param(c, marks=pytest.mark.long)
                                  for c in flex_descriptor_corpus()], ids=lambda c: c.name)
def test_flex_descriptor_case(tmp_path, flex_base, case):
    """The recorded answer is the running kernel's (ext4, a read-write loop mount of the same
    bytes: "Structure needs cleaning" or mounted), and `simfs mount` gives it too: refused with
    one line and exit status 2, the image untouched, or mounted and unmounted."""
    buf = bytes(desc_corrupted(flex_base, case))
    if can_loop_mount() is None:
        kimg, kmnt = tmp_path / "kernel.img", tmp_path / "k.mnt"
        kimg.write_bytes(buf)
        kmnt.mkdir()
        k = tool(["mount", "-t", "ext4", "-o", "loop,errors=continue", kimg, kmnt], timeout=60)
        if not k.failed:
            tool(["umount", kmnt], timeout=60)
        answer = "refused" if k.failed and "Structure needs cleaning" in k.err else "mounted"
        assert answer == case.kernel and (k.failed == (answer == "refused")), \
            f"{case.name}: recorded {case.kernel!r}, the kernel now: {k.show()}"
    img, mnt = tmp_path / "simfs.img", tmp_path / "s.mnt"
    img.write_bytes(buf)
    mnt.mkdir()
    s = tool(simfs_argv() + ["mount", img, mnt], timeout=60)
    u = tool(simfs_argv() + ["umount", mnt], timeout=60) if mounted(mnt) else None   # never left behind
    if case.kernel == "refused":
        lines = s.err.strip().splitlines()
        assert s.rc == 2 and len(lines) == 1 and "overlaps" in lines[0], s.show()
        assert img.read_bytes() == buf
    else:
        assert not s.failed, s.show()
        assert u is not None and not u.failed, u.show() if u else "not mounted"
