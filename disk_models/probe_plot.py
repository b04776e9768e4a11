"""Draw a ProbeReport as one PNG (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations


def plot_report(rep, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    fig.suptitle(f"simfs disks probe {rep.name}\n{rep.drive}", fontsize=10)

    a = ax[0][0]
    if rep.seek:
        d = [r[0] for r in rep.seek]
        a.plot(d, [r[1] for r in rep.seek], "o-", label="seek (model)")
        a.plot(d, [r[2] for r in rep.seek], "s--", label="overhead + seek + rotation")
        ds = rep.datasheet_seek_ms
        a.axhline(ds["avg"], color="grey", lw=0.8, ls=":", label=f"datasheet average {ds['avg']:g} ms")
        a.plot([1, d[-1]], [ds["t2t"], ds["full"]], "kx", label="datasheet t2t / full stroke")
        a.set_xscale("log")
        a.legend(fontsize=7)
    a.set_xlabel("seek distance (cylinders)")
    a.set_ylabel("ms")
    a.set_title("seek time vs distance", fontsize=9)

    a = ax[0][1]
    if rep.zones:
        a.plot([r[0] * 100 for r in rep.zones], [r[2] for r in rep.zones], "o-")
        a.set_ylim(bottom=0)
    a.set_xlabel("position (% of LBA space)")
    a.set_ylabel("MB/s")
    a.set_title("sequential read rate vs LBA (zones)", fontsize=9)

    a = ax[1][0]
    if rep.random:
        keys = [k for k in rep.random if k.endswith("_iops")]
        a.bar([k[:-5] for k in keys], [rep.random[k] for k in keys])
        for i, k in enumerate(keys):
            a.annotate(f"{rep.random[k]:.0f}", (i, rep.random[k]), ha="center", va="bottom", fontsize=8)
    a.set_ylabel("IOPS")
    a.set_title("random 4 KiB, QD1, whole disk", fontsize=9)

    a = ax[1][1]
    if rep.rmw:
        a.bar([str(r[0]) for r in rep.rmw], [r[1] for r in rep.rmw])
        for i, r in enumerate(rep.rmw):
            a.annotate(f"{r[2]:.2f}x", (i, r[1]), ha="center", va="bottom", fontsize=8)
    a.set_xlabel("request LBA mod 8 (512-byte shift)")
    a.set_ylabel("ms per FUA 4 KiB write")
    a.set_title("read-modify-write penalty (random, 1 GiB span)", fontsize=9)

    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
