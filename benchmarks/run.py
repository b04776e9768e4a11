"""`make bench`: every benchmark in turn, each in its own process (their figures are ratios
measured side by side inside one run; see benchmarks/README.md)."""

import subprocess
import sys

BENCHMARKS = ("bench_volume", "bench_scale", "bench_mount", "bench_timing", "bench_disk_models",
              "bench_dirhash", "bench_dataless", "bench_replay", "bench_jobs", "bench_profiles")


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        print(f"== benchmarks.{name}", flush=True)
        if subprocess.run([sys.executable, "-m", f"benchmarks.{name}"]).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
