"""The `simfs` command: one module per command, `main` dispatches (simfs.cli.main)."""

from simfs.cli.main import build_parser, main, parse_size, print_stats  # noqa: F401
