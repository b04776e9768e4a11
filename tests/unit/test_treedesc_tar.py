"""from_tarball's own reader of plain archives (treedesc._ustar) against tarfile, the library it
stands in for: the same entries, or the same error, for archives the real GNU tar writes in
each of its formats, for Python's pax archives, and for cut, corrupt and foreign files."""

import gzip
import io
import os
import shutil
import subprocess
import tarfile

import pytest

from simfs.inprocess import treedesc


def _entries(path, with_data, *, own: bool):
    """The entries, or the error, with treedesc's reader (own) or with tarfile's alone."""
    saved = treedesc._ustar

    def tarfile_only(f, with_data):
        raise treedesc._Unsupported
        yield

    if not own:
        treedesc._ustar = tarfile_only
    try:
        return list(treedesc.from_tarball(str(path), with_data=with_data))
    except Exception as e:               # the same error both ways is what is compared
        return f"{type(e).__name__}: {e}"
    finally:
        treedesc._ustar = saved


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    d = tmp_path_factory.mktemp("tars")
    src = d / "src"
    (src / "sub" / ("deep" * 30)).mkdir(parents=True)
    (src / "sub" / ("deep" * 30) / ("long-name-" * 12)).write_bytes(b"x" * 5000)
    (src / "empty").write_bytes(b"")
    (src / ("p" * 60)).mkdir()
    (src / ("p" * 60) / ("q" * 60)).write_bytes(b"in a ustar header, 'p...' is the prefix")
    (src / "sub" / "f.txt").write_bytes(b"hello\n" * 300)
    os.link(src / "sub" / "f.txt", src / "hard")
    os.symlink("sub/f.txt", src / "rel-link")
    os.symlink("/" + "t" * 120, src / "long-link")
    os.mkfifo(src / "fifo")
    with open(src / "sparse", "wb") as f:
        f.truncate(1 << 20)
        f.write(b"end")
    out = {}
    for fmt in ("gnu", "oldgnu", "ustar", "posix", "v7"):
        p = d / f"{fmt}.tar"
        subprocess.run(["tar", f"--format={fmt}", "--sort=name", "-cf", str(p), "-C", str(src), "."],
                           capture_output=True)
        if p.exists():                    # ustar and v7 refuse the long names, and say so
            out[fmt] = p
    sparse = d / "sparse.tar"
    subprocess.run(["tar", "-S", "-cf", str(sparse), "-C", str(src), "sparse", "sub"], check=True)
    out["gnu sparse"] = sparse
    py = d / "python.tar"
    with tarfile.open(py, "w", format=tarfile.GNU_FORMAT) as tf:
        for i, uid in enumerate((0, 8 ** 8, 5)):       # 8**8 needs base-256 in a GNU header
            ti = tarfile.TarInfo(f"d/f{i}")
            ti.uid, ti.size = uid, 3
            tf.addfile(ti, io.BytesIO(b"abc"))
    out["base-256"] = py
    pax = d / "pax.tar"
    with tarfile.open(pax, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in ("a/short", "a/" + "é" * 3, "a/" + "y" * 120, "b/z"):
            ti = tarfile.TarInfo(name)
            ti.size = 1
            tf.addfile(ti, io.BytesIO(b"1"))
    out["pax"] = pax
    whole = out["gnu"].read_bytes()
    for n in (0, 511, 512, 700, 1024, 3000, len(whole) // 2, len(whole) - 1024):
        out[f"cut at {n}"] = d / f"cut{n}.tar"
        out[f"cut at {n}"].write_bytes(whole[:n])
    bad = bytearray(whole)
    bad[1024 + 148:1024 + 156] = b"0000000\0"          # the second header's checksum
    out["bad checksum"] = d / "badsum.tar"
    out["bad checksum"].write_bytes(bad)
    out["not a tar"] = d / "random.tar"
    out["not a tar"].write_bytes(bytes(range(256)) * 20)
    out["gzip"] = d / "gnu.tar.gz"
    with open(out["gnu"], "rb") as a, gzip.open(out["gzip"], "wb") as b:
        shutil.copyfileobj(a, b)
    return out


@pytest.mark.parametrize("with_data", [False, True])
def test_the_own_reader_gives_what_tarfile_gives(archives, with_data):
    assert {"gnu", "oldgnu", "posix", "v7", "ustar"} & set(archives) >= {"gnu", "oldgnu", "posix"}
    for name, path in archives.items():
        own, lib = _entries(path, with_data, own=True), _entries(path, with_data, own=False)
        assert own == lib, name
    full = _entries(archives["gnu"], True, own=True)
    kinds = {e.kind for e in full}
    assert kinds == {"dir", "file", "hardlink", "symlink", "fifo"}
    assert any(len(b"/".join(e.path)) > 100 for e in full)            # GNU long names
    assert any(len(e.target) > 100 for e in full if e.kind == "symlink")
    assert isinstance(_entries(archives["cut at 3000"], False, own=True), str)   # data cut: an error
