"""The `simfs` command: one module per command (mkfs, mount, fsck, stats, disks, policies, frag,
layout, plot), `simfs.cli.main` builds the parser from them and dispatches. A command parses
its arguments and prints; what it draws comes from simfs.pictures, what it runs from the
layers below."""

from simfs.cli.main import main

__all__ = ["main"]      # the console script simfs = simfs.cli:main
