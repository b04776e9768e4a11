"""Where `simfs experiment` and `simfs lesson` write: checked before anything runs.

A run takes minutes; a directory it cannot write to should stop it at once, not at the end
(with a traceback), and a directory holding someone else's files must not be written over.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable


def out_problem(out: Path, own: Callable[[Path], bool], what: str, hint: str = "") -> str | None:
    """Why `out` cannot take the results, or None. An existing directory must be empty or
    hold a previous `what` that `own(out)` recognises (it is replaced); otherwise `out` must
    be a directory that can be made and written (probed: what the probe made is removed)."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: not a directory"
    if out.is_dir() and any(out.iterdir()) and not own(out):
        return (f"--out {out}: the directory holds other files, which the {what} would be mixed "
                f"with or written over{hint}; give a new or empty directory")
    made = []
    try:
        missing, p = [], out.absolute()
        while not p.exists():
            missing.append(p)
            p = p.parent
        for d in reversed(missing):
            d.mkdir()
            made.append(d)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        return f"--out {out}: cannot write there ({e.strerror or e})"
    finally:
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)
    return None


def work_dir_problem(work_dir: Path | None) -> str | None:
    """Why images cannot be made in `work_dir` (None: the default), or None. A missing
    directory is made by the run, as --out is, when its parent is a directory."""
    if work_dir is None:
        return None
    if work_dir.exists() and not work_dir.is_dir():
        return f"--work-dir {work_dir}: not a directory"
    probe = work_dir if work_dir.is_dir() else work_dir.absolute().parent
    if not probe.is_dir():
        return f"--work-dir {work_dir}: no such directory, nor its parent {probe}"
    try:
        Path(tempfile.mkdtemp(dir=probe)).rmdir()
    except OSError as e:
        return f"--work-dir {work_dir}: cannot make files there ({e.strerror or e})"
    return None
