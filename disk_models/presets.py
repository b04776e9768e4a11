"""Drive presets: every figure, and where it came from.

Tags follow docs/reference/disk-models.md ("ref" below):
  [read]      the figure is printed in the source named;
  [derived]   arithmetic on [read] figures;
  [inferred]  judgement (a sister model, a typical value, a range's middle) - check before relying.
Sustained rates (od_rate/id_rate) are what a sequential read measures (switch skews included);
the zone tables are solved so the model's outer and inner zones deliver exactly these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REF = "docs/reference/disk-models.md"


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str            # the model it uses: a name in disk_models.MODELS ("rotating", "ideal", ...)
    summary: str         # one line for `simfs disks`
    drive: str           # the drive it stands for
    values: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)


def _preset(name, kind, summary, drive, table):
    values = {k: v for k, (v, _) in table.items()}
    prov = {k: p for k, (_, p) in table.items()}
    return Preset(name, kind, summary, drive, values, prov)


_AF_CAL = ("calibration (published figures, not seed 003): random FUA 4 KiB writes at 4K+512 in a 1 GiB span "
           "cost 2.4x aligned (OSNews 2010 ~3x); cached random 2.0x (Dell FAQ ~50% loss); 4 KiB at 16 KiB stride "
           "1.8x (des.no ~2.8x); see disk_models/advanced_format.py")

WD1200JB = _preset("wd1200jb", "rotating",
    "WD Caviar WD1200JB: 7200 rpm PATA, 120 GB, 8 MB cache, 2003 (seed 000 era)",
    "Western Digital Caviar WD1200JB-00CRA1, 120 GB, 3 platters, ATA-100 (2002-2003)", {
    "capacity": (234_441_648, f"[read] Linux dmesg 'hda: WDC WD1200JB-00CRA1 ... 234441648 sectors' ({REF} 2.1)"),
    "rpm": (7200.0, f"[read] Tom's Hardware WD1200JB review ({REF} 2.1)"),
    "heads": (6, "[inferred] 3 platters at launch (Tom's Hardware [read]) x 2 surfaces; later revisions may differ"),
    "zones": (16, f"[inferred] drives of the era had 9-30 zones (DiskSim validated models, {REF} 1.1)"),
    "od_rate": (50.0, f"[read] LKML 2003: '50 MB/s from each disk' raw sequential read, taken as the outer zone ({REF} 2.1)"),
    "id_rate": (28.0, f"[inferred] {REF} 2.1 OD/ID row (~50 -> ~28 MB/s); WD400BB buffer-to-disk 400/244 Mbit/s"),
    "seek_t2t": (2.0, f"[read] sister model WD400BB spec sheet, track-to-track 2.0 ms ({REF} 2.1)"),
    "seek_avg": (8.9, f"[read] Tom's Hardware WD1200JB review and WD400BB sheet, 8.9 ms read ({REF} 2.1)"),
    "seek_full": (21.0, f"[read] WD400BB spec sheet, full stroke 21 ms ({REF} 2.1)"),
    "write_settle": (2.0, "[derived] WD400BB write average 10.9 ms - read average 8.9 ms"),
    "head_switch": (1.0, "[inferred] 2000-era 7200 rpm drives: 0.1-1.0 ms (DiskSim Atlas III 0.999, Barracuda 0.1)"),
    "overhead": (0.3, f"[read] WD400BB spec sheet, controller overhead 0.3 ms average ({REF} 2.1)"),
    "overhead_hit": (0.1, "[inferred] about 1/3 of the miss overhead, as DiskSim's Maxtor Atlas 10K V "
                          "(read hit 0.102 ms vs write miss 0.34 ms [read])"),
    "interface": (100.0, f"[read] ATA-100 (WD400BB spec sheet, {REF} 2.1)"),
    "drive_cache": (8.0, f"[read] dmesg 'w/8192KiB Cache' ({REF} 2.1)"),
    "segments": (16, "[inferred] segment count is not published; 16 x 512 KiB"),
    "readahead": (None, "[inferred] half a segment ahead of the host (DiskSim: max read-ahead <= segment); "
                        "the other half keeps recently read data"),
    "write_cache": (True, "[inferred] ATA drives ship with write caching enabled"),
    "write_buffer": (None, "[inferred] half the buffer may hold dirty data"),
    "physical_sector": (512, "[read] 2003 drive, before Advanced Format (2009)"),
    "partition_offset": (0, "convention: LBAs are whole-disk"),
    "queue_depth": (1, "[inferred] a PATA drive of 2003 without command queueing (ATA TCQ was optional and "
                       "not in WD's desktop Caviar line); issue 53: 'the WD1200JB is a PATA drive without a queue'"),
    "scheduler": ("fcfs", "no queue: one command at a time"),
})

SATA7200 = _preset("sata7200", "rotating",
    "7200 rpm 3.5\" SATA desktop drive, 320 GB, 16 MB cache, ~2009, ~70 MB/s mid-disk",
    "a generic 7200 rpm SATA desktop drive of 2008-2009 (Barracuda 7200.11 / ES.2 mechanics), 320 GB, 2 platters", {
    "capacity": (625_142_448, "[derived] IDEMA LBA count for 320 GB: 97,696,368 + 1,953,504 x (320 - 50)"),
    "rpm": (7200.0, f"[read] typical 7200 rpm spec ({REF} 2.3)"),
    "heads": (4, "[inferred] 2 x 160 GB platters"),
    "zones": (40, f"[inferred] {REF} 2.3 suggested profile: ~40 zones"),
    "od_rate": (95.0, f"[inferred] {REF} 2.3 suggested profile OD 95-100 MB/s (Hitachi 7K500 zone 0 64.8 MB/s "
                      "sustained 2005 [read]; WD10EALS 126 MB/s max 2010 [read])"),
    "id_rate": (50.0, f"[inferred] {REF} 2.3 suggested profile ID 50-55 MB/s; with OD 95 the mid-disk rate is ~72 MB/s "
                      "(7200.10 HD Tune average 62 MB/s, 7200.11 1 TB 85.5 MB/s [read])"),
    "seek_t2t": (0.8, f"[read] Barracuda ES.2 track-to-track 0.8 ms (motr desim/chs.c, {REF} 1.4)"),
    "seek_avg": (8.5, f"[read] Barracuda ES.2 average seek 8.5 ms (motr desim/chs.c, {REF} 1.4)"),
    "seek_full": (16.0, f"[read] 16 ms in motr desim/chs.c, marked a guess there; typical 16-21 ms ({REF} 2.3)"),
    "write_settle": (1.0, "[inferred] desktop drives of the era quote write averages ~1 ms above read"),
    "head_switch": (0.5, f"[inferred] {REF} 2.3 suggested profile 0.5-1 ms"),
    "overhead": (0.2, "[inferred] between the WD400BB (0.3 ms) and Savvio (0.2 ms) figures"),
    "overhead_hit": (0.07, "[inferred] about 1/3 of the miss overhead (Maxtor Atlas 10K V ratio)"),
    "interface": (300.0, "[inferred] SATA 3 Gb/s = 300 MB/s after 8b/10b"),
    "drive_cache": (16.0, f"[read] Barracuda 7200.10 320 GB: 16 MiB ({REF} 2.3)"),
    "segments": (16, "[inferred] 16 x 1 MiB"),
    "readahead": (None, "[inferred] half a segment ahead of the host; the other half keeps recent data"),
    "write_cache": (True, "[inferred] SATA drives ship with write caching enabled"),
    "write_buffer": (None, "[inferred] half the buffer may hold dirty data"),
    "physical_sector": (512, "[inferred] 512-byte native (pre-Advanced Format desktop drive)"),
    "partition_offset": (0, "convention: LBAs are whole-disk"),
    "queue_depth": (32, "[inferred] SATA NCQ holds up to 32 commands (Serial ATA II / SATA 2.6: 32 tags); drives of this class implement it"),
    "scheduler": ("spctf", "[inferred] NCQ firmware reorders by rotational position and serves buffer hits first; "
                            "DiskSim's SPCTF is the model"),
})

SAS10K = _preset("sas10k", "rotating",
    "10,000 rpm 2.5\" SAS enterprise drive, 146 GB, 16 MB cache, ~2008-2010",
    "Seagate Savvio 10K.3 class (ST9146803SS), 146 GB 2.5\" SAS, interpolated from Savvio 10K.1 and 10K.4 sheets", {
    "capacity": (286_749_488, "[inferred] the block count Linux reports for 146 GB SAS drives, from memory (unverified)"),
    "rpm": (10000.0, f"[read] Savvio 10K.x: average latency 3.0 ms = half of 6 ms ({REF} 2.2)"),
    "heads": (4, f"[inferred] 2 platters; {REF} 2.2 leaves 2 or 4 open"),
    "zones": (24, "[inferred] as DiskSim's validated Atlas 10K (24 zones)"),
    "od_rate": (125.0, f"[inferred] {REF} 2.2 media ~70-125 MB/s; Savvio 10K.4 internal 1.62 Gb/s [read]"),
    "id_rate": (70.0, f"[inferred] {REF} 2.2 media ~70-125 MB/s"),
    "seek_t2t": (0.25, f"[inferred] between Savvio 10K.1 (0.20 ms) and 10K.4 (0.30 ms) read [read] ({REF} 2.2)"),
    "seek_avg": (3.9, f"[inferred] between Savvio 10K.1 4.0 and 10K.4 3.8 ms read, excl. overhead [read] ({REF} 2.2)"),
    "seek_full": (8.0, f"[inferred] between Savvio 10K.1 8.1 and 10K.4 7.81 ms read [read] ({REF} 2.2)"),
    "write_settle": (0.6, "[derived] write average 4.5 - read average 3.9 ms (Savvio 10K.4: 4.4 - 3.8 [read])"),
    "head_switch": (0.2, "[inferred] 10K drives in DiskSim: 0.03-0.2 ms (Atlas 10K 0.176 [read])"),
    "overhead": (0.2, f"[derived] Savvio 10K.1/10K.4 average seek incl. overhead - excl.: 4.2 - 4.0 ms ({REF} 2.2)"),
    "overhead_hit": (0.1, f"[read] Maxtor Atlas 10K V read hit 0.102 ms (DiskSim dualseek example, {REF} 1.1), a SCSI sibling"),
    "interface": (300.0, "[inferred] SAS 3 Gb/s (Savvio 10K.3 generation)"),
    "drive_cache": (16.0, f"[inferred] {REF} 2.2"),
    "segments": (16, "[inferred] 16 x 1 MiB"),
    "readahead": (None, "[inferred] half a segment ahead of the host; the other half keeps recent data"),
    "write_cache": (True, "[inferred] Seagate SAS drives ship with WCE set; RAID controllers often clear it"),
    "write_buffer": (None, "[inferred] half the buffer may hold dirty data"),
    "physical_sector": (512, "[read] 512-byte native SAS drive of 2008"),
    "partition_offset": (0, "convention: LBAs are whole-disk"),
    "queue_depth": (32, "[inferred] SCSI/SAS tagged command queueing (the drive takes many more); 32 is a common "
                        "host-side default per SAS device"),
    "scheduler": ("spctf", "[inferred] SCSI firmware reorders by rotational position and serves buffer hits first; "
                            "DiskSim's SPCTF is the model"),
})

WD_EARS = _preset("wd-ears", "advanced-format",
    "WD Caviar Green EARS: 5400-class, 4K physical sectors with 512e, 1 TB, 64 MB cache, 2010",
    "Western Digital Caviar Green WD10EARS-00Y5B1 (Advanced Format, 2 x 500 GB platters, 2010)", {
    "capacity": (1_953_525_168, "[derived] IDEMA LBA count for 1000 GB: 97,696,368 + 1,953,504 x (1000 - 50)"),
    "rpm": (5400.0, f"[read] Tech Report: 'in the neighborhood of 5,400 RPM' (WD does not say; {REF} 2.4)"),
    "heads": (4, f"[inferred] 2 x 500 GB platters ({REF} 2.4 [read], community list) x 2 surfaces"),
    "zones": (30, "[inferred]"),
    "od_rate": (105.0, f"[inferred] {REF} 2.4: OD ~100-110 MB/s"),
    "id_rate": (55.0, f"[inferred] {REF} 2.4: ID ~50-60 MB/s"),
    "seek_t2t": (1.0, "[inferred] not published; desktop 0.8-2 ms"),
    "seek_avg": (8.9, f"[inferred] not published; gives ~15 ms random access with 5.55 ms latency ({REF} 2.4: ~12-15 ms)"),
    "seek_full": (17.0, "[inferred] not published; desktop 16-21 ms"),
    "write_settle": (0.5, "[inferred]"),
    "head_switch": (0.5, "[inferred]"),
    "overhead": (0.3, "[inferred] as the WD400BB's 0.3 ms; with the short seeks of a 1 GiB span this gives "
                      "OSNews' 7-8 ms per aligned O_SYNC 4 KiB write"),
    "overhead_hit": (0.1, "[inferred] about 1/3 of the miss overhead"),
    "interface": (300.0, "[inferred] SATA 3 Gb/s"),
    "drive_cache": (64.0, f"[read] WD10EARS-00Y5B1: 64 MB cache ({REF} 2.4, community list)"),
    "segments": (32, "[inferred] 32 x 2 MiB"),
    "readahead": (None, "[inferred] half a segment ahead of the host; the other half keeps recent data"),
    "write_cache": (True, "[inferred] SATA drives ship with write caching enabled"),
    "write_buffer": (None, "[inferred] half the buffer may hold dirty data"),
    "physical_sector": (4096, f"[read] Advanced Format: 4 KiB physical, 512-byte logical ({REF} 2.4, 3); " + _AF_CAL),
    "partition_offset": (40, "[read] seed 003: the aligned GPT start (34 is the first free sector; 40 is aligned); "
                             "sweep 34..41 to reproduce the seed"),
    "queue_depth": (32, "[inferred] SATA NCQ holds up to 32 commands (Serial ATA II / SATA 2.6: 32 tags); drives of this class implement it"),
    "scheduler": ("spctf", "[inferred] NCQ firmware reorders by rotational position and serves buffer hits first; "
                            "DiskSim's SPCTF is the model"),
})

IDEAL = _preset("ideal", "ideal",
    "ideal disk: every request completes at its issue time (for debugging)",
    "no drive: zero cost", {
    "capacity": (2 ** 32, "convention: 2 TiB of 512-byte sectors"),
})

PRESETS: dict[str, Preset] = {p.name: p for p in (WD1200JB, SATA7200, SAS10K, WD_EARS, IDEAL)}
