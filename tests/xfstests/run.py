#!/usr/bin/env python3
"""xfstests (the Linux file-system regression suite) against simfs and the kernel's ext2.

Why a script: `make xfstests` and tests/mount/test_xfstests.py need the same four steps, done
the same way, so that the committed table and `make test` say the same thing:

  build   clone xfstests from a path, bundle or URL into .xfstests/src and `make` it once
          (a stamp names the source and its commit, so a second call is a no-op)
  run     make the test and scratch images (`simfs mkfs` for simfs, mkfs.ext2 on loop devices
          for the kernel's ext2), write xfstests' local.config, run `./check` with the given
          tests or groups, keep pass/fail/not-run per test (results.csv, results.json) and the
          .out.bad/.full files of failures
  table   one Markdown table + CSV of both file systems' results side by side

simfs is mounted by xfstests itself as README.fuse says (FSTYP=fuse, FUSE_SUBTYP=.simfs:
`mount -t fuse.simfs IMAGE DIR`, i.e. /sbin/mount.fuse.simfs). The run happens in a private
mount namespace in which /sbin/mount.fuse.simfs is this checkout's launcher (the one
`simfs install-helper` would write from here), so the simfs tested is the one in this tree
whatever another checkout installed, and nothing the suite mounts is seen outside it.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLE = os.path.join("shared", "third_party", "xfstests-history.bundle")


def default_source() -> str:
    """../shared's bundle beside this checkout (as CI has it), or beside the main checkout when
    this is a git worktree."""
    here = os.path.join(os.path.dirname(REPO), BUNDLE)
    if os.path.exists(here):
        return here
    common = subprocess.run(["git", "-C", REPO, "rev-parse", "--path-format=absolute",
                             "--git-common-dir"], capture_output=True, text=True).stdout.strip()
    main = os.path.join(os.path.dirname(os.path.dirname(common)), BUNDLE) if common else ""
    return main if main and os.path.exists(main) else here


DEFAULT_DIR = os.path.join(REPO, ".xfstests")
# the one change made to xfstests: FSTYP=fuse gets a sized scratch mkfs through a hook
# (FUSE_MKFS_PROG), where common/rc's _scratch_mkfs_sized has no fuse case and says "not run"
PATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuse-mkfs.patch")
HELPER = "/sbin/mount.fuse.simfs"
QA_USERS = ("fsgqa", "fsgqa2", "123456-fsgqa")   # xfstests' README: users the tests switch to
IMAGE_SIZE = "2G"


def log(msg: str) -> None:
    print(f"xfstests {time.strftime('%H:%M:%S')}: {msg}", file=sys.stderr, flush=True)


def sh(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


# build -----------------------------------------------------------------------------------------
def source_commit(source: str) -> str | None:
    """The commit the source's HEAD names (a bundle's or a repository's), None for a URL we
    would have to contact."""
    if os.path.isfile(source):
        out = subprocess.run(["git", "bundle", "list-heads", source], capture_output=True, text=True)
        heads = [l.split() for l in out.stdout.splitlines() if l.strip()]
        for sha, ref in heads:
            if ref == "HEAD":
                return sha
        return heads[0][0] if heads else None
    if os.path.isdir(source):
        out = subprocess.run(["git", "-C", source, "rev-parse", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    return None


def source_present(source: str) -> bool:
    return os.path.exists(source) or bool(re.match(r"^[a-z+]+://|^git@", source))


def build(source: str, where: str, jobs: int) -> str:
    """Clone + make once into WHERE/src; returns the source tree. The stamp records the source
    and the commit built, so the same source is not built twice. The tree is returned as an
    absolute path: ./check runs with it as working directory *and* `cd`s into it, so a
    relative --dir (the Makefile's .xfstests) would be looked up from inside itself."""
    where = os.path.abspath(where)
    src = os.path.join(where, "src")
    stamp = os.path.join(where, ".built")
    want = " ".join(x for x in (source, source_commit(source), "patch", patch_digest()) if x)
    if os.path.exists(stamp) and Path(stamp).read_text().strip() == want and os.path.isfile(
            os.path.join(src, "ltp", "fsx")):
        return src
    if not source_present(source):
        raise SystemExit(f"xfstests: source {source} not found (a path, bundle or URL)")
    t0 = time.monotonic()
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(where, exist_ok=True)
    if os.path.exists(stamp):
        os.unlink(stamp)
    log(f"cloning {source} into {src}")
    sh(["git", "clone", "--quiet", source, src])
    log(f"applying {os.path.basename(PATCH)}")
    sh(["git", "-C", src, "apply", PATCH])
    log(f"building in {src} (make -j{jobs})")
    with open(os.path.join(where, "build.log"), "w") as out:
        r = subprocess.run(["make", f"-j{jobs}"], cwd=src, stdout=out, stderr=subprocess.STDOUT)
    if r.returncode:
        raise SystemExit(f"xfstests: make failed in {src}; see {where}/build.log")
    with open(stamp, "w") as f:
        f.write(want + "\n")
    log(f"built in {time.monotonic() - t0:.0f} s")
    return src


def patch_digest() -> str:
    """The patch's content hash, part of the build stamp: a changed patch rebuilds."""
    with open(PATCH, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def ensure_users() -> None:
    """xfstests' README asks for these users (tests that switch user are not run without)."""
    for user in QA_USERS:
        if subprocess.run(["id", user], capture_output=True).returncode:
            sh(["useradd", "-m", user], stdout=subprocess.DEVNULL)


# run -------------------------------------------------------------------------------------------
def simfs_cmd() -> list[str]:
    return [sys.executable, "-m", "simfs.cli"]


def simfs_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def launcher_text() -> str:
    return subprocess.run(simfs_cmd() + ["install-helper", "--print"], check=True, text=True,
                          capture_output=True, env=simfs_env(), cwd=REPO).stdout


def unmount_all(work: str) -> str:
    """Shell to end the run's namespace with: its two mount points unmounted (a simfs daemon
    left mounted in the namespace would keep it, and itself, alive). Only these two: the
    namespace also holds copies of every other mount on the machine."""
    return "; ".join(f"umount {work}/{d} 2>/dev/null || umount -l {work}/{d} 2>/dev/null"
                     for d in ("test", "scratch"))


def probe_simfs(work: str, launcher: str) -> dict:
    """Mount the test image as xfstests will (`mount -t fuse.simfs IMAGE DIR`, in the run's
    namespace) and read what the kernel shows: the source and type that xfstests'
    _check_mounted_on compares with TEST_DEV and FSTYP."""
    img, mnt = f"{work}/test.img", f"{work}/test"
    script = (f"mount --bind {shlex.quote(launcher)} {HELPER} && mount -t fuse.simfs {img} {mnt} "
              f"&& findmnt -n -o SOURCE,FSTYPE --mountpoint {mnt}; st=$?; {unmount_all(work)}; exit $st")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, env=simfs_env())
    if r.returncode:
        raise SystemExit(f"xfstests: mount -t fuse.simfs {img} {mnt} failed: {r.stderr.strip()}")
    source, fstype = r.stdout.split()[:2]
    wait_unlocked(img)
    return {"source": source, "fstype": fstype}


def wait_unlocked(img: str, timeout: float = 60) -> None:
    """Until the daemon that had IMG mounted has written it back and exited (simfs holds an
    flock on the image while mounted; umount returns before the daemon ends)."""
    import fcntl
    end = time.monotonic() + timeout
    with open(img, "rb") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > end:
                    raise SystemExit(f"xfstests: {img} still in use {timeout:.0f} s after umount")
                time.sleep(0.1)


def df_wrapper(work: str) -> str:
    """xfstests' FSTYP=fuse expects df to call the mount's type `fuse` (README.fuse's example
    sets no subtype); simfs shows `fuse.simfs`. DF_PROG is the one thing local.config can set
    for that (common/config sets it before sourcing local.config); used only when needed."""
    path = os.path.join(work, "df-fuse")
    with open(path, "w") as f:
        f.write("#!/bin/bash\n# df for xfstests: a fuse.simfs mount's type shown as fuse\n"
                "set -o pipefail\ndf \"$@\" | sed 's/ fuse\\.simfs / fuse /'\n")
    os.chmod(path, 0o755)
    return path


def size_bytes(size: str) -> int:
    """'2G' -> 2147483648 (K, M, G, T: powers of 1024, as mke2fs reads them)."""
    m = re.fullmatch(r"(\d+)([KMGT]?)", size.strip().upper())
    if not m:
        raise SystemExit(f"xfstests: bad size {size!r}")
    return int(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " ")


def mkfs_args(profile: str) -> list[str]:
    return ["mkfs", "--quiet", "--force"] + (["--profile", profile] if profile != "ext2" else [])


def mkfs_hook(work: str, profile: str) -> str:
    """FUSE_MKFS_PROG (tests/xfstests/fuse-mkfs.patch): `HOOK IMAGE BYTES BLOCKSIZE` makes a
    scratch file system of that size (_scratch_mkfs_sized); `HOOK IMAGE` gives the image back
    the run's size if a sized mkfs changed it (_scratch_mkfs, before it empties the scratch)."""
    path = os.path.join(work, "mkfs-simfs")
    full = size_bytes(IMAGE_SIZE)
    mkfs = " ".join(shlex.quote(x) for x in simfs_cmd() + mkfs_args(profile))
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
# xfstests' FUSE_MKFS_PROG for simfs (written by tests/xfstests/run.py): IMAGE [BYTES [BLOCKSIZE]]
export PYTHONPATH={shlex.quote(REPO)}${{PYTHONPATH:+:$PYTHONPATH}}
img=$1
if [ $# -lt 2 ]; then
    [ "$(stat -c %s "$img")" = {full} ] && exit 0
    set -- "$img" {full} 4096
fi
exec {mkfs} --block-size "$3" "$img" "$2"
""")
    os.chmod(path, 0o755)
    return path


def config_simfs(work: str, extra_opts: str, profile: str = "ext2") -> tuple[str, dict]:
    """local.config for FSTYP=fuse (README.fuse), images made by `simfs mkfs` (PROFILE: its
    --profile), and the mkfs hook that gives the scratch image a size when a test asks."""
    imgs = {}
    for name in ("test", "scratch"):
        img = os.path.join(work, f"{name}.img")
        sh(simfs_cmd() + mkfs_args(profile) + [img, IMAGE_SIZE], env=simfs_env(), cwd=REPO)
        os.makedirs(os.path.join(work, name), exist_ok=True)
        imgs[name] = img
    # a kernel file system's defaults, which simfs mount's are not (nosuid,nodev, noatime,
    # noacl): the helper makes suid,dev explicit for root (mount(8) never passes them);
    # relatime and acl are given (ext2's run has xfstests' -o acl,user_xattr; a test's own
    # noatime or strictatime comes later and wins)
    def opts(img):
        return ",".join(o for o in ("relatime", "acl", extra_opts.replace("IMAGE", img)) if o)
    lines = [
        "export FSTYP=fuse",
        "export FUSE_SUBTYP=.simfs",
        f"export TEST_DEV={imgs['test']}",
        f"export TEST_DIR={work}/test",
        f"export SCRATCH_DEV={imgs['scratch']}",
        f"export SCRATCH_MNT={work}/scratch",
        f'export TEST_FS_MOUNT_OPTS="-o {opts(imgs["test"])}"',
        f'export MOUNT_OPTIONS="-o {opts(imgs["scratch"])}"',
        f"export FUSE_MKFS_PROG={mkfs_hook(work, profile)}",
    ]
    return "\n".join(lines) + "\n", imgs


# mkfs options for the kernel's file systems. ext4: simfs's ext4 profile (`simfs mkfs --profile
# ext4`: no journal, no 64bit, no metadata_csum, no resize inode; extent, flex_bg, dir_index,
# huge_file, dir_nlink, extra_isize as mkfs.ext4 gives them). xfstests' own mkfs calls
# (_scratch_mkfs, _scratch_mkfs_sized) read MKFS_OPTIONS, so its scratch file systems are alike.
KERNEL_MKFS = {"ext2": [], "ext4": ["-O", "^has_journal,^resize_inode,^64bit,^metadata_csum"]}


def config_kernel(work: str, fs: str = "ext2") -> tuple[str, list[str]]:
    """local.config for the kernel's ext2 or ext4 on two loop devices (same sizes as simfs's)."""
    loops = []
    opts = KERNEL_MKFS[fs]
    for name in ("test", "scratch"):
        img = os.path.join(work, f"{name}.img")
        if os.path.exists(img):
            os.unlink(img)
        sh(["truncate", "-s", IMAGE_SIZE, img])
        sh([f"mkfs.{fs}", "-q", "-F"] + opts + [img], stdout=subprocess.DEVNULL)
        loops.append(subprocess.run(["losetup", "-f", "--show", img], check=True, text=True,
                                    capture_output=True).stdout.strip())
        os.makedirs(os.path.join(work, name), exist_ok=True)
    lines = [
        f"export FSTYP={fs}",
        f"export TEST_DEV={loops[0]}",
        f"export TEST_DIR={work}/test",
        f"export SCRATCH_DEV={loops[1]}",
        f"export SCRATCH_MNT={work}/scratch",
    ] + ([f'export MKFS_OPTIONS="{" ".join(opts)}"'] if opts else [])
    return "\n".join(lines) + "\n", loops


def parse_xunit(path: str) -> list[dict]:
    """result.xml -> [{test, status (pass/fail/notrun), seconds, message}]."""
    rows = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        status, msg = "pass", ""
        for child in tc:
            if child.tag == "skipped":
                status, msg = "notrun", child.get("message", "")
            elif child.tag in ("failure", "error"):
                status, msg = "fail", child.get("message", "")
        rows.append({"test": tc.get("name"), "status": status,
                     "seconds": float(tc.get("time") or 0), "message": " ".join(msg.split())})
    return rows


def write_results(rows: list[dict], out: str, meta: dict) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["test", "status", "seconds", "message"])
        w.writeheader()
        w.writerows(rows)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("pass", "fail", "notrun")}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({**meta, "counts": counts, "tests": rows}, f, indent=1)
        f.write("\n")


def run(a) -> int:
    src = build(a.source, a.dir, a.jobs)
    log("built")
    ensure_users()
    log("users")
    work = os.path.abspath(a.work or os.path.join(a.dir, f"work-{a.fs}"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = os.path.join(work, "results")
    meta = {"fs": a.fs, "kernel": os.uname().release, "image_size": IMAGE_SIZE,
            "xfstests": source_commit(src) or "", "args": a.tests}
    loops, pre = [], []
    if a.fs == "simfs":
        config, imgs = config_simfs(work, a.mount_opts, a.profile)
        meta["profile"] = a.profile
        launcher = os.path.join(work, "mount.fuse.simfs")
        with open(launcher, "w") as f:
            f.write(launcher_text())
        os.chmod(launcher, 0o755)
        if not os.path.exists(HELPER):       # a bind mount needs a file to cover
            sh(simfs_cmd() + ["install-helper"], env=simfs_env(), cwd=REPO, stdout=subprocess.DEVNULL)
        pre = [f"mount --bind {shlex.quote(launcher)} {HELPER}"]
        shown = probe_simfs(work, launcher)
        meta["mount_shown"] = shown
        log(f"simfs mount shows source {shown['source']}, type {shown['fstype']}")
        if shown["fstype"] != "fuse":
            config += f'export DF_PROG="{df_wrapper(work)} -T -P"\n'
            meta["df_wrapper"] = True
        meta["simfs_commit"] = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"],
                                              capture_output=True, text=True).stdout.strip()
    else:
        config, loops = config_kernel(work, a.fs)
        meta["mkfs_options"] = " ".join(KERNEL_MKFS[a.fs])
        if a.fs == "ext2":
            meta["ext2_driver"] = ext2_driver()
    config += f"export RESULT_BASE={results}\n"
    # the run's own config (HOST_OPTIONS), never src/local.config: runs may share the build
    config_file = os.path.join(work, "local.config")
    with open(config_file, "w") as f:
        f.write(config)
    env = simfs_env()
    env["HOST_OPTIONS"] = config_file
    check = " ".join(["./check", "-R", "xunit"] + [shlex.quote(t) for t in a.tests])
    script = " && ".join(pre + [f"cd {shlex.quote(src)}", check]) + f"; st=$?; {unmount_all(work)}; exit $st"
    shown = check if len(a.tests) <= 6 else f"./check ... ({len(a.tests)} tests: {a.tests[0]} ... {a.tests[-1]})"
    log(f"{a.fs}: {shown} (log: {work}/check.out)")
    t0 = time.monotonic()
    killed: list[str] = []
    try:
        with open(os.path.join(work, "check.out"), "w") as out:
            proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                    stdout=out, stderr=subprocess.STDOUT, env=env, cwd=src,
                                    start_new_session=True)
            stop = threading.Event()
            dog = threading.Thread(target=watchdog, daemon=True,
                                   args=(proc.pid, src, a.test_timeout, stop, killed))
            if a.test_timeout:
                dog.start()
            try:
                proc.wait(timeout=a.timeout or None)
            except subprocess.TimeoutExpired:
                log(f"run timed out after {a.timeout} s: killing it")
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            stop.set()
    finally:
        for dev in loops:
            subprocess.run(["losetup", "-d", dev])
    meta["seconds"] = round(time.monotonic() - t0, 1)
    xml = os.path.join(results, "result.xml")
    if not os.path.exists(xml):
        log(f"no {xml}: see {work}/check.out")
        sys.stderr.write(Path(work, "check.out").read_text()[-3000:])
        return 1
    rows = parse_xunit(xml)
    for r in rows:
        if r["test"] in killed:
            r["message"] = f"killed by the runner after {a.test_timeout} s; " + r["message"]
    meta["test_timeout"] = a.test_timeout
    meta["command"] = (f"tests/xfstests/run.py run --fs {a.fs}"
                       + (f" --profile {a.profile}" if a.fs == "simfs" and a.profile != "ext2" else "")
                       + " -- " + " ".join(a.tests))
    out = a.out or work
    meta["failures"] = keep_failures(results, out, rows, a.failures_store)
    write_results(rows, out, meta)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("pass", "fail", "notrun")}
    log(f"{a.fs}: {counts} in {meta['seconds']} s -> {a.out or work}/results.csv")
    return 0


def _procs() -> dict[int, tuple[int, list[str]]]:
    """pid -> (ppid, argv) of every process now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = [x.decode(errors="replace") for x in f.read().split(b"\0") if x]
        except (OSError, IndexError, ValueError):
            continue
        out[int(d)] = (ppid, argv)
    return out


def _start_time(pid: int) -> int | None:
    """When the process started (clock ticks after boot, /proc/PID/stat field 22): with the
    pid, a name no later process can have, though pids wrap."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def watchdog(root: int, src: str, limit: int, stop, killed: list) -> None:
    """Kill a test that has run LIMIT seconds (its script and everything under it), so that a
    test too slow for simfs (or a hang) costs LIMIT, and ./check goes on and reports it failed.
    Only processes under ROOT, this run's: another run may use the same build. A test script
    is known by its pid *and* start time, and forgotten once gone: pids wrap, and a new test
    given an old one's pid was killed a second after it started."""
    tests = os.path.join(src, "tests") + "/"
    first: dict[tuple[int, int | None], float] = {}
    while not stop.wait(2):
        seen = set()
        procs = _procs()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        ours, todo = set(), [root]
        while todo:
            pid = todo.pop()
            ours.add(pid)
            todo += children.get(pid, [])
        for pid in ours:
            ppid, argv = procs[pid] if pid in procs else (0, [])
            is_test = len(argv) >= 2 and argv[1].startswith(tests)
            if not is_test or (procs.get(ppid, (0, []))[1][1:2] == argv[1:2]):
                continue                         # not a test script, or a subshell of one
            now = time.monotonic()
            key = (pid, _start_time(pid))
            seen.add(key)
            if now - first.setdefault(key, now) < limit:
                continue
            name = argv[1][len(tests):]
            tree, todo = [], [pid]
            while todo:
                p = todo.pop()
                tree.append(p)
                todo += children.get(p, [])
            for p in reversed(tree):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if name not in killed:
                killed.append(name)
                log(f"{name}: killed after {limit} s")
        for key in set(first) - seen:              # finished (or killed): forget it
            del first[key]


def ext2_driver() -> str:
    """Which kernel driver serves `mount -t ext2` (the kernel's config where it is readable):
    with CONFIG_EXT2_FS off and CONFIG_EXT4_USE_FOR_EXT2 on, ext4's driver registers ext2."""
    import gzip
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            cfg = f.read()
    except OSError:
        return "unknown (no /proc/config.gz)"
    if re.search(r"^CONFIG_EXT2_FS=[ym]", cfg, re.M):
        return "ext2"
    if re.search(r"^CONFIG_EXT4_USE_FOR_EXT2=y", cfg, re.M):
        return "ext4 (CONFIG_EXT2_FS not set, CONFIG_EXT4_USE_FOR_EXT2=y)"
    return "unknown"


ARTEFACT_CAP = 20000          # characters kept of each .out.bad/.full/.dmesg


def store_artefact(store: str, name: str, text: str) -> str:
    """Write TEXT once into STORE, named by its content hash and NAME's suffix (generic/020.full
    -> <sha256[:16]>.full): the same artefact from several runs, or several tests, is one file;
    each run's results.json says which is whose. Returns the file name."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    base = os.path.basename(name)
    rel = digest + ("." + base.partition(".")[2] if "." in base else "")   # .out.bad, .full
    path = os.path.join(store, rel)
    if not os.path.exists(path):
        os.makedirs(store, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return rel


def keep_failures(results: str, out: str, rows: list[dict], store: str | None = None) -> dict:
    """Keep each failed test's .out.bad, .full and .dmesg (capped) in STORE (default
    OUT/failures), one copy of each content; returns {artefact: path relative to OUT}, which
    the run's results.json lists."""
    own = store is None
    store = os.path.abspath(store or os.path.join(out, "failures"))
    if own:
        shutil.rmtree(store, ignore_errors=True)     # this run's alone: a rerun replaces it
    kept = {}
    for r in rows:
        if r["status"] != "fail":
            continue
        for suffix in (".out.bad", ".full", ".dmesg"):
            p = os.path.join(results, r["test"] + suffix)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    text = f.read()[:ARTEFACT_CAP]
                rel = store_artefact(store, r["test"] + suffix, text)
                kept[r["test"] + suffix] = os.path.relpath(os.path.join(store, rel),
                                                           os.path.abspath(out))
    return kept


