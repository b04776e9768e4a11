"""Running a job: each configuration x repetition is one task, serially or on Dask workers.

A task (`run_task`) is `runner.run_config` on a fresh image in its own work directory; it
returns the records instead of raising, so one failing configuration never costs the others.
The caller writes each task's records to OUT/configs/<task>.json the moment they arrive
(`Results`), which is what makes `--resume OUT` possible and Ctrl-C harmless: the summary and
results.json are assembled from whatever OUT/configs holds, in the job's order (configurations
in the file's order within each repetition), so the files are the same whatever ran where.

On Dask (`--workers N`: a LocalCluster of N processes; `--scheduler ADDRESS`: an existing
cluster) a task carries the job file's text, not Python objects: the worker compiles it again
(`jobfile.load` + `compile_job`, deterministic). A generated workload is made again on a worker
that cannot see the client's (it is deterministic too); a workload directory must be readable
by every worker under the same path.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import jobfile, runner


class RunError(RuntimeError):
    """Bad set-up found before anything runs (one line; exit status 2)."""


@dataclass(frozen=True)
class Task:
    index: int          # the configuration's position in the job
    config: str
    rep: int

    @property
    def key(self) -> str:
        return f"{self.index:02d}-{runner._slug(self.config)}-r{self.rep}"


def tasks(exp) -> list[Task]:
    return [Task(i, c.name, rep) for rep in range(exp.repetitions) for i, c in enumerate(exp.configs)]


def fingerprint(exp, wl_spec: dict) -> dict:
    """What must be equal for --resume to add to an earlier run's results."""
    return {"name": exp.name, "quick": exp.quick, "repetitions": exp.repetitions,
            "workload": {k: (list(v) if isinstance(v, tuple) else v) for k, v in wl_spec.items()},
            "configs": [[c.name, c.mount_string(), {k: v for k, v in c.mkfs.items()}] for c in exp.configs],
            "phases": [[p.name, p.kind, p.description, p.drain, p.cold] for p in exp.phases],
            **({"aged": getattr(exp, "aged")} if getattr(exp, "aged", None) else {})}


# the worker's side -------------------------------------------------------------------------------
def fuse_problem() -> str | None:
    """Why this machine cannot run mounted phases (None: it can)."""
    if os.geteuid() != 0:
        return "not root"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (apt-get install fuse3)"
    return None


_WORKLOADS: dict = {}


def _workload_here(wl: runner.Workload, spec: dict, work_root: Path) -> runner.Workload:
    """The client's workload if this machine sees it, else the same generated tree made here."""
    if wl.kind != "tree" or (wl.tarball is not None and wl.tarball.exists()):
        return wl
    if "path" in spec:
        raise runner.ExperimentError(f"the workload directory {spec['path']} is not readable on this worker")
    key = json.dumps(spec, sort_keys=True, default=str)
    if key not in _WORKLOADS:
        d = Path(tempfile.mkdtemp(prefix="simfs-workload-", dir=work_root))
        _WORKLOADS[key] = runner.prepare_workload(spec, d)
    return _WORKLOADS[key]


