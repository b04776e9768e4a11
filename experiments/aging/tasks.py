"""Replays as tasks: each allocator's replay of the recorded op log is one task, run in the
client (serially) or on Dask workers with the code `simfs run` uses (experiments.jobrun's
start_dask: `--workers N` a LocalCluster of N processes, `--scheduler ADDRESS` an existing
cluster). A task returns its measurements instead of writing them, so the client writes each
replay's rows, its wall time and any stop to the run's files the moment the task ends: a
finished replay is kept and not redone by --resume. The run's work directory (op log,
pristine image) must be readable under the same path on every worker, as a `simfs run`
workload directory must.
"""

from __future__ import annotations

import time

from .history import AgingError


def replay_task(logs, pristine: str, cfg, work: str, *, commits: list[str], done: set[int],
                last: int, resume: bool = False) -> dict:
    """One allocator's replay; never raises an AgingError: {"alloc", "rows", "error", "wall",
    "where"} ("where": the worker's host and process and the task's span on the machine's
    monotonic clock, which says which replays ran at once)."""
    import os
    import platform
    from .replayed import replay
    rows: list[dict] = []
    t = time.monotonic()
    out = {"alloc": cfg.alloc, "rows": rows, "error": None}
    try:
        replay(logs, pristine, cfg, work, rows.append, commits=commits, done=done, last=last, resume=resume)
    except AgingError as e:
        out["error"] = str(e)
    end = time.monotonic()
    out["wall"] = round(end - t, 1)
    out["where"] = {"host": platform.node(), "pid": os.getpid(), "start": t, "end": end}
    return out


def run_on_dask(jobs: list[tuple], workers: int | None, scheduler: str | None, finished) -> None:
    """Submit every (cfg, kwargs-for-replay_task) in JOBS; finished(result) as each ends, in the
    order they end. AgingError (one line) when Dask cannot start or a worker dies."""
    import os
    from experiments import jobrun
    try:
        client, cluster = jobrun.start_dask(workers, scheduler)
    except jobrun.RunError as e:
        raise AgingError(str(e)) from None
    try:
        from distributed import as_completed
        futures = {client.submit(replay_task, *args, **kw, pure=False,
                                 key=f"aging-replay-{cfg.alloc}-{os.getpid()}-{time.time_ns()}"): cfg
                   for cfg, args, kw in jobs}
        try:
            for fut in as_completed(futures):
                try:
                    res = fut.result()
                except Exception as e:              # a worker died (KilledWorker) or could not unpickle
                    res = {"alloc": futures[fut].alloc, "rows": [], "wall": 0.0,
                           "error": f"replay under {futures[fut].alloc}: {type(e).__name__}: {e}".splitlines()[0]}
                finished(res)
        finally:
            client.cancel(list(futures))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
