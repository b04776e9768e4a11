"""simfs fio's iodepth beside DiskSim's queue (issue 53, item 5), in-process: the Volume a mount
serves, driven as fio's direct random 4 KiB reads (or writes, --rw randwrite) are (one
read_direct or write_direct each, at fio's random offsets over one file), its trace timed by
simfs fio's own model (simfs.inprocess.fiomodel.model_job) at iodepth 1, 4, 16 and 32 with
libaio; beside it the DiskSim row of results/summary/drive-queue/table.md for the same drive and
scheduler (rand-read-4k or rand-write-4k), and that table's simfs column (DiskSim's request
stream through DriveQueue).

    .venv/bin/python -m benchmarks.bench_fio_depth [--disk disksim-barracuda,queue_depth=32,scheduler=clook]
        [--rw randread|randwrite] [--file-mb 1800] [--image 2000M] [--requests 2000] [--profile ext4] [--markdown]

Why in-process: the same Volume, trace and model as `simfs fio` on a mount, without fio's
lay-out of a 2 GiB file through FUSE (minutes) - the figures a mount gives are the same but for
the FUSE lookups around fio's open. DiskSim's synthgen reads the whole drive; the file covers
--file-mb of it. The ext4 profile keeps the file's block map in its inode (an ext2 file's
indirect blocks are a dependent read before one random read in five here).
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from simfs.blockio.trace import read_trace
from simfs.inprocess import fiomodel as fio
from simfs.fs.types import VolumeOptions
from simfs.fs.volume import Volume

TABLE = Path(__file__).resolve().parents[1] / "results" / "summary" / "drive-queue" / "table.md"
DEPTHS = (1, 4, 16, 32)


def disksim_row(disk: str, workload: str = "rand-read-4k") -> dict:
    """{depth: (DiskSim mean ms, DiskSim IOPS, simfs DriveQueue IOPS)} of the `workload` rows
    for the drive and scheduler ({} if none)."""
    m = re.match(r"disksim-([a-z0-9_]+)", disk)
    sched = re.search(r"scheduler=(\w+)", disk)
    if not m or not TABLE.exists():
        return {}
    drive, policy = m.group(1), (sched.group(1) if sched else "sptf").replace("spctf", "sptf")
    out = {}
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 13 and cells[0].lower() == drive and cells[1] == workload and cells[2] == policy:
            out[int(cells[3])] = (float(cells[4]), float(cells[10]), float(cells[11]))
    return out


def run(disk: str, image_size: str, file_mb: int, n: int, profile: str, work: Path,
        rw: str = "randread") -> tuple[dict, dict]:
    img, trace = work / "img", work / "trace.csv"
    subprocess.run([sys.executable, "-m", "simfs.cli", "mkfs", "-q", str(img), "--size", image_size, "-t", profile],
                   check=True)
    vol = Volume.open(str(img), VolumeOptions(disk=disk, trace=str(trace),
                                              alloc="mballoc" if profile == "ext4" else "ext2"))
    ino = vol.create(vol.root_ino, b"data", 0o100644, 0, 0).st_ino
    chunk = bytes(1 << 20)
    for i in range(file_mb):
        vol.write(ino, i << 20, chunk)
    vol.sync()
    vol.drop_caches()
    rng = random.Random(7)
    blocks = (file_mb << 20) // 4096
    vol.mark("rr")
    page = b"\xa5" * 4096
    for _ in range(n):
        if rw == "randwrite":
            vol.write_direct(ino, rng.randrange(blocks) * 4096, page)
        else:
            vol.read_direct(ino, rng.randrange(blocks) * 4096, 4096)
    vol.mark("end")
    stats = {"time": vol.stats_snapshot()}
    vol.close()
    cols = read_trace(trace)
    ph = next(p for p in stats["time"]["phases"] if p["name"] == "rr")
    out = {}
    kind, d = ("write_direct", "write") if rw == "randwrite" else ("read_direct", "read")
    for depth in DEPTHS:
        s = fio.settings(f"[rr]\nioengine=libaio\ndirect=1\niodepth={depth}\n")["rr"]
        m, why = fio.model_job(s, cols, ph, disk, ph["operations"][kind]["count"])
        if m is None:
            raise SystemExit(f"bench_fio_depth: {why}")
        lat = fio.lat_stats([c for _, c, _ in m[d]])
        out[depth] = (len(m[d]) / m["seconds"], lat["mean"] / 1e6)
    return out, ph


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--disk", default="disksim-barracuda,queue_depth=32,scheduler=clook")
    ap.add_argument("--rw", choices=("randread", "randwrite"), default="randread")
    ap.add_argument("--image", default="2000M")
    ap.add_argument("--file-mb", type=int, default=1800)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--profile", choices=("ext2", "ext4"), default="ext4")
    ap.add_argument("--markdown", action="store_true", help="(the table is Markdown either way)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        got, _ = run(a.disk, a.image, a.file_mb, a.requests, a.profile, Path(d), a.rw)
    ref = disksim_row(a.disk, "rand-write-4k" if a.rw == "randwrite" else "rand-read-4k")
    what = "writes" if a.rw == "randwrite" else "reads"
    print(f"{a.disk}, {a.profile}, {a.file_mb} MiB file, {a.requests} direct random 4 KiB {what} (libaio)\n")
    print("| iodepth | simfs fio IOPS | clat mean ms | DiskSim IOPS | diff % | DiskSim mean ms | DriveQueue IOPS |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for depth in DEPTHS:
        iops, mean = got[depth]
        if depth in ref:
            r_mean, r_iops, q_iops = ref[depth]
            print(f"| {depth} | {iops:.1f} | {mean:.2f} | {r_iops:.1f} | {100 * (iops - r_iops) / r_iops:+.1f} "
                  f"| {r_mean:.2f} | {q_iops:.1f} |")
        else:
            print(f"| {depth} | {iops:.1f} | {mean:.2f} | - | - | - | - |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
