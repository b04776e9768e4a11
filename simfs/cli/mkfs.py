"""`simfs mkfs IMAGE SIZE` (or --size SIZE): make an ext2 image file (optionally timed on a disk model)."""

from __future__ import annotations

import contextlib
import os

# (the names cmd_mkfs and the arguments had in simfs/cli/main.py, so both moved here unchanged)
from simfs.cli.common import Fmt as _Fmt, fail as _fail, size_type as parse_size


def register(sub) -> None:
    s = sub.add_parser("mkfs", help="make an ext2 (or ext4-profile) image file", formatter_class=_Fmt,
                       description="Make an ext2 revision-1 file system (filetype, sparse_super, "
                                   "large_file, ext_attr) in IMAGE, or with --profile ext4 the "
                                   "ext4 on-disk format without a journal (flex_bg, extent, dir_index, "
                                   "huge_file, dir_nlink, extra_isize besides).",
                       epilog="examples:\n  simfs mkfs disk.img --size 256M\n"
                              "  simfs mkfs small.img --size 64M --block-size 1024 --bytes-per-inode 4096\n"
                              "  simfs mkfs disk.img 1G --force   # the size after the image, as mke2fs takes it\n"
                              "  simfs mkfs disk.img --size 1G --disk wd-ears   # how long newfs takes there\n"
                              "  simfs mkfs disk.img 1G --profile ext4          # flex_bg, extents, ...\n"
                              "  simfs mkfs disk.img 1G --profile ext4 -O ^dir_index -G 4\n"
                              "  simfs mkfs disk.img --size 1G --uuid 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 \\\n"
                              "      --hash-seed 00000000-0000-0000-0000-000000000001   # reproducible")
    s.add_argument("image", metavar="IMAGE")
    s.add_argument("size_pos", nargs="?", type=parse_size, metavar="SIZE",
                   help="image size, as mke2fs takes it after the device (the same as --size)")
    s.add_argument("--size", type=parse_size, default=None, help="image size, e.g. 64M, 1G")
    s.add_argument("--block-size", "-b", type=parse_size, default=4096, help="1024 or 4096 (default 4096)")
    s.add_argument("--inode-size", "-I", type=int, default=256, help="128 or 256 (default 256)")
    s.add_argument("--bytes-per-inode", "-i", type=parse_size, default=None,
                   help="one inode per this many bytes, 1K to 64M (mke2fs default rules if omitted)")
    s.add_argument("--blocks-per-group", type=int, default=None,
                   help="a multiple of 8 from 256 to 8 x block size (the default)")
    s.add_argument("--inodes-per-group", type=int, default=None,
                   help="16 or more; at most what one bitmap block and the first group hold")
    s.add_argument("--reserved-percent", "-m", dest="reserved_ratio", type=float, default=5.0,
                   help="blocks reserved for root, percent: 0 to 50 (default 5)")
    s.add_argument("--profile", "-t", default="ext2", choices=("ext2", "ext4"),
                   help="feature set: ext2 (the default) or ext4 (no journal, 64bit or metadata_csum)")
    s.add_argument("--features", "-O", default=None, metavar="FEATURE[,^FEATURE...]",
                   help="add features to the profile's, or remove them with ^ (as mke2fs -O)")
    s.add_argument("--flex-groups", "-G", dest="groups_per_flex", type=int, default=None,
                   help="groups per flex group with flex_bg, a power of 2 (default 16)")
    s.add_argument("--label", "-L", default="", help="volume label, at most 16 bytes")
    s.add_argument("--uuid", default=None, help="file-system UUID (default: random)")
    s.add_argument("--hash-seed", default=None, metavar="UUID",
                   help="seed of the directory-index hash, a UUID (default: random); with --uuid "
                        "it makes images reproducible")
    s.add_argument("--disk", default=None, metavar="NAME[,k=v...]",
                   help="charge mkfs's writes to this disk model and report how long it took in "
                        "simulated time (see `simfs disks`)")
    s.add_argument("--maxio", type=parse_size, default=None,
                   help="with --disk: largest write request, bytes (default 128K)")
    s.add_argument("--force", "-F", action="store_true", help="overwrite an existing file")
    s.add_argument("--quiet", "-q", action="store_true")
    s.add_argument("--json", action="store_true",
                   help="print what was made as JSON: image, size, block_size, blocks, inodes, "
                        "and with --disk the simulated seconds, requests and bytes written")
    s.set_defaults(func=cmd_mkfs)


def _argument_problem(a) -> str | None:
    """What is wrong with the command line alone (the size given twice or not at all, an empty
    option), or None; fills in the size and --maxio's default."""
    if a.size is not None and a.size_pos is not None and a.size != a.size_pos:
        return "give the size once: IMAGE SIZE or --size SIZE"
    a.size = a.size if a.size is not None else a.size_pos
    if a.size is None:
        return "the size is required: simfs mkfs IMAGE SIZE (or --size SIZE), e.g. 256M"
    for opt, value in (("uuid", a.uuid), ("hash-seed", a.hash_seed)):
        if value is not None and not value.strip():     # not "random": the option was given
            return (f"--{opt} is empty: give a UUID (e.g. 01234567-89ab-cdef-0123-456789abcdef), "
                    "or leave the option out for a random one")
    if a.disk is not None and not a.disk.strip():
        return "--disk is empty: name a disk model (see `simfs disks`), or leave the option out to make the image untimed"
    if a.maxio is not None and a.disk is None:
        return "--maxio is the largest write request of the --disk model mkfs is timed on: it needs --disk"
    if a.maxio is None:
        a.maxio = 128 << 10
    return None