def run_task(job_text: str, job_name: str, quick: bool, wl: runner.Workload, spec: dict, task: Task,
             work_root: str, progress=None, keep_images: bool = False) -> dict:
    """One configuration x repetition; never raises (but KeyboardInterrupt): {"task", "records",
    "layout" (pickled fsscan.Layout or None), "error" (one line or None), "host", "wall"}."""
    import platform
    t0 = time.time()
    out = {"task": task, "records": [], "layout": None, "error": None, "host": platform.node()}
    work = None
    try:
        job = jobfile.loads(job_text, job_name, quick)
        wl = _workload_here(wl, spec, Path(work_root))
        exp = jobfile.compile_job(job, wl)
        cfg = exp.config(task.config)
        work = Path(tempfile.mkdtemp(prefix=f"{task.key}-", dir=work_root))
        records, lay = runner.run_config(exp, cfg, task.rep, wl, work, progress, keep_images)
        out["records"] = records
        out["layout"] = pickle.dumps(lay) if lay is not None else None
    except KeyboardInterrupt:
        raise
    except runner.ExperimentError as e:
        out["error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    except Exception as e:                       # a bug or a crash: its last line, and the trace kept
        out["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
        out["traceback"] = traceback.format_exc()
    finally:
        if work is not None:
            runner.release_mounts(work)
            # traces stay for the plots (the client's work root is removed at the end, unless --keep)
            for img in ([] if keep_images else work.glob("*/disk.img")):
                img.unlink(missing_ok=True)
    out["wall"] = time.time() - t0
    return out


# the client's side -------------------------------------------------------------------------------
class Results:
    """OUT/configs/<task>.json (+ .layout.pkl): every finished task, written as it arrives."""

    def __init__(self, out: Path):
        self.dir = out / "configs"
        self.dir.mkdir(parents=True, exist_ok=True)

    def done(self) -> set[str]:
        return {p.name[:-5] for p in self.dir.glob("*.json")}

    def add(self, res: dict) -> None:
        t = res["task"]
        if res["layout"] is not None:
            (self.dir / f"{t.key}.layout.pkl").write_bytes(res["layout"])
        tmp = self.dir / f".{t.key}.json.tmp"
        tmp.write_text(json.dumps({"config": t.config, "rep": t.rep, "host": res["host"],
                                   "wall": res["wall"], "records": res["records"]}, indent=1))
        tmp.replace(self.dir / f"{t.key}.json")          # never a half-written file

    def load(self, all_tasks: list[Task]) -> tuple[list[dict], dict]:
        """Records of the finished tasks in the job's order, and the layouts (repetition 0)."""
        records, layouts = [], {}
        for t in all_tasks:
            p = self.dir / f"{t.key}.json"
            if not p.exists():
                continue
            records += json.loads(p.read_text())["records"]
            lp = self.dir / f"{t.key}.layout.pkl"
            if lp.exists():
                layouts[t.config] = pickle.loads(lp.read_bytes())
        return records, layouts


def start_dask(workers: int | None, scheduler: str | None, timeout: float = 10):
    """(client, cluster or None). RunError (one line) when the scheduler cannot be reached."""
    import logging
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise RunError("--workers/--scheduler need Dask: pip install 'dask[distributed]'") from None
    if scheduler:
        try:
            return Client(scheduler, timeout=timeout), None
        except (OSError, TimeoutError, ValueError) as e:
            raise RunError(f"cannot reach the Dask scheduler {scheduler}: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    client = Client(cluster)
    # every worker up before the first task: one that registers late would leave a second
    # task queued behind the first on the same worker, and a worker that dies takes its queue
    try:
        client.wait_for_workers(workers, timeout=60)
    except TimeoutError:
        started = len(client.scheduler_info()["workers"])
        client.close()
        cluster.close()
        raise RunError(f"only {started} of {workers} Dask workers started within 60 s") from None
    # Ctrl-C reaches the whole process group: the client stops the run and closes the cluster;
    # the worker processes need not die of it first (with a traceback each)
    client.run(_ignore_sigint)
    return client, cluster


def _ignore_sigint() -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_workers(client, mounted: bool) -> None:
    """Mounted phases need FUSE and root on every worker: say which cannot, before any task."""
    if not mounted:
        return
    found = client.run(fuse_problem)
    if not found:
        raise RunError("the Dask cluster has no workers")
    bad = {w: why for w, why in found.items() if why}
    if bad:
        w, why = next(iter(bad.items()))
        raise RunError(f"this job has mounted phases (run =): they need FUSE and root on every worker; "
                       f"{len(bad)} of {len(found)} workers cannot mount ({w}: {why})")


def run_tasks(todo: list[Task], *, job_text: str, job_name: str, quick: bool, wl, spec: dict, work: Path,
              results: Results, client=None, on_done=None, on_phase=None,
              keep_images: bool = False) -> tuple[list, bool]:
    """Run `todo` serially (client None) or on Dask; each result is saved as it arrives.
    `keep_images`: leave each configuration's image in its work directory (--keep).
    Returns (failures [(task, error)], interrupted)."""
    failures = []

    def finished(res: dict) -> None:
        if res["error"] is None:
            results.add(res)
        else:
            failures.append((res["task"], res["error"]))
            if res.get("traceback"):
                (results.dir / f"{res['task'].key}.error.txt").write_text(res["traceback"])
        if on_done:
            on_done(res)

    try:
        if client is None:
            for t in todo:
                finished(run_task(job_text, job_name, quick, wl, spec, t, str(work),
                                  progress=(lambda label, t=t: on_phase and on_phase(t, label)),
                                  keep_images=keep_images))
            return failures, False
        from distributed import as_completed
        futures = {client.submit(run_task, job_text, job_name, quick, wl, spec, t, str(work),
                                 keep_images=keep_images, key=f"simfs-{t.key}-{os.getpid()}-{time.time_ns()}", pure=False): t
                   for t in todo}
        try:
            for fut in as_completed(futures):
                t = futures[fut]
                try:
                    res = fut.result()
                except Exception as e:          # a worker died (KilledWorker) or could not unpickle
                    why = "a Dask worker died while running it (KilledWorker; see the workers' logs)" \
                        if type(e).__name__ == "KilledWorker" else f"{type(e).__name__}: {e}".splitlines()[0]
                    res = {"task": t, "records": [], "layout": None, "host": "?", "wall": 0.0, "error": why}
                finished(res)
        finally:
            client.cancel(list(futures))
        return failures, False
    except KeyboardInterrupt:
        return failures, True
