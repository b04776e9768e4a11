"""Example simfs plug-ins (see setup.cfg for the entry points that make simfs find them).

stride        block allocator: a file's blocks `stride` (8) apart, the seed-000 pattern
newest-first  directory order: reverse slot order, newest entries first
ssd           disk model: constant per-command latency plus transfer at a fixed rate, with the
              preset x25-m (Intel X25-M G2 160 GB, 2009)
"""

__version__ = "0.1.0"
