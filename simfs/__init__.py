"""simfs: an ext2 file system on a modelled disk, mounted with FUSE."""

__version__ = "0.1.0"
