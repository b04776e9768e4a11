"""Check the in-process verbs against the real tools on a real mount.

For one verb, one tree and one set of volume options: two identical copies of a prepared image;
on the first, `simfs mount -o OPTIONS,stats=...`, the real tool, `simfs umount`; on the second,
`simfs.inprocess.verbs.run` with the same options. Simulated time and every disk counter must agree
within 3% (counts under 34 within one request). Used by tests/mount/test_verbs_validate.py
(quick sizes, in `make test`) and benchmarks/bench_verbs.py (full sizes, real time side by side).

    python -m experiments.verbcheck [--tree DIR | --files N] [--verbs find,...]
                                    [--orders hash,linear,inode] [--allocs ext2,cg,first-free]
                                    [--ops] [--profile ext2|ext4]

With --ops the two runs are compared operation for operation instead (`oplogs`,
`oplog_difference`): what the volume was asked, with each operation's outcome. --profile ext4
makes the images as `simfs mkfs --profile ext4` does (flex_bg, extents, htree directories).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from experiments import argtypes
from experiments.aging.mounted import sparse_copy

TOLERANCE = 0.03
UUID = "00000000-0000-0000-0000-00000000c0de"
HASH_SEED = "00000000-0000-0000-0000-0000000d1e5e"
TREE = "tree"
BIG = "big"
MMAP_WRITER = Path(__file__).resolve().parents[1] / "tests" / "tools" / "mmap_writer.py"


@dataclass
class Case:
    """A verb and the real command it stands for. `command(mnt, tarball)` is a shell string;
    `needs` what the image holds before the run: "tree" (the tree in /tree), "dir" (an empty
    /tree, for unpack). `refused`: the message the verb stops with where the tool exits 1
    after its work (cp -a meeting its own copy)."""
    verb: str
    command: object
    params: dict = field(default_factory=dict)
    needs: str = "tree"
    where: str = TREE
    refused: str = ""


def q(p) -> str:
    return shlex.quote(str(p))


CASES = {
    "unpack": Case("unpack", lambda m, t: f"tar -xpf {q(t)} -C {q(m / TREE)}", needs="dir"),
    "find": Case("find", lambda m, t: f"find {q(m / TREE)} -type d > /dev/null", {"type": "d"}),
    "cp-a": Case("cp-a", lambda m, t: f"cp -a {q(m / TREE)} {q(m / 'copy')}", {"dst": "copy"}),
    "rm-rf": Case("rm-rf", lambda m, t: f"rm -rf {q(m / TREE)}"),
    "tar-read": Case("tar-read", lambda m, t: f"tar -cf /dev/zero -C {q(m)} {TREE}"),
    "du": Case("du", lambda m, t: f"du -s {q(m / TREE)} > /dev/null"),
    "grep": Case("grep", lambda m, t: f"grep -r zzzqqq {q(m / TREE)}; test $? = 1"),
    "dd": Case("dd", lambda m, t: f"dd if={q(m / BIG)} of=/dev/null bs=1M status=none",
               needs="file", where=BIG),
    "cat": Case("cat", lambda m, t: f"cat {q(m / BIG)} > /dev/null", needs="file", where=BIG),
    "mmap-fill": Case("mmap-fill", lambda m, t: f"{q(sys.executable)} {q(MMAP_WRITER)} {q(m / 'f')} "
                      f"{16 << 20} --pwrite -q", {"size": 16 << 20}, needs="empty", where="f"),
}


def simfs(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simfs.cli", *map(str, args)], capture_output=True,
                          text=True, check=True)


def volume_options(spec: str):
    from simfs.fuse import mountopts
    return mountopts.parse([spec]).volume


def prepare(work: Path, needs: str, tarball: Path, options: str, profile: str = "ext2") -> Path:
    """The image a case starts from (made once per needs/options/profile, in-process)."""
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_tarball
    from simfs.fs.volume import Volume
    from simfs.ondisk.mkfs import mkfs
    img = work / f"base-{needs}-{profile}-{abs(hash(options)) % 10**8}.img"
    if img.exists():
        return img
    size = max(256 << 20, 8 * tarball.stat().st_size)
    mkfs(img, size, block_size=4096, inode_size=256, uuid=bytes.fromhex(UUID.replace("-", "")),
         hash_seed=bytes.fromhex(HASH_SEED.replace("-", "")), profile=profile)
    if needs == "dir":
        with Volume.open(img, volume_options(options)) as vol:
            vol.mkdir(vol.root_ino, TREE.encode(), 0o40755, 0, 0)
    elif needs == "tree":
        verbs.run(str(img), volume_options(options), "unpack", TREE, mkdir=True,
                  source=from_tarball(str(tarball)))
    elif needs == "file":       # a 16 MiB file written in order (dd's subject)
        verbs.run(str(img), volume_options(options), "mmap-fill", BIG, size=16 << 20, order="sequential")
    return img


def mounted(case: Case, image: Path, options: str, tarball: Path, work: Path) -> dict:
    mnt = work / "mnt"
    mnt.mkdir(exist_ok=True)
    stats = work / "mounted.json"
    simfs("mount", image, mnt, "-o", f"{options},stats={stats}")
    t0 = time.perf_counter()
    try:
        subprocess.run(["bash", "-c", case.command(mnt, tarball)], check=True)
    finally:
        real = time.perf_counter() - t0
        simfs("umount", mnt)
    doc = json.loads(stats.read_text())
    return {"time": doc, "real": real}


def inprocess(case: Case, image: Path, options: str, tarball: Path) -> dict:
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_tarball
    params = dict(case.params)
    if case.verb == "unpack":
        params["source"] = from_tarball(str(tarball))
    t0 = time.perf_counter()
    out = verbs.run(str(image), volume_options(options), case.verb, case.where, **params)
    out["real"] = time.perf_counter() - t0
    return out


def disk_counters(snapshot: dict) -> dict:
    c = snapshot["total"]["counters"]
    return {k: v for k, v in c.items() if k.startswith("disk_")}


def within(a: float, b: float) -> bool:
    return abs(a - b) <= max(TOLERANCE * max(abs(a), abs(b)), 1 if float(a).is_integer() else 0)


def check(case: Case, options: str, tarball: Path, work: Path, profile: str = "ext2") -> dict:
    """Run the case both ways on an image of `profile`; {"mounted": s, "verb": s, "ratio",
    "counters": {name: (m, v)}, "ok", "why", "real": (mounted s, verb s)}."""
    base = prepare(work, case.needs, tarball, options, profile)
    a, b = work / "a.img", work / "b.img"
    for copy in (a, b):
        sparse_copy(str(base), str(copy))
    m = mounted(case, a, options, tarball, work)
    v = inprocess(case, b, options, tarball)
    ms, vs = m["time"]["now"], v["time"]["now"]
    mc, vc = disk_counters(m["time"]), disk_counters(v["time"])
    counters = {k: (mc.get(k, 0), vc.get(k, 0)) for k in sorted(set(mc) | set(vc))}
    bad = [f"{k} {x} vs {y}" for k, (x, y) in counters.items() if not within(x, y)]
    if not within(ms, vs):
        bad.insert(0, f"simulated time {ms:.4f} s vs {vs:.4f} s")
    for copy in (a, b):
        copy.unlink()
    return {"verb": case.verb, "options": options, "mounted": ms, "verb_s": vs,
            "ratio": vs / ms if ms else 1.0, "counters": counters, "ok": not bad,
            "why": "; ".join(bad), "real": (m["real"], v["real"])}


#: what the host sends when it pleases: FORGETs (a drop) and a directory's RELEASEDIR come
#: from the kernel's asynchronous release; neither is charged, so only their totals must agree
ASYNC = ('["drop",', '["releasedir",')


def oplogs(case: Case, options: str, tarball: Path, work: Path, profile: str = "ext2") -> tuple[list, list]:
    """The operations the volume is asked, mounted (`-o oplog=`) and by the verb (the same
    recorder), on identical copies of the case's image: two lists of JSON lines without the
    header. The verb's list ends with the references its unmount gives back, which a mount's
    close drops unlogged; they are left out."""
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_tarball
    from simfs.errors import VerbRefused
    base = prepare(work, case.needs, tarball, options, profile)
    a, b = work / "a.img", work / "b.img"
    for copy in (a, b):
        sparse_copy(str(base), str(copy))
    mlog, vlog = work / "mounted.oplog", work / "verb.oplog"
    mounted(case, a, f"{options},oplog={mlog}", tarball, work)
    params = dict(case.params)
    if case.verb == "unpack":
        params["source"] = from_tarball(str(tarball))
    try:
        verbs.run(str(b), volume_options(options), case.verb, case.where, oplog=str(vlog), **params)
    except VerbRefused as e:
        if str(e) != case.refused:
            raise
    else:
        if case.refused:
            raise AssertionError(f"the verb did not stop with {case.refused!r}")
    out = []
    for log in (mlog, vlog):
        lines = log.read_text().splitlines()[1:]
        while len(lines) > 1 and lines[-2].startswith(ASYNC[0]):
            del lines[-2]
        out.append(lines)
        log.unlink()
    for copy in (a, b):
        copy.unlink()
    return out[0], out[1]


def _released(log: list[str]) -> tuple[dict, dict]:
    """References given back per inode handle (the host may send one FORGET for two of the
    model's), and directory handles released."""
    drops: dict = {}
    dirs: dict = {}
    for op in log:
        if op.startswith(ASYNC[0]):
            _, _, handle, n = json.loads(op)
            drops[handle] = drops.get(handle, 0) + n
        elif op.startswith(ASYNC[1]):
            dirs[op] = dirs.get(op, 0) + 1
    return drops, dirs


def oplog_difference(mounted_ops: list[str], verb_ops: list[str]) -> str:
    """"" if the two logs ask the same, operation for operation (outcomes included) apart from
    where the asynchronous FORGETs and RELEASEDIRs fall; else where they part."""
    m, v = ([op for op in log if not op.startswith(ASYNC)] for log in (mounted_ops, verb_ops))
    if m != v:
        i = next((i for i, (x, y) in enumerate(zip(m, v)) if x != y), min(len(m), len(v)))
        return (f"{len(m)} operations mounted, {len(v)} in-process; first difference at {i}: "
                f"mounted {m[max(0, i - 3):i + 3]}, verb {v[max(0, i - 3):i + 3]}")
    if _released(mounted_ops) != _released(verb_ops):
        return ("the same operations, but not the same references or directories given back "
                "(the host may forget an inode early, under memory pressure)")
    return ""


def tarball_of(tree: str | None, files: int, work: Path) -> Path:
    tar = work / "tree.tar"
    if tree is None:
        from experiments.workload import generate_tree
        src = work / "src"
        generate_tree(src, seed=1, files=files, svn=True)
        tree = str(src)
    subprocess.run(["tar", "--sort=name", "-cf", str(tar), "-C", tree, "."], check=True)
    return tar


def main(argv=None) -> int:
    import disk_models
    from policies import ALLOCATORS
    from policies.dirorder import DIR_ORDERS
    from policies.writeback import WRITEBACK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=argtypes.directory,
                    help="a directory of this machine (default: a generated svn tree)")
    ap.add_argument("--files", type=argtypes.positive, default=120, help="files of the generated tree")
    ap.add_argument("--verbs", type=argtypes.listed(argtypes.one_of(CASES, "verb")), default=",".join(CASES))
    ap.add_argument("--orders", type=argtypes.listed(DIR_ORDERS.resolve), default="hash,linear,inode")
    ap.add_argument("--allocs", type=argtypes.listed(ALLOCATORS.resolve), default="ext2,cg,first-free")
    ap.add_argument("--disk", type=argtypes.checked(disk_models.make_disk), default="sas10k")
    ap.add_argument("--writeback", type=argtypes.checked(WRITEBACK.resolve), default="async")
    ap.add_argument("--ops", action="store_true",
                    help="compare the operations asked (the mount's -o oplog= against the verb's), "
                         "operation for operation, instead of the timing")
    ap.add_argument("--profile", choices=("ext2", "ext4"), default="ext2",
                    help="the images' profile (simfs mkfs --profile; default ext2)")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/var/tmp")) as tmp:
        work = Path(tmp)
        tar = tarball_of(a.tree, a.files, work)
        for verb in a.verbs:
            for alloc in a.allocs:
                for order in a.orders:
                    opts = f"alloc={alloc},dirorder={order},disk={a.disk},writeback={a.writeback}"
                    if a.ops:
                        why = oplog_difference(*oplogs(CASES[verb], opts, tar, work, a.profile))
                        rows.append({"ok": not why})
                        print(f"| {verb:9} | {alloc:10} | {order:6} | {why or 'same operations'} |", flush=True)
                        continue
                    r = check(CASES[verb], opts, tar, work, a.profile)
                    rows.append(r)
                    print(f"| {verb:9} | {alloc:10} | {order:6} | {r['mounted']:9.4f} | "
                          f"{r['verb_s']:9.4f} | {r['ratio']:6.4f} | {r['real'][0]:7.2f} | "
                          f"{r['real'][1]:7.2f} | {'ok' if r['ok'] else r['why']} |", flush=True)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
