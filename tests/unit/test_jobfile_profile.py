"""[mkfs] profile and features in a job file (issue 41): the words `simfs mkfs --profile` and
`-O` take, checked by mkfs's own plan before anything runs; a bad one is one line naming its
own line of the job file (before, any profile was refused as "must be a number")."""

from __future__ import annotations

import pytest

from experiments import jobfile
from tests.unit import test_jobfile_checks as checks

# the job of tests/unit/test_jobfile_checks.py, its [mkfs] given more keys from line 11
JOB = checks.JOB.replace('size = "64M"\n', 'size = "64M"\n{mkfs}\n', 1)


def _load(tmp_path, mkfs: str):
    p = tmp_path / "job.toml"
    p.write_text(JOB.replace("{mkfs}", mkfs))
    return jobfile.load(p)


def test_the_ext4_profile_and_feature_edits_are_taken(tmp_path):
    job = _load(tmp_path, 'profile = "ext4"\nfeatures = "^dir_index"')
    assert job.doc["mkfs"]["profile"] == "ext4"
    assert job.doc["mkfs"]["features"] == "^dir_index"


@pytest.mark.parametrize("mkfs,line,words", [
    ('profile = "ext5"', 11, "unknown profile 'ext5'"),
    ('profile = 4', 11, "mkfs profile must be a string"),
    ('profile = "ext4"\nfeatures = "^extent,nosuch"', 12, "-O: unknown feature 'nosuch'"),
    ('profile = "ext4"\nfeatures = "journal_dev"', 12, "-O: simfs cannot make the feature journal_dev"),
])
def test_a_bad_profile_or_feature_is_refused_at_its_line(tmp_path, mkfs, line, words):
    with pytest.raises(jobfile.JobError) as e:
        _load(tmp_path, mkfs)
    msg = str(e.value)
    assert "\n" not in msg and f"job.toml:{line}:" in msg and words in msg, msg
