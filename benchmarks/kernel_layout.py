"""The kernel as the layout oracle: the same tree untarred by the kernel's ext4 and by simfs,
both images read by the same e2fsprogs code, figures side by side.

    python -m benchmarks.kernel_layout [--tree DIR|TARBALL|generated:N ...] [--size 4G]
                                       [--runs 2] [--only ID,...] [--json] [--out DIR]

Needs root (loop devices, mount), e2fsprogs, GNU tar and FUSE. For each tree (default:
/usr/include, /usr/lib/python3.11 and a generated source-like tree of 10,000 files, seed 1)
one tarball is made (`tar --sort=name`) and unpacked with the real `tar xf` onto fresh images of
the same size and geometry (4 KiB blocks, 256-byte inodes, one inode per 16 KiB):

  kernel-ext4/nodelalloc, kernel-ext4/delalloc   `mkfs.ext4 -O ^has_journal,^metadata_csum,^64bit`
        on a loop device (`losetup -f --show`), mounted with and without `nodelalloc`, `sync`
        once at the end; run --runs times, each on a fresh image with its own UUID/hash seed,
        to show the kernel's own spread
  kernel-ext2/nodelalloc, kernel-ext2/delalloc   the same on an ext2 image made by `simfs mkfs`:
        this kernel has no ext2 driver (CONFIG_EXT4_USE_FOR_EXT2), so this is ext4's
        block-mapped path (indirect blocks, linear directories), not fs/ext2
  simfs-ext2/ALLOC                               simfs's ext2 profile, mounted, -o alloc=ALLOC
        and a buffer cache of this machine's memory (the kernel's dirty thresholds here):
        ext2 and delayed; mballoc and mballoc-delalloc where `simfs policies` lists them
  simfs-ext4/ALLOC                               simfs's ext4 profile, where `simfs mkfs
        --profile ext4` works (tried on a scratch image): mballoc (else ext2), delayed,
        mballoc-delalloc; on the image mkfs.ext4 made for the kernel's run 1 (the same bytes)

The ext4 tables set simfs's ext4 profile beside the kernel's ext4; without the profile, its
ext2-profile runs stand in, and the table says so. The figures (benchmarks/layoutstats.py) come
from dumpe2fs, debugfs and e2freefrag only; every image is also checked with `e2fsck -fn`. A
simfs figure is marked `in` where it lies inside the kernel runs' range (their own spread),
`ok` where outside it but within +-25% of their mean, `MISS` where neither.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks import layoutstats

DEFAULT_TREES = ("/usr/include", "/usr/lib/python3.11", "generated:10000")
MKFS_EXT4 = ["mkfs.ext4", "-q", "-F", "-T", "default", "-b", "4096", "-I", "256", "-i", "16384",
             "-O", "^has_journal,^metadata_csum,^64bit"]
SIMFS_MKFS = ["--block-size", "4096", "--inode-size", "256", "--bytes-per-inode", "16384"]


class Failed(Exception):
    """A step of a run failed: the message is the one line printed."""


@dataclass(frozen=True)
class Run:
    """One image written by one writer: `id` is its configuration, `n` its repetition."""
    id: str
    n: int = 1

    @property
    def kernel(self) -> bool:
        return self.id.startswith("kernel-")

    @property
    def name(self) -> str:
        return f"{self.id}#{self.n}" if self.kernel else self.id


def tables(have: dict) -> list[tuple[str, int, str, list[str]]]:
    """(title, directories by flex groups of, kernel configuration, simfs configurations set
    beside it). Without the ext4 profile the ext4 tables show ext2-profile stand-ins; mballoc
    and mballoc-delalloc join where this simfs has them."""
    prof = "ext4" if have["ext4_profile"] else "ext2"
    has = set(have["allocators"]).__contains__
    at_write = ["mballoc"] if has("mballoc") else ["ext2"]
    delayed = ["delayed"] + (["mballoc-delalloc"] if has("mballoc-delalloc") else [])
    block_mapped = "ext2 (kernel: ext4's block-mapped path)"
    return [("ext4, allocation at write (nodelalloc)", 16, "kernel-ext4/nodelalloc", [f"simfs-{prof}/{a}" for a in at_write]),
            ("ext4, delayed allocation", 16, "kernel-ext4/delalloc", [f"simfs-{prof}/{a}" for a in delayed]),
            (f"{block_mapped}, nodelalloc", 1, "kernel-ext2/nodelalloc",
             ["simfs-ext2/ext2"] + (["simfs-ext2/mballoc"] if has("mballoc") else [])),
            (f"{block_mapped}, delalloc", 1, "kernel-ext2/delalloc", [f"simfs-ext2/{a}" for a in delayed])]


# tools ---------------------------------------------------------------------------------------
def simfs_argv() -> list[str]:
    exe = Path(sys.executable).with_name("simfs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simfs.cli"]


def sh(argv, timeout: float = 3600, **kw) -> str:
    """Run a tool; Failed with its last line of stderr when it exits non-zero."""
    argv = [str(a) for a in argv]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"{argv[0]}: {e}") from None
    if r.returncode != 0:
        last = ((r.stderr or r.stdout).strip().splitlines() or ["(no message)"])[-1]
        raise Failed(f"{' '.join(Path(a).name if '/' in a else a for a in argv[:3])} ... exited {r.returncode}: {last}")
    return r.stdout


def uuid(n: int) -> str:
    """The UUID and hash seed of repetition n: fixed, so a rerun makes the same empty images."""
    return f"00000000-0000-4000-8000-{n:012d}"


def probe(work: Path) -> dict:
    """What this simfs has: the ext4 profile (`mkfs --profile ext4` works) and its allocators."""
    img = work / "probe.img"
    try:
        r = subprocess.run(simfs_argv() + ["mkfs", "-q", str(img), "--size", "64M", "--profile", "ext4"],
                           capture_output=True, text=True, timeout=300)
        policies = subprocess.run(simfs_argv() + ["policies"], capture_output=True, text=True, timeout=300)
    finally:
        img.unlink(missing_ok=True)
    names, section = set(), ""
    for line in policies.stdout.splitlines():
        if not line.startswith(" "):
            section = line
        elif section.startswith("allocator") and line.split():
            names.add(line.split()[0].lstrip("*"))
    return {"ext4_profile": r.returncode == 0, "allocators": sorted(names)}


# one run -------------------------------------------------------------------------------------
def make_image(run: Run, img: Path, size: str) -> None:
    """A fresh image for the run: mkfs.ext4's for the kernel's ext4 runs and for simfs's ext4
    profile (the very image of the kernel's run 1, so that the two writers start from the same
    bytes: simfs's own `mkfs --profile ext4` leaves out resize_inode's reserved GDT blocks,
    which moves the first data block of every group holding a superblock backup and so the free
    counts Orlov weighs), simfs's mkfs otherwise."""
    img.unlink(missing_ok=True)
    u = uuid(run.n)
    if run.id.startswith("simfs-ext4/"):
        u = uuid(1)
    if run.id.startswith(("kernel-ext4/", "simfs-ext4/")):
        sh(["truncate", "-s", size, img])
        sh(MKFS_EXT4 + ["-U", u, "-E", f"lazy_itable_init=0,nodiscard,hash_seed={u}", img])
    else:
        sh(simfs_argv() + ["mkfs", "-q", img, "--size", size, "--uuid", u, "--hash-seed", u] + SIMFS_MKFS)


