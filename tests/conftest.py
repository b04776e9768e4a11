"""Fixtures for mounted tests: images made and mounted with the real `simfs` CLI.

`simfs_mount` yields a mounted `SimfsMount` in a temporary directory; teardown always
unmounts (lazily and forcibly if it must) and then asserts `e2fsck -fn` is clean. Tests
that mount are marked `@pytest.mark.mount` and skipped, with the reason, where FUSE is
unavailable (no /dev/fuse, no fusermount3) or e2fsprogs is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import serial_only

REPO = Path(__file__).resolve().parents[1]


# the CLI ---------------------------------------------------------------------------------------
def simfs_argv() -> list[str]:
    exe = Path(sys.executable).with_name("simfs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simfs.cli"]


def run_simfs(*args, check: bool = True, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run `simfs ARGS...`; with check, fail the test (showing stderr) on a non-zero exit."""
    r = subprocess.run(simfs_argv() + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, **kw)
    if check and r.returncode != 0:
        pytest.fail(f"simfs {' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def run(cmd, **kw) -> subprocess.CompletedProcess:
    """Run a tool; fail the test with its output if it exits non-zero."""
    kw.setdefault("timeout", 300)
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


def cargo_tool(name: str) -> str:
    """Path of a test suite `make tools` builds (fsx, pjdfstest): .cargo-tools/bin, else PATH.
    Skips the test, saying how to get it, where neither has it."""
    p = REPO / ".cargo-tools" / "bin" / name
    if p.exists():
        return str(p)
    found = shutil.which(name)
    if found:
        return found
    pytest.skip(f"{name} is not installed: `make tools` builds it into .cargo-tools/ (needs cargo)")


def fuse_mounts() -> list[str]:
    from simfs.fuse.checks import mounts
    return [p for p, t, _ in mounts() if t.startswith("fuse")]


def fuse_unavailable() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (FUSE kernel module not available)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 not installed (apt-get install fuse3)"
    if shutil.which("e2fsck") is None:
        return "e2fsck not installed (apt-get install e2fsprogs)"
    return None


# `make test` runs the tests not marked `serial` on every CPU (pytest-xdist, a file per worker),
# then the `serial` ones one at a time: those that share machine-wide state, named by what they
# share (setup.cfg's markers): `kernel_mount` (the kernel's ext2/ext4 on a loop device, a tmpfs,
# a mount namespace, which copies every mount on the machine, a tracefs capture: the loop
# devices, the mount table, the trace buffer), `mount_helper` (/sbin/mount.fuse.simfs: mount -t
# fuse.simfs, fstab, remounts by mount(8)), `timed_signal` (a real-time bound: a kill or a
# commit timed against a run misses on a busy machine) and `xfstests` (its build in .xfstests/).
# A FUSE mount of a test's own image on its own mount point under its tmp_path shares none: FUSE
# mounts are per mount point, and the daemon's lock, log and statistics sit beside the image;
# so those run in the parallel part, refusals and help examples with them. Here the files whose
# tests share something (whole: their module fixtures are shared by their tests) and the
# fixtures that do; tests elsewhere carry a mark by hand. tests/unit/test_suite_split.py checks
# that every test file that loop-mounts, uses the helper or sends a signal is named here or
# marked; helpers.serial_only fails a loop or tmpfs mount made from a parallel worker.
MACHINE_WIDE = ("kernel_mount", "mount_helper", "timed_signal", "xfstests")
MACHINE_WIDE_FILES = {
    "tests/mount/test_acl_mount.py": ("kernel_mount",),
    "tests/mount/test_aging.py": ("kernel_mount",),
    "tests/mount/test_corruption_corpus.py": ("kernel_mount",),      # the kernel beside each
    "tests/mount/test_crash.py": ("timed_signal",),                  # the image within COMMIT s
    "tests/mount/test_e2e_programs.py": ("kernel_mount",),
    "tests/mount/test_ext4_untar.py": ("kernel_mount",),
    "tests/mount/test_host_full.py": ("kernel_mount", "timed_signal"),   # a tmpfs; commit timing
    "tests/mount/test_htree_mount.py": ("kernel_mount",),
    "tests/mount/test_kernel_layout.py": ("kernel_mount",),
    "tests/mount/test_mount_helper.py": ("mount_helper",),
    "tests/mount/test_umount_namespace.py": ("kernel_mount", "timed_signal"),  # unshare -m copies every mount
    "tests/mount/test_whiteout_and_handles.py": ("kernel_mount",),
    "tests/mount/test_xfstests.py": ("mount_helper", "xfstests"),
}
MACHINE_WIDE_FIXTURES = {"small_host": "kernel_mount"}     # a tmpfs


def machine_wide(item) -> set[str]:
    """What machine-wide state the test shares: the MACHINE_WIDE marks it has or gets here."""
    rel = item.path.relative_to(REPO).as_posix() if REPO in item.path.parents else ""
    marks = set(MACHINE_WIDE_FILES.get(rel, ()))
    marks |= {m for f, m in MACHINE_WIDE_FIXTURES.items() if f in item.fixturenames}
    return marks | {m for m in MACHINE_WIDE if item.get_closest_marker(m) is not None}


def is_serial(item) -> bool:
    return item.get_closest_marker("serial") is not None or bool(machine_wide(item))


@pytest.hookimpl(tryfirst=True)          # before -m selects: the serial mark must be there
def pytest_collection_modifyitems(config, items):
    reason = fuse_unavailable()
    skip = pytest.mark.skip(reason=f"cannot mount: {reason}")
    for item in items:
        for mark in machine_wide(item):
            item.add_marker(mark)
        if is_serial(item):
            item.add_marker(pytest.mark.serial)
        if reason and item.get_closest_marker("mount"):      # (a test id "mount" is no mark)
            item.add_marker(skip)


def pytest_configure(config):
    record = os.environ.get("SIMFS_TEST_RECORD")
    if record:
        from tests.suite_split import Recorder
        config.pluginmanager.register(Recorder(record), "simfs-test-record")


# checks --------------------------------------------------------------------------------------------
def e2fsck(image) -> tuple[int, str]:
    r = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def manifest(root, skip_top=("lost+found",)) -> dict:
    """Everything `diff -r` would compare, plus modes, symlink targets, file mtimes and the
    hard-link structure: {relative path: description}. Walk order is sorted, so the first
    name of a hard-linked file is the same in two identical trees."""
    root = str(root)
    out: dict[str, tuple] = {}
    first: dict[tuple[int, int], str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in skip_top]
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in first:
                    out[rel] = ("h", first[key])
                    continue
                first[key] = rel
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    while chunk := f.read(1 << 20):
                        h.update(chunk)
                out[rel] = ("f", stat.S_IMODE(st.st_mode), st.st_size, int(st.st_mtime), h.hexdigest())
            else:
                out[rel] = ("?", stat.S_IFMT(st.st_mode))
    return out


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


# mounts --------------------------------------------------------------------------------------------
class SimfsMount:
    """An image and a mount point, mounted and unmounted through the `simfs` CLI."""

    def __init__(self, image: Path, mnt: Path, options: str = ""):
        self.image, self.mnt, self.options = Path(image), Path(mnt), options
        self.mounted = False

    @property
    def log(self) -> Path:
        return Path(str(self.image) + ".log")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def mount(self, options: str | None = None) -> None:
        opts = self.options if options is None else options
        args = ["mount", self.image, self.mnt] + (["-o", opts] if opts else [])
        r = run_simfs(*args, check=False)
        if r.returncode != 0:
            pytest.fail(f"simfs mount failed ({r.returncode}): {r.stderr}\nlog:\n{self.log_text()[-3000:]}")
        self.mounted = True
        assert os.path.realpath(self.mnt) in fuse_mounts()

    def umount(self) -> None:
        run_simfs("umount", self.mnt)
        self.mounted = False
        assert os.path.realpath(self.mnt) not in fuse_mounts()

    def assert_clean(self) -> None:
        rc, out = e2fsck(self.image)
        assert rc == 0, f"e2fsck -fn {self.image} exited {rc}:\n{out}"

    def remount(self) -> None:
        """umount, e2fsck -fn clean, mount again."""
        self.umount()
        self.assert_clean()
        self.mount()

    def stats(self) -> dict:
        return json.loads((self.mnt / ".simfs" / "stats").read_bytes())

    def info(self) -> dict:
        return json.loads((self.mnt / ".simfs" / "info").read_bytes())

    def force_cleanup(self) -> None:
        """Unmount by any means (teardown after a failure)."""
        from simfs.fuse.daemon import image_locked, wait_for_daemon
        real = os.path.realpath(self.mnt)
        if real in fuse_mounts():
            r = run_simfs("umount", "--timeout", 120, self.mnt, check=False)
            if r.returncode != 0 and real in fuse_mounts():
                subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], capture_output=True)
        if image_locked(self.image):
            wait_for_daemon(None, str(self.image), timeout=120, quiet=True)
        self.mounted = False


