"""Driving a mounted (corrupted) image with real tools, and the oracles the corpus judges by.

The same drive runs on two mounts of copies of one corrupted image: the kernel's own ext2
driver (a read-write loop mount, `errors=continue` whatever the superblock says, so one error
does not turn every later step into EROFS) and simfs (the real `simfs mount`). Every tool runs
in its own process group under a timeout, so a hung operation is reported as a hang and killed,
never waited for. What the kernel refused (EUCLEAN, EIO, ...) is the standard simfs must meet.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: messages (strerror) of the answers that mean "the file system found itself inconsistent"
CORRUPTION_ERRORS = ("Structure needs cleaning", "Input/output error", "Bad message",
                     "Stale file handle", "Value too large for defined data type",
                     "File too large", "Numerical result out of range")
STEP_TIMEOUT = float(os.environ.get("SIMFS_CORPUS_STEP_TIMEOUT", "20"))
READ_CAP = 64 << 20             # the kernel's reads stop here: an 8 MiB image holds no more data


@dataclass
class Step:
    argv: list[str]
    rc: int | None                  # None: killed on timeout
    out: str
    err: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.rc is None

    @property
    def failed(self) -> bool:
        return self.rc != 0

    def show(self) -> str:
        state = "HUNG (killed after %.0f s)" % self.seconds if self.hung else f"exit {self.rc}"
        return f"$ {' '.join(self.argv)}: {state}\n{self.err.strip()[-800:]}"


def tool(argv, timeout: float = STEP_TIMEOUT, stdin=subprocess.DEVNULL, cwd=None) -> Step:
    """Run a tool in its own process group; on timeout kill the whole group (a tool stuck in a
    FUSE request is killable) and report it as hung."""
    t0 = time.monotonic()
    p = subprocess.Popen([str(a) for a in argv], stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out, err = b"", b"(did not die after SIGKILL)"
        rc = None
    return Step([str(a) for a in argv], rc, out.decode(errors="replace"), err.decode(errors="replace"),
                time.monotonic() - t0)


@dataclass
class Drive:
    """What one mount answered to the corpus's operations."""
    steps: dict[str, Step] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)       # names find could stat (relative paths)
    seen: set[str] = field(default_factory=set)         # names find saw, stat-able or not
    read_ok: set[str] = field(default_factory=set)      # regular files read without an error
    read_short: dict[str, str] = field(default_factory=dict)     # ... but ended early (tar: shrank)
    read_refused: dict[str, str] = field(default_factory=dict)   # path -> the tool's message

    def hung(self) -> list[str]:
        return [n for n, s in self.steps.items() if s.hung]


_FIND_ERR = re.compile(r"^find: ['‘](.*?)['’]: (.*)$")
_TAR_ERR = re.compile(r"^tar: \./(.*?): (.*)$")
_HEAD_ERR = re.compile(r"^head: (?:cannot open |error reading )['‘](.*?)['’](?: for reading)?: (.*)$")


def _rel(path: str, mnt: str) -> str:
    return os.path.relpath(path, mnt) if path.startswith(mnt) else path


