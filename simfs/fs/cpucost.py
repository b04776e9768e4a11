"""The CPU an operation costs: what the modelled kernel spends per system call, by kind
(`cpu=kernel`, the default), or a flat `cpu_op_us` per volume operation (`cpu=flat`, the model
before issue 50).

A FUSE mount sends several requests for one system call (permission GETATTRs, LOOKUPs that
revalidate a dentry the kernel holds, FORGETs); a kernel file system answers most of them from
its dentry and inode caches. The charge is therefore the kernel's own: each volume operation
costs what a native file system spends on the part of a system call it stands for, from a
measurement of the kernel's system time per call (MEASURED, below), scaled to the modelled
machine's CPU (ERAS). What each charge is made of is written beside it in `charges`.

The volume cannot tell a GETATTR sent for stat(2) from one sent for a permission check (the
FUSE client sends both alike); every GETATTR is charged as an fstat(2) on a cached inode
(system call entry and exit, and filling the attributes), the cheapest call that asks for it:
a permission check, which the native kernel makes inside its path walk for nothing, is thus
overcharged by one fstat (MEASURED["fstat"]). A LOOKUP of a name whose inode the kernel holds
and has looked up since it last let it go (`KernelCharge.seen`) is a dentry-cache hit: one step
of the path walk; any other is a miss (the directory searched, the inode read in), charged as a
cold stat's extra over a warm one. FORGET, OPEN, RELEASE, OPENDIR, RELEASEDIR and FLUSH are no
volume operations and cost nothing here (the kernel's open and close of a directory are charged
with its first READDIR; a regular file's open and close are not charged).
"""

from __future__ import annotations

#: How MEASURED was made (benchmarks/kernel_cpu_per_op.py --per-kind, its docstring says how)
COMMAND = ("sudo flock /tmp/simfs-mount.lock python -m benchmarks.kernel_cpu_per_op --per-kind "
           "--files 20000 --json")
#: where: kernel, CPU (results/summary/cpu-charge/kernel_cpu_per_kind.json holds the output)
MACHINE = ("Linux 6.18.44-fc-v1300, 'Intel(R) Xeon(R) Processor' (a Sapphire Rapids-class "
           "Golden Cove core: AMX, AVX512-FP16; 2.6 GHz, 2 CPUs), an ext4 image without a journal "
           "(the ext4 profile's features) on a loop device over /dev/shm, noatime")

#: the kernel's system microseconds per call on MACHINE (median of 3 rounds), warm unless named
#: cold; see benchmarks/kernel_cpu_per_op.kinds for each loop. Journal-less, because simfs models
#: no journal (its profiles are ext2 and ext4 without has_journal; it writes no journal blocks):
#: the charge is the CPU of the code path simfs models, and a journal's handles (about 20 us of
#: an rmdir on the machine's own journalled ext4: results/summary/cpu-charge/
#: kernel_cpu_per_kind_root.json, the table used before) belong to a mechanism it does not.
#: One run: a second run's figures moved by up to 45 % from the first's (mkdir 18.2 -> 10.8,
#: create+close 10.0 -> 6.7; results/summary/cpu-charge/README.md), the tick-based system time
#: of a shared machine; the journal's share (rmdir 26.0 on the root file system, 6.9 and 6.4
#: on the loop image) is larger than that spread.
MEASURED = {
    "syscall": 0.0361, "fstat": 0.0707, "stat": 0.2641, "stat_deep": 0.4271,
    "lookup_negative": 1.8968, "open_close": 0.4396, "opendir_close": 0.3977, "listdir_10": 2.231,
    "listdir_1000": 140.6985, "listdir_cold_dir": 2981.73, "read_1": 0.0872, "read_128k": 2.5842,
    "write_1": 0.3364, "write_128k": 3.1916, "write_append_128k": 26.918, "chmod": 0.4507,
    "statfs": 0.2684, "fsync_clean": 1.047, "setxattr": 0.517, "getxattr": 0.4451,
    "listxattr": 0.3425, "removexattr": 1.3767, "create_close": 6.7084, "rename": 7.4112,
    "link": 5.5862, "unlink": 1.8385, "symlink": 4.358, "readlink": 0.6425, "mkdir": 10.7744,
    "rmdir": 6.4277, "stat_cold": 2.7613, "read_cold_128k": 12.1074,
}

