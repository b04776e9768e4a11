#!/bin/sh
# Make the committed kernel captures (untar.tracefs, find.tracefs): the kernel's ext4 (no
# journal) on a loop device, its block requests caught through tracefs. Root; run under the
# machine-wide lock:  flock /tmp/simfs-mount.lock sh tests/unit/data/capture_kernel.sh OUTDIR [SRC]
# SRC (default /usr/include) is unpacked from a tar, `sync` writes it (untar.tracefs),
# then after drop_caches `find . -type d` reads it back (find.tracefs). Only the loop device's
# lines are kept; the events are disabled and the loop device detached afterwards.
set -eu
out=$(realpath "$1"); src=${2:-/usr/include}
work=$(mktemp -d /tmp/simfs-capture.XXXXXX)
T=/sys/kernel/tracing
mounted_tracefs=
[ -e $T/trace ] || { mount -t tracefs none $T; mounted_tracefs=1; }
loop=
cleanup() {
    echo 0 > $T/events/block/block_rq_issue/enable || true
    echo 0 > $T/events/block/block_rq_complete/enable || true
    mountpoint -q "$work/mnt" && umount "$work/mnt"
    [ -n "$loop" ] && losetup -d "$loop"
    [ -n "$mounted_tracefs" ] && umount $T
    rm -rf "$work"
}
trap cleanup EXIT
tar cf "$work/src.tar" -C "$(dirname "$src")" "$(basename "$src")"
truncate -s 320M "$work/img"
mkfs.ext4 -q -F -O ^has_journal -b 4096 -E lazy_itable_init=0,root_owner=0:0 "$work/img"
loop=$(losetup -f --show "$work/img")
dev="$(( 0x$(stat -c %t "$loop") )),$(( 0x$(stat -c %T "$loop") ))"
mkdir "$work/mnt"
mount -t ext4 "$loop" "$work/mnt"
keep() {   # the header and this device's lines of the trace buffer
    grep -E "^#|: block_rq_(issue|complete): $dev " $T/trace > "$1"
}
echo 1 > $T/events/block/block_rq_issue/enable
echo 1 > $T/events/block/block_rq_complete/enable
echo 1 > $T/tracing_on
sync; echo > $T/trace
tar xf "$work/src.tar" -C "$work/mnt"; sync
keep "$out/untar.tracefs"
sync; echo 3 > /proc/sys/vm/drop_caches; echo > $T/trace
(cd "$work/mnt" && find . -type d > /dev/null)
keep "$out/find.tracefs"
echo "device $dev ($loop): untar $(grep -c block_rq_issue "$out/untar.tracefs") requests," \
     "find $(grep -c block_rq_issue "$out/find.tracefs")"
