"""xfstests against simfs: the runner (run.py) and the fixed subset make test runs."""
