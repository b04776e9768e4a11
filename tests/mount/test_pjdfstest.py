"""pjdfstest (the POSIX file-system suite's Rust rewrite, crate `pjdfstest` 0.2, built by `make
tools`) on a simfs mount with default options, as root, compared test by test with
tests/mount/pjdfstest_expected.txt (issue 11).

A test that fails now and was not recorded as failing fails this test, and so does a test
recorded as passing that no longer passes (failed, skipped or missing); the message lists
them with pjdfstest's explanation. A test that passes now and was recorded otherwise is
reported (printed, and a warning) so the file can be updated, without failing. To rewrite the
file from a run: SIMFS_PJDFSTEST_UPDATE=1 pytest tests/mount/test_pjdfstest.py, then review the diff.

The configuration (written per run): the opt-in features a POSIX file system with nanosecond
timestamps has -- utimensat, utime_now, rename_ctime (simfs, like Linux's ext2, changes ctime
on rename) and posix_fallocate (FUSE has no fallocate; glibc emulates it with writes) -- and a
secondary file system (a directory on the local disk) for the EXDEV tests of rename and link.
`naptime`, pjdfstest's sleep between changes whose timestamps it compares, is 50 ms: simfs
stamps times with the daemon's clock to the nanosecond, but a UTIME_NOW reaches it as the
kernel's coarse clock (one tick, 4 ms here, behind), so with 1 ms utimensat::utime_now can
see atime go backwards and fails; 1 s (the default, right for the kernel's ext2 with its
one-second times) passes too but makes the run 85 s instead of 10. The dummy users whose
identity the tests take are nobody/nogroup and daemon/daemon (Debian has both), so no user
needs creating. The 13 EROFS tests (allow_remount: `mount -o remount,ro MNT` and back, which
mount(8) hands to simfs's helper, /sbin/mount.fuse.simfs) run in a second pjdfstest process of
their own: in one process with the rest, posix_fallocate::affected_only_create_flags leaves
two files open for writing (pjdfstest 0.2.2 never closes the raw descriptors nix's open
returns), so the kernel refuses every later read-only remount, EBUSY, on any file system.

For comparison, the kernel's ext2 on a loop device with the same configuration (naptime 1 s)
passes 385 and skips 13: it also runs link::link_count_max, which needs pathconf's LINK_MAX,
unknown on FUSE. The run on simfs takes about 10 s.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import pytest

from tests.conftest import SimfsMount, cargo_tool, e2fsck, make_image

pytestmark = pytest.mark.mount

EXPECTED = Path(__file__).with_name("pjdfstest_expected.txt")
FEATURES = ("utimensat", "utime_now", "rename_ctime", "posix_fallocate")
NAPTIME = 0.05
USER_CANDIDATES = ("nobody", "daemon", "bin", "sys")
RESULTS = {"ok": "ok", "FAILED": "FAILED", "skipped": "skipped",
           "PASSED UNEXPECTEDLY": "ok", "failed as expected": "FAILED"}
_LINE = re.compile(r"^(\S+)\s+(ok|FAILED|skipped|PASSED UNEXPECTEDLY|failed as expected)$")
_SUMMARY = re.compile(r"^Summary: (\d+) failed, (\d+) skipped, (\d+) passed, (\d+) expected failures, "
                      r"(\d+) total$", re.M)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def dummy_users() -> list[tuple[str, str]]:
    """Two unprivileged users, each with its primary group's name."""
    found = []
    for name in USER_CANDIDATES:
        try:
            pw = pwd.getpwnam(name)
            found.append((name, grp.getgrgid(pw.pw_gid).gr_name))
        except KeyError:
            continue
    return found[:2]


def write_config(path: Path, secondary: Path, users, remount: bool = False) -> None:
    entries = ", ".join(f'["{u}", "{g}"]' for u, g in users)
    path.write_text("[features]\n" + "".join(f"{f} = {{}}\n" for f in FEATURES)
                    + f'secondary_fs = "{secondary}"\n\n[settings]\nnaptime = {NAPTIME}\n'
                    + f"allow_remount = {str(remount).lower()}\n\n[dummy_auth]\nentries = [{entries}]\n")