def drive(mnt: Path, victim: str, src300: Path, kernel: bool, victim_is_file: bool = False) -> Drive:
    """find, read every file, write 300 KB over the victim (a regular file: through its own,
    perhaps corrupted, block map), delete the victim, mkdir + create, write a new 300 KB file:
    each under a timeout; stops early after a hang (the mount is then unusable)."""
    d, m = Drive(), str(mnt)
    # %m makes find lstat every name: a name it prints is one the file system let it stat
    s = d.steps["find"] = tool(["find", m, "-printf", "%y %m %P\\n"])
    for line in s.out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[2]:
            d.listed.add(parts[2])
    d.seen |= d.listed
    for line in s.err.splitlines():
        mo = _FIND_ERR.match(line)
        if mo:
            d.seen.add(_rel(mo.group(1), m))
    if s.hung:
        return d
    files = sorted(line.split(" ", 2)[2] for line in s.out.splitlines() if line.startswith("f "))
    if kernel:
        # the oracle reads at most READ_CAP of each file (a 7 EiB i_size is read to s_maxbytes)
        s = d.steps["read"] = tool(["find", m, "-type", "f", "-exec", "head", "-q", "-c", str(READ_CAP),
                                    "{}", "+"], timeout=STEP_TIMEOUT * 2)
        for line in s.err.splitlines():
            mo = _HEAD_ERR.match(line)
            if mo:
                d.read_refused[_rel(mo.group(1), m)] = mo.group(2)
        d.read_ok = {f for f in files if f not in d.read_refused} if not s.hung else set()
    else:
        # simfs reads every file to its end: tar into a pipe (tar skips reading into /dev/null)
        s = d.steps["read"] = tool(["bash", "-c", 'set -o pipefail; tar -cvf - -C "$1" . | cat > /dev/null',
                                    "_", m])
        archived = set()
        for line in s.err.splitlines():
            mo = _TAR_ERR.match(line)
            if mo:
                if "shrank" in mo.group(2):             # a read answered EOF before st_size
                    d.read_short[mo.group(1)] = mo.group(2)
                elif "file changed as we read it" not in mo.group(2):
                    d.read_refused[mo.group(1)] = mo.group(2)
            elif line.startswith("./"):
                archived.add(line[2:].rstrip("/"))
        if d.read_short and not s.hung:
            # tar takes any short read for a file that shrank and reads no further - also on
            # the kernel's own ext2, whose read of a damaged map returns the bytes before the
            # damage, then EIO. Such a file is read again with the tool the kernel's side was
            # read with: an error there is a refusal, as it is for the kernel.
            h = d.steps["reread"] = tool(["head", "-q", "-c", str(READ_CAP)]
                                         + [os.path.join(m, f) for f in sorted(d.read_short)])
            for line in h.err.splitlines():
                mo = _HEAD_ERR.match(line)
                if mo:
                    rel = _rel(mo.group(1), m)
                    d.read_refused[rel] = mo.group(2)
                    d.read_short.pop(rel, None)
        if not s.hung:
            d.read_ok = {f for f in archived if f in files and f not in d.read_refused}
    if s.hung:
        return d
    if victim_is_file:
        d.steps["overwrite"] = tool(["dd", f"if={src300}", f"of={m + victim}", "bs=4k", "conv=notrunc",
                                     "oflag=nofollow", "status=none"])
    d.steps["delete"] = tool(["rm", "-rf", "--", m + victim])
    d.steps["mkdir"] = tool(["mkdir", m + "/newdir"])
    d.steps["create"] = tool(["cp", "/etc/hostname", m + "/newdir/file"])
    d.steps["write"] = tool(["cp", str(src300), m + "/new300"])
    d.steps["ls"] = tool(["ls", "-la", m + "/", m + "/newdir"])
    return d


# e2fsck --------------------------------------------------------------------------------------
_MULTI = re.compile(r"Multiply-claimed block\(s\) in inode (\d+):((?:\s+\d+(?:--\d+)?)+)")


def e2fsck(image) -> tuple[int, str]:
    r = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def new_claims(before: set[tuple[int, int]], after: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The (inode, block) claims that are new in `after` and show a block given to two owners.

    Not counted: a new claim of an inode that already claimed others' blocks before, on a block
    no other inode claims (only file-system metadata does) - an inode whose map points into
    metadata (i_block[12] = the group descriptors) is read by e2fsck through that metadata, so
    its claims move when the metadata is legitimately updated (free counts), without anything
    written into a block that was not its writer's."""
    old_owners = {ino for ino, _ in before}
    owners: dict[int, set[int]] = {}
    for ino, blk in after:
        owners.setdefault(blk, set()).add(ino)
    return {(ino, blk) for ino, blk in after - before
            if ino not in old_owners or owners[blk] - old_owners}


def multiply_claimed(report: str) -> set[tuple[int, int]]:
    """(inode, block) for every block e2fsck's pass 1B found claimed more than once."""
    out = set()
    for mo in _MULTI.finditer(report):
        ino = int(mo.group(1))
        for tok in mo.group(2).split():
            a, _, b = tok.partition("--")
            for blk in range(int(a), int(b or a) + 1):
                out.add((ino, blk))
    return out


# mounts ----------------------------------------------------------------------------------------
def kernel_run(image: Path, mnt: Path, victim: str, src300: Path, victim_is_file: bool
               ) -> tuple[Step, Drive | None]:
    """Loop-mount the image read-write with the kernel's ext2, drive it, unmount."""
    mnt.mkdir(exist_ok=True)
    m = tool(["mount", "-t", "ext2", "-o", "loop,errors=continue", image, mnt], timeout=60)
    if m.failed:
        return m, None
    try:
        d = drive(mnt, victim, src300, kernel=True, victim_is_file=victim_is_file)
    finally:
        u = tool(["umount", mnt], timeout=60)
        if u.failed:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    d.steps["umount"] = u
    return m, d


def daemon_pid(image: Path) -> int | None:
    """The process that holds the image open: the daemon (found without asking the mount,
    whose control files a corrupted root directory may hide)."""
    want = os.path.realpath(image)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                    return int(pid)
            except OSError:
                pass
    return None


def alive(pid: int | None) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError, TypeError):
        return False


