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
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

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
    and the commit built, so the same source is not built twice."""
    src = os.path.join(where, "src")
    stamp = os.path.join(where, ".built")
    want = f"{source} {source_commit(source) or ''}".strip()
    if os.path.exists(stamp) and open(stamp).read().strip() == want and os.path.isfile(
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
    log(f"building in {src} (make -j{jobs})")
    with open(os.path.join(where, "build.log"), "w") as out:
        r = subprocess.run(["make", f"-j{jobs}"], cwd=src, stdout=out, stderr=subprocess.STDOUT)
    if r.returncode:
        raise SystemExit(f"xfstests: make failed in {src}; see {where}/build.log")
    with open(stamp, "w") as f:
        f.write(want + "\n")
    log(f"built in {time.monotonic() - t0:.0f} s")
    return src


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


def config_simfs(work: str, extra_opts: str) -> tuple[str, dict]:
    """local.config for FSTYP=fuse (README.fuse), images made by `simfs mkfs`."""
    imgs = {}
    for name in ("test", "scratch"):
        img = os.path.join(work, f"{name}.img")
        sh(simfs_cmd() + ["mkfs", "--quiet", "--force", img, IMAGE_SIZE], env=simfs_env(), cwd=REPO)
        os.makedirs(os.path.join(work, name), exist_ok=True)
        imgs[name] = img
    # kernel file systems are mounted suid,dev by default; simfs's default is nosuid,nodev
    def opts(img):
        return ",".join(o for o in ("suid,dev", extra_opts.replace("IMAGE", img)) if o)
    lines = [
        "export FSTYP=fuse",
        "export FUSE_SUBTYP=.simfs",
        f"export TEST_DEV={imgs['test']}",
        f"export TEST_DIR={work}/test",
        f"export SCRATCH_DEV={imgs['scratch']}",
        f"export SCRATCH_MNT={work}/scratch",
        f'export TEST_FS_MOUNT_OPTS="-o {opts(imgs["test"])}"',
        f'export MOUNT_OPTIONS="-o {opts(imgs["scratch"])}"',
    ]
    return "\n".join(lines) + "\n", imgs


def config_ext2(work: str) -> tuple[str, list[str]]:
    """local.config for the kernel's ext2 on two loop devices (same sizes as simfs's)."""
    loops = []
    for name in ("test", "scratch"):
        img = os.path.join(work, f"{name}.img")
        if os.path.exists(img):
            os.unlink(img)
        sh(["truncate", "-s", IMAGE_SIZE, img])
        sh(["mkfs.ext2", "-q", "-F", img], stdout=subprocess.DEVNULL)
        loops.append(subprocess.run(["losetup", "-f", "--show", img], check=True, text=True,
                                    capture_output=True).stdout.strip())
        os.makedirs(os.path.join(work, name), exist_ok=True)
    lines = [
        "export FSTYP=ext2",
        f"export TEST_DEV={loops[0]}",
        f"export TEST_DIR={work}/test",
        f"export SCRATCH_DEV={loops[1]}",
        f"export SCRATCH_MNT={work}/scratch",
    ]
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
        config, imgs = config_simfs(work, a.mount_opts)
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
        config, loops = config_ext2(work)
        meta["ext2_driver"] = ext2_driver()
    config += f"export RESULT_BASE={results}\n"
    with open(os.path.join(src, "local.config"), "w") as f:
        f.write(config)
    with open(os.path.join(work, "local.config"), "w") as f:
        f.write(config)
    check = " ".join(["./check", "-R", "xunit"] + [shlex.quote(t) for t in a.tests])
    script = " && ".join(pre + [f"cd {shlex.quote(src)}", check]) + f"; st=$?; {unmount_all(work)}; exit $st"
    log(f"{a.fs}: {check} (log: {work}/check.out)")
    t0 = time.monotonic()
    try:
        with open(os.path.join(work, "check.out"), "w") as out:
            subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           stdout=out, stderr=subprocess.STDOUT, env=simfs_env(), cwd=src,
                           timeout=a.timeout or None)
    except subprocess.TimeoutExpired:
        log(f"timed out after {a.timeout} s")
    finally:
        for dev in loops:
            subprocess.run(["losetup", "-d", dev])
    meta["seconds"] = round(time.monotonic() - t0, 1)
    xml = os.path.join(results, "result.xml")
    if not os.path.exists(xml):
        log(f"no {xml}: see {work}/check.out")
        sys.stderr.write(open(os.path.join(work, "check.out")).read()[-3000:])
        return 1
    rows = parse_xunit(xml)
    meta["command"] = f"tests/xfstests/run.py run --fs {a.fs} -- " + " ".join(a.tests)
    write_results(rows, a.out or work, meta)
    keep_failures(results, a.out or work, rows)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("pass", "fail", "notrun")}
    log(f"{a.fs}: {counts} in {meta['seconds']} s -> {a.out or work}/results.csv")
    return 0


def ext2_driver() -> str:
    """Which kernel driver serves ext2 here (this kernel has no ext2 module: ext4 mounts it)."""
    fss = open("/proc/filesystems").read().split()
    return "ext2" if "ext2" in fss else "ext4 (CONFIG_EXT4_USE_FOR_EXT2)"


def keep_failures(results: str, out: str, rows: list[dict]) -> None:
    """Copy each failed test's .out.bad and .full (capped) next to the results."""
    dest = os.path.join(out, "failures")
    shutil.rmtree(dest, ignore_errors=True)
    for r in rows:
        if r["status"] != "fail":
            continue
        for suffix in (".out.bad", ".full", ".dmesg"):
            p = os.path.join(results, r["test"] + suffix)
            if os.path.exists(p):
                os.makedirs(os.path.join(dest, os.path.dirname(r["test"])), exist_ok=True)
                with open(p, errors="replace") as f:
                    text = f.read()[:20000]
                with open(os.path.join(dest, r["test"] + suffix), "w") as f:
                    f.write(text)


