"""simfs's CPU charge per phase beside the kernel's own system time for the same commands.

    python results/summary/cpu-charge/validate.py [WORK_DIR] > validate.json

benchmarks/kernel_cpu_per_op's sequence (its tree: experiments/workload, seed 1, 5,000 files,
svn-like) as in-process verbs on an ext4-profile image with the ideal disk (every request done at
its issue time), so that each phase's simulated time is its CPU charge alone: cpu=kernel-host,
cpu=kernel and the flat cpu_op_us=10. The kernel's figures are in
results/summary/kernel-oracle/results.json ("kernel_cpu_per_op").
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from experiments.workload import generate_tree  # noqa: E402

SIMFS = str(ROOT / ".venv/bin/simfs")
PHASES = [("unpack", ["unpack", "tree", "--from", "{tar}"]), ("find-d", ["find", "tree", "--type", "d"]),
          ("find-f", ["find", "tree", "--type", "f"]), ("tar", ["tar-read", "tree"]),
          ("cp-a", ["cp-a", "tree", "--to", "copy"]), ("rm-rf", ["rm-rf", "tree"])]
MODELS = (("kernel-host", "cpu=kernel-host"), ("kernel", "cpu=kernel"), ("flat10", "cpu_op_us=10"))


def main(work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    tar = work / "src.tar"
    if not tar.exists():
        generate_tree(work / "src", seed=1, files=5000, svn=True)
        subprocess.run(["tar", "--sort=name", "-cf", tar, "-C", work / "src", "."], check=True)
    out = {}
    for label, opt in MODELS:
        img = work / f"{label}.img"
        img.unlink(missing_ok=True)
        subprocess.run([SIMFS, "mkfs", "-q", str(img), "--size", "1G", "--profile", "ext4"], check=True)
        row = {}
        for name, argv in PHASES:
            argv = [a.format(tar=tar) for a in argv]
            r = subprocess.run([SIMFS, "verb", argv[0], str(img)] + argv[1:] + ["-o", f"disk=ideal,{opt}", "--json"],
                               check=True, capture_output=True, text=True)
            t = json.loads(r.stdout)["time"]["total"]
            row[name] = {"s": t["elapsed"], "ops": sum(v["count"] for v in t["operations"].values()),
                         "by_kind": {k: [v["count"], v["time"]] for k, v in t["operations"].items()}}
        out[label] = row
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cpucharge/val")), indent=1))
