"""Aging with git pulls (issue 42; Conway et al., FAST'17): a repository's first-parent history
pulled onto a simfs mount, a cold `grep -r` of the aged tree and of a clean copy every N pulls,
and the recorded op log replayed in-process for every other allocator (age once, replay for
every policy). `python -m experiments.aging --help`.
"""
