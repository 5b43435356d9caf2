"""The one reader of tar archives from elsewhere: a Pod's `tar` (rlark cp) and a bundle another user sent
(`rlark --bundle`).

Python's tarfile reads a header's extension (a PAX header, a GNU long name or link) whole into memory, whatever
size the header claims: 510 KB of gzip made a bundle reader hold 562 MB, and a few MB more would hold any amount.
So an extension larger than MAX_HEADER_BYTES ends the read. A sparse file (GNU or PAX sparse headers, as `tar -S`
writes) is refused too: its map is read block by block into memory, and its holes are written as zeros, so a few
KB claim a TiB; rlark writes no sparse file into a bundle, and a Pod's `tar cf` sends none unless told to. Either
is a tarfile.ReadError naming what was refused, as a malformed archive is, and so is a compressed archive cut
short (gzip's EOFError, which tarfile lets through: a bundle whose download was cut ended rlark in a traceback).
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from typing import IO, Any

MAX_HEADER_BYTES = 1 << 20
"""The largest header extension read (PAX records, a GNU long name or link): names and attributes, never data."""
EXTENSIONS = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
              tarfile.SOLARIS_XHDTYPE)


class _BoundedInfo(tarfile.TarInfo):
    def _proc_member(self, tarfile_: tarfile.TarFile) -> Any:
        if self.type in EXTENSIONS and self.size > MAX_HEADER_BYTES:
            raise tarfile.ReadError(f"a header of {self.size} bytes at {self.name!r}, more than {MAX_HEADER_BYTES} "
                                    "bytes")
        return super()._proc_member(tarfile_)  # type: ignore[misc]

    def _proc_sparse(self, tarfile_: tarfile.TarFile) -> Any:
        raise tarfile.ReadError(f"a sparse file {self.name!r}: not taken")

    def _proc_gnusparse_00(self, *args: object) -> Any:  # PAX sparse headers; args[0] is the member they describe
        member = args[0] if args and isinstance(args[0], tarfile.TarInfo) else self
        raise tarfile.ReadError(f"a sparse file {member.name!r}: not taken")

    _proc_gnusparse_01 = _proc_gnusparse_10 = _proc_gnusparse_00


class _BoundedTar(tarfile.TarFile):
    def next(self) -> tarfile.TarInfo | None:
        try:
            return super().next()
        except EOFError as exc:  # gzip's, for a compressed archive cut short; tarfile lets it through
            raise tarfile.ReadError(f"the archive is cut short ({exc})") from None


def reader(tar: tarfile.TarFile, member: tarfile.TarInfo) -> Callable[[int], bytes] | None:
    """A read of `member`'s bytes (None when it has none), an archive cut short within them a tarfile.ReadError."""
    handle = tar.extractfile(member)
    if handle is None:
        return None

    def read(size: int) -> bytes:
        try:
            return handle.read(size)
        except EOFError as exc:
            raise tarfile.ReadError(f"the archive is cut short ({exc})") from None
    return read


def open_tar(fileobj: IO[bytes], gzip: bool = False) -> tarfile.TarFile:
    """`fileobj` as a tar archive (gzip-compressed with `gzip`), its headers bounded as above; an archive cut short
    is a tarfile.ReadError, in its headers or in a member's bytes (gzip says EOFError), as a malformed one is."""
    return _BoundedTar.open(fileobj=fileobj, mode="r:gz" if gzip else "r:", tarinfo=_BoundedInfo)
