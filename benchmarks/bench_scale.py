"""Memory against tree size: in-process Volume, N small files in directories of 20.

Run: python -m benchmarks.bench_scale [--files 20000 100000]
DESIGN.md asks that memory not grow with the number of files (seed 001: 2M files, 844k
directories): inodes, directories and block maps live in the image behind bounded caches
(buffer cache, in-core inodes: 8192, directory name index: 500k entries); what remains grows
with the volume's size (bitmaps), not with the number of files. Each size runs in a fresh
process; peak RSS is printed side by side.
"""

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_one(files: int) -> None:
    from simfs.ondisk.mkfs import mkfs
    from simfs.fs.volume import Volume, VolumeOptions
    with tempfile.TemporaryDirectory() as tmp:
        img = Path(tmp) / "scale.img"
        mkfs(img, max(256 << 20, files * 12 << 10), block_size=4096, bytes_per_inode=8192,
             uuid=bytes(16), hash_seed=bytes(16))
        t0 = time.perf_counter()
        with Volume.open(img, VolumeOptions(alloc="first-free", writeback="sync", disk="ideal", cache=32 << 20)) as vol:
            for i in range(files):
                if i % 4000 == 0:
                    top = vol.mkdir(vol.root_ino, b"t%05d" % (i // 4000), 0o755, 0, 0).st_ino
                if i % 20 == 0:
                    d = vol.mkdir(top, b"d%07d" % i, 0o755, 0, 0).st_ino
                vol.write(vol.create(d, b"f%07d.c" % i, 0o644, 0, 0).st_ino, 0, b"x" * 2048)
        dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{files:>9,} files  {files // 20:>8,} dirs  {dt:7.1f} s  {files / dt:7,.0f} files/s  peak RSS {rss:6.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return run_one(args.one)
    for n in args.files:
        subprocess.run([sys.executable, "-m", "benchmarks.bench_scale", "--one", str(n)], check=True)


if __name__ == "__main__":
    main()
