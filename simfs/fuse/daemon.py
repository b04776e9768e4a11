"""Mounting and unmounting: the daemon's life cycle.

`mount()` checks the mount point and image, then (unless foreground) forks: the child
becomes the daemon (own session, stdio into the log), opens the volume, mounts, starts the
trio loop and only then tells the parent "ok" through a pipe; any start-up error travels
back the same pipe and the parent prints it as one line. The daemon runs until the kernel
unmounts the file system, then closes the volume (which writes everything back and releases
the image lock) and exits.

`umount()` reads the daemon's pid from /.simfs/info, unmounts with fusermount3, and returns
only when the daemon has exited and the image lock is free, i.e. the image is fully written.
SIGTERM/SIGINT/SIGHUP make the daemon unmount itself the same way (lazily if busy); a second
signal stops serving at once (the volume is still closed cleanly). Requests are served by
pyfuse3's loop on simfs.fuse.requestloop's view of trio (no scheduler pass per request).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import time

import simfs.outfile as outfile
from simfs.fuse import holders, requestloop
from simfs.errors import ImageWriteError, OutputError
from simfs.fuse.checks import (
    UnsafeOutput, UsageError, _check_outside, check_distinct, _path_options, _unescape_mountinfo, check_image,
    check_mountpoint, check_output, check_path, default_log_path, is_mounted, mounted_read_only,
)

log = logging.getLogger("simfs.fuse.daemon")

# daemon --------------------------------------------------------------------------------------
def open_volume(image: str, vopts):
    """Open the image (separate so tests can substitute a volume)."""
    from simfs.fs.volume import Volume
    return Volume.open(image, vopts)


def setup_logging(log_path: str | None, level: str, stream=None) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    fmt = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    handlers = []
    if log_path:        # (opened as simfs.outfile says: never through a link)
        handlers.append(logging.StreamHandler(os.fdopen(outfile.open_append(log_path), "a",
                                                        buffering=1)))
    if stream is not None:
        handlers.append(logging.StreamHandler(stream))
    for h in handlers:
        h.setFormatter(fmt)
        root.addHandler(h)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    if level != "debug":
        logging.getLogger("pyfuse3").setLevel(logging.INFO)


def _fusermount(mnt: str, lazy: bool = False) -> subprocess.CompletedProcess:
    cmd = ["fusermount3", "-u"] + (["-z"] if lazy else []) + ["--", mnt]
    return subprocess.run(cmd, capture_output=True, text=True)


UTAB = "/run/mount/utab"


def in_utab(mnt: str, utab: str = UTAB) -> bool:
    """Whether libmount keeps user-space options for `mnt` (a mount(8) or fstab mount with
    `user`, `_netdev`, `x-*`...): then only umount(8) removes the entry, fusermount3 leaves it."""
    real = os.path.realpath(mnt)
    try:
        with open(utab) as f:
            for line in f:
                for field in line.split():
                    if field.startswith("TARGET=") and _unescape_mountinfo(field[7:]) == real:
                        return True
    except OSError:
        pass
    return False


def _unmount(mnt: str, lazy: bool = False) -> subprocess.CompletedProcess:
    """`simfs umount`'s unmount: umount(8) for a mount libmount keeps options of (root only),
    so its utab entry goes too; fusermount3 otherwise."""
    if os.geteuid() == 0 and in_utab(mnt):
        return subprocess.run(["umount"] + (["-l"] if lazy else []) + ["--", mnt],
                              capture_output=True, text=True)
    return _fusermount(mnt, lazy)


async def _watch_signals(mnt: str, nursery) -> None:
    import pyfuse3
    import trio

    async def unmount_self():
        r = await trio.to_thread.run_sync(_fusermount, mnt, False)
        if r.returncode != 0:
            log.warning("unmount failed (%s); detaching lazily", r.stderr.strip())
            r = await trio.to_thread.run_sync(_fusermount, mnt, True)
            if r.returncode != 0:
                log.error("lazy unmount failed too (%s); stopping", r.stderr.strip())
                pyfuse3.terminate()

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as sigs:
        seen = 0
        async for signum in sigs:
            seen += 1
            if seen == 1:
                log.info("%s: unmounting %s", signal.Signals(signum).name, mnt)
                nursery.start_soon(unmount_self)
            else:
                log.warning("%s again: stopping now", signal.Signals(signum).name)
                pyfuse3.terminate()


def init_fuse(pyfuse3, ops, mnt: str, fuse_opts: set[str]) -> None:
    """pyfuse3.init, with a refusal said in one line (UsageError) that names the options
    handed to libfuse and what libfuse said of them: pyfuse3 raises only
    RuntimeError("fuse_session_new() failed") (or "fuse_session_mount failed"), and libfuse
    writes its reason ("fuse: unknown option(s): `-o x'") to file descriptor 2, which is
    caught here for the message (and, after a mount, passed on to where fd 2 went: the log)."""
    import tempfile
    sys.stderr.flush()
    with tempfile.TemporaryFile() as said:
        saved = os.dup(2)
        try:
            os.dup2(said.fileno(), 2)
            try:
                pyfuse3.init(ops, mnt, fuse_opts)
                refusal = None
            except RuntimeError as e:
                refusal = e
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        said.seek(0)
        text = said.read().decode(errors="replace")
    if text and refusal is None:
        os.write(2, text.encode())
    if refusal is not None:
        why = "; ".join(line.strip() for line in text.splitlines() if line.strip()) or str(refusal)
        raise UsageError(f"libfuse refused the mount ({why}); the options simfs passed to it: "
                         f"{','.join(sorted(fuse_opts))}")


def serve(image: str, mnt: str, mopts, *, log_path: str | None, ready=None, recorder=None) -> int:
    """Open, mount, run until unmounted, close. Raises UsageError for bad input. With
    -o oplog=PATH, `recorder(vol, PATH)` wraps the volume in one that records its operations
    (simfs.inprocess.oplog, handed in by the command: the FUSE layer does not import the engine)."""
    import pyfuse3
    import trio

    from simfs.errors import ImageError
    from simfs.fuse.operations import Operations

    try:
        vol = open_volume(image, mopts.volume)
    except outfile.Refused as e:             # (a link planted since the checks: the trace)
        raise UsageError(f"cannot write {e.filename}: {e.strerror}") from None
    except ImageError as e:
        raise UsageError(str(e)) from None
    except (ValueError, KeyError) as e:
        raise UsageError(f"bad mount option value: {e}") from None
    if mopts.oplog:
        try:
            if recorder is None:
                raise UsageError("-o oplog= is not available to this caller")
            vol = recorder(vol, mopts.oplog)
        except OSError as e:
            vol.close()
            raise UsageError(f"cannot write the oplog file {mopts.oplog}: {e.strerror}") from None
        except BaseException:
            vol.close()
            raise
    try:
        info = {"image": image, "mountpoint": mnt, "log": log_path,
                "stats": mopts.volume.stats or None, "options": mopts.in_force(image),
                "given": mopts.given}
        ops = Operations(vol, info=info, debug_faults=mopts.debug_faults)
        fuse_opts = mopts.fuse_options(image)
        init_fuse(pyfuse3, ops, mnt, fuse_opts)
        log.info("mounting %s on %s (fuse options %s, volume options %s)", image, mnt,
                 ",".join(sorted(fuse_opts)), mopts.volume)
    except BaseException:
        vol.close()
        raise

    for w in vol.warnings:
        log.warning("%s: %s", image, w)

    async def commits():
        """Real durability: the image trails what was written by at most `commit` seconds
        even when no request arrives (requests also commit when one is due). A mount made
        read-only (`mount -o remount,ro`) is written back once, as the kernel syncs a file
        system it remounts read-only."""
        was_ro = False
        while True:
            await trio.sleep(min(1.0, mopts.volume.commit / 4))
            ro = mounted_read_only(mnt)
            if ro and not was_ro:
                log.info("%s remounted read-only: writing every dirty block back", mnt)
                vol.sync()
            was_ro = ro
            vol.commit_if_due()

    async def run():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch_signals, mnt, nursery)
            if not mopts.volume.read_only:
                nursery.start_soon(commits)
            if ready is not None:
                ready(vol.warnings)
            with requestloop.installed(pyfuse3, trio):     # (one reader task: max_tasks=1)
                await pyfuse3.main(min_tasks=1, max_tasks=1)
            nursery.cancel_scope.cancel()

    rc = 0
    try:
        trio.run(run)
        log.info("unmounted; closing the volume")
    except BaseException:
        log.exception("FUSE main loop failed")
        rc = 1
    finally:
        try:
            pyfuse3.close(unmount=True)
        except Exception:
            log.exception("pyfuse3.close failed")
        try:
            vol.close()
            log.info("image %s written back and closed; daemon exits", image)
        except ImageWriteError as e:     # the host is full or failing: say what the image holds
            log.error("%s", e.at_close)
            rc = 1
        except OutputError as e:         # the statistics or the trace: the image is fine
            log.error("%s", e.strerror)
            rc = 1
        except Exception as e:     # `simfs umount` finds this line in the log and reports it
            done = "the image was written back, but " if getattr(vol, "closed", False) else ""
            log.exception("%sclosing the volume failed: %s: %s", done, type(e).__name__, e)
            rc = 1
    return rc


def default_stats_path(image: str) -> str:
    """Where the final statistics go unless -o stats=PATH or -o nostats: beside the image."""
    return image + ".stats.json"


def mount(image: str, mnt: str, mopts, *, foreground: bool = False, recorder=None,
          report=None) -> int:
    """`simfs mount`: 0 once mounted (background) or unmounted (foreground). In the
    foreground, `report(stats_path)` is called after a clean unmount (the last word)."""
    image, mnt = os.path.abspath(image), os.path.abspath(mnt)
    check_mountpoint(mnt)
    check_image(image)
    default_stats = not mopts.nostats and not mopts.volume.stats
    if mopts.nostats:
        mopts.volume.stats = ""
    elif default_stats:
        mopts.volume.stats = default_stats_path(image)
    log_path = os.path.abspath(mopts.log) if mopts.log else (None if foreground else default_log_path(image))
    outputs = _path_options(mopts.volume)
    if mopts.oplog:
        outputs["oplog"] = mopts.oplog
    logs = {"log": log_path} if log_path else {}
    _check_outside(mnt, image=image, **logs, **outputs)
    check_distinct(image, **logs, **outputs)
    for what, path in outputs.items():
        if not (what == "stats" and default_stats):
            check_output(path, what)
    if default_stats:           # the default never stops a mount: without it, no final statistics
        try:             # ... but one simfs must not write (a planted link) does
            check_output(mopts.volume.stats, "final statistics")
        except UnsafeOutput as e:
            raise UnsafeOutput(f"{e}; give -o stats=PATH or -o nostats") from None
        except UsageError as e:
            no_stats = f"simfs mount: warning: {e}; none will be written (give -o stats=PATH)"
            mopts.volume.stats = ""
    log_made = bool(log_path) and not os.path.lexists(log_path)
    if log_path:
        check_output(log_path, "log", keep=True,
                     hint="" if mopts.log else "; give another with -o log=FILE")
    if default_stats and not mopts.volume.stats:
        print(no_stats, file=sys.stderr)
    if foreground:
        setup_logging(log_path, mopts.loglevel, stream=sys.stderr)

        def ready(warnings):
            for w in warnings:
                print(f"simfs mount: warning: {w}", file=sys.stderr)
            print(f"simfs: {image} mounted on {mnt} (foreground; Ctrl-C or "
                  f"`simfs umount {mnt}` to stop)", file=sys.stderr, flush=True)
        rc = serve(image, mnt, mopts, log_path=log_path, ready=ready, recorder=recorder)
        if rc == 0 and report is not None and mopts.volume.stats:
            report(mopts.volume.stats)
        return rc

    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the daemon
        os.close(r)
        rc = 1
        try:
            rc = _daemon_main(image, mnt, mopts, log_path, w, recorder)
        except BaseException:
            pass
        finally:
            os._exit(rc)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    msg = b"".join(chunks).decode(errors="replace").strip()
    if msg.startswith("ok"):
        for w in msg.splitlines()[1:]:
            print(f"simfs mount: warning: {w}", file=sys.stderr)
        return 0
    if msg.startswith("usage "):                   # refused: leave nothing behind, as mount(8)
        if log_made:
            with contextlib.suppress(OSError):
                os.unlink(log_path)
        raise UsageError(msg[6:])
    if msg.startswith("error "):
        print(f"simfs mount: {msg[6:]} (log: {log_path})", file=sys.stderr)
        return 1
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    print(f"simfs mount: the daemon exited during start-up; see {log_path}", file=sys.stderr)
    return 1


def _close_inherited(keep: int) -> None:
    """A daemon keeps none of its caller's descriptors (a `flock LOCK simfs mount` would
    otherwise hold the lock for as long as the mount lives), only 0-2 and `keep`."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass                                # (the listing's own descriptor)


