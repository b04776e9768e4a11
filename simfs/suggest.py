"""The one "did you mean ...?" helper. Every place a name is looked up (commands and their
options, mount options, policies, disk presets, job-file keys and values, experiments,
lessons, verbs) names the nearest valid one the same way: difflib's closest match, if any is
close enough (ratio >= 0.6), since a typo is the usual mistake."""

from __future__ import annotations

import difflib


def did_you_mean(word, candidates, show=repr) -> str:
    """' (did you mean X?)' for the candidate nearest `word`, else ''."""
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return f" (did you mean {show(close[0])}?)" if close else ""
