"""Image and cache sizes derived from the workload, so quick and full runs keep the seeds' proportions."""

MiB = 1 << 20


def round_mib(n: float) -> int:
    return max(MiB, int(n) // MiB * MiB)


def cache_for(workload_bytes: int, fraction: float = 0.25, lo: int = 4 * MiB, hi: int = 128 * MiB) -> int:
    """A buffer cache a fraction of the data written: the seeds copied trees several times larger
    than the kernel let stay dirty (FreeBSD's hidirtybuffers was tens of MB for a 400 MB copy),
    so most of the data had to reach the disk while the copy ran."""
    return round_mib(min(hi, max(lo, workload_bytes * fraction)))


def image_for(workload_bytes: int, factor: float, lo: int = 256 * MiB, hi: int = 64 << 30) -> int:
    """An image `factor` times the data (the seeds' file systems were mostly empty)."""
    return round_mib(min(hi, max(lo, workload_bytes * factor)))
