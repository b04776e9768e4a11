"""In-process Volume throughput: 10,000 small files (1-16 KiB) and one 256 MiB file.

Run: python -m benchmarks.bench_volume [--files N] [--big-mib N] [--repeat R] [--big-repeat R]
                                      [--profile ext2|ext4|ext2,ext4] [--json]
Prints files/s, MB/s, peak memory (ru_maxrss) and the CPU cost of single operations (getattr, a
lookup that misses, a 4 KiB write over a block and one that allocates it, a 4 KiB sequential
read of a cached block: each call walks the read-ahead window again). `--profile ext4` makes
the image as `simfs mkfs --profile ext4` does (extent-mapped files, flex_bg, htree directories),
mounted with the same (default) options; `--profile ext2,ext4` measures both in one process,
taking turns (what benchmarks.bench_profiles runs).

What is measured, and why so (Python's timeit is the model): CPU time of this process
(time.process_time), not real time, so that neither the time the host gives other processes
nor the wait for the host's disk (the image's fsync) counts; with the garbage collector off
while a timing runs, as timeit has it (its pauses depend on everything the process holds).
Each single operation is timed 20 times (--repeat) over 1,000 calls (a 4 KiB allocation on
fresh offsets each time, so that every call still takes a new block) and its figure is the
least of those timings: the fastest repeat is the one the host disturbed least. The large
file is written and read 5 times (--big-repeat; a fresh file each time, the last one
unlinked before), timed 4 MiB at a time: its figure is the sum over the 4 MiB segments of
each one's least time. The small files are timed once, a directory of 100 at a time. With two
profiles every timing of one is followed by the same timing of the other (which goes first
alternates), so a host that slows down for a while - a busy neighbour CPU slows this one
for seconds - slows both alike. Compare profiles side by side, not against a fixed figure.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import random
import resource
import tempfile
import time
from pathlib import Path

from experiments import argtypes
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume

PROFILES = ("ext2", "ext4")
SEGMENT_CALLS = 32              # 128 KiB calls timed together in the large file: 4 MiB


def make_image(path: Path, size_bytes: int, profile: str, **mkfs_args) -> Path:
    """A 4 KiB-block image of the profile with a fixed UUID and hash seed (the same names hash
    alike in every run), as the benchmarks of the Volume make it."""
    mkfs(path, size_bytes, block_size=4096, uuid=bytes(16), hash_seed=bytes(16), profile=profile, **mkfs_args)
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_volume", description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--big-mib", type=int, default=256)
    ap.add_argument("--repeat", type=argtypes.positive, default=20,
                    help="timings of 1,000 calls of each single operation; the least is kept (default 20)")
    ap.add_argument("--big-repeat", type=argtypes.positive, default=5,
                    help="timings of the large file's write and read; the least is kept (default 5)")
    ap.add_argument("--profile", type=argtypes.listed(argtypes.one_of(PROFILES, "profile")), default=["ext2"],
                    help="the image's profile, or profiles measured in turns (ext2,ext4)")
    ap.add_argument("--json", action="store_true", help="print the measures as JSON (bench_profiles reads it)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results, sizes = measure(args, Path(tmp))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if args.json:
        print(json.dumps({"profiles": args.profile, "peak_rss_mib": rss / 1024, "measures": results}))
        return
    for p, m in results.items():
        t_small, t_big, t_read, *_ = m.values()
        print(f"profile     : {p} (CPU time; the large file: the least of {args.big_repeat} per 4 MiB, "
              f"single operations: of {args.repeat})")
        print(f"small files : {args.files} files, {sizes[p] / 2**20:.1f} MiB in {t_small:.2f} s "
              f"= {args.files / t_small:,.0f} files/s, {sizes[p] / 2**20 / t_small:.1f} MiB/s")
        print(f"big write   : {args.big_mib} MiB in {t_big:.2f} s = {args.big_mib / t_big:.1f} MiB/s")
        print(f"big read    : {args.big_mib} MiB in {t_read:.2f} s = {args.big_mib / t_read:.1f} MiB/s")
        for name, us in list(m.items())[3:]:
            print(f"{name.removesuffix(', µs'):<12}: {us:.1f} µs per operation")
    print(f"peak memory : {rss / 1024:.0f} MiB (before the volumes: {rss0 / 1024:.0f} MiB)")


def measure(args, tmp: Path) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """({profile: {measure: value}}, {profile: bytes of small files}), the profiles' volumes
    open side by side and measured in turns."""
    with contextlib.ExitStack() as stack:
        vols = {p: stack.enter_context(Volume.open(make_image(tmp / f"{p}.img", (args.big_mib + 400) << 20, p)))
                for p in args.profile}
        small, sizes = small_files(vols, args.files)
        big, read = big_file(vols, args.big_mib, args.big_repeat)
        costs = per_op(vols, repeat=args.repeat)
    return {p: {f"{args.files:,} small files, s": small[p], f"{args.big_mib} MiB written in 128 KiB calls, s": big[p],
                f"{args.big_mib} MiB read, s": read[p], **{f"{k}, µs": v for k, v in costs[p].items()}}
            for p in vols}, sizes


def _turns(vols: dict, k: int) -> list:
    """The (profile, volume) pairs in turn k's order: which goes first alternates."""
    items = list(vols.items())
    return items if k % 2 == 0 else items[::-1]