def dedupe_failures(store: str, runs: list[str]) -> dict:
    """Move each run folder's failures/ (one file per test and suffix, as runs before the
    store kept them) into STORE, one copy of each content, and list them in the run's
    results.json ("failures"). Returns {run: number of artefacts}."""
    done = {}
    for run_dir in runs:
        src = os.path.join(run_dir, "failures")
        kept = {}
        for dirpath, _, files in os.walk(src):
            for fn in sorted(files):
                path = os.path.join(dirpath, fn)
                name = os.path.relpath(path, src)
                with open(path, errors="replace") as f:
                    rel = store_artefact(store, name, f.read())
                kept[name] = os.path.relpath(os.path.join(os.path.abspath(store), rel),
                                             os.path.abspath(run_dir))
        meta_path = os.path.join(run_dir, "results.json")
        with open(meta_path) as f:
            meta = json.load(f)
        meta["failures"] = {**meta.get("failures", {}), **dict(sorted(kept.items()))}
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        shutil.rmtree(src, ignore_errors=True)
        done[run_dir] = len(kept)
    return done


# table -----------------------------------------------------------------------------------------
def load(folder: str) -> tuple[dict, dict]:
    """A run's results folder -> ({test: row}, meta)."""
    with open(os.path.join(folder, "results.csv")) as f:
        rows = {r["test"]: r for r in csv.DictReader(f)}
    with open(os.path.join(folder, "results.json")) as f:
        meta = json.load(f)
    meta.pop("tests", None)
    return rows, meta