def parse_results(out: str) -> tuple[dict[str, str], dict[str, str], dict[str, int] | None]:
    """pjdfstest's output -> ({test: ok|FAILED|skipped}, {test: explanation}, summary counts).
    A test's line is followed by tab-indented lines: why it was skipped or how it failed."""
    results: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    current = None
    for line in _ANSI.sub("", out).splitlines():
        m = _LINE.match(line.rstrip())
        if m:
            current = m.group(1)
            results[current] = RESULTS[m.group(2)]
            notes[current] = []
        elif current and line.startswith("\t"):
            notes[current].append(line.strip())
        elif line.strip():
            current = None if not line.startswith((" ", "Backtrace")) else current
    s = _SUMMARY.search(_ANSI.sub("", out))
    summary = None
    if s:
        failed, skipped, passed, xfail, total = map(int, s.groups())
        summary = dict(failed=failed, skipped=skipped, passed=passed, total=total)
    return results, {k: " / ".join(v) for k, v in notes.items() if v}, summary


def load_expected(path: Path = EXPECTED) -> dict[str, str]:
    expected = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            result, name = line.split()
            assert result in ("ok", "skipped", "FAILED"), f"{path}: bad line {line!r}"
            expected[name] = result
    return expected


def write_expected(results: dict[str, str], notes: dict[str, str], version: str,
                   path: Path = EXPECTED) -> None:
    counts = {r: sum(1 for v in results.values() if v == r) for r in ("ok", "skipped", "FAILED")}
    lines = [f"# {version} on a simfs mount with default options, as root (tests/mount/test_pjdfstest.py).",
             "# One test a line: '<result> <name>', result ok | skipped | FAILED (a skip's reason after #).",
             "# Rewrite from a run: SIMFS_PJDFSTEST_UPDATE=1 pytest tests/mount/test_pjdfstest.py (review the diff).",
             f"# {counts['ok']} ok, {counts['FAILED']} FAILED, {counts['skipped']} skipped, "
             f"{len(results)} in all."]
    for name in sorted(results):
        r = results[name]
        note = f"  # {notes[name]}" if r == "skipped" and name in notes else ""
        lines.append(f"{r:7} {name}{note}")
    path.write_text("\n".join(lines) + "\n")


def compare(expected: dict[str, str], results: dict[str, str], notes: dict[str, str]):
    """(problems that fail the test, newly passing tests to report)."""
    problems, improved = [], []
    for name, r in sorted(results.items()):
        was = expected.get(name)
        why = f": {notes[name]}" if name in notes else ""
        if r == "FAILED" and was != "FAILED":
            problems.append(f"new failure: {name} (recorded {was or 'nowhere'}){why}")
        elif was == "ok" and r != "ok":
            problems.append(f"passed before, now {r}: {name}{why}")
        elif r == "ok" and was != "ok":
            improved.append(f"now passes: {name} (recorded {was or 'nowhere'})")
        elif was is None:
            improved.append(f"new test, {r}: {name}{why}")
    for name in sorted(set(expected) - set(results)):
        problems.append(f"did not run: {name} (recorded {expected[name]})")
    return problems, improved


@pytest.fixture(params=["ext2", "ext4"], ids=lambda p: f"profile={p}")
def short_mount(tmp_path, request):
    """A default simfs mount at /tmp/pjdXXXXXXXX/mnt: every directory above it searchable by
    the dummy users (pytest's tmp_path is not: its top directory is 0700), and the path short
    enough for pjdfstest's socket names in nested temporary directories (bind(2) takes at
    most 107 bytes); on an image of each mkfs profile (the expected results are the same).
    Teardown unmounts and checks e2fsck -fn, as simfs_factory does."""
    top = Path(tempfile.mkdtemp(prefix="pjd", dir="/tmp"))
    top.chmod(0o755)
    (top / "mnt").mkdir()
    m = SimfsMount(make_image(tmp_path / "a.img", "512M", "--profile", request.param), top / "mnt")
    try:
        m.mount()
        yield m
    finally:
        m.force_cleanup()
        shutil.rmtree(top, ignore_errors=True)
        rc, out = e2fsck(m.image)
        assert rc == 0, f"e2fsck -fn {m.image} exited {rc}:\n{out}"