def untar_kernel(run: Run, img: Path, mnt: Path, tarball: Path) -> None:
    """tar xf onto the image loop-mounted by the kernel's ext4 driver; sync once; unmount."""
    opts = "nodelalloc" if run.id.endswith("/nodelalloc") else "delalloc"
    loop = sh(["losetup", "-f", "--show", img]).strip()
    try:
        sh(["mount", "-t", "ext4", "-o", opts, loop, mnt])
        try:
            sh(["tar", "xf", tarball, "-C", mnt])
            sh(["sync", "-f", mnt])
        finally:
            sh(["umount", mnt])
    finally:
        sh(["losetup", "-d", loop])


def host_memory() -> int:
    """This machine's memory: simfs's buffer cache for its runs, so that its dirty thresholds
    (10 % and 40 % of the cache) are those the kernel's untar met here (vm.dirty_background_ratio
    and dirty_ratio of the memory): write-back waits for the sync in both, as the kernel's
    untar of a tree far below them never reaches either."""
    from simfs.fs.optionspec import machine_memory
    return machine_memory()


def untar_simfs(run: Run, img: Path, mnt: Path, tarball: Path) -> None:
    """tar xf onto the image mounted by simfs with -o alloc=...,cache=(this machine's memory);
    unmount writes everything."""
    alloc = run.id.split("/", 1)[1]
    sh(simfs_argv() + ["mount", img, mnt, "-o", f"alloc={alloc},nostats,cache={host_memory()}"])
    try:
        sh(["tar", "xf", tarball, "-C", mnt])
    finally:
        try:
            sh(simfs_argv() + ["umount", "--quiet", mnt])
        except Failed:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
            raise


