"""experiments.verbcheck.copy_sparse: the validation cases copy a 256 MiB image twice each; the
copy must equal the image byte for byte and keep its holes (only the data is written)."""

import os

from experiments.verbcheck import copy_sparse


def test_copy_equals_the_image_and_keeps_its_holes(tmp_path):
    src, dst = tmp_path / "image", tmp_path / "copy"
    with open(src, "wb") as f:
        f.truncate(64 << 20)
        f.seek(5 << 20)
        f.write(os.urandom(100_000))
        f.seek((40 << 20) + 123)
        f.write(b"x" * 5000)
        f.seek((64 << 20) - 10)                    # data up to the very end
        f.write(b"end of it.")
    copy_sparse(src, dst)
    assert dst.read_bytes() == src.read_bytes()
    assert os.stat(dst).st_blocks * 512 < 1 << 20          # the holes stay holes


def test_an_image_that_ends_in_a_hole_keeps_its_size(tmp_path):
    src, dst = tmp_path / "image", tmp_path / "copy"
    with open(src, "wb") as f:
        f.write(b"superblock")
        f.truncate(8 << 20)
    copy_sparse(src, dst)
    assert dst.stat().st_size == 8 << 20 and dst.read_bytes() == src.read_bytes()
