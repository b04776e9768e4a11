"""POSIX ACLs mounted (-o acl) against the kernel's own ext2 (served by its ext4 driver, which
mounts ext2 with acl by default) on a loop mount of an image made the same way: one script of
real tools (setfacl, getfacl, chmod, cp -a, cat as other users) runs on both, and what it
prints must be the same; then the kernel reads simfs's image read-only and getfacl shows the
same ACLs there; e2fsck -fn is clean. The script creates under umask 0 in a directory with a
default ACL: with a umask there simfs differs (docs/ext2-differences.md)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers import can_loop_mount, kernel_mount

pytestmark = pytest.mark.mount

SCRIPT = r"""
set -e
umask 022
echo secret > f; chmod 600 f
setfacl -m u:1000:r--,g:50:rw- f
mkdir d
setfacl -d -m u:1001:r-x,g::r-x,m::rwx,o::--x d
umask 0
echo new > d/g; mkdir d/sub; mkdir -m 700 d/private
cp -a f d/copy
umask 022
chmod 640 d/g
touch plain; setfacl -m u::rwx,g::r-x,o::r-- plain
touch gone; setfacl -m u:7:rwx gone; setfacl -b gone
mkdir -m 2775 sgid; touch sgid/s; chmod 2775 sgid/s; chown 1002:1003 sgid/s
setpriv --reuid=1002 --regid=1002 --clear-groups setfacl -m u:1000:r sgid/s
for u in 1000 1001 50; do
  setpriv --reuid=$u --regid=$u --clear-groups cat f >/dev/null 2>&1 && echo "$u reads f" || echo "$u cannot read f"
done
setpriv --reuid=1001 --regid=1001 --clear-groups ls d/sub >/dev/null 2>&1 && echo "1001 lists d/sub" || echo "1001 cannot list d/sub"
setfacl -m o::r-- f
stat -c '%n %A %u:%g' f d d/g d/sub d/private d/copy plain gone sgid sgid/s
"""


def getfacl(where) -> str:
    """getfacl -R of the tree (numeric ids), one block per file in name order (the kernel's
    ext2 lists a directory in hash order, simfs in slot order by default), lost+found left out
    (not the script's)."""
    out = subprocess.run(["getfacl", "-R", "-p", "-n", "."], cwd=where, capture_output=True, text=True).stdout
    return "\n\n".join(sorted(b for b in out.strip().split("\n\n") if "lost+found" not in b.splitlines()[0]))


def _run(where) -> str:
    r = subprocess.run(["sh", "-c", SCRIPT], cwd=where, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout + getfacl(where)


def test_acls_as_the_kernels_ext2_keeps_them(simfs_factory, tmp_path):
    if not shutil.which("setfacl") or not shutil.which("setpriv"):
        pytest.skip("setfacl (Debian package acl) or setpriv not installed")
    why = can_loop_mount()
    if why:
        pytest.skip(why)
    m = simfs_factory(options="acl", size="64M")
    got = _run(m.mnt)
    kimg, kmnt = tmp_path / "k.img", tmp_path / "kmnt"
    subprocess.run(["mkfs.ext2", "-q", "-b", "4096", str(kimg), "64M"], check=True, capture_output=True)
    kmnt.mkdir()
    subprocess.run(["mount", "-o", "loop,acl", "-t", "ext2", str(kimg), str(kmnt)], check=True)
    try:
        want = _run(kmnt)
    finally:
        subprocess.run(["umount", str(kmnt)], check=True)
    assert "1000 reads f" in want and "# file: ./d/sub" in want and "default:user:1001:r-x" in want
    assert got == want
    m.umount()
    m.assert_clean()
    with kernel_mount(m.image, tmp_path / "ro") as k:
        assert getfacl(k) == want[want.index("# file: "):]