def untar_in_process(run: Run, img: Path, mnt: Path, tarball: Path) -> None:
    """The same unpack without a mount: simfs's tar verb (GNU tar's system calls, checked
    against the real tar on a mount by tests/mount/test_verbs_validate.py) on the volume,
    with the mount's options; closing the volume writes everything, as the unmount does."""
    from simfs.fs.volume import VolumeOptions
    from simfs.inprocess import treedesc, verbs
    try:
        verbs.run(str(img), VolumeOptions(alloc=run.id.split("/", 1)[1], cache=host_memory()), "unpack", ".",
                  source=treedesc.from_tarball(str(tarball)))
    except Exception as e:          # one line for the table's caller
        raise Failed(f"in-process unpack: {e}") from None


def do_run(run: Run, tarball: Path, work: Path, size: str, keep: Path | None, in_process: bool = False) -> dict:
    """Write the tree with one writer, check and scan the image; its figures."""
    img, mnt = work / (run.name.replace("/", "-").replace("#", "-") + ".img"), work / "mnt"
    mnt.mkdir(exist_ok=True)
    make_image(run, img, size)
    t = time.monotonic()
    (untar_kernel if run.kernel else untar_in_process if in_process else untar_simfs)(run, img, mnt, tarball)
    seconds = time.monotonic() - t
    fsck = subprocess.run(["e2fsck", "-fn", str(img)], capture_output=True, text=True)
    try:
        scan = layoutstats.scan(img, flexes=(1, 16))
    except layoutstats.ScanError as e:
        raise Failed(str(e)) from None
    if keep:
        shutil.move(str(img), keep / img.name)
    else:
        img.unlink()
    for side in (Path(str(img) + ".log"),):
        side.unlink(missing_ok=True)
    return dict(scan, run=run.name, untar_seconds=round(seconds, 1), e2fsck_clean=fsck.returncode == 0,
                e2fsck_rc=fsck.returncode)


# trees ---------------------------------------------------------------------------------------
def tarball_of(tree: str, work: Path) -> Path:
    """A tarball of the tree: given, made from a directory, or from a generated tree."""
    if tree.startswith("generated"):
        _, _, files = tree.partition(":")
        from experiments.workload import generate_tree
        src = work / "generated"
        shutil.rmtree(src, ignore_errors=True)
        generate_tree(src, seed=1, files=int(files or 10000))
        tree = str(src)
    if os.path.isfile(tree):
        return Path(tree)
    out = work / "tree.tar"
    sh(["tar", "cf", out, "--sort=name", "-C", tree, "."])
    if tree.startswith(str(work)):
        shutil.rmtree(tree, ignore_errors=True)
    return out


