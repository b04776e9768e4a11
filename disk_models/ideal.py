"""The ideal disk: every request completes when it is issued.  For debugging the layers above:
with it, simulated time measures only what they charge themselves."""

from __future__ import annotations

from .base import DiskModel, DiskResult
from .params import IDEAL_PARAMS, PARAMS


class IdealDisk(DiskModel):
    model = "ideal"
    summary = "every request completes at its issue time (for debugging)"
    PARAMS = {k: PARAMS[k] for k in IDEAL_PARAMS}

    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        self.sectors = spec.values["capacity"]
        self._last = 0.0

    def submit(self, op, lba, sectors, issue_time, sync=False):
        if sectors <= 0 or lba < 0 or lba + sectors > self.sectors or (op != "R" and op != "W"):
            self.check(op, lba, sectors)
        self._last = issue_time
        return DiskResult(issue_time, issue_time, issue_time)

    def flush(self, now):
        return now

    def reset(self):
        self._last = 0.0

    @property
    def busy_until(self):
        return self._last

    def derived(self) -> dict:
        return {}
