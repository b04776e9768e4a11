"""`ssd`: a flash drive as a constant per-command latency plus transfer at a fixed rate.

A request of n bytes issued at t starts when the drive is free (no command queue, like the
rotating models: the wait is `queue`), costs the read or write latency (reported as
`overhead`) and n / rate of transfer; position does not matter - no seek, no rotation, and
sequential and random requests of the same size cost the same. Not modelled: the drive's
internal parallelism across channels (queued commands), its DRAM buffer, garbage
collection, write amplification and the slow-down of a full drive; a write is on the flash
when it finishes, so FUA and FLUSH CACHE cost nothing extra.

Preset `x25-m`: Intel X25-M G2 (34 nm MLC, 160 GB, SATA 3 Gb/s, 2009). For what it does and
does not capture: 4 KiB random reads at queue depth 1 come out at 1 / (65 us + 16 us) =
12,300 IOPS; reviews of the drive measured fewer at depth 1 (its 35,000 IOPS are for deep
queues); sequential 128 KiB reads at 222 MB/s.
"""

from disk_models.base import DiskModel, DiskResult
from disk_models.params import PARAMS, Param
from disk_models.presets import Preset

_ANAND = ("[read] AnandTech, 'Intel's 3rd Generation X25-M SSD Specs Revealed' (2010), table of "
          "X25-M G2 (34nm) specs")


class ConstantLatencySSD(DiskModel):
    model = "ssd"
    summary = "flash drive: constant per-command latency plus transfer at a fixed rate (example plug-in)"
    PARAMS = {p.name: p for p in (
        PARAMS["capacity"],
        Param("read_latency", float, "us", "time from command to the first byte of a read", 0.0, 1e6),
        Param("write_latency", float, "us", "time from command to the start of a write's transfer", 0.0, 1e6),
        Param("read_rate", float, "MB/s", "sustained read transfer rate", 0.1, 100000),
        Param("write_rate", float, "MB/s", "sustained write transfer rate", 0.1, 100000),
    )}
    presets = (
        Preset("x25-m", "ssd", "Intel X25-M G2 160 GB SSD (34 nm MLC, SATA 3 Gb/s, 2009); example plug-in",
               "Intel X25-M G2 SSDSA2MH160G2, 160 GB, 2.5\" SATA 3 Gb/s (2009)",
               {"capacity": 312_581_808, "read_latency": 65.0, "write_latency": 85.0,
                "read_rate": 250.0, "write_rate": 100.0},
               {"capacity": "[derived] IDEMA LBA count for 160 GB: 97,696,368 + 1,953,504 x (160 - 50)",
                "read_latency": "[inferred] Intel's product brief quotes 65 us read latency for the "
                                "X25-M (recalled, not checked against the document)",
                "write_latency": "[inferred] Intel's product brief quotes 85 us write latency for the "
                                 "X25-M (recalled, not checked against the document)",
                "read_rate": f"{_ANAND}: sequential read up to 250 MB/s",
                "write_rate": f"{_ANAND}: sequential write up to 100 MB/s (160 GB model)"}),
    )

    def __init__(self, spec):
        v = spec.values
        self.spec = spec
        self.name = spec.name
        self.sectors = v["capacity"]
        self.t_read = v["read_latency"] * 1e-6
        self.t_write = v["write_latency"] * 1e-6
        self.s_read = 512 / (v["read_rate"] * 1e6)           # seconds per sector
        self.s_write = 512 / (v["write_rate"] * 1e6)
        self.reset()

    @classmethod
    def check_values(cls, values: dict) -> None:
        if values["read_latency"] + values["write_latency"] <= 0:
            raise ValueError("read_latency and write_latency cannot both be 0 (use disk=ideal)")

    def submit(self, op, lba, sectors, issue_time, sync=False):
        self.check(op, lba, sectors)
        start = max(issue_time, self._free)
        if op == "R":
            overhead, transfer = self.t_read, sectors * self.s_read
        else:
            overhead, transfer = self.t_write, sectors * self.s_write
        finish = start + overhead + transfer
        self._free = finish
        return DiskResult(issue_time, start, finish, queue=start - issue_time, overhead=overhead,
                          transfer=transfer)

    def flush(self, now):
        return max(now, self._free)

    def reset(self):
        self._free = 0.0

    @property
    def busy_until(self):
        return self._free

    def derived(self) -> dict:
        four_k = 8
        read_4k = self.t_read + four_k * self.s_read
        write_4k = self.t_write + four_k * self.s_write
        seq = 256 * 512 / (self.t_read + 256 * self.s_read) / 1e6
        return {
            "random_read_4k": (round(1 / read_4k), "IOPS", "1 / (read_latency + 4 KiB / read_rate), queue depth 1"),
            "random_write_4k": (round(1 / write_4k), "IOPS", "1 / (write_latency + 4 KiB / write_rate), queue depth 1"),
            "sequential_read_128k": (round(seq, 1), "MB/s", "128 KiB requests back to back"),
        }