#: the modelled machine's CPU time per unit of MACHINE's, by era. "2011": the seeds' machines
#: (2010-2012: Nehalem/Westmere/Sandy Bridge-class cores at 2.4-3.4 GHz, about MACHINE's clock).
#: Per clock, Skylake runs single-threaded work 1.21x Sandy Bridge (PC Perspective, i7-6700K
#: review, 2015: five generations at a fixed 3.5 GHz), Sunny Cove 1.18x Skylake (Intel,
#: Architecture Day 2018) and Golden Cove 1.19x Cypress Cove, a Sunny Cove (Intel, Architecture
#: Day 2021): 1.21 x 1.18 x 1.19 = 1.70, at equal clocks. Chosen from those published ratios
#: alone, not fitted to any seed figure. Not corrected: the 2011 kernels' shorter system call
#: entry (no page-table isolation or retpolines), the seeds' own kernels (FreeBSD for 000,
#: 002, 003), and the clock differences within the era.
ERAS = {"2011": 1.70, "host": 1.0}

#: cpu= values: the model and its era
MODELS = {"kernel": "2011", "kernel-2011": "2011", "kernel-host": "host", "flat": None}

#: cpu_op_us when cpu=flat and it is not given (the flat model's old default)
FLAT_US = 10.0

#: a getxattr the FUSE client sends before every write (file_remove_privs); the native kernel
#: skips it for an inode it has marked S_NOSEC, so it costs nothing
XATTR_CAPS = b"security.capability"


def charges(m: dict, scale: float) -> dict[str, float]:
    """The charge of each kind, in seconds, from measurement `m` (microseconds per call) and
    `scale`. A path's components are charged by its LOOKUPs, so each call's measured walk
    (`hit` per warm component, `negative` for a last name that is not there) is taken off the
    operation that ends it; a system call's entry and exit stay in that operation."""
    hit = (m["stat_deep"] - m["stat"]) / 8          # 10 components against 2
    negative = m["lookup_negative"] - m["syscall"] - hit
    entry = (m["listdir_1000"] - m["listdir_10"]) / 990
    # 2 calls, 12 entries (clamped at 0 below: on the root file system's measurement an entry of
    # a 1,000-entry directory cost more than one of a 10-entry one, and the call was charged nothing)
    getdents = (m["listdir_10"] - m["opendir_close"] - 12 * entry) / 2
    us = {
        "getattr": m["fstat"],
        "lookup": hit,
        "lookup_miss": m["stat_cold"] - m["stat"],        # added to `lookup` for a miss
        "lookup_negative": negative,
        "readdir": getdents,
        "readdir_open": m["opendir_close"] - hit,         # with the first READDIR (cookie 0)
        "readdir_entry": entry,
        "read": m["read_1"],
        # a copy out of the page cache: the modelled kernel holds what simfs's cache holds; a
        # fill's own CPU (pages, bios: read_cold_128k's extra) is not charged, its disk time is
        "read_kib": (m["read_128k"] - m["read_1"]) / 128,
        "write": m["write_1"],
        "write_kib": (m["write_append_128k"] - m["write_1"]) / 128,   # new pages, as tar's
        "create": m["create_close"] - hit - negative,
        "mknod": m["create_close"] - hit - negative,
        "mkdir": m["mkdir"] - hit - negative,
        "symlink": m["symlink"] - hit - negative,
        "link": m["link"] - 3 * hit - negative,
        "unlink": m["unlink"] - 2 * hit,
        "rmdir": m["rmdir"] - 2 * hit,
        "rename": m["rename"] - 3 * hit - negative,
        "setattr": m["chmod"] - 2 * hit,
        "readlink": m["readlink"] - 2 * hit,
        "getxattr": m["getxattr"] - 2 * hit,
        "listxattr": m["listxattr"] - 2 * hit,
        "setxattr": m["setxattr"] - 2 * hit,
        "removexattr": m["removexattr"] - 2 * hit,
        "statfs": m["statfs"] - hit,
        "fsync": m["fsync_clean"],
        "writepages": 0.0,            # the flusher's CPU, not the caller's (nor in MEASURED)
    }
    us["read_direct"], us["read_direct_kib"] = us["read"], us["read_kib"]
    us["write_direct"], us["write_direct_kib"] = us["write"], us["write_kib"]
    return {k: max(0.0, v) * scale * 1e-6 for k, v in us.items()}


