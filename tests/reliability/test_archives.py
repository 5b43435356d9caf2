"""Tar archives from elsewhere (a Pod's `tar` for rlark cp, a bundle another user sent for `rlark --bundle`) are read
by local.archives.open_tar (issue 33 item 2, a sixth round): a header extension that claims gigabytes is refused
before it is read into memory, a sparse file is refused, and an archive that is no tar or is cut short is one line,
never a traceback."""

from __future__ import annotations

import gzip
import io
import os
import tarfile

import pytest

from rlark_tui.cluster.bundle_source import BundleAccess
from rlark_tui.cluster.podcopy import CopyRefused, unpack
from rlark_tui.errors import RlarkError
from rlark_tui.local.archives import MAX_HEADER_BYTES, Unpacked, open_tar, reader
from tests.reliability.test_cp_hostile import sparse_archive


def _header_claiming(size: int, kind: bytes = tarfile.XHDTYPE) -> bytes:
    info = tarfile.TarInfo("pax")
    info.type, info.size = kind, size
    return info.tobuf(tarfile.USTAR_FORMAT)


def test_a_bundle_whose_header_claims_gigabytes_is_refused_before_it_is_read(tmp_path):
    """64 KB of gzip held a PAX header of 64 MiB, which tarfile read whole into memory (510 KB held 512 MiB). A
    header of four times MAX_HEADER_BYTES is refused here, as any past it is."""
    size = 4 * MAX_HEADER_BYTES
    bomb = tmp_path / "bomb.tar.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as out:
        out.write(_header_claiming(size))
        out.write(bytes(size + 1024))
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(RlarkError) as refused:
        BundleAccess(bomb)
    assert str(refused.value) == (f"--bundle {bomb}: not a bundle (a header of {size} bytes at 'pax', more than "
                                  f"{MAX_HEADER_BYTES} bytes)")


def test_a_bundle_cut_short_is_one_line(tmp_path):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for n in range(50):
            info = tarfile.TarInfo(f"m{n}")
            info.size = 10240
            tar.addfile(info, io.BytesIO(bytes(range(256)) * 40))
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gzip.compress(raw.getvalue())[:1500])
    with pytest.raises(RlarkError) as refused:
        BundleAccess(cut)
    assert str(refused.value).startswith(f"--bundle {cut}: not a bundle (the archive is cut short (Compressed file")
    noise = io.BytesIO()
    with tarfile.open(fileobj=noise, mode="w") as tar:
        info = tarfile.TarInfo("m0")
        info.size = 10240
        tar.addfile(info, io.BytesIO(os.urandom(10240)))
    with open_tar(Unpacked(io.BytesIO(gzip.compress(noise.getvalue())[:5000]), 1 << 20)) as tar:  # cut within m0
        read = reader(tar, tar.next())
        with pytest.raises(tarfile.ReadError, match=r"^the archive is cut short \(Compressed file"):
            read(10240)


@pytest.mark.parametrize("archive, why", [
    (b"not a tar at all\n" * 100, "invalid header"),
    (b"", "empty file"),
    (_header_claiming(2 * MAX_HEADER_BYTES, tarfile.GNUTYPE_LONGNAME) + bytes(2 * MAX_HEADER_BYTES + 1024),
     f"a header of {2 * MAX_HEADER_BYTES} bytes at 'pax', more than {MAX_HEADER_BYTES} bytes"),
], ids=["garbage", "nothing", "long-name-of-2-MiB"])
def test_what_a_pods_tar_sends_that_is_no_archive_is_one_line(tmp_path, archive, why):
    with pytest.raises(CopyRefused) as refused:
        unpack(io.BytesIO(archive), "loot", str(tmp_path / "loot"), 1 << 30, "p:/data/loot")
    assert str(refused.value) == f"copy from p:/data/loot: not an archive rlark takes ({why}); nothing was written"
    assert not (tmp_path / "loot").exists()


def test_a_sparse_file_from_a_pod_is_refused(tmp_path):
    with pytest.raises(CopyRefused, match=r"not an archive rlark takes \(a sparse file 'loot': not taken\)"):
        unpack(io.BytesIO(sparse_archive()), "loot", str(tmp_path / "loot"), 1 << 50, "p:/data/loot")
    assert not (tmp_path / "loot").exists()


def test_an_archive_of_more_entries_than_the_bound_is_refused_as_it_is_read(tmp_path, monkeypatch):
    """A Pod's tar can send a million empty entries in 512 MB, each held in memory (about 0.5 KB in tarfile, more
    in the checks) until all have arrived: within the default --max-size of 64 GiB, some 60 GB. The checks stop at
    podcopy.MAX_ENTRIES, reading no further."""
    from rlark_tui.cluster import podcopy

    monkeypatch.setattr(podcopy, "MAX_ENTRIES", 50)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(_info("loot", tarfile.DIRTYPE))
        for n in range(200):
            tar.addfile(_info(f"loot/{n}", tarfile.REGTYPE))
    buffer.seek(0)
    with pytest.raises(CopyRefused) as refused:
        unpack(buffer, "loot", str(tmp_path / "loot"), 1 << 30, "p:/data/loot")
    assert str(refused.value) == ("refusing archive entry 'loot/49': the archive has more than 50 entries; copy a "
                                  "part of it")
    assert buffer.tell() < 60 * 512 and not (tmp_path / "loot").exists()


def _info(name: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info
