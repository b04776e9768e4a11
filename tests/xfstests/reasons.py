"""reasons.csv for results/xfstests: one line per test the kernel's ext2 passes and simfs does
not, from table.csv. A not-run test's reason follows from xfstests' own message (PAT); a failed
test's was read from its .out.bad (FAIL). Usage: python tests/xfstests/reasons.py
results/xfstests/table.csv > results/xfstests/reasons.csv, then `run.py table --reasons` again.
A test neither explains is written with '??' so it is not missed. A sized scratch file system
(_scratch_mkfs_sized) is made since tests/xfstests/fuse-mkfs.patch: no reason line for it."""
import csv, re, sys
PAT = [
 (r"relatime not supported", "simfs refuses `-o relatime` (its mount options have no relatime/strictatime flag); ext2 takes it"),
 (r"O_TMPFILE is not supported", "O_TMPFILE: pyfuse3 3.5 has no tmpfile handler, so simfs cannot answer FUSE's tmpfile request"),
 (r"maximum ACL count", "xfstests knows no maximum ACL count for FSTYP=fuse (its _acl_get_max has no fuse case)"),
 (r"ACLs not supported", "POSIX ACLs: simfs has none (no system.posix_acl_* xattrs); ext2 mounts with acl"),
 (r"valid block disk|local device", "wants the scratch device to be a block device; a FUSE file system's device is an image file"),
 (r"renameat2", "RENAME_WHITEOUT: simfs does not make whiteouts (xfstests' _require_renameat2 whiteout); NOREPLACE/EXCHANGE work"),
 (r"chattr|xfs_io chattr", "inode flags (chattr +i/+a/+A/+x): the kernel passes FS_IOC_GETFLAGS/SETFLAGS to a FUSE file system as FUSE_IOCTL, but pyfuse3 3.5 registers no ioctl handler with libfuse (its fuse_lowlevel_ops), so the kernel gets ENOSYS and chattr ENOTTY; xattrs cannot stand in (chattr and lsattr use only the ioctl)"),
 (r"device block size: 4096 greater than 512", "needs the device block size (xfstests reads 4096 for the image; ext2's loop device: 512) at most 512"),
 (r"fiemap", "FIEMAP is an ioctl that FUSE does not carry"),
 (r"block size", "needs a device block size below the file system's 4 KiB; xfstests reads 4096 for simfs's image (ext2's loop device: 512)"),
 (r"fpunch|falloc|fzero|fcollapse|finsert", "fallocate (KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE...): pyfuse3 3.5 registers no fallocate handler with libfuse (its fuse_lowlevel_ops), so FUSE_FALLOCATE gets ENOSYS and the kernel answers EOPNOTSUPP to every later fallocate; glibc's posix_fallocate emulates mode 0 with writes, no other mode can be"),
 (r"FITRIM", "FITRIM is an ioctl that FUSE does not carry"),
 (r"unrestricted byte streams", "xfstests does not allow arbitrary byte names on FSTYP=fuse"),
 (r"swapfiles", "the kernel does not swap to files on FUSE"),
 (r"shutdown", "FS_IOC_SHUTDOWN: xfstests says fuse has no shutdown (an ioctl FUSE does not carry)"),
 (r"freezing", "freeze (FIFREEZE) is not available on FUSE"),
 (r"label", "file-system label ioctl (FS_IOC_GETFSLABEL) is not carried by FUSE"),
 (r"creation time", "statx btime: simfs shows no creation time (pyfuse3 3.5 has no statx handler and FUSE's getattr has no btime); ext2 with 256-byte inodes on the ext4 driver shows one"),
]
FAIL = {
 "generic/020": "xfstests assumes 1000 xattrs on FSTYP=fuse; simfs, like ext2, holds about 110 in one 4 KiB xattr block (ENOSPC at 109): xfstests' limit for fuse, not a fault",
 "generic/069": "too slow: 3,000,000 4-byte O_APPEND writes, each three FUSE requests (GETATTR for the append offset, GETXATTR security.capability, WRITE), about 0.5 ms a write (20,000 in 9.9 s measured; simfs's own handlers 10% of the daemon's time, pyfuse3's session loop and trio the rest; ext2: 7 s in all); killed by the runner after 150 s",
 "generic/129": "too slow: looptest's many small I/Os on simfs; killed by the runner after 240 s (ext2: seconds)",
 "generic/184": "mknod'd /dev/null copy on TEST_DIR cannot be opened: the mount is nodev (mount(8) does not pass `dev` to the helper, /work/notes/xfstests-findings.md item 4)",
 "generic/434": "copy_file_range on a device node: the mount is nodev (mount(8) does not pass `dev` to the helper)",
 "generic/633": "setid binaries on regular mounts: the mount is nosuid (mount(8) does not pass `suid` to the helper)",
 "generic/449": "a setfacl refused for want of space (ENOSPC for the ACL's xattr block on a full 256 MiB scratch fs) still changes the file's mode: simfs/fs/xattrs.py _set_acl sets inode.mode before _store_xattrs fails, where ext4_set_acl sets i_mode only once the xattr is written; a simfs bug the sized scratch fs found (runs since the sized mkfs hook)",
 "generic/732": "mounts the scratch image a second time: simfs refuses a second mount of an image in use (one daemon owns the image; the kernel shares one superblock; docs/ext2-differences.md)",
 "generic/099": "umask with a default ACL: FUSE applies the umask before simfs sees the mode (no FUSE_DONT_MASK from pyfuse3 3.5), ext2 ignores it where a default ACL applies (docs/ext2-differences.md)",
 "generic/319": "umask with a default ACL: FUSE applies the umask before simfs sees the mode (no FUSE_DONT_MASK from pyfuse3 3.5), ext2 ignores it where a default ACL applies (docs/ext2-differences.md)",
 "generic/444": "umask with a default ACL: FUSE applies the umask before simfs sees the mode (no FUSE_DONT_MASK from pyfuse3 3.5), ext2 ignores it where a default ACL applies (docs/ext2-differences.md)",
 "generic/697": "umask with a default ACL (vfstest setgid_create_acl): FUSE applies the umask before simfs sees the mode (no FUSE_DONT_MASK from pyfuse3 3.5), ext2 ignores it where a default ACL applies",
 "generic/452": "`mount -o remount,ro` refused",
 "generic/294": "`mount -o remount,ro` refused",
 "generic/306": "device nodes made on the scratch mount cannot be opened (remount ro itself now works): the mount is nodev (mount(8) does not pass `dev` to the helper)",
}
rows = {r["test"]: r for r in csv.DictReader(open(sys.argv[1]))}
w = csv.writer(sys.stdout); w.writerow(["test", "reason"])
for t, r in sorted(rows.items()):
    if not (r["kernel_ext2"] == "pass" and r["simfs"] != "pass"):
        continue
    why = FAIL.get(t)
    if not why and r["simfs"] == "notrun":
        why = next((txt for p, txt in PAT if re.search(p, r["simfs_note"])), "")
    w.writerow([t, why or "?? " + r["simfs_note"]])