#: operations whose charge before they run depends on their arguments (KernelCharge.before)
_BY_ARGS = frozenset(("read", "read_direct", "write", "write_direct", "readdir", "getxattr"))
#: operations KernelCharge.after charges or notes
_AFTER = frozenset(("lookup", "readdir", "read", "read_direct", "create", "mkdir", "mknod", "symlink", "link"))


class KernelCharge:
    """The per-kind charge of one volume (cpu=kernel): `before` an operation runs, `after` it
    returned, `failed` when it raised an FSError. `seen`: the inodes looked up (or created)
    since the kernel last held none of their references; kept to at most about twice the
    inodes held."""

    def __init__(self, era: str):
        self.cost = charges(MEASURED, ERAS[era])
        #: the charge `before` gives whatever the arguments (one dictionary look-up for
        #: most operations), and the operations whose charge `after` may add to
        self.fixed = {k: v for k, v in self.cost.items() if k not in _BY_ARGS}
        self.seen: set[int] = set()
        self.prune_floor = 4096
        self.prune_at = 4096

    def before(self, name: str, args: tuple, kwargs: dict) -> float:
        charge = self.fixed.get(name)
        if charge is not None:
            return charge
        cost = self.cost
        if name == "read" or name == "read_direct":
            return cost[name]               # its bytes are known after
        if name == "write" or name == "write_direct":
            data = args[2] if len(args) > 2 else kwargs["data"]
            return cost[name] + len(data) * cost[name + "_kib"] / 1024
        if name == "readdir":
            first = (args[1] if len(args) > 1 else kwargs.get("cookie", 0)) == 0
            return cost["readdir"] + (cost["readdir_open"] if first else 0.0)
        if name == "getxattr" and (args[1] if len(args) > 1 else kwargs.get("name")) == XATTR_CAPS:
            return 0.0
        return cost.get(name, 0.0)

    def after(self, holds: dict, name: str, result) -> float:
        """`holds`: the volume's, inode -> kernel references."""
        if name not in _AFTER:
            return 0.0
        if name == "lookup":
            ino = result.st_ino
            seen = self.seen
            hit = ino in seen and ino in holds     # (the reply's own hold is taken after)
            seen.add(ino)
            if len(seen) > self.prune_at:
                self.prune(holds)
            return 0.0 if hit else self.cost["lookup_miss"]
        if name == "readdir":
            seen = self.seen
            for _, ino, _ in result:        # listed while not held: its dentry was let go
                if ino not in holds:
                    seen.discard(ino)
            return len(result) * self.cost["readdir_entry"]
        if name == "read" or name == "read_direct":
            return len(result) * self.cost[name + "_kib"] / 1024
        if name in ("create", "mkdir", "mknod", "symlink", "link"):
            self.seen.add(result.st_ino)    # the new dentry is instantiated
        return 0.0

    def failed(self, name: str) -> float:
        """A LOOKUP that found nothing searched the directory."""
        return self.cost["lookup_negative"] - self.cost["lookup"] if name == "lookup" else 0.0

    def prune(self, holds: dict) -> None:
        """Forget inodes the kernel no longer holds (a later lookup of one is a miss anyway)."""
        self.seen = {i for i in self.seen if i in holds}
        self.prune_at = max(self.prune_floor, 2 * len(self.seen))


def model(options) -> tuple[float, str | None]:
    """(flat charge in seconds, era or None) for VolumeOptions `options`: cpu_op_us, if given,
    is a flat charge whatever `cpu` says; cpu=flat without it charges FLAT_US."""
    if options.cpu_op_us is not None:
        return options.cpu_op_us * 1e-6, None
    era = MODELS[options.cpu]
    return (FLAT_US * 1e-6 if era is None else 0.0), era
