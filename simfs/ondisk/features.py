"""Feature sets for mkfs: the two profiles and mke2fs's `-O feature,^feature` edits of them.

The ext2 profile is what simfs always made; the ext4 profile is Debian mke2fs 1.47's ext4
(`/etc/mke2fs.conf`) without has_journal (simfs models no journal), 64bit (group descriptors
of 64 bytes, needed past 2^32 blocks only) and metadata_csum (crc32c over every metadata
block: simfs would have to recompute them at every change, and they decide nothing the model
times), and without resize_inode (online growth is not modelled).
"""

from simfs.errors import ImageError
from simfs.ondisk.constants import COMPAT, INCOMPAT, RO_COMPAT

#: feature names of each profile (the order mke2fs -l prints them in does not matter)
PROFILES = {
    "ext2": ("ext_attr", "filetype", "sparse_super", "large_file"),
    "ext4": ("ext_attr", "dir_index", "filetype", "extent", "flex_bg", "sparse_super", "large_file",
             "huge_file", "dir_nlink", "extra_isize"),
}

#: what simfs's mkfs can make: the union of the profiles (anything else is refused by name)
MAKEABLE = frozenset(PROFILES["ext2"] + PROFILES["ext4"])

_BY_NAME = {name: (kind, bit) for kind, table in (("compat", COMPAT), ("incompat", INCOMPAT),
                                                    ("ro_compat", RO_COMPAT))
            for bit, name in table.items()}


class Features:
    """Three feature masks, as the superblock keeps them."""

    __slots__ = ("compat", "incompat", "ro_compat")

    def __init__(self, names=()):
        self.compat = self.incompat = self.ro_compat = 0
        for name in names:
            self.set(name, True)

    def set(self, name: str, on: bool) -> None:
        kind, bit = _BY_NAME[name]
        mask = getattr(self, kind)
        setattr(self, kind, mask | bit if on else mask & ~bit)

    def has(self, name: str) -> bool:
        kind, bit = _BY_NAME[name]
        return bool(getattr(self, kind) & bit)

    def names(self) -> list[str]:
        return sorted(n for n, (kind, bit) in _BY_NAME.items() if getattr(self, kind) & bit)


def choose(profile: str = "ext2", edits: str | None = None) -> Features:
    """The features of `profile` changed by `edits` ("a,^b": add a, remove b; as mke2fs -O);
    ImageError naming an unknown profile or a feature simfs cannot make."""
    if profile not in PROFILES:
        raise ImageError(f"unknown profile {profile!r} (choose {' or '.join(PROFILES)})")
    feats = Features(PROFILES[profile])
    for item in (edits or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, on = (item[1:], False) if item[0] in "^-" else (item.lstrip("+"), True)
        if name not in _BY_NAME:
            raise ImageError(f"-O: unknown feature {name!r}")
        if on and name not in MAKEABLE:
            raise ImageError(f"-O: simfs cannot make the feature {name} (it makes "
                             f"{', '.join(sorted(MAKEABLE))})")
        feats.set(name, on)
    return feats