def make_image(path: Path, size: str = "512M", *extra) -> Path:
    """`simfs mkfs -q PATH --size SIZE EXTRA...`, in-process: the command's own parser and
    handler, without the interpreter start of a subprocess (about 0.3 s a mounted test)."""
    import contextlib
    import io
    from simfs.cli.main import main
    args = ["mkfs", "-q", str(path), "--size", str(size), *map(str, extra)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = main(args)
        except SystemExit as e:              # argparse's usage errors
            rc = e.code
    if rc != 0:
        pytest.fail(f"simfs {' '.join(args)} exited {rc}:\n{out.getvalue()}")
    return Path(path)


@pytest.fixture
def simfs_factory(tmp_path):
    """mount(options="", size="512M", name="a", mkfs_args=()) -> a mounted SimfsMount.

    Teardown unmounts every mount it made, then asserts e2fsck -fn is clean for each image."""
    made: list[SimfsMount] = []

    def factory(options: str = "", size: str = "512M", name: str = "a", mkfs_args=()) -> SimfsMount:
        image = make_image(tmp_path / f"{name}.img", size, *mkfs_args)
        mnt = tmp_path / f"{name}.mnt"
        mnt.mkdir()
        m = SimfsMount(image, mnt, options)
        made.append(m)
        m.mount()
        return m

    yield factory
    problems = []
    for m in made:
        try:
            m.force_cleanup()
        except Exception as e:       # keep going: every mount must be released
            problems.append(f"cleanup of {m.mnt}: {e}")
    for m in made:
        rc, out = e2fsck(m.image)
        if rc != 0:
            problems.append(f"e2fsck -fn {m.image} exited {rc}:\n{out}")
    assert not problems, "\n".join(problems)


@pytest.fixture
def simfs_mount(simfs_factory) -> SimfsMount:
    """A fresh 512 MiB (sparse) image mounted with default options."""
    return simfs_factory()


# the image's host ----------------------------------------------------------------------------------
@pytest.fixture
def small_host(tmp_path):
    """A 48 MiB tmpfs for an image's own host file system to fill up (skipped if it cannot be
    mounted)."""
    serial_only("a tmpfs mount")
    host = tmp_path / "host"
    host.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48M", "tmpfs", str(host)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    yield host
    subprocess.run(["umount", "-l", str(host)], capture_output=True)


def fill_host(host: Path, leave: int) -> None:
    """Take all of `host`'s free space but `leave` bytes."""
    st = os.statvfs(host)
    with open(host / "filler", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, st.f_bavail * st.f_frsize - leave)


# workloads -----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def source_tree(tmp_path_factory):
    """A generated source-like tree of 2,000 files (0 B to >1 MiB, symlinks, hard links, empty
    dirs, deep paths) on the local disk: (path, summary)."""
    from experiments.workload import generate_tree
    root = tmp_path_factory.mktemp("tree") / "src"
    summary = generate_tree(root, seed=1, files=2000)
    return root, summary


def tree_tarball(where: Path, seed: int, files: int) -> Path:
    """A generated tree of `files` files in where/src, and its tarball where/src.tar."""
    from experiments.workload import generate_tree
    generate_tree(where / "src", seed=seed, files=files)
    tar = where / "src.tar"
    run(["tar", "cf", tar, "-C", where / "src", "."])
    return tar


@pytest.fixture(scope="session")
def source_tarball(source_tree, tmp_path_factory):
    root, _ = source_tree
    tar = tmp_path_factory.mktemp("tar") / "src.tar"
    run(["tar", "cf", tar, "-C", root, "."])
    return tar


@pytest.fixture(scope="session")
def source_manifest(source_tree):
    return manifest(source_tree[0])
