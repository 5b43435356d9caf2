"""Private, atomic file writes (the one way rlark saves what the user must not lose or others must not read),
and `read_input`, the one bounded read of a user-named input file or stdin.

`write_private` writes a temp file in the target's directory (created 0600 by mkstemp), fsyncs it, renames it
over the target and fsyncs the directory: a crash at any point leaves the previous file or the new one, never
half of either. Drafts, run-check records, exports, saved logs, tokens, keys and kubeconfigs go through it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rlark_tui.errors import UsageError

STANDARD_STREAMS = {"/dev/stdout": "stdout", "/dev/stderr": "stderr"}


def write_private(path: Path | str, data: str | bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data` atomically, mode 0600; parent directories are created 0700. A path that is
    not a regular file (a FIFO, a terminal, /dev/stdout) is written through instead; a directory is an OSError.

    `durable=False` skips the fsyncs (still atomic against a killed process, not against power loss): for
    state rewritten often and rebuilt anyway, like the sandbox's object store. Raises OSError.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    given = Path(path)
    stream = STANDARD_STREAMS.get(str(given))
    if stream is not None:
        # Through our own stdout/stderr: the shell may have redirected it to a file, which a second open would
        # replace, truncate or overwrite at the wrong offset.
        out = getattr(sys, stream)
        out.flush()
        out.buffer.write(payload)
        out.flush()
        return
    if given.exists() and not given.is_file():  # a pipe or a terminal: written through, not replaced
        with open(given, "ab") as handle:
            handle.write(payload)
        return
    path = Path(os.path.realpath(given))  # through a symlink: its target is replaced, the link stays
    for parent in reversed([p for p in path.parents if not p.exists()]):
        parent.mkdir(mode=0o700, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        remove_quietly(temp)
        raise
    if durable:
        _fsync_dir(path.parent)


def remove_quietly(path: Path | str) -> None:
    """Delete `path` if it is there; a missing file or a failed delete is not an error."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_input(path: str, what: str, limit: int) -> bytes:
    """The bytes of a file ('-' = stdin), at most `limit`; UsageError (exit 2) with one clear line when it cannot
    be read or is larger."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path}: is a directory") from None
    except PermissionError:
        raise UsageError(f"{what} {path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise UsageError(f"{what} {path}: larger than {limit // (1024 * 1024)} MiB")
    return data