def check_tree(tree: str) -> str | None:
    if tree.startswith("generated"):
        n = tree.partition(":")[2]
        return None if not n or (n.isdigit() and int(n) > 0) else f"{tree}: generated:N wants a file count"
    if os.path.isdir(tree):
        return None
    if os.path.isfile(tree):
        return None if subprocess.run(["tar", "tf", tree], capture_output=True).returncode == 0 \
            else f"{tree}: not a tarball tar can read"
    return f"{tree}: no such directory or tarball"


# the table -----------------------------------------------------------------------------------
ROWS = [  # (label, key, kind: n integer, f float, p percent, l list; judged: set against the kernel)
    ("regular files", "files", "n", False),
    ("directories", "directories", "n", False),
    ("data blocks", "data_blocks", "n", False),
    ("files > 4 KiB in more than one extent", "files_over_4k_multi_extent", "n", True),
    ("  the same, % of files > 4 KiB", "files_over_4k_multi_extent_pct", "p", False),
    ("extents per file, mean", "extents_per_file_mean", "f", True),
    ("extents per file, p99", "extents_per_file_p99", "n", True),
    ("flex groups holding directories", "flex_groups_with_dirs", "n", True),
    ("directories per flex group", "dirs_per_flex_group", "l", False),
    ("directories in the busiest flex group, %", "dirs_in_busiest_flex_group_pct", "p", True),
    ("groups holding directories", "groups_with_dirs", "n", True),
    ("directories in the first 3 groups of their flex group, %", "dirs_in_first_3_groups_of_flex_pct", "p", True),
    ("inode to first data block, mean distance in groups", "inode_data_group_distance_mean", "f", True),
    ("inode-table blocks touched", "itable_blocks_touched", "n", True),
    ("free extents (e2freefrag)", "free_extents", "n", True),
    ("file to its directory's first block, mean distance in groups", "file_dir_distance_mean", "f", True),
    ("directories in the first flex group, %", "dirs_in_first_flex_group_pct", "p", True),
    ("subtree directories outside their top directory's flex group, %", "subtree_dirs_away_pct", "p", True),
]
SUBTREES = 3        # the largest top-level subtrees (by directories, in the first kernel run) shown


def fmt(v, kind: str) -> str:
    if v is None:
        return "-"
    if kind == "l":         # up to 4 (flex) groups one by one, more as the busiest and the median one holding any
        held = sorted(x for x in v if x)
        return " / ".join(map(str, v)) if len(v) <= 4 else f"max {held[-1] if held else 0}, median {held[len(held) // 2] if held else 0}"
    return f"{v:,}" if kind == "n" else f"{v:.1f}" if kind == "p" else f"{v:.2f}"


def verdict(v: float, kernel: list[float]) -> str:
    """'1.04x in': simfs over the kernel runs' mean; `in` inside their range (the kernel's own
    spread), `ok` outside it but within +-25% of the mean, `MISS` neither."""
    mean = sum(kernel) / len(kernel)
    inside = min(kernel) <= v <= max(kernel)
    if mean == 0:
        return "= in" if v == 0 else "MISS"
    ratio = v / mean
    return f"{ratio:.2f}x {'in' if inside else 'ok' if 0.75 <= ratio <= 1.25 else 'MISS'}"


