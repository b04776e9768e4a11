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