@contextlib.contextmanager
def _cpu(into: list):
    """Append the CPU seconds the block took, the collector off meanwhile (as timeit)."""
    gc.disable()
    try:
        t0 = time.process_time()
        yield
        into.append(time.process_time() - t0)
    finally:
        gc.enable()


def small_files(vols: dict, files: int) -> tuple[dict[str, float], dict[str, int]]:
    """({profile: CPU seconds}, {profile: bytes}) to create `files` files of 1-16 KiB, 100 to a
    directory, and sync: the same names and sizes on every volume, a directory at a time in
    turns; timed once (they are the tree the rest runs on)."""
    rngs = {p: random.Random(1) for p in vols}
    payloads = {p: rngs[p].randbytes(16384) for p in vols}
    times: dict[str, list[float]] = {p: [] for p in vols}
    sizes = dict.fromkeys(vols, 0)
    for k, first in enumerate(range(0, files, 100)):
        for p, vol in _turns(vols, k):
            rng = rngs[p]
            with _cpu(times[p]):
                d = vol.mkdir(vol.root_ino, b"d%04d" % k, 0o755, 0, 0).st_ino
                for i in range(first, min(first + 100, files)):
                    ino = vol.create(d, b"file%05d.c" % i, 0o644, 0, 0).st_ino
                    n = rng.randint(1024, 16384)
                    vol.write(ino, 0, payloads[p][:n])
                    sizes[p] += n
    for p, vol in vols.items():
        with _cpu(times[p]):
            vol.sync()
    return {p: sum(t) for p, t in times.items()}, sizes


def big_file(vols: dict, mib: int, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """({profile: write seconds}, {profile: read seconds}) of a `mib` MiB file in 128 KiB
    calls: written and synced, read back, unlinked (untimed), `repeat` times, a fresh file each
    time. The file goes a segment of 4 MiB at a time, the volumes in turns, and each figure
    is the sum over the segments (and the sync) of each one's least time over the repeats."""
    chunk = random.Random(2).randbytes(128 * 1024)
    offsets = list(range(0, mib << 20, len(chunk)))
    segments = [offsets[i:i + SEGMENT_CALLS] for i in range(0, len(offsets), SEGMENT_CALLS)]
    writes = {p: [[] for _ in range(len(segments) + 1)] for p in vols}      # the last: the sync
    reads = {p: [[] for _ in segments] for p in vols}
    for r in range(repeat):
        name = b"big%d" % r
        files = {p: vol.create(vol.root_ino, name, 0o644, 0, 0).st_ino for p, vol in vols.items()}
        for k, seg in enumerate(segments):
            for p, vol in _turns(vols, r + k):
                with _cpu(writes[p][k]):
                    for off in seg:
                        vol.write(files[p], off, chunk)
        for p, vol in _turns(vols, r):
            with _cpu(writes[p][-1]):
                vol.sync()
        for k, seg in enumerate(segments):
            for p, vol in _turns(vols, r + k):
                with _cpu(reads[p][k]):
                    for off in seg:
                        vol.read(files[p], off, len(chunk))
        for vol in vols.values():
            vol.unlink(vol.root_ino, name)
            vol.sync()
    return ({p: sum(min(t) for t in writes[p]) for p in vols}, {p: sum(min(t) for t in reads[p]) for p in vols})


def per_op(vols: dict, n: int = 1_000, repeat: int = 20) -> dict[str, dict[str, float]]:
    """{profile: {operation: CPU µs per call}}: for each operation, the least of `repeat`
    timings of n calls, the volumes in turns. Call i of repeat r uses index r * n + i, so each
    repeat of the 4 KiB allocation takes fresh blocks, and the writes and reads then go over
    those."""
    page = bytes(4096)
    files = {p: vol.create(vol.root_ino, b"per-op", 0o644, 0, 0).st_ino for p, vol in vols.items()}

    def miss(vol, f, i):
        try:
            vol.lookup(vol.root_ino, b"no-such-name")
        except OSError:
            pass

    ops = {"getattr": lambda vol, f, i: vol.getattr(f),
           "lookup miss": miss,
           "4K alloc": lambda vol, f, i: vol.write(f, i * 4096, page),      # each a new block
           "4K write": lambda vol, f, i: vol.write(f, i * 4096, page),      # over those blocks
           "4K read": lambda vol, f, i: vol.read(f, i * 4096, 4096)}        # cached, in order
    out: dict[str, dict[str, float]] = {p: {} for p in vols}
    for name, fn in ops.items():
        times: dict[str, list[float]] = {p: [] for p in vols}
        for r in range(repeat):
            for p, vol in _turns(vols, r):
                f = files[p]
                with _cpu(times[p]):
                    for i in range(r * n, (r + 1) * n):
                        fn(vol, f, i)
        for p, t in times.items():
            out[p][name] = min(t) / n * 1e6
    return out


if __name__ == "__main__":
    main()
