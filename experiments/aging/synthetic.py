"""Synthetic aging from a published profile, as Geriatrix does it (Kadekodi et al., ATC'18).

A profile is three distributions (Geriatrix's files, experiments/aging/profiles/): file
sizes, file ages and directory depths, fitted by its authors from metadata studies (the
built-in `agrawal`: Agrawal et al., FAST'07). Aging creates and deletes files on the image,
in-process under the configuration's own options, in two phases, as Geriatrix does:

- rapid: files of sizes drawn from the size distribution (a seeded RNG) are created until
  the image is `full` percent in use;
- stable: a fair coin picks create or delete for each operation, until the files created
  in this phase add up to `churn` times the image's size (and, with `frag=B`, until the free
  space's mean extent is at most B blocks). A create takes the size the live files most lack
  against the profile (that fits); a delete takes, from the age bucket with most files over
  its share, a file of the size most over its share (the oldest such). A file's age is
  counted in operations, relative to the run's length (Geriatrix's relative ages: bucket i
  holds the files younger than age_i / age_max of the operations so far). The fullness is
  held within `BAND` points of the target meanwhile (a create that would pass it is a delete).
  Each file goes into the depth the live files most lack, in one of that depth's
  sibling directories picked at random.

Then a settle step deletes or creates (a file sized to the gap) until the image is within
`TOLERANCE` points of the target, and the volume is closed (every delayed block placed).
Geriatrix's own code is not used (its stop rule, convergence of the age distribution in T
operations, is replaced by the churn: a fixed, repeatable amount of work). simfs has no
fallocate, so files are written (as Geriatrix's fallback does), 1 MiB per write.
Everything but the clock's timestamps is a function of the profile, the spec, the image and
the options: the same files in the same blocks every time (and the cache hands every
configuration and repeat the same bytes).
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

BUILTIN = Path(__file__).parent / "profiles"
FILES = {"sizes": "size_distribution.txt", "ages": "age_distribution.txt", "dirs": "dir_distribution.txt"}
DEFAULTS = {"full": 80.0, "churn": 1.0, "seed": 42, "frag": None}
TOLERANCE = 1.0         # percentage points: how close to `full` the aged image ends
BAND = 2.0              # percentage points above `full` the stable phase may go
MAX_CHURN = 20.0        # with frag=: the most churn tried before giving up
CHUNK = 1 << 20
TOP = b"synthetic"      # the directory the files live under


class SyntheticError(ValueError):
    """A bad profile or spec, or an image that cannot be aged so: one line for the user."""


# profiles -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    name: str
    sizes: tuple        # ((bytes, weight), ...)
    ages: tuple         # ((age, weight), ...), ages increasing
    dirs: tuple         # ((depth, weight, subdirs), ...)

    def digest(self) -> str:
        return hashlib.sha256(repr((self.sizes, self.ages, self.dirs)).encode()).hexdigest()[:16]


def builtin() -> list[str]:
    return sorted(p.name for p in BUILTIN.iterdir() if p.is_dir())


def load(name: str) -> Profile:
    """A built-in profile by name, or a directory holding Geriatrix's three files."""
    path = BUILTIN / name if "/" not in name and (BUILTIN / name).is_dir() else Path(name).expanduser()
    if not path.is_dir():
        raise SyntheticError(f"profile {name!r}: neither a built-in profile ({', '.join(builtin())}) "
                             "nor a directory of Geriatrix profile files")
    rows = {k: _rows(path / f, 3 if k == "dirs" else 2) for k, f in FILES.items()}
    sizes = tuple((int(b), w) for b, w in rows["sizes"])
    ages = tuple((a, w) for a, w in rows["ages"])
    dirs = tuple((int(d), w, int(s)) for d, w, s in rows["dirs"])
    if any(b < 0 or b != int(b) for b, _ in rows["sizes"]):
        raise SyntheticError(f"{path / FILES['sizes']}: sizes must be whole bytes, 0 or more")
    if any(b <= a for (a, _), (b, _) in zip(ages, ages[1:])) or ages[0][0] <= 0:
        raise SyntheticError(f"{path / FILES['ages']}: ages must be positive and increasing")
    if any(d < 1 or s < 0 for d, _, s in dirs):
        raise SyntheticError(f"{path / FILES['dirs']}: depths must be 1 or more, subdirectories 0 or more")
    return Profile(name, sizes, ages, dirs)