def mounted(mnt: Path) -> bool:
    real = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == real for line in f)


@dataclass
class SimfsResult:
    mount: Step
    drive: Drive | None = None
    pid: int | None = None
    alive_at_end: bool = False        # the daemon ran and the mount answered until the unmount
    end_problem: str = ""
    umount: Step | None = None
    daemon_exited: bool = True
    close_errors: list[str] = field(default_factory=list)   # ERROR lines logged after the unmount
    log: str = ""


def simfs_run(simfs_argv: list[str], image: Path, mnt: Path, victim: str, src300: Path,
              victim_is_file: bool) -> SimfsResult:
    """`simfs mount`, the drive, a check that the daemon is alive and the mount answers, the
    unmount. Whatever happens, nothing is left mounted or running (a hung daemon is killed by
    its pid, which this run started)."""
    mnt.mkdir(exist_ok=True)
    res = SimfsResult(tool(simfs_argv + ["mount", image, mnt], timeout=60))
    try:
        if res.mount.failed:
            return res
        res.pid = daemon_pid(image)
        res.drive = drive(mnt, victim, src300, kernel=False, victim_is_file=victim_is_file)
        # the mount still answers (an answer may be an error, EUCLEAN for a corrupt root; not
        # ENOTCONN, the answer of a mount whose daemon is gone, nor silence)
        st = tool(["stat", "-c", "%i", mnt], timeout=10)
        res.alive_at_end = (alive(res.pid) and mounted(mnt) and not st.hung
                            and "Transport endpoint is not connected" not in st.err)
        if not res.alive_at_end:
            res.end_problem = (f"daemon pid {res.pid} {'alive' if alive(res.pid) else 'gone'}, "
                               f"{'mounted' if mounted(mnt) else 'not mounted'}, "
                               f"stat of the mount point: {st.show()}")
        # unmounted as root unmounts any file system; then, as `simfs umount` does, the daemon
        # must exit (its write-back done) and log no ERROR from then on
        log = Path(str(image) + ".log")
        start = log.stat().st_size if log.exists() else 0
        res.umount = tool(["umount", mnt], timeout=30)
        deadline = time.monotonic() + 30
        while alive(res.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        res.daemon_exited = not alive(res.pid)
        if log.exists():
            with open(log, "rb") as f:
                f.seek(start)
                res.close_errors = [ln for ln in f.read().decode(errors="replace").splitlines()
                                    if ln.split(" ", 4)[2:4] in ([str(res.pid), "ERROR"], [str(res.pid), "CRITICAL"])]
    finally:
        if mounted(mnt):
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        if alive(res.pid):
            res.daemon_exited = False
            os.kill(res.pid, signal.SIGKILL)
            while alive(res.pid):
                time.sleep(0.05)
        log = Path(str(image) + ".log")
        res.log = log.read_text(errors="replace") if log.exists() else ""
    return res


def corruption_error(text: str) -> str | None:
    """The first corruption-type message (CORRUPTION_ERRORS) in a tool's output, or None."""
    return next((msg for msg in CORRUPTION_ERRORS if msg in text), None)


def refused(step: Step | None) -> str | None:
    """The corruption-type message a failed step gave, or None."""
    if step is None or not step.failed or step.hung:
        return None
    return corruption_error(step.err)
