"""A small tree's layout as the kernel's ext4 wrote it, for a test that runs without mounting.

    flock /tmp/simfs-mount.lock .venv/bin/python -m tests.volume.kernel_small

makes `tree.tar.xz` (the tree below, with GNU tar), then twice, for the kernel's default
delayed allocation: an image made by simfs's own mkfs (`IMAGE` below: ext4 profile, fixed
UUID and hash seed), loop-mounted by the running kernel's ext4, `tar xf`, `sync`, unmounted and
detached; then every inode's path, number and extents as debugfs reads them
(benchmarks/layoutstats.py) go to `kernel-delalloc.json`. The two runs must agree, else
nothing is written. (`nodelalloc` is not recorded: without delayed allocation the kernel's goal
adds the writing process's pid % 16 sixteenths of a group, ext4_inode_to_goal_block, so two runs
of tar differ.) tests/volume/test_kernel_small.py unpacks the same tarball in-process onto
the same empty image and compares file by file, block by block.

The tree: four top-level directories of two or three levels, each directory with files of
1, 10, 40, 80 and 300 KiB and one of 3 MiB at the top: small files (locality-group
preallocation), files just past s_mb_stream_request (16 blocks: a closed file gets no
inode preallocation), larger ones (stream allocation), and directories that Orlov spreads
over the image's two flex groups.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
TARBALL = HERE / "tree.tar.xz"
UUID = "00000000-0000-4000-8000-000000000007"
IMAGE = dict(size="4G", args=["--block-size", "4096", "--inode-size", "256", "--bytes-per-inode", "16384",
                              "--profile", "ext4", "--uuid", UUID, "--hash-seed", UUID])
SIZES_KIB = (1, 10, 40, 80, 300)


def make_tree(root: Path) -> None:
    """The tree, the same on every run (names, sizes, contents)."""
    def files(d: Path, tag: str) -> None:
        for i, kib in enumerate(SIZES_KIB):
            (d / f"{tag}-{i}.dat").write_bytes(bytes([i + 1]) * (kib << 10))

    for t, top in enumerate(("alpha", "beta", "gamma", "delta")):
        d = root / top
        d.mkdir(parents=True)
        files(d, top)
        (d / "big.dat").write_bytes(b"\x7f" * ((3 << 20) + t * 4096))
        for s in range(3 if t % 2 == 0 else 2):
            sub = d / f"sub{s}"
            sub.mkdir()
            files(sub, f"{top}{s}")
            if s == 0:
                leaf = sub / "leaf"
                leaf.mkdir()
                files(leaf, f"{top}{s}leaf")


def layout(image) -> dict[str, dict]:
    """path -> {"ino", "kind", "runs": [[logical, physical, length], ...]} of every inode in
    use below the root, as debugfs reads the image."""
    from benchmarks import layoutstats
    geo = layoutstats.geometry(image)
    nodes = layoutstats.inodes(image, geo)
    parent = layoutstats.names(image, nodes)

    def path(ino: int) -> str:
        parts = []
        while ino in parent and ino != 2:
            ino, name = parent[ino][0], parent[ino][1]
            parts.append(name)
        return "/".join(reversed(parts))

    return {path(n.ino): {"ino": n.ino, "kind": n.kind, "runs": [list(r) for r in n.runs]}
            for n in nodes if n.ino != 2}


def simfs_mkfs(image) -> None:
    exe = Path(sys.executable).with_name("simfs")
    subprocess.run([str(exe), "mkfs", "-q", str(image), "--size", IMAGE["size"]] + IMAGE["args"],
                   check=True, capture_output=True)


def kernel_run(work: Path, mode: str) -> dict:
    """The tarball unpacked by the kernel's ext4 (mount option `mode`) on a fresh image."""
    img, mnt = work / "k.img", work / "mnt"
    img.unlink(missing_ok=True)
    mnt.mkdir(exist_ok=True)
    simfs_mkfs(img)
    loop = subprocess.run(["losetup", "-f", "--show", str(img)], check=True, capture_output=True,
                          text=True).stdout.strip()
    try:
        subprocess.run(["mount", "-t", "ext4", "-o", mode, loop, str(mnt)], check=True)
        try:
            subprocess.run(["tar", "xf", str(TARBALL), "-C", str(mnt)], check=True)
            subprocess.run(["sync", "-f", str(mnt)], check=True)
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    finally:
        subprocess.run(["losetup", "-d", loop], check=True)
    subprocess.run(["e2fsck", "-fn", str(img)], check=True, capture_output=True)
    return layout(img)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kernel-small-") as tmp:
        work = Path(tmp)
        src = work / "src"
        make_tree(src)
        subprocess.run(["tar", "cJf", str(TARBALL), "--sort=name", "--owner=0", "--group=0",
                        "--mtime=2026-01-01", "-C", str(src), "."], check=True)
        shutil.rmtree(src)
        for mode in ("delalloc",):
            runs = [kernel_run(work, mode) for _ in range(2)]
            if runs[0] != runs[1]:
                differ = sorted(p for p in runs[0] if runs[0][p] != runs[1].get(p))
                print(f"kernel {mode}: two runs differ ({len(differ)} paths, e.g. {differ[:3]})", file=sys.stderr)
                return 1
            out = HERE / f"kernel-{mode}.json"
            out.write_text(json.dumps({"kernel": os.uname().release, "layout": runs[0]}, indent=0,
                                      sort_keys=True) + "\n")
            print(f"wrote {out}: {len(runs[0])} inodes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