def cmd_mkfs(a) -> int:
    problem = _argument_problem(a)
    if problem:
        return _fail(problem, "mkfs")
    from simfs.errors import ImageError
    from simfs.fuse.checks import path_problem, shown
    from simfs.fuse.daemon import image_locked
    from simfs.ondisk.mkfs import mkfs, plan
    if not a.image.strip():
        return _fail("the image name is empty: simfs mkfs IMAGE SIZE, e.g. disk.img 256M", "mkfs")
    image = os.path.abspath(a.image)
    problem = path_problem(image)
    if problem:
        return _fail(f"{shown(a.image)}: {problem}", "mkfs")
    if os.path.exists(image) and not a.force:
        return _fail(f"{a.image} exists; use --force to overwrite it", "mkfs")
    if os.path.isdir(image):
        return _fail(f"{a.image} is a directory", "mkfs")
    if not os.path.isdir(os.path.dirname(image)):
        return _fail(f"directory {os.path.dirname(image)} does not exist", "mkfs")
    kw = dict(block_size=a.block_size, inode_size=a.inode_size, bytes_per_inode=a.bytes_per_inode,
              blocks_per_group=a.blocks_per_group, inodes_per_group=a.inodes_per_group,
              reserved_ratio=a.reserved_ratio / 100.0, label=a.label.encode(), profile=a.profile,
              features=a.features, groups_per_flex=a.groups_per_flex)
    try:                       # every argument checked before the image is touched
        blocks = plan(a.size, **kw)[0]
    except ImageError as e:
        return _fail(str(e), "mkfs")
    if os.path.exists(image) and image_locked(image):
        return _fail(f"{a.image} is in use (mounted?)", "mkfs")
    import uuid as _uuid
    for opt, value in (("uuid", a.uuid), ("hash_seed", a.hash_seed)):
        if value:
            try:
                kw[opt] = str(_uuid.UUID(value))
            except ValueError:
                return _fail(f"--{opt.replace('_', '-')} {value!r} is not a UUID "
                             f"(e.g. 01234567-89ab-cdef-0123-456789abcdef)", "mkfs")
    if a.disk:
        import disk_models
        from simfs.fs.optionspec import declared, valid_range
        from simfs.fs.types import VolumeOptions
        from simfs.units import option_size
        try:
            sectors = disk_models.make_disk(a.disk).sectors
        except ValueError as e:
            return _fail(f"--disk: {e}", "mkfs")
        if blocks * a.block_size // 512 > sectors:
            return _fail(f"the file system ({blocks * a.block_size} bytes) does not fit the disk "
                         f"{a.disk} ({sectors * 512} bytes)", "mkfs")
        low, high, _ = valid_range(declared("maxio", VolumeOptions))
        if not low <= a.maxio <= high:
            return _fail(f"--maxio must be from {option_size(low)} to {option_size(high)}, "
                         f"not {a.maxio}", "mkfs")
    existed = os.path.exists(image)
    try:
        if a.disk:
            from simfs.inprocess.timed_mkfs import timed_mkfs
            sb, seconds, st = timed_mkfs(image, a.size, a.disk, maxio=a.maxio, **kw)
        else:
            sb = mkfs(image, a.size, **kw)
    except (ImageError, OSError) as e:
        if not existed:                # half made (a full host, a plan refused): no image at all
            with contextlib.suppress(OSError):
                os.unlink(image)
        return _fail(str(e) if isinstance(e, ImageError) else f"{a.image}: {e.strerror}", "mkfs")
    from simfs.blockio.imagefile import journal_path
    with contextlib.suppress(FileNotFoundError):   # an old image's crash journal is not this one's
        os.unlink(journal_path(image))
    nb, ni = getattr(sb, "blocks_count", None), getattr(sb, "inodes_count", None)
    doc = {"image": a.image, "size": a.size, "block_size": a.block_size, "blocks": nb, "inodes": ni}
    if a.disk:
        c = st.totals()
        doc["disk"] = {"name": a.disk, "seconds": seconds,
                       "requests": c.get("disk_writes", 0) + c.get("disk_reads", 0),
                       "bytes_written": c.get("sectors_written", 0) * 512}
    if a.json:
        import json
        print(json.dumps(doc, indent=1))
        return 0
    if not a.quiet:
        detail = f"{nb} blocks of {a.block_size} bytes, {ni} inodes" if nb and ni else f"{a.size} bytes"
        print(f"simfs: made an {a.profile}{'-profile' if a.profile != 'ext2' else ''} file system "
              f"in {a.image}: {detail}")
    if a.disk:
        n, mib = doc["disk"]["requests"], doc["disk"]["bytes_written"] / 2**20
        print(f"mkfs on {a.disk}: {seconds:.3f} s simulated ({n:,} requests, {mib:.1f} MiB written)")
    return 0
