"""Benchmarks: run each with `python -m benchmarks.NAME`."""
