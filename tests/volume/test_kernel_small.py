"""simfs's `mballoc-delalloc` against the kernel's ext4 on a small tree, block for block, with
no mount at test time: the kernel's layout is committed (tests/volume/kernel_small, made on a
loop device as its README says); here the same tarball is unpacked in-process (the tar verb)
onto the same empty image, and debugfs reads both the same way (benchmarks/layoutstats.py).

What it pins: a closed file written back gets no inode preallocation (ext4_mb_group_or_file:
files of 80 KiB end to end, not 32 blocks apart), small files share the locality group's
preallocation, write-back takes inodes in the order they were dirtied, and every directory and
file goes to the flex group and inode the kernel gave it (find_group_orlov,
find_group_other)."""

import json

from simfs.fs.optionspec import machine_memory
from simfs.fs.volume import VolumeOptions
from simfs.inprocess import treedesc, verbs
from tests.helpers import needs_e2fsprogs
from tests.volume import kernel_small


@needs_e2fsprogs
def test_mballoc_delalloc_lays_out_the_tree_as_the_kernel(tmp_path):
    want = json.loads((kernel_small.HERE / "kernel-delalloc.json").read_text())["layout"]
    img = tmp_path / "simfs.img"
    kernel_small.simfs_mkfs(img)
    # the buffer cache of this machine's memory: as in the kernel's untar, nothing is written
    # back before the unmount (benchmarks.kernel_layout.host_memory)
    verbs.run(str(img), VolumeOptions(alloc="mballoc-delalloc", cache=machine_memory()), "unpack", ".",
              source=treedesc.from_tarball(str(kernel_small.TARBALL)))
    got = kernel_small.layout(img)
    assert sorted(got) == sorted(want)
    differ = [f"{p}: simfs inode {got[p]['ino']} {got[p]['runs']}, kernel inode {want[p]['ino']} {want[p]['runs']}"
              for p in sorted(want) if got[p] != want[p]]
    assert not differ, f"{len(differ)} of {len(want)} inodes differ:\n" + "\n".join(differ[:12])