def _rows(path: Path, cols: int) -> list[tuple]:
    """Geriatrix's format: the number of rows, then that many rows of COLS numbers (anything
    after them is ignored, as Geriatrix ignores it); every weight positive."""
    try:
        words = path.read_text().split()
    except OSError as e:
        raise SyntheticError(f"{path}: {e.strerror or e}") from None
    try:
        n = int(words[0])
        vals = [float(w) for w in words[1:1 + n * cols]]
    except (IndexError, ValueError):
        raise SyntheticError(f"{path}: not a profile file (the number of rows, then rows of "
                             f"{cols} numbers)") from None
    if n < 1 or len(vals) < n * cols:
        raise SyntheticError(f"{path}: says {n} rows but has {len(vals) // cols}")
    rows = [tuple(vals[i * cols:(i + 1) * cols]) for i in range(n)]
    if any(not math.isfinite(v) for r in rows for v in r) or any(r[1] <= 0 for r in rows):
        raise SyntheticError(f"{path}: every weight must be a positive number")
    return rows


# the spec ---------------------------------------------------------------------------------------------
def parse(text: str) -> dict:
    """`PROFILE[,full=PCT][,churn=X][,seed=N][,frag=BLOCKS]` as the [aged] table's keys."""
    name, *opts = text.split(",")
    if not name:
        raise SyntheticError(f"synthetic:{text}: give a profile ({', '.join(builtin())}, or a directory)")
    table: dict = {"history": "synthetic", "profile": name}
    for o in opts:
        k, sep, v = o.partition("=")
        if not sep or k not in DEFAULTS:
            raise SyntheticError(f"synthetic:{text}: {o!r} is not KEY=VALUE with a key of {', '.join(DEFAULTS)}")
        try:
            table[k] = int(v) if k == "seed" else float(v)
        except ValueError:
            raise SyntheticError(f"synthetic:{text}: {k}={v!r} is not a number") from None
    try:
        check(table)
    except SyntheticError as e:
        raise SyntheticError(f"synthetic:{text}: {str(e).removeprefix('[aged] ')}") from None
    return table


