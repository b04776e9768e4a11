"""What makes every git command of an aging run repeat: a recording is a function of the
history (issue 51, item 3; issue 55, item 2).

Settings, given through the environment (GIT_CONFIG_COUNT/KEY/VALUE) so that every git process
a command starts inherits them - upload-pack and pack-objects on the mirror's side of a local
fetch, index-pack and unpack-objects on the mount's:

* single-threaded delta search (pack.threads=1): with threads, the same fetch gave packs of
  183,358, 183,742 and 184,677 bytes; index loading, the stat of the work tree and checkout
  single-threaded too (index.threads, core.preloadIndex, checkout.workers), so the requests
  come in one order;
* nothing automatic: no gc, no maintenance, no commit graph, no fsmonitor, no untracked cache;
* the defaults that shape packs and loose objects stated (core.bigFileThreshold,
  transfer.unpackLimit, core.compression), so a user's ~/.gitconfig or /etc/gitconfig (ignored
  anyway: GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL) cannot move them;
* a fixed identity and date (the reflogs git writes at each checkout and merge);
* no FETCH_HEAD (`fetch --no-write-fetch-head`): it names the mirror's path, which differs
  between runs.

What no setting fixes is left to the caller: git's "racy" re-reads (a file whose modification
time is not older than the index's is read again to compare; which ones depends on where the
host's seconds fell: `settle_index` dates the index at the epoch, which git takes for "no
timestamp", so it trusts the stat data it wrote), and the random names of its temporary files
and times of its utime(NULL) (experiments.aging.canon).
"""

from __future__ import annotations

import os

SETTINGS = (
    ("pack.threads", "1"), ("index.threads", "1"), ("core.preloadIndex", "false"),
    ("checkout.workers", "1"), ("gc.auto", "0"), ("maintenance.auto", "false"),
    ("fetch.writeCommitGraph", "false"), ("core.fsmonitor", "false"), ("core.untrackedCache", "false"),
    ("core.bigFileThreshold", "512m"), ("transfer.unpackLimit", "100"), ("core.compression", "-1"),
    ("advice.detachedHead", "false"), ("uploadpack.allowAnySHA1InWant", "true"),
)
NAME, EMAIL, DATE = "simfs aging", "aging@simfs.invalid", "1500000000 +0000"


def env(base: dict | None = None) -> dict:
    """The environment every git command of the aging runs with."""
    e = dict(os.environ if base is None else base)
    e.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
              "LC_ALL": "C", "TZ": "UTC", "GIT_CONFIG_COUNT": str(len(SETTINGS))})
    for i, (k, v) in enumerate(SETTINGS):
        e[f"GIT_CONFIG_KEY_{i}"], e[f"GIT_CONFIG_VALUE_{i}"] = k, v
    for who in ("AUTHOR", "COMMITTER"):
        e[f"GIT_{who}_NAME"], e[f"GIT_{who}_EMAIL"], e[f"GIT_{who}_DATE"] = NAME, EMAIL, DATE
    return e


def settle_index(gitdir: str) -> None:
    """Date the index at the epoch after a command wrote it: git reads a zero index time as
    none (is_racy_stat), so no entry is "racily clean" and none is read again to compare (a
    SETATTR through the mount, in the op log like the rest)."""
    index = os.path.join(gitdir, "index")
    if os.path.exists(index):
        os.utime(index, ns=(0, 0))