# table -----------------------------------------------------------------------------------------
def load(path: str) -> dict:
    with open(path) as f:
        return {r["test"]: r for r in csv.DictReader(f)}


def table(a) -> int:
    ext2, simfs = load(a.ext2), load(a.simfs)
    reasons = {}
    if a.reasons and os.path.exists(a.reasons):
        with open(a.reasons) as f:
            reasons = {r["test"]: r["reason"] for r in csv.DictReader(f)}
    tests = sorted(set(ext2) | set(simfs), key=lambda t: (t.split("/")[0], t))
    rows = []
    for t in tests:
        e = ext2.get(t, {}).get("status", "absent")
        s = simfs.get(t, {}).get("status", "absent")
        why = reasons.get(t, "")
        if not why and e == "pass" and s != "pass":
            why = simfs.get(t, {}).get("message", "")
        rows.append({"test": t, "kernel_ext2": e, "simfs": s, "reason": why})
    with open(os.path.join(a.out, "table.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["test", "kernel_ext2", "simfs", "reason"])
        w.writeheader()
        w.writerows(rows)
    def count(key, s):
        return sum(r[key] == s for r in rows)
    lines = ["| | kernel ext2 | simfs |", "|---|---:|---:|"]
    for s in ("pass", "fail", "notrun"):
        lines.append(f"| {s} | {count('kernel_ext2', s)} | {count('simfs', s)} |")
    lines += ["", "| test | kernel ext2 | simfs | why simfs differs (where ext2 passes) |",
              "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['test']} | {r['kernel_ext2']} | {r['simfs']} | {r['reason']} |")
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"wrote {a.out}/table.md and table.csv ({len(rows)} tests)")
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
    r.add_argument("--fs", choices=("simfs", "ext2"), required=True)
    r.add_argument("--work", help="images, mount points and xfstests' results (default DIR/work-FS)")
    r.add_argument("--out", help="where results.csv/json go (default: the work folder)")
    r.add_argument("--mount-opts", default="", help="extra simfs mount options (IMAGE: the device's image path)")
    r.add_argument("--timeout", type=int, default=0, help="stop the run after this many seconds")
    r.add_argument("tests", nargs="+", help="after --: ./check's arguments (-g quick, generic/001 ...)")
    t = sub.add_parser("table", help="both file systems' results side by side")
    t.add_argument("--ext2", required=True)
    t.add_argument("--simfs", required=True)
    t.add_argument("--reasons", help="CSV test,reason: why simfs differs")
    t.add_argument("--out", required=True)
    a = p.parse_args(argv)
    if a.cmd == "build":
        if a.check_source:
            return 0 if source_present(a.source) else 1
        print(build(a.source, a.dir, a.jobs))
        return 0
    return run(a) if a.cmd == "run" else table(a)


if __name__ == "__main__":
    sys.exit(main())
