"""`simfs umount` waiting for a daemon that goes on (for instance because a process in another
mount namespace still holds the mount): it says what it waits for, then why it may go on."""

import subprocess

from simfs.fuse import daemon


def test_umount_wait_says_what_it_waits_for_then_why(monkeypatch, capsys):
    monkeypatch.setattr(daemon, "WAIT_NOTES_AFTER", (0.05, 0.2))
    stand_in = subprocess.Popen(["sleep", "0.6"])          # a daemon that outlives the unmount
    try:
        assert daemon.wait_for_daemon(stand_in.pid, None, timeout=None) is True
    finally:
        stand_in.wait()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "waiting for the daemon" in lines[0]
    assert "another mount namespace" in lines[1]
    stand_in = subprocess.Popen(["sleep", "0.3"])
    try:
        assert daemon.wait_for_daemon(stand_in.pid, None, timeout=None, quiet=True) is True
    finally:
        stand_in.wait()
    assert capsys.readouterr().err == ""


# a copy of the mount in another mount namespace -------------------------------------------
def _proc(tmp_path, procs: dict) -> str:
    """A stand-in /proc: pid -> (mount namespace, comm, mountinfo text); "self" is pid 1."""
    import os
    root = tmp_path / "proc"
    for pid, (ns, comm, info) in procs.items():
        d = root / str(pid)
        (d / "ns").mkdir(parents=True)
        os.symlink(f"mnt:[{ns}]", d / "ns" / "mnt")
        (d / "comm").write_text(comm + "\n")
        (d / "mountinfo").write_text(info)
    os.symlink("1", root / "self")
    return str(root)


FUSE = "{id} 29 0:57 / {where} rw,nosuid,nodev,relatime shared:1 - fuse.simfs /img/d.img rw,user_id=0\n"
ROOT = "29 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"


def test_holders_names_one_process_per_other_namespace(tmp_path):
    from simfs.fuse import holders
    proc = _proc(tmp_path, {
        1: ("100", "init", ROOT + FUSE.format(id=40, where="/mnt/sim")),
        7: ("100", "bash", ROOT + FUSE.format(id=40, where="/mnt/sim")),     # ours: not a holder
        4242: ("200", "sleep", ROOT + FUSE.format(id=90, where="/mnt/sim")),
        4243: ("200", "sh", ROOT + FUSE.format(id=90, where="/mnt/sim")),
        5000: ("300", "other", ROOT),                                         # no copy there
        6000: ("400", "runner", ROOT + FUSE.format(id=91, where="/x/my\\040mnt").replace("0:57", "0:58")),
    })
    assert holders.mount_dev("/mnt/sim", proc) == "0:57"
    held = holders.holders("0:57", proc)
    assert [(h.pid, h.comm, h.where, h.others) for h in held] == [(4242, "sleep", "/mnt/sim", 1)]
    assert str(held[0]) == "pid 4242 (sleep, with 1 more process there) at /mnt/sim"
    assert [h.where for h in holders.holders("0:58", proc)] == ["/x/my mnt"]
    assert holders.holders(None, proc) == [] and holders.holders("0:99", proc) == []


def test_a_held_mount_ends_the_wait_after_the_held_timeout(monkeypatch, capsys):
    import time
    monkeypatch.setattr(daemon, "WAIT_NOTES_AFTER", (0.05, 0.2))
    stand_in = subprocess.Popen(["sleep", "30"])            # a daemon kept alive by the copy
    try:
        t0 = time.monotonic()
        assert daemon.wait_for_daemon(stand_in.pid, None, timeout=20, held=lambda: True,
                                      held_timeout=0.5) is False
        assert time.monotonic() - t0 < 5
        assert capsys.readouterr().err == ""                 # the caller names the holder
        assert daemon.wait_for_daemon(stand_in.pid, None, timeout=0.3, held=lambda: False,
                                      held_timeout=0.1, quiet=True) is False
    finally:
        stand_in.kill()
        stand_in.wait()