def table(a) -> int:
    """table.csv (every test) and README.md (counts, how each run was made, the tests either
    file system ran; a one-line reason where ext2 passes and simfs does not)."""
    ext2, ext2_meta = load(a.ext2)
    simfs, parts = {}, []
    for folder in a.simfs:                   # parts of one list, run side by side; later win
        rows_, meta_ = load(folder)
        simfs.update(rows_)
        parts.append(meta_)
    reruns = []
    for folder in a.simfs_rerun or ():     # later reruns of some tests, in order: later win
        rerun, meta_ = load(folder)
        simfs = {**simfs, **{t: {**r, "rerun": True} for t, r in rerun.items()}}
        reruns.append(meta_)
    reasons = {}
    if a.reasons and os.path.exists(a.reasons):
        with open(a.reasons) as f:
            reasons = {r["test"]: r["reason"] for r in csv.DictReader(f)}
    # the list is simfs's (xfstests' FSTYP=fuse runs generic/ only); ext2's -g quick adds
    # ext4/ and shared/ tests, counted but not compared
    tests = sorted(simfs)
    ext2_only = sorted(set(ext2) - set(simfs))
    rows = []
    for t in tests:
        e, s = ext2.get(t, {}), simfs.get(t, {})
        es, ss = e.get("status", "absent"), s.get("status", "absent")
        why = ""
        if es == "pass" and ss != "pass":
            why = reasons.get(t) or s.get("message", "")
        rows.append({"test": t, "kernel_ext2": es, "simfs": ss,
                     "simfs_run": "rerun" if s.get("rerun") else "full",
                     "ext2_note": e.get("message", ""), "simfs_note": s.get("message", ""),
                     "reason": why})
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "table.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    def count(key, st):
        return sum(r[key] == st for r in rows)
    both = [r for r in rows if r["kernel_ext2"] == "pass"]
    L = []
    if a.head and os.path.exists(a.head):
        L += [Path(a.head).read_text().rstrip(), ""]
    L += ["## Counts", "", "| | kernel ext2 | simfs |", "|---|---:|---:|"]
    for st in ("pass", "fail", "notrun"):
        L.append(f"| {st} | {count('kernel_ext2', st)} | {count('simfs', st)} |")
    L.append(f"| total | {len(rows)} | {len(rows)} |")
    L += ["", f"Of the {len(both)} tests the kernel's ext2 passes, simfs passes "
              f"{sum(r['simfs'] == 'pass' for r in both)}; the others are listed with their reason "
              "below. Passed on simfs but not on ext2: "
              + (", ".join(f"{r['test']} (ext2 {r['kernel_ext2']}: {r['ext2_note']})" for r in rows
                           if r['simfs'] == 'pass' and r['kernel_ext2'] != 'pass') or "none") + ".", ""]
    if ext2_only:
        L += [f"ext2's `-g quick` also lists {len(ext2_only)} tests outside simfs's list (ext4/, "
              f"shared/: {sum(ext2[t]['status'] == 'pass' for t in ext2_only)} pass, "
              f"{sum(ext2[t]['status'] == 'notrun' for t in ext2_only)} not run); they are left out.",
              ""]
    L += ["## How the runs were made", ""]
    named = [("kernel ext2", ext2_meta)] + [
        (f"simfs{' part ' + str(i + 1) if len(parts) > 1 else ''}", m) for i, m in enumerate(parts)]
    named += [(f"simfs rerun{' ' + str(i + 1) if len(reruns) > 1 else ''}", m) for i, m in enumerate(reruns)]
    for name, m in named:
        if not m:
            continue
        args = m.get("args") or []
        if len(args) > 6:                    # a part of the list: say which
            m = {**m, "command": f"tests/xfstests/run.py run --fs {m['fs']} -- {args[0]} ... "
                                 f"{args[-1]} ({len(args)} tests of -g quick)"}
        extra = ""
        if m.get("ext2_driver"):
            extra += f"; ext2 served by the kernel's {m['ext2_driver']} driver"
        if m.get("mount_shown"):
            extra += (f"; the mount shows source `{m['mount_shown']['source']}`, "
                      f"type `{m['mount_shown']['fstype']}`")
        if m.get("df_wrapper"):
            extra += "; DF_PROG set to a df that shows `fuse.simfs` as `fuse` (README below)"
        L.append(f"- {name}: `{m['command']}` — {sum(m['counts'].values())} tests in "
                 f"{m['seconds']:.0f} s, kernel {m['kernel']}, xfstests {m['xfstests'][:12]}, "
                 f"images {m['image_size']}" + (f", simfs {m['simfs_commit'][:12]}"
                                                 if m.get("simfs_commit") else "") + extra)
    L += ["", "## Where ext2 passes and simfs does not", "",
          "| test | simfs | reason |", "|---|---|---|"]
    for r in rows:
        if r["kernel_ext2"] == "pass" and r["simfs"] != "pass":
            L.append(f"| {r['test']} | {r['simfs']} | {r['reason'].replace('|', '/')} |")
    L += ["", "## Every test either file system ran", "",
          "(not run on both: in table.csv with each file system's reason)", "",
          "| test | kernel ext2 | simfs |", "|---|---|---|"]
    for r in rows:
        if r["kernel_ext2"] != "notrun" or r["simfs"] != "notrun":
            L.append(f"| {r['test']} | {r['kernel_ext2']} | {r['simfs']}"
                     f"{' (rerun)' if r['simfs_run'] == 'rerun' else ''} |")
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    log(f"wrote {a.out}/README.md and table.csv ({len(rows)} tests)")
    return 0


