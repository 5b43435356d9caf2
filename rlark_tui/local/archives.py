"""The one reader of tar archives from elsewhere: a Pod's `tar` (rlark cp) and a bundle another user sent
(`rlark --bundle`).

Python's tarfile reads a header's extension (a PAX header, a GNU long name or link) whole into memory, whatever
size the header claims: 510 KB of gzip made a bundle reader hold 562 MB, and a few MB more would hold any amount.
So an extension larger than MAX_HEADER_BYTES ends the read. A sparse file (GNU or PAX sparse headers, as `tar -S`
writes) is refused too: its map is read block by block into memory, and its holes are written as zeros, so a few
KB claim a TiB; rlark writes no sparse file into a bundle, and a Pod's `tar cf` sends none unless told to. Either
is a tarfile.ReadError naming what was refused, as a malformed archive is.

A compressed archive (a bundle) is read through `Unpacked`, never tarfile's `r:gz`: a gzip stream is read forwards
only, so `r:gz` unpacked it again from its start for each member before the last one read (a bundle's log opened
after a later one took up to ~16 s at the 4 GiB bound), and let gzip's EOFError through for a stream cut short (a
bundle whose download was cut ended rlark in a traceback). `Unpacked` keeps the inflater's state every SPAN unpacked
bytes on its one pass, and a read anywhere goes on from the nearest kept state before it; a stream cut short, or
one that unpacks past its bound, is a tarfile.ReadError.
"""

from __future__ import annotations

import bisect
import io
import tarfile
import zlib
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


SPAN = 16 << 20
"""Unpacked bytes between two kept inflater states: what a read may unpack before it reaches its offset (some 40 KB
a state, 10 MB for 4 GiB)."""
PACKED_PIECE = 64 << 10
UNPACKED_PIECE = 256 << 10
CUT_SHORT = "the archive is cut short (Compressed file ended before the end-of-stream marker was reached)"


class TooLarge(tarfile.ReadError):
    """A compressed archive that unpacks to more than the bound it is read under."""


class Unpacked(io.BufferedIOBase):
    """A gzip file's unpacked bytes as a seekable, read-only file (its first gzip member, as tarfile's `r:gz` reads
    it), at most `limit` of them: TooLarge past them, a tarfile.ReadError when it is no gzip or is cut short. Open it
    with open_tar (uncompressed), which then reads each member at its offset."""

    def __init__(self, packed: IO[bytes], limit: int) -> None:
        self._packed, self._limit = packed, limit
        self._kept: list[tuple[int, int, Any]] = [(0, 0, zlib.decompressobj(31))]
        """(unpacked offset, packed offset, the inflater's state there), in order."""
        self._pos = 0
        self._go_on_from(0)

    def _go_on_from(self, index: int) -> None:
        """Unpack on from the `index`th state kept."""
        self._at, packed, state = self._kept[index]
        self._inflater = state.copy()
        self._packed.seek(packed)
        self._input = b""
        self._piece = b""
        """The last unpacked piece, ending at self._at."""

    def _more(self) -> bytes:
        """The next unpacked piece, b"" at the end of the stream."""
        while not self._inflater.eof:
            ended = False
            if not self._input:
                self._input = self._packed.read(PACKED_PIECE)
                ended = not self._input  # what the inflater holds may still come out
            try:
                piece = self._inflater.decompress(self._input, UNPACKED_PIECE)
            except zlib.error as exc:
                raise tarfile.ReadError(f"not a gzip file ({exc})") from None
            self._input = self._inflater.unconsumed_tail
            self._at += len(piece)
            if self._at > self._limit:
                raise TooLarge(f"more than {self._limit} bytes unpacked")
            if self._at >= self._kept[-1][0] + SPAN and not self._inflater.eof:
                self._kept.append((self._at, self._packed.tell() - len(self._input), self._inflater.copy()))
            if piece:
                return piece
            if ended and not self._inflater.eof:
                raise tarfile.ReadError(CUT_SHORT)
        return b""

    def read(self, size: int | None = -1) -> bytes:
        index = bisect.bisect_right(self._kept, self._pos, key=lambda kept: kept[0]) - 1
        if self._pos < self._at - len(self._piece) or self._kept[index][0] > self._at:
            self._go_on_from(index)
        out: list[bytes] = []
        wanted = size if size is not None and size >= 0 else self._limit + 1
        while wanted > 0:
            if self._pos < self._at:
                start = self._pos - (self._at - len(self._piece))
                taken = self._piece[start:start + wanted]
                out.append(taken)
                self._pos += len(taken)
                wanted -= len(taken)
            elif not (piece := self._more()):
                break
            else:
                self._piece = piece
        return b"".join(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 0:
            raise io.UnsupportedOperation("only an absolute seek")
        self._pos = max(offset, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True


def reader(tar: tarfile.TarFile, member: tarfile.TarInfo) -> Callable[[int], bytes] | None:
    """A read of `member`'s bytes (None when it has none), an archive cut short within them a tarfile.ReadError."""
    handle = tar.extractfile(member)
    return None if handle is None else handle.read


def open_tar(fileobj: IO[bytes] | Unpacked) -> tarfile.TarFile:
    """`fileobj` as a tar archive (a compressed one through Unpacked), its headers bounded as above; an archive cut
    short is a tarfile.ReadError, in its headers or in a member's bytes, as a malformed one is."""
    return tarfile.TarFile.open(fileobj=fileobj, mode="r:", tarinfo=_BoundedInfo)
