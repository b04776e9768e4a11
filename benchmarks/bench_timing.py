"""Cost of the timing engine (simulated time, issue 5) in CPU time: ratios, not absolute figures.

Run: python -m benchmarks.bench_timing [--files 2000] [--repeat 5] [--untimed /tmp/untimed]
                                       [--no-mount] [--json]

Two comparisons on a generated source-like tree (experiments.workload, seed 1):

* in-process Volume, side by side with the untimed build: commit 167730e, the last before
  "Simulated time", checked out with `git worktree add --detach /tmp/untimed 167730e` (done
  here if the directory is missing) and imported from there in a child process. Each child
  makes a fresh image, then times *unpack* (mkdir/create/write in 64 KiB chunks/symlink/link/
  setattr, as tar does, then close: everything written back) and *readback* (open, walk with
  readdir + lookup + getattr, read every file in 128 KiB requests, readlink, close). The
  untimed build runs with its 64 MiB buffer cache; the timed one with `cache=64M` and
  `disk=ideal` or `disk=sata7200`. File data is in memory before timing starts.
* mounted (the current build only): `tar xf` + unmount, then mount + `tar cf /dev/zero .` +
  unmount, with `-o disk=ideal` and `-o disk=sata7200`.

The figures compared are CPU seconds (user + system; of the child for the in-process runs, of
the mount's daemon up to the unmount for the mounted ones), which other work on a shared
machine disturbs far less than wall time; wall seconds are kept too (--json). Runs of the
configurations alternate and each figure is the best (minimum) of --repeat runs. Read the
ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UNTIMED_COMMIT = "167730e"
CACHE = 64 << 20        # the untimed build's buffer cache: 16384 blocks of 4 KiB


# the tree -----------------------------------------------------------------------------------------
def load_tree(src: Path) -> list[tuple]:
    """The tree as a list of entries, file data included, in the order tar would create them:
    ("d", rel, mode), ("f", rel, mode, data, mtime_ns), ("l", rel, target), ("h", rel, first_rel)."""
    out, seen = [], {}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, src)
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(p)
            if os.path.islink(p):
                out.append(("l", rel, os.readlink(p)))
            elif os.path.isdir(p):
                out.append(("d", rel, st.st_mode & 0o7777))
            elif (st.st_dev, st.st_ino) in seen:
                out.append(("h", rel, seen[(st.st_dev, st.st_ino)]))
            else:
                if st.st_nlink > 1:
                    seen[(st.st_dev, st.st_ino)] = rel
                out.append(("f", rel, st.st_mode & 0o7777, Path(p).read_bytes(), st.st_mtime_ns))
    return out


# the in-process workload (runs in a child, against either build) -----------------------------------
def unpack(vol, tree: list[tuple]) -> None:
    inos = {".": vol.root_ino}
    for e in tree:
        parent_rel, name = os.path.split(e[1])
        parent, bname = inos[parent_rel or "."], os.fsencode(name)
        if e[0] == "d":
            inos[e[1]] = vol.mkdir(parent, bname, e[2], 0, 0).st_ino
        elif e[0] == "l":
            vol.symlink(parent, bname, os.fsencode(e[2]), 0, 0)
        elif e[0] == "h":
            vol.link(inos[e[2]], parent, bname)
        else:
            ino = inos[e[1]] = vol.create(parent, bname, e[2], 0, 0).st_ino
            vol.hold(ino)
            data = e[3]
            for off in range(0, len(data), 65536):
                vol.write(ino, off, data[off:off + 65536])
            vol.drop(ino)
            vol.setattr(ino, mtime_ns=e[4], atime_ns=e[4])


def readback(vol, ino: int | None = None) -> int:
    """Walk and read everything; returns bytes read."""
    import stat
    ino = vol.root_ino if ino is None else ino
    total = 0
    for name, _child, _cookie in list(vol.readdir(ino)):
        if name in (b".", b"..", b"lost+found"):
            continue
        a = vol.lookup(ino, name)
        vol.getattr(a.st_ino)
        if stat.S_ISDIR(a.st_mode):
            total += readback(vol, a.st_ino)
        elif stat.S_ISLNK(a.st_mode):
            vol.readlink(a.st_ino)
        elif stat.S_ISREG(a.st_mode):
            for off in range(0, a.st_size, 131072):
                total += len(vol.read(a.st_ino, off, 131072))
    return total


# the options these figures were measured with (the defaults before a plain mount modelled
# Linux's ext2), named so that a build of either age runs the same model
OLD_DEFAULTS = {"alloc": "first-free", "writeback": "sync"}


def child(root: str, tree_file: str, image: str, opts: dict) -> dict:
    sys.path.insert(0, root)
    import simfs.fs.volume as volume_mod
    from simfs.ondisk.mkfs import mkfs
    if not os.path.realpath(volume_mod.__file__).startswith(os.path.realpath(root) + os.sep):
        raise SystemExit(f"imported {volume_mod.__file__}, not the build in {root}")
    with open(tree_file, "rb") as f:
        tree = pickle.load(f)
    mkfs(image, 512 << 20, block_size=4096, uuid=bytes(16), hash_seed=bytes(16))
    Volume, VolumeOptions = volume_mod.Volume, volume_mod.VolumeOptions
    out = {}
    t, c = time.perf_counter(), time.process_time()
    vol = Volume.open(image, VolumeOptions(**opts))
    unpack(vol, tree)
    vol.close()
    out["unpack"], out["unpack_wall"] = time.process_time() - c, time.perf_counter() - t
    t, c = time.perf_counter(), time.process_time()
    vol = Volume.open(image, VolumeOptions(**opts))
    out["bytes_read"] = readback(vol)
    if hasattr(vol, "clock"):
        out["simulated"] = vol.clock.now
    vol.close()
    out["readback"], out["readback_wall"] = time.process_time() - c, time.perf_counter() - t
    return out


def run_child(root: Path, tree_file: Path, image: Path, opts: dict) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(root), str(tree_file),
                        str(image), json.dumps(opts)], capture_output=True, text=True, env=env, cwd="/")
    if r.returncode != 0:
        raise SystemExit(f"child for {root} failed:\n{r.stderr[-3000:]}")
    image.unlink(missing_ok=True)
    return json.loads(r.stdout)


def untimed_build(path: Path) -> Path:
    if not (path / "simfs" / "volume.py").exists():
        print(f"# git worktree add --detach {path} {UNTIMED_COMMIT}", file=sys.stderr)
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), UNTIMED_COMMIT],
                       check=True, capture_output=True)
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    if head and not head.startswith(UNTIMED_COMMIT):
        raise SystemExit(f"{path} is at {head[:12]}, not {UNTIMED_COMMIT}")
    return path


# mounted --------------------------------------------------------------------------------------------
def _simfs() -> list[str]:
    exe = Path(sys.executable).with_name("simfs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simfs.cli"]


def mounted(tmp: Path, tarball: Path, disk: str) -> dict:
    simfs = _simfs()
    image, mnt = tmp / f"m-{disk}.img", tmp / f"m-{disk}.mnt"
    mnt.mkdir(exist_ok=True)
    subprocess.run(simfs + ["mkfs", "-q", "--force", str(image), "--size", "512M", "--uuid", str(_UUID),
                            "--hash-seed", str(_UUID)], check=True)
    opts = ["-o", f"disk={disk},cache=64M,alloc=first-free,writeback=sync"]
    out = {}
    try:
        for phase in ("unpack", "readback"):
            t = time.perf_counter()
            subprocess.run(simfs + ["mount", str(image), str(mnt)] + opts, check=True)
            if phase == "unpack":
                subprocess.run(["tar", "xf", str(tarball), "-C", str(mnt)], check=True)
            else:
                subprocess.run(["tar", "cf", "/dev/zero", "."], cwd=mnt, check=True)
            out[phase] = _daemon_cpu(mnt)
            subprocess.run(simfs + ["umount", str(mnt)], check=True)
            out[phase + "_wall"] = time.perf_counter() - t
    finally:
        if os.path.ismount(mnt):
            subprocess.run(simfs + ["umount", str(mnt)], capture_output=True)
        image.unlink(missing_ok=True)
        Path(str(image) + ".log").unlink(missing_ok=True)
    return out


_UUID = "00112233-4455-6677-8899-aabbccddeeff"


def _daemon_cpu(mnt: Path) -> float:
    """CPU seconds (user + system) the mount's daemon has used so far (before the unmount's
    write-back, which is not counted)."""
    pid = json.loads((mnt / ".simfs" / "info").read_text())["pid"]
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# report ---------------------------------------------------------------------------------------------
def _best(runs: list[dict], key: str) -> float:
    return min(r[key] for r in runs)


def _print_table(title: str, columns: list[str], rows: list[list]) -> None:
    widths = [max(len(str(x)) for x in [c] + [r[i] for r in rows]) for i, c in enumerate(columns)]
    print(f"\n{title}\n")
    print("| " + " | ".join(str(c).ljust(w) for c, w in zip(columns, widths)) + " |")
    print("|" + "|".join(("-" * (w + 2)) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)
                                for i, (x, w) in enumerate(zip(r, widths))) + " |")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(child(argv[1], argv[2], argv[3], json.loads(argv[4]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000, help="files in the generated tree (default 2000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each configuration (the best counts; default 5)")
    ap.add_argument("--untimed", type=Path, default=Path("/tmp/untimed"),
                    help=f"worktree of commit {UNTIMED_COMMIT} (made if missing)")
    ap.add_argument("--no-mount", action="store_true", help="skip the mounted comparison")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args(argv)

    from experiments.workload import generate_tree
    untimed = untimed_build(a.untimed)
    inproc = {"untimed": (untimed, {"cache_blocks": CACHE // 4096}),
              "ideal": (REPO, {"disk": "ideal", "cache": CACHE, **OLD_DEFAULTS}),
              "sata7200": (REPO, {"disk": "sata7200", "cache": CACHE, **OLD_DEFAULTS})}
    res: dict = {"files": a.files, "repeat": a.repeat, "in_process": {k: [] for k in inproc},
                 "mounted": {"ideal": [], "sata7200": []}}
    with tempfile.TemporaryDirectory(prefix="simfs-bench-timing-") as tmp:
        tmp = Path(tmp)
        summary = generate_tree(tmp / "src", seed=1, files=a.files)
        res["tree_bytes"] = summary.total_bytes if hasattr(summary, "total_bytes") else None
        tree_file = tmp / "tree.pickle"
        with open(tree_file, "wb") as f:
            pickle.dump(load_tree(tmp / "src"), f)
        tarball = tmp / "src.tar"
        subprocess.run(["tar", "cf", str(tarball), "-C", str(tmp / "src"), "."], check=True)
        for i in range(a.repeat):
            for name, (root, opts) in inproc.items():
                res["in_process"][name].append(run_child(root, tree_file, tmp / "img", opts))
            if not a.no_mount:
                for disk in res["mounted"]:
                    res["mounted"][disk].append(mounted(tmp, tarball, disk))
            print(f"# round {i + 1}/{a.repeat} done", file=sys.stderr)
        shutil.rmtree(tmp / "src", ignore_errors=True)

    ip = res["in_process"]
    med = {n: {k: _best(ip[n], k) for k in ("unpack", "readback")} for n in ip}
    reads = {n: {r["bytes_read"] for r in ip[n]} for n in ip}
    assert len(set.union(*reads.values())) == 1, f"the builds read different amounts: {reads}"
    res["ratios"] = {
        f"{phase}: {x} / {y}": med[x][phase] / med[y][phase]
        for phase in ("unpack", "readback") for x, y in (("ideal", "untimed"), ("sata7200", "untimed"),
                                                         ("sata7200", "ideal"))}
    if not a.no_mount:
        mm = {d: {k: _best(res["mounted"][d], k) for k in ("unpack", "readback")} for d in res["mounted"]}
        for phase in ("unpack", "readback"):
            res["ratios"][f"mounted {phase}: sata7200 / ideal"] = mm["sata7200"][phase] / mm["ideal"][phase]
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"timing engine cost: {a.files} files, best of {a.repeat} runs; CPU time relative to the "
          f"untimed build ({UNTIMED_COMMIT}) in process, to disk=ideal when mounted")
    rows = []
    for phase in ("unpack", "readback"):
        u = med["untimed"][phase]
        rows.append([f"in-process {phase}", "1.00", f"{med['ideal'][phase] / u:.2f}",
                     f"{med['sata7200'][phase] / u:.2f}"])
    _print_table("in-process Volume (CPU time / untimed)", ["workload", "untimed", "disk=ideal", "disk=sata7200"],
                 rows)
    if not a.no_mount:
        _print_table("mounted, daemon CPU time / disk=ideal", ["workload", "disk=ideal", "disk=sata7200"],
                     [[f"mounted {p}", "1.00", f"{mm['sata7200'][p] / mm['ideal'][p]:.2f}"]
                      for p in ("unpack", "readback")])
    sim = statistics.median(r["simulated"] for r in ip["sata7200"])
    print(f"\n(sata7200 read-back: {sim:.3f} simulated seconds; the ratios are of CPU time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