def side(a) -> int:
    """One Markdown table of several runs side by side (LABEL=FOLDER each, parts of one list
    given as LABEL=F1,F2: later parts win) over the first run's tests, with how each was made
    and a reason column from --reasons."""
    cols = []
    for spec in a.run:
        label, eq, folders = spec.partition("=")
        if not eq or not folders:
            raise SystemExit(f"xfstests: --run wants LABEL=FOLDER[,FOLDER...], not {spec!r}")
        rows, metas = {}, []
        for folder in folders.split(","):
            r_, m_ = load(folder)
            rows.update(r_)
            metas.append(m_)
        cols.append((label, rows, metas))
    reasons = {}
    if a.reasons and os.path.exists(a.reasons):
        with open(a.reasons) as f:
            reasons = {r["test"]: r["reason"] for r in csv.DictReader(f)}
    tests = sorted(cols[0][1])
    L = [Path(a.head).read_text().rstrip(), ""] if a.head else []
    L += [f"| test | {' | '.join(label for label, _, _ in cols)} | reason (simfs) |",
         "|---|" + "---|" * len(cols) + "---|"]
    for t in tests:
        st = [rows.get(t, {}).get("status", "-") for _, rows, _ in cols]
        why = reasons.get(t, "") if any(s_ != "pass" for s_ in st) else ""
        L.append(f"| {t} | {' | '.join(st)} | {why.replace('|', '/')} |")
    L += ["", "| | " + " | ".join(label for label, _, _ in cols) + " |", "|---|" + "---:|" * len(cols)]
    for st in ("pass", "fail", "notrun"):
        L.append(f"| {st} | " + " | ".join(str(sum(rows.get(t, {}).get("status") == st for t in tests))
                                          for _, rows, _ in cols) + " |")
    L += [""]
    for label, _, metas in cols:
        for m in metas:
            L.append(f"- {label}: `{m['command']}` — {sum(m['counts'].values())} tests in "
                     f"{m['seconds']:.0f} s, kernel {m['kernel']}, xfstests {m['xfstests'][:12]}"
                     + (f", simfs {m['simfs_commit'][:12]}" if m.get("simfs_commit") else "")
                     + (f", mkfs options `{m['mkfs_options']}`" if m.get("mkfs_options") else ""))
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")
    log(f"wrote {a.out} ({len(tests)} tests)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="clone and build xfstests (once per source)")
    b.add_argument("--check-source", action="store_true",
                   help="only say (exit status 0/1) whether the source is there")
    r = sub.add_parser("run", help="run ./check against simfs or the kernel's ext2")
    for s in (b, r):
        s.add_argument("--source", default=os.environ.get("XFSTESTS_SOURCE") or default_source(),
                       help="a git repository, bundle or URL (default %(default)s)")
        s.add_argument("--dir", default=DEFAULT_DIR, help="build folder (default %(default)s)")
        s.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    r.add_argument("--fs", choices=("simfs", "ext2", "ext4"), required=True,
                   help="simfs, or the kernel's ext2 / ext4 (no journal, simfs's ext4 profile)")
    r.add_argument("--profile", choices=("ext2", "ext4"), default="ext2",
                   help="simfs only: `simfs mkfs --profile` of the images (default %(default)s)")
    r.add_argument("--failures-store", help="where failure artefacts go, one copy of each "
                   "(default OUT/failures; give one folder to several runs to share it)")
    r.add_argument("--work", help="images, mount points and xfstests' results (default DIR/work-FS)")
    r.add_argument("--out", help="where results.csv/json go (default: the work folder)")
    r.add_argument("--mount-opts", default="", help="extra simfs mount options (IMAGE: the device's image path)")
    r.add_argument("--timeout", type=int, default=0, help="stop the run after this many seconds")
    r.add_argument("--test-timeout", type=int, default=0,
                   help="kill a test after this many seconds (./check then reports it failed)")
    r.add_argument("tests", nargs="+", help="after --: ./check's arguments (-g quick, generic/001 ...)")
    t = sub.add_parser("table", help="both file systems' results side by side")
    t.add_argument("--ext2", required=True, help="the ext2 run's results folder")
    t.add_argument("--simfs", required=True, nargs="+",
                   help="the simfs run's results folder(s): parts of one list, later ones win")
    t.add_argument("--simfs-rerun", nargs="+",
                   help="later simfs runs of some tests, in order: their results win")
    t.add_argument("--reasons", help="CSV test,reason: why simfs does not pass where ext2 does")
    t.add_argument("--head", help="Markdown put first in README.md")
    t.add_argument("--out", required=True)
    s = sub.add_parser("side", help="several runs of the same tests side by side (Markdown)")
    s.add_argument("--run", required=True, nargs="+", metavar="LABEL=FOLDER[,FOLDER]")
    s.add_argument("--reasons", help="CSV test,reason")
    s.add_argument("--head", help="Markdown put first")
    s.add_argument("--out", required=True, help="the Markdown file to write")
    d = sub.add_parser("dedupe", help="move runs' failures/ into one store, one copy of each")
    d.add_argument("--store", required=True, help="the shared folder (e.g. results/xfstests/failures)")
    d.add_argument("runs", nargs="+", help="run folders (each with results.json and failures/)")
    a = p.parse_args(argv)
    if a.cmd == "side":
        return side(a)
    if a.cmd == "dedupe":
        for run_dir in a.runs:
            if os.path.abspath(a.store).startswith(os.path.abspath(os.path.join(run_dir, "failures"))):
                raise SystemExit(f"xfstests: the store {a.store} lies inside {run_dir}/failures")
        for run_dir, n in dedupe_failures(a.store, a.runs).items():
            log(f"{run_dir}: {n} artefacts listed in results.json, kept in {a.store}")
        return 0
    if a.cmd == "build":
        if a.check_source:
            return 0 if source_present(a.source) else 1
        print(build(a.source, a.dir, a.jobs))
        return 0
    return run(a) if a.cmd == "run" else table(a)


if __name__ == "__main__":
    sys.exit(main())