def _pjdfstest(short_mount, tmp_path, erofs: bool) -> tuple[str, dict[str, str], dict[str, str]]:
    """Run pjdfstest on the mount: the EROFS tests alone (with allow_remount) or all the others;
    (version, {test: result}, {test: explanation}), after the unmount and e2fsck -fn."""
    if os.geteuid() != 0:
        pytest.skip("pjdfstest needs root (it takes other users' identities, makes device nodes)")
    users = dummy_users()
    if len(users) < 2:
        pytest.skip(f"pjdfstest needs two unprivileged users; found {users} of {USER_CANDIDATES}")
    pjdfstest = cargo_tool("pjdfstest")
    simfs_mount = short_mount
    secondary = simfs_mount.mnt.parent / "secondary"     # the local disk: another st_dev
    secondary.mkdir()
    config = tmp_path / "pjdfstest.toml"
    write_config(config, secondary, users, remount=erofs)
    version = subprocess.run([pjdfstest, "--version"], capture_output=True, text=True).stdout.strip()

    t0 = time.monotonic()
    only = ["erofs"] if erofs else []
    r = subprocess.run([pjdfstest, "-c", str(config), "-p", str(simfs_mount.mnt), *only],
                       capture_output=True, text=True, timeout=900, env={**os.environ, "NO_COLOR": "1"})
    out = r.stdout + r.stderr
    (tmp_path / "pjdfstest.out").write_text(out)
    results, notes, summary = parse_results(out)
    assert summary is not None, f"pjdfstest exited {r.returncode} without a summary:\n{out[-4000:]}"
    counted = dict(failed=sum(v == "FAILED" for v in results.values()),
                   skipped=sum(v == "skipped" for v in results.values()),
                   passed=sum(v == "ok" for v in results.values()), total=len(results))
    assert counted == summary, f"parsed {counted}, pjdfstest's summary says {summary}"
    if erofs:
        assert results and all(_erofs(k) for k in results), sorted(results)
    else:       # skipped here without allow_remount: test_pjdfstest_erofs_matches_expected runs them
        results = {k: v for k, v in results.items() if not _erofs(k)}
        notes = {k: v for k, v in notes.items() if not _erofs(k)}
    took = time.monotonic() - t0
    print(f"{version}{' (EROFS)' if erofs else ''}: {counted['passed']} passed, {counted['failed']} failed, "
          f"{counted['skipped']} skipped of {counted['total']} in {took:.1f} s")

    simfs_mount.umount()
    simfs_mount.assert_clean()
    return version, results, notes


def _erofs(name: str) -> bool:
    return "erofs" in name


def _check_against_expected(version: str, results: dict[str, str], notes: dict[str, str], erofs: bool,
                            tmp_path) -> None:
    expected = {k: v for k, v in load_expected().items() if _erofs(k) == erofs}
    if os.environ.get("SIMFS_PJDFSTEST_UPDATE"):
        others = {k: v for k, v in load_expected().items() if _erofs(k) != erofs}
        write_expected({**others, **results}, notes, version)      # (the others' skip notes are lost)
        print(f"wrote {EXPECTED}")
        return
    problems, improved = compare(expected, results, notes)
    for line in improved:
        print(line)
        warnings.warn(f"pjdfstest: {line} -- update {EXPECTED.name}")
    assert not problems, (f"pjdfstest against {EXPECTED.name}:\n" + "\n".join(problems)
                          + f"\n(full output: {tmp_path / 'pjdfstest.out'})")


def test_pjdfstest_matches_expected(short_mount, tmp_path):
    """Every test but the EROFS ones: nothing machine-wide (a FUSE mount of its own image, the
    secondary file system a directory), so it runs in make test's parallel part."""
    version, results, notes = _pjdfstest(short_mount, tmp_path, erofs=False)
    _check_against_expected(version, results, notes, False, tmp_path)


@pytest.mark.mount_helper            # `mount -o remount,ro MNT`: mount(8) runs /sbin/mount.fuse.simfs
def test_pjdfstest_erofs_matches_expected(short_mount, tmp_path):
    """The 13 EROFS tests, in a pjdfstest process of their own (see the module's docstring)."""
    version, results, notes = _pjdfstest(short_mount, tmp_path, erofs=True)
    _check_against_expected(version, results, notes, True, tmp_path)
