"""simfs: an ext2 file system on a modelled disk, mounted with FUSE."""

__version__ = "0.1.0"

from simfs.compiled import install as _install_compiled

_install_compiled()    # the data path's compiled build, where it matches its source
