"""A data-less mount (-o dataless) through real tools: tar xf, find; the unmounted image is
e2fsck-clean, debugfs lists every file with its size, and file data reads as zeros."""

import os
import subprocess

import pytest

from tests.conftest import run

pytestmark = pytest.mark.mount


def test_dataless_tar_find_debugfs(simfs_factory, tmp_path):
    from experiments.workload import generate_tree
    src = tmp_path / "src"
    summary = generate_tree(src, seed=3, files=300, total_size="20M")
    tarball = tmp_path / "src.tar"
    run(["tar", "cf", tarball, "-C", src, "."])
    m = simfs_factory(options="dataless", size="4G")
    dest = m.mnt / "t"
    dest.mkdir()
    run(["tar", "xf", tarball, "-C", dest])

    def listing(root):          # a directory's size is its file system's own (tmpfs: 20 bytes an entry)
        return sorted(run(["find", root, "-mindepth", "1", "(", "-type", "d", "-printf", r"%P d\n", ")", "-o",
                           "-printf", r"%P %y %s\n"]).stdout.splitlines())

    want = listing(src)
    assert listing(dest) == want                        # names, types, sizes of all but directories
    big = max((p for p in src.rglob("*") if p.is_file() and not p.is_symlink()), key=lambda p: p.stat().st_size)
    rel = big.relative_to(src)
    assert big.read_bytes().strip(b"\0")                # the source has data ...
    assert (dest / rel).read_bytes() == big.read_bytes()    # still in simfs's cache: as written
    (m.mnt / ".simfs" / "drop_caches").write_text("1\n")
    assert (dest / rel).read_bytes() == bytes(big.stat().st_size)   # ... the mount reads zeros
    m.umount()
    m.assert_clean()
    assert os.stat(m.image).st_blocks * 512 < summary.total_bytes / 4     # data not stored
    files = [line.split()[0] for line in want if line.split()[1] == "f"]
    sizes = {line.split()[0]: int(line.split()[2]) for line in want if line.split()[1] == "f"}
    seen = {}
    for d in sorted({os.path.dirname(f) for f in files}):
        out = subprocess.run(["debugfs", "-R", f"ls -l /t/{d}", str(m.image)], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 7 and f[1].startswith("100"):
                seen[os.path.join(d, f[-1]) if d else f[-1]] = int(f[5])
    assert seen == sizes
    m.mount("")                                         # a normal mount after: warned, still zeros
    assert (m.mnt / "t" / rel).read_bytes() == bytes(big.stat().st_size)
    assert "mounted data-less before" in m.log_text()