def render(title: str, flex: int, kernel: list[dict], simfs: list[dict]) -> str:
    """One Markdown table: the kernel's runs, then each simfs run and its verdict."""
    heads = [k["run"] for k in kernel]
    for r in simfs:
        stand_in = flex > 1 and r["run"].startswith("simfs-ext2/")
        heads += [r["run"] + (" (ext2 profile: stand-in)" if stand_in else ""), "simfs / kernel"]
    rows = [f"**{title}** (directories by {'flex groups of ' + str(flex) if flex > 1 else 'group'})", "",
            "| statistic | " + " | ".join(heads) + " |", "|:--" + "|--:" * len(heads) + "|"]
    for label, key, kind, judged in ROWS:
        if flex == 1 and key in ("groups_with_dirs", "dirs_in_first_3_groups_of_flex_pct"):
            continue
        if flex == 1:
            label = label.replace("flex group", "group")
        ks = [k["by_flex"][str(flex)][key] for k in kernel]
        cells = [fmt(v, kind) for v in ks]
        for r in simfs:
            v = r["by_flex"][str(flex)][key]
            cells += [fmt(v, kind), verdict(v, ks) if judged else ""]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    if flex > 1:
        first = kernel[0]["by_flex"][str(flex)].get("dirs_per_flex_by_subtree", {})
        for name in list(first)[:SUBTREES]:
            cells = [fmt(k["by_flex"][str(flex)]["dirs_per_flex_by_subtree"].get(name), "l") for k in kernel]
            for r in simfs:
                cells += [fmt(r["by_flex"][str(flex)]["dirs_per_flex_by_subtree"].get(name), "l"), ""]
            rows.append(f"| directories per flex group in {name}/ | " + " | ".join(cells) + " |")
    cells = [("clean" if r["e2fsck_clean"] else f"exit {r['e2fsck_rc']}") for r in kernel]
    for r in simfs:
        cells += ["clean" if r["e2fsck_clean"] else f"exit {r['e2fsck_rc']}", ""]
    rows.append("| e2fsck -fn | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def report(results: dict) -> str:
    out = []
    for tree in results["trees"]:
        runs = tree["runs"]
        out.append(f"### {tree['tree']}\n")
        for title, flex, kid, sids in tables(results):
            kernel = [r for name, r in runs.items() if name.startswith(kid + "#")]
            if kernel:
                out.append(render(title, flex, kernel, [runs[s] for s in sids if s in runs]) + "\n")
    return "\n".join(out)


# main ----------------------------------------------------------------------------------------
def plan(have: dict, repeats: int, only: set[str] | None) -> list[Run]:
    kernel = ["kernel-ext4/nodelalloc", "kernel-ext4/delalloc", "kernel-ext2/nodelalloc", "kernel-ext2/delalloc"]
    simfs = list(dict.fromkeys(["simfs-ext2/ext2", "simfs-ext2/delayed"] + [i for t in tables(have) for i in t[3]]))
    runs = []
    for i in kernel + simfs:
        if only is None or i in only:
            runs += [Run(i, n) for n in range(1, repeats + 1)] if i.startswith("kernel-") else [Run(i)]
    return runs


def fail(msg: str) -> int:
    print(f"kernel_layout: {msg}", file=sys.stderr)
    return 2


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_layout", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", metavar="DIR|TARBALL|generated:N",
                    help=f"a tree to unpack (repeatable; default: {', '.join(DEFAULT_TREES)})")
    ap.add_argument("--size", default="4G", help="image size, the same for every run (default 4G: 32 groups)")
    ap.add_argument("--runs", type=int, default=2, help="repetitions of each kernel configuration (default 2)")
    ap.add_argument("--only", help="comma-separated configurations to run (default: all there are); "
                                   "none: run nothing, only join the --with results")
    ap.add_argument("--work", help="directory for images and tarballs (default: a temporary one)")
    ap.add_argument("--keep", help="move every image here instead of deleting it")
    ap.add_argument("--out", help="also write table.md and results.json into this directory")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of the tables")
    ap.add_argument("--in-process", action="store_true",
                    help="simfs unpacks in-process (its tar verb on the volume) instead of on a FUSE mount: "
                         "no mount, so a run of simfs configurations alone needs neither root nor the lock")
    ap.add_argument("--with", dest="merge", action="append", default=[], metavar="RESULTS.json",
                    help="the runs of an earlier invocation (its results.json) join this one's, tree by tree "
                         "(repeatable): a long comparison made in parts")
    return ap.parse_args(argv)