def _daemon_main(image, mnt, mopts, log_path, w, recorder=None) -> int:
    os.setsid()
    os.chdir("/")
    _close_inherited(keep=w)
    try:
        logfd = outfile.open_append(log_path)     # never through a link planted meanwhile
    except OSError as e:
        os.write(w, f"usage cannot write the log file {log_path}: {e.strerror}\n".encode())
        return 2
    nullfd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nullfd, 0)
    os.dup2(logfd, 1)
    os.dup2(logfd, 2)
    os.close(nullfd)
    os.close(logfd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    setup_logging(None, mopts.loglevel, stream=sys.stderr)     # (the log, on fd 2)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    told = False

    def tell(text: str):
        nonlocal told
        if not told:
            told = True
            try:
                os.write(w, text.encode() + b"\n")
            finally:
                os.close(w)

    try:
        return serve(image, mnt, mopts, log_path=log_path, recorder=recorder,
                     ready=lambda warnings: tell("\n".join(["ok"] + warnings)))
    except UsageError as e:
        log.error("%s", e)
        tell("usage " + str(e).replace("\n", " "))
        return 2
    except BaseException as e:
        log.exception("daemon start-up failed")
        tell("error " + (f"{type(e).__name__}: {e}").replace("\n", " "))
        return 1


# unmounting ------------------------------------------------------------------------------------
def read_info(mnt: str) -> dict | None:
    """The daemon's /.simfs/info, or None if it cannot be read."""
    try:
        with open(os.path.join(mnt, ".simfs", "info"), "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def image_locked(image: str) -> bool:
    """True while some process holds the image's lock (a mounted volume)."""
    try:
        fd = os.open(image, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)   # (a FIFO put there: no wait)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


#: seconds of waiting after which `simfs umount` says what it waits for, then why it may go on
WAIT_NOTES_AFTER = (2.0, 30.0)
#: how long `simfs umount` waits for the daemon unless --timeout says otherwise; and how long
#: once a copy of the mount in another mount namespace is seen keeping the daemon alive
UMOUNT_TIMEOUT, HELD_TIMEOUT = 600.0, 10.0


def wait_for_daemon(pid: int | None, image: str | None, timeout: float | None = None,
                    quiet: bool = False, held=None, held_timeout: float | None = None) -> bool:
    """Wait until the daemon has exited and released the image; False on timeout. Says after 2 s
    what it waits for, and after 30 s the likely reason it still waits. `held()`, asked once
    a second, says whether something keeps the daemon alive (simfs.fuse.holders): then the
    notes are left to the caller, and the wait ends `held_timeout` seconds after it first said
    so (if given)."""
    start = time.monotonic()
    first, second = WAIT_NOTES_AFTER
    notes = [] if quiet else [
        (first, f"simfs umount: waiting for the daemon (pid {pid}) to write back {image} ..."),
        (second, f"simfs umount: the daemon (pid {pid}) still serves {image}: a process in another mount "
             "namespace (unshare, a container, a test runner) may hold the mount, and it exits when "
             "that one unmounts (Ctrl-C stops waiting; the daemon goes on)")]
    held_since, asked = None, -1.0
    while (pid and _alive(pid)) or (image and image_locked(image)):
        now = time.monotonic()
        waited = now - start
        if timeout is not None and waited > timeout:
            return False
        if held is not None and now - asked >= 1.0:
            asked = now
            if held():
                held_since = held_since or now
                notes = []
            else:
                held_since = None
        if held_since is not None and held_timeout is not None and now - held_since >= held_timeout:
            return False
        if notes and waited > notes[0][0]:
            print(notes.pop(0)[1], file=sys.stderr, flush=True)
        time.sleep(0.02)
    return True


def open_daemon_log(info: dict | None) -> int | None:
    """The daemon's log, opened for `simfs umount` to read its last words: the file the daemon
    writes to (its stderr, /proc/PID/fd/2), wherever its name has gone since, else the log's
    path through simfs.outfile's safe open (no link, FIFO or device, no other user's file);
    None if neither is such a file. (Only LAST_WORDS of it are ever read.)"""
    if not info or not info.get("log"):
        return None
    try:
        fd = os.open(f"/proc/{int(info.get('pid') or 0)}/fd/2", os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, ValueError, TypeError):
        fd = None
    if fd is not None:
        if stat.S_ISREG(os.fstat(fd).st_mode):   # (a device would be read for ever)
            return fd
        os.close(fd)
    try:
        return outfile.open_read(info["log"], sys.maxsize)
    except (OSError, ValueError, TypeError):
        return None


#: how much of the log `simfs umount` reads for the daemon's last words
LAST_WORDS = 1 << 20


def daemon_error(log_fd: int | None, offset: int, pid) -> str | None:
    """The first ERROR the daemon `pid` logged after `offset` in its log (open_daemon_log):
    how `simfs umount` learns that the daemon (not its child) failed while writing back,
    e.g. the -o stats= file."""
    if log_fd is None or not pid:
        return None
    try:
        size = os.fstat(log_fd).st_size
        text = os.pread(log_fd, LAST_WORDS, offset if offset <= size else 0).decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():      # "DATE TIME PID LEVEL NAME: MESSAGE"
        parts = line.split(" ", 4)
        if len(parts) == 5 and parts[2] == str(pid) and parts[3] in ("ERROR", "CRITICAL"):
            return parts[4].partition(": ")[2] or parts[4]
    return None


def umount(mnt: str, *, lazy: bool = False, timeout: float | None = None, report=None) -> int:
    """`simfs umount`: unmount, then wait for the daemon to finish writing and exit; 1 if it
    logged a failure meanwhile; then `report(info)` (the last word: /.simfs/info as read
    before unmounting). `lazy`: detach now and return at once, unless `timeout` is given
    (then wait that long for the daemon). The wait is bounded: `timeout`, by default
    UMOUNT_TIMEOUT, or HELD_TIMEOUT once a copy of the mount in another mount namespace keeps
    the daemon alive; then 2, with the process holding that copy named (simfs.fuse.holders)."""
    if timeout is not None and not timeout >= 0:
        raise UsageError(f"--timeout must be a number of seconds >= 0, not {timeout:g}")
    mnt = os.path.abspath(mnt)
    check_path(mnt, "mount point")
    if not is_mounted(mnt) and not os.path.lexists(mnt):
        raise UsageError(f"{mnt} does not exist")
    if not is_mounted(mnt, "fuse"):
        raise UsageError(f"{mnt} is not mounted" if not is_mounted(mnt)
                         else f"{mnt} is not a FUSE (simfs) mount")
    info = read_info(mnt)
    if info is None:
        print(f"simfs umount: {mnt} does not answer as simfs (daemon gone?); unmounting anyway",
              file=sys.stderr)
    if info is not None and info.get("unwritable"):
        if not lazy:
            print(f"simfs umount: not unmounting {mnt}: {info['unwritable']}; the changes since "
                  f"the last commit are only in the daemon's memory, and it tries again every few "
                  f"seconds: free space there and run simfs umount again (--lazy unmounts, losing them)",
                  file=sys.stderr)
            return 1
        print(f"simfs umount: warning: {info['unwritable']}: the changes since the last commit will "
              "be lost", file=sys.stderr)
    log_path = (info or {}).get("log")
    log_fd = open_daemon_log(info)
    try:
        return _umount(mnt, info, lazy, timeout, report, log_path, log_fd, holders.mount_dev(mnt))
    finally:
        if log_fd is not None:
            os.close(log_fd)


def _umount(mnt, info, lazy, timeout, report, log_path, log_fd, dev) -> int:
    log_start = os.fstat(log_fd).st_size if log_fd is not None else 0
    r = _unmount(mnt, lazy)
    if r.returncode != 0:
        detail = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"fusermount3 exit {r.returncode}"
        busy = "busy" in detail.lower()
        print(f"simfs umount: cannot unmount {mnt}: {detail}" +
              (" (close files and leave directories under it, or use --lazy)" if busy else ""),
              file=sys.stderr)
        return 1
    if lazy and timeout is None:
        if info is not None:
            print(f"simfs umount: {mnt} detached; the daemon (pid {info.get('pid')}) writes "
                  f"{info.get('image')} back and exits on its own, once no file under it is open",
                  file=sys.stderr)
        return 0
    if info is not None:
        pid, image = info.get("pid"), info.get("image")
        limit = UMOUNT_TIMEOUT if timeout is None else timeout
        if not wait_for_daemon(pid, image, limit, held=lambda: holders.holders(dev),
                               held_timeout=HELD_TIMEOUT if timeout is None else None):
            held = holders.holders(dev)
            if held:
                first = held[0]
                print(f"simfs umount: {mnt} is unmounted here, but a copy of it lives on in another "
                      f"mount namespace, held by {'; '.join(map(str, held))}: the daemon (pid {pid}) "
                      f"writes {image} back and exits only once that copy goes - kill that process, "
                      f"or unmount the copy there (nsenter -t {first.pid} -m umount {first.where}); "
                      "see docs/mounting.md", file=sys.stderr)
                return 2
            print(f"simfs umount: unmounted, but the daemon (pid {pid}) is still "
                  f"running after {limit:g} s; see {info.get('log')}", file=sys.stderr)
            return 1
        error = daemon_error(log_fd, log_start, info.get("pid"))
        if error:
            print(f"simfs umount: unmounted, but the daemon failed: {error} (log: {log_path})",
                  file=sys.stderr)
            return 1
        if report is not None:
            report(info)
    return 0