def check(table: dict) -> None:
    """The values of a synthetic [aged] table (the profile itself is read by `load`)."""
    p = table.get("profile")
    if not isinstance(p, str) or not p:
        raise SyntheticError(f"[aged] profile = {p!r}: give a profile ({', '.join(builtin())}, or a directory)")
    full, churn, seed, frag = (table.get(k, DEFAULTS[k]) for k in ("full", "churn", "seed", "frag"))
    if not _number(full) or not 1 <= full <= 95:
        raise SyntheticError(f"[aged] full = {full!r}: give the percent of the blocks in use, 1 to 95")
    if not _number(churn) or not 0 <= churn <= MAX_CHURN:
        raise SyntheticError(f"[aged] churn = {churn!r}: give the stable phase's writes in image sizes, 0 to {MAX_CHURN:g}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise SyntheticError(f"[aged] seed = {seed!r}: give a whole number, 0 or more")
    if frag is not None and (not _number(frag) or frag < 1):
        raise SyntheticError(f"[aged] frag = {frag!r}: give the free extents' mean length to reach, in blocks (1 or more)")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def describe(table: dict) -> str:
    extra = "".join(f",{k}={table[k]:g}" if k != "seed" else f",seed={table[k]}"
                    for k in DEFAULTS if table.get(k) is not None and k in table)
    return f"synthetic:{table['profile']}{extra}"


def settings(table: dict) -> dict:
    """Every setting with its default filled in (the recipe)."""
    return {k: table.get(k, DEFAULTS[k]) for k in DEFAULTS}


# aging --------------------------------------------------------------------------------------------
@dataclass
class Live:
    path: list
    size: int
    born: int
    size_i: int
    dir_i: int


@dataclass
class Ager:
    """The aging of one mounted Kernel (simfs.inprocess.kernel) by a profile."""
    k: object
    profile: Profile
    full: float
    seed: int
    rng: random.Random = field(init=False)
    live: dict = field(default_factory=dict)        # tick born -> Live
    born: list = field(default_factory=list)        # ticks of the live files, increasing
    tick: int = 0
    written: int = 0
    created: int = 0
    deleted: int = 0

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        p = self.profile
        self.size_w = _shares([w for _, w in p.sizes])
        self.age_w = _shares([w for _, w in p.ages])
        self.age_r = [a / p.ages[-1][0] for a, _ in p.ages]
        self.dir_w = _shares([w for _, w, _ in p.dirs])
        self.size_n = [0] * len(p.sizes)
        self.dir_n = [0] * len(p.dirs)
        self.made: set = set()
        self.chunk = memoryview(b"\xa5" * CHUNK)
        vol = self.k.vol
        self.blocks = vol.geo.blocks_count
        self.bs = vol.geo.block_size

    # the image
    def used_pct(self) -> float:
        """Blocks in use (delayed blocks promised to writes included), percent of all."""
        s = self.k.vol.space
        return 100 * (self.blocks - s.free_blocks + s.reserved) / self.blocks

    def free_extent_mean(self) -> float:
        from .measure import free_extents
        return free_extents(self.k.vol.space.block_used)["mean_free_extent_blocks"]

    # operations
    def create(self, size_i: int | None = None, size: int | None = None) -> None:
        self.tick += 1
        if size is None:
            size = self.profile.sizes[size_i][0]
        dir_i = max(range(len(self.dir_n)), key=lambda i: (self.dir_w[i] - self._share(self.dir_n, i), -i))
        depth, _, subdirs = self.profile.dirs[dir_i]
        d = [TOP] + [b"l%d" % i for i in range(2, depth + 1)]
        if subdirs:
            d.append(b"d%d" % self.rng.randint(1, subdirs))
        self._mkdirs(d)
        path = d + [b"f%d" % self.tick]
        f = self.k.create(self.k.root, path, 0o644)
        done = 0
        while done < size:
            n = min(CHUNK, size - done)
            self.k.write(f, done, self.chunk[:n])
            done += n
        self.k.close(f)
        self.live[self.tick] = Live(path, size, self.tick, size_i if size_i is not None else -1, dir_i)
        self.born.append(self.tick)
        if size_i is not None:
            self.size_n[size_i] += 1
        self.dir_n[dir_i] += 1
        self.written += size
        self.created += 1

    def _mkdirs(self, d: list) -> None:
        for i in range(1, len(d) + 1):
            key = tuple(d[:i])
            if key not in self.made:
                self.k.mkdir(self.k.root, list(key), 0o755)
                self.made.add(key)

    def delete(self) -> bool:
        """Delete the file the profile most wants gone; False if there is none."""
        if not self.born:
            return False
        self.tick += 1
        t, n = self.tick, len(self.born)
        # bucket i holds the files born in [p[i], p[i-1]) (p[-1] = n): age <= age_r[i] * t
        p = [bisect.bisect_left(self.born, t - r * t) for r in self.age_r]
        span = [(p[i], p[i - 1] if i else n) for i in range(len(p))]
        order = sorted(range(len(p)), key=lambda i: (self.age_w[i] - (span[i][1] - span[i][0]) / n, -i))
        for b in order:
            lo, hi = span[b]
            if lo >= hi:
                continue
            first: dict[int, int] = {}
            for pos in range(lo, hi):
                first.setdefault(self.live[self.born[pos]].size_i, pos)
            pick = max(first, key=lambda s: ((self._share(self.size_n, s) - self.size_w[s]) if s >= 0 else 1.0,
                                             -first[s]))
            self._remove(first[pick])
            return True
        self._remove(0)
        return True

    def _remove(self, pos: int) -> None:
        lv = self.live.pop(self.born.pop(pos))
        self.k.unlink(self.k.root, lv.path)
        if lv.size_i >= 0:
            self.size_n[lv.size_i] -= 1
        self.dir_n[lv.dir_i] -= 1
        self.deleted += 1

    def _share(self, counts: list, i: int) -> float:
        n = len(self.born)
        return counts[i] / n if n else 0.0

    def lacking_size(self, room_blocks: int) -> int | None:
        """The size bucket the live files most lack that fits ROOM_BLOCKS (None: none fits)."""
        fits = [i for i, (b, _) in enumerate(self.profile.sizes) if -(-b // self.bs) <= room_blocks]
        if not fits:
            return None
        return max(fits, key=lambda i: (self.size_w[i] - self._share(self.size_n, i), -i))

    def room(self, pct: float) -> int:
        """Blocks left before PCT percent of the image is in use (less one per file for its
        mapping and directory growth)."""
        return int((pct - self.used_pct()) * self.blocks / 100) - 1

    # the phases
    def rapid(self) -> None:
        cum = _cumulative([w for _, w in self.profile.sizes])
        while self.used_pct() < self.full:
            i = bisect.bisect_left(cum, self.rng.random() * cum[-1])
            if -(-self.profile.sizes[i][0] // self.bs) > self.room(self.full + BAND):
                i = self.lacking_size(self.room(self.full + BAND))
                if i is None:
                    break
            self.create(i)

    def stable(self, churn_bytes: int, frag: float | None, max_bytes: int, every: int = 64) -> bool:
        """Create/delete until CHURN_BYTES are written (and the frag target met); False if
        MAX_BYTES were written without meeting it."""
        start = self.written
        ops = 0
        while True:
            done = self.written - start
            if done >= churn_bytes and (frag is None or (ops % every == 0 and self.free_extent_mean() <= frag)):
                return True
            if done >= max_bytes:
                return False
            ops += 1
            want_create = self.rng.random() < 0.5
            if self.used_pct() < self.full - BAND or not self.born:
                want_create = True
            if want_create:
                i = self.lacking_size(self.room(self.full + BAND))
                if i is not None:
                    self.create(i)
                    continue
            self.delete()

    def settle(self) -> None:
        """Delete, or write one file sized to the gap, until within TOLERANCE of `full`
        (measured after write-back: delayed blocks placed)."""
        for _ in range(10_000):
            self.k.vol.sync()
            pct = self.used_pct()
            if pct > self.full + TOLERANCE / 2:
                if not self.delete():
                    return
            elif pct < self.full - TOLERANCE / 2:
                gap = int((self.full - pct) * self.blocks / 100) - 1
                self.create(size=max(gap, 1) * self.bs)
            else:
                return


def _shares(weights: list[float]) -> list[float]:
    t = sum(weights)
    return [w / t for w in weights]


def _cumulative(weights: list[float]) -> list[float]:
    out, s = [], 0.0
    for w in weights:
        s += w
        out.append(s)
    return out


def age(image: str, opts, table: dict) -> dict:
    """Age IMAGE (a fresh image) in place by the synthetic table under the volume options
    OPTS. Returns what was reached: fullness, free extents, files, operations, bytes written.
    SyntheticError when the image is already fuller than the target, or frag= is not met."""
    import dataclasses
    from simfs.fs.volume import Volume
    from simfs.inprocess.kernel import Kernel
    from .measure import free_extents, used_pct
    s = settings(table)
    profile = load(table["profile"])
    vol = Volume.open(image, dataclasses.replace(opts, stats="", trace=""))
    try:
        k = Kernel(vol)
        k.mount()
        ager = Ager(k, profile, float(s["full"]), int(s["seed"]))
        if ager.used_pct() >= s["full"]:
            raise SyntheticError(f"{describe(table)}: the fresh image already has "
                                 f"{ager.used_pct():.1f}% of its blocks in use; give a higher full=")
        size = ager.blocks * ager.bs
        ager.rapid()
        ok = ager.stable(int(s["churn"] * size), s["frag"], int(MAX_CHURN * size))
        ager.settle()
        k.unmount()
    except BaseException:
        vol.close()
        raise
    vol.close()
    used = vol.space.block_used
    got = {"used_pct": used_pct(used), **free_extents(used), "files": len(ager.live),
           "created": ager.created, "deleted": ager.deleted, "written_bytes": ager.written,
           "operations": ager.tick}
    if not ok:
        raise SyntheticError(f"{describe(table)}: the free space's mean extent is still "
                             f"{got['mean_free_extent_blocks']:.1f} blocks after writing {MAX_CHURN:g} "
                             "times the image (give a larger frag=)")
    return got