def merge(results: dict, earlier: dict) -> None:
    """Add an earlier invocation's runs to these results (its trees matched by name; its
    command noted), the runs of this invocation kept where both have one."""
    if earlier.get("size") != results["size"]:
        raise Failed(f"--with: made with --size {earlier.get('size')}, not {results['size']}")
    results["command"] += f" (with: {earlier['command']})"
    trees = {t["tree"]: t for t in results["trees"]}
    for t in earlier["trees"]:
        if t["tree"] in trees:
            trees[t["tree"]]["runs"] = {**t["runs"], **trees[t["tree"]]["runs"]}
        else:
            results["trees"].append(t)


def preflight(a) -> str | None:
    if a.only == "none":
        if not a.merge:
            return "--only none joins earlier results: give them with --with"
    simfs_only = a.only == "none" or (a.in_process and a.only and
                                      not any(i.startswith("kernel-") for i in a.only.split(",")))
    if os.geteuid() != 0 and not simfs_only:
        return "needs root: loop devices and mount"
    if not simfs_only and not os.path.exists("/dev/loop-control"):
        return "no loop devices here (/dev/loop-control missing)"
    for tool in ("losetup", "mount", "umount", "mkfs.ext4", "dumpe2fs", "debugfs", "e2fsck", "tar", "fusermount3"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if a.runs < 1:
        return "--runs must be at least 1"
    for tree in a.tree or DEFAULT_TREES:
        if why := check_tree(tree):
            return why
    for path in a.merge:
        try:
            doc = json.loads(Path(path).read_text())
            if not isinstance(doc, dict) or not isinstance(doc.get("trees"), list):
                return f"--with {path}: not a results.json of this tool"
        except (OSError, ValueError) as e:
            return f"--with {path}: {getattr(e, 'strerror', None) or e}"
    return None


def main(argv=None) -> int:
    a = parse(argv)
    if why := preflight(a):
        return fail(why)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    keep = Path(a.keep) if a.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernel-layout-", dir=a.work) as tmp:
        work = Path(tmp)
        have = probe(work)
        runs = plan(have, a.runs, set(a.only.split(",")) if a.only else None)
        if not runs and a.only != "none":
            return fail(f"--only {a.only}: no such configuration")
        trees = (a.tree or list(DEFAULT_TREES)) if runs else []
        results = {"command": "python -m benchmarks.kernel_layout " + " ".join(argv if argv is not None else sys.argv[1:]),
                   "size": a.size, **have, "kernel": os.uname().release, "trees": []}
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("", total=len(trees) * len(runs))
            for tree in trees:
                bar.update(task, description=f"{tree}: tarball")
                try:
                    tarball = tarball_of(tree, work)
                except Failed as e:
                    return fail(f"{tree}: {e}")
                entry = {"tree": tree, "tarball_bytes": tarball.stat().st_size, "runs": {}}
                results["trees"].append(entry)
                for run in runs:
                    bar.update(task, description=f"{tree}: {run.name}")
                    try:
                        entry["runs"][run.name] = do_run(run, tarball, work, a.size, keep, a.in_process)
                    except Failed as e:
                        return fail(f"{tree}, {run.name}: {e}")
                    bar.advance(task)
                if tarball.parent == work:
                    tarball.unlink()
    for path in a.merge:
        try:
            merge(results, json.loads(Path(path).read_text()))
        except Failed as e:
            return fail(str(e))
    text = report(results)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        (out / "table.md").write_text(text)
    print(json.dumps(results, indent=1) if a.json else text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:          # the finally blocks have unmounted and detached by now
        print("kernel_layout: interrupted", file=sys.stderr)
        sys.exit(130)
