"""The `simfs` command: one module per command (mkfs, mount, fsck, stats, disks, policies, frag,
layout, plot), `simfs.cli.main` builds the parser from them and dispatches."""

from simfs.cli.main import main

__all__ = ["main"]      # the console script simfs = simfs.cli:main
