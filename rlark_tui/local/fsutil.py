"""The one way rlark writes a local file, and `read_input`, the one bounded read of a user-named input.

Every write goes through `Destination` (`write_private`, `write_named` and `atomic_output` are built on it):
- The path is walked one component at a time from `/` with directory descriptors. A symlink on the way is followed
  only when the directory holding it is trusted (owned by the user or root, writable by nobody else; or sticky and
  the link the user's own, as the kernel's protected_symlinks rule). The directory the file goes into must be the
  user's own and writable by nobody else (group-writable only for the user's private group); otherwise
  `UnsafeDestination`, one line. Missing directories are made 0700.
- The data goes to an unpredictable temporary name in that directory, opened O_CREAT|O_EXCL|O_NOFOLLOW, is fsynced
  and renamed over the final name (`os.replace`, relative to the held directory), and the directory is fsynced: a
  crash leaves the previous file or the new one, never half of either, and no name another user planted is ever
  opened. A symlink at the final name (possible only in the user's own directory) is resolved the same way, so a
  link of the user's own keeps pointing at the file it names.
- Files are 0600, unless the user named the path (`named=True`): then the umask's ordinary mode, or the mode of the
  file replaced. A FIFO, terminal or device the user named (in a trusted directory) is written through, and
  /dev/stdout, /dev/stderr and `-` (stdout, as tar's `-f -` takes it) go through our own streams, so a shell
  redirection is neither replaced nor truncated.
- A terminal gets text cleaned (text.sanitize.clean, as every line a command prints) and no binary output at all (an
  archive, an object's bytes): `refuse_terminal` says so in one line, as tar refuses to write an archive there. A
  stored object's OSC 52 would otherwise set the operator's clipboard.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import BinaryIO, TextIO

from rlark_tui.errors import RlarkError, UsageError

STANDARD_STREAMS = MappingProxyType({"-": "stdout", "/dev/stdout": "stdout", "/dev/stderr": "stderr"})
"""Paths written through rlark's own streams: `-` is stdout, as `tar -cf -` and `aws s3 cp … -` take it."""
MAX_LINKS = 40
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_EXCL = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeDestination(RlarkError):
    """A file rlark will not write there: the directory is not the user's own, others may write it, or a link on
    the way was planted where others write. One line, naming the path and why."""


class WriteFailed(RlarkError, OSError):
    """A file that found no room (a full disk, a quota, a file size limit) or a read-only file system: one line
    naming it, nothing left half-written (an OSError still, for the callers that take one)."""


_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def _larger_than(limit: int) -> str:
    from rlark_tui.model.quantity import size_text

    return f"larger than {size_text(limit)}"


def name_head(name: str, limit: int = 150) -> str:
    """The start of file name `name`, at most `limit` bytes (a character cut in two, or a byte that is no UTF-8,
    left out): a name made of it and a few bytes more stays within NAME_MAX (255 bytes) whatever the characters
    (a CJK character is 3 bytes)."""
    return os.fsencode(name)[:limit].decode("utf-8", "ignore")


def _private_group(gid: int) -> bool:
    """Whether `gid` is the user's own private group (named like the user, no other member): Debian's and
    Fedora's umask 002 makes directories group-writable for it, which lets no one else in."""
    import grp  # here: `rlark status --tmux` reads its cache through this module (start-up time)
    import pwd

    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(os.geteuid())
    except KeyError:
        return False
    return gid == user.pw_gid and group.gr_name == user.pw_name and not [m for m in group.gr_mem if m != user.pw_name]


def _closed_to_others(info: os.stat_result, fd: int) -> bool:
    """No one but the user may write the file or directory open at `fd` (`info` its stat): not others, and the group
    only when it is the user's private group and no POSIX ACL names another user or group that may write (with an
    ACL the group bits are its mask: `setfacl -m u:bob:rwx` on a 0770 directory showed it as the private group's)."""
    mode = info.st_mode
    if mode & stat.S_IWOTH:
        return False
    return not mode & stat.S_IWGRP or (_private_group(info.st_gid) and not _acl_writers(fd))


_ACL_NAMED = (0x02, 0x08)
"""The tags of a POSIX ACL's entries for a named user (ACL_USER) and a named group (ACL_GROUP)."""


def _acl_writers(fd: int) -> bool:
    """Does the access ACL of the file at `fd` let a named user or group write (the kernel's xattr layout: a
    version word, then entries of tag, permissions and id, little-endian)?"""
    import struct

    getxattr = getattr(os, "getxattr", None)  # Linux only: macOS has none (its ACLs are not read here)
    if getxattr is None:
        return False
    try:
        acl = getxattr(fd, "system.posix_acl_access")
    except OSError:  # no ACL (ENODATA), or a file system without them
        return False
    return any(tag in _ACL_NAMED and perm & 2 for tag, perm, _id in struct.iter_unpack("<HHI", acl[4:]))


def private_spool_dir() -> str:
    """A new 0700 directory of the user's own under $TMPDIR for a spool (the caller removes it)."""
    import tempfile
    return tempfile.mkdtemp(prefix="rlark-spool-")


def _trusted(info: os.stat_result, fd: int) -> bool:
    return info.st_uid in (os.geteuid(), 0) and _closed_to_others(info, fd)


def why_not_own(fd: int) -> str | None:
    """Why the directory open at `fd` is not the user's own and closed to others (None when it is)."""
    info = os.fstat(fd)
    if info.st_uid != os.geteuid():
        return f"the directory belongs to uid {info.st_uid}, not to you"
    if not _closed_to_others(info, fd):
        return "others may write in the directory"
    return None


def absolute(path: str | os.PathLike[str]) -> str:
    """`path` made absolute against the working directory; as given (normalised) when that directory is gone (removed
    under the shell or tmux pane that started rlark): what is relative to it then names nothing, and the writer
    (Destination) or reader it goes to says so in one line."""
    try:
        return os.path.abspath(path)
    except FileNotFoundError:
        return os.path.normpath(path)


def in_working_dir(name: str = "") -> Path:
    """`name` in the working directory (the default place of a saved log, a screenshot, a download), absolute; left
    relative when the working directory is gone, for the writer to refuse."""
    return Path(absolute(name or "."))


class Destination:
    """Where one file goes: its directory, held open and checked, and the final name (`leaf`). `through` is
    True for a FIFO, terminal or device the user named: it is written through, never replaced."""

    def __init__(self, path: Path | str, *, named: bool = False, create_dirs: bool = True,
                 directory_ok: bool = False, root_ok: bool = False) -> None:
        self.shown, self.named, self.directory_ok, self.root_ok = str(path), named, directory_ok, root_ok
        self.through = False
        self.mode: int | None = None  # the mode of a named file being replaced
        self.dir_fd = -1
        where = absolute(os.fspath(path))
        if not os.path.isabs(where):
            raise self._refuse("the working directory it is relative to no longer exists")
        leaf = self._resolve(where, create_dirs)
        self.leaf = leaf

    def _refuse(self, why: str) -> UnsafeDestination:
        from rlark_tui.text.sinks import one_line  # here: `rlark status --tmux` writes its cache (start-up time)

        return UnsafeDestination(f"refusing to write {one_line(self.shown)}: {why}")

    def _walk(self, fd: int, parts: list[str], create: bool, budget: list[int]) -> int:
        """A descriptor of the directory `parts` lead to from `fd` (which it takes over)."""
        pending = list(reversed(parts))
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            try:
                nxt = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    raise
                why = why_not_own(fd)
                if why is not None:
                    os.close(fd)
                    raise self._refuse(f"cannot make {part!r} there: {why}") from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                pending.append(part)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    os.close(fd)
                    raise
                try:
                    fd = self._follow(fd, part, budget, pending)
                except BaseException:
                    os.close(fd)
                    raise
                continue
            os.close(fd)
            fd = nxt
        return fd

    def _follow(self, fd: int, part: str, budget: list[int], pending: list[str]) -> int:
        """Put the link `part`'s target on `pending` (when it may be followed); the directory to go on from."""
        info = os.stat(part, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISLNK(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", self.shown)
        holder = os.fstat(fd)
        if not (_trusted(holder, fd) or (holder.st_mode & stat.S_ISVTX and info.st_uid == os.geteuid())):
            raise self._refuse(f"{part!r} on the way is a link in a directory others may write")
        budget[0] -= 1
        if budget[0] < 0:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", self.shown)
        target = os.readlink(part, dir_fd=fd)
        pending.extend(reversed(target.split("/")))
        if target.startswith("/"):
            os.close(fd)
            return os.open("/", _DIR)
        return fd

    def _resolve(self, path: str, create: bool) -> str:
        budget = [MAX_LINKS]
        directory, leaf = os.path.split(path)
        fd = self._walk(os.open("/", _DIR), directory.split("/"), create, budget)
        try:
            while True:
                if not leaf or leaf in (".", ".."):
                    raise IsADirectoryError(errno.EISDIR, "is a directory", self.shown)
                try:
                    info = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    info = None
                if info is not None and stat.S_ISLNK(info.st_mode):
                    pending: list[str] = []
                    fd = self._follow(fd, leaf, budget, pending)
                    parts = list(reversed(pending))
                    leaf = parts.pop() if parts else ""
                    fd = self._walk(fd, parts, create, budget)
                    continue
                break
            holder = os.fstat(fd)
            if info is not None and stat.S_ISDIR(info.st_mode) and not self.directory_ok:
                raise IsADirectoryError(errno.EISDIR, "is a directory", self.shown)
            if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
                if not _trusted(holder, fd):
                    raise self._refuse("it is a special file in a directory others may write")
                self.through = True
            else:
                why = None if self.root_ok and _trusted(holder, fd) else why_not_own(fd)
                if why is not None:
                    raise self._refuse(why + "; choose a directory of your own")
                if info is not None and self.named and info.st_uid == os.geteuid():
                    self.mode = stat.S_IMODE(info.st_mode)
        except BaseException:
            os.close(fd)
            raise
        self.dir_fd = fd
        return leaf

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Destination:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def temp(self, tag: str = "tmp", *, private: bool = False) -> tuple[str, BinaryIO]:
        """A new file under an unpredictable name beside the target (O_EXCL, O_NOFOLLOW): (its name, open to
        read and write)."""
        named = self.named and not private
        while True:  # os.urandom, as secrets.token_hex, whose import loads OpenSSL (hmac) and random
            name = f".{name_head(self.leaf)}.{os.urandom(8).hex()}.{tag}"
            try:
                fd = os.open(name, _EXCL & ~os.O_WRONLY | os.O_RDWR, 0o666 if named else 0o600, dir_fd=self.dir_fd)
            except FileExistsError:
                continue
            if named and self.mode is not None:
                os.fchmod(fd, self.mode)
            return name, os.fdopen(fd, "rb+")

    def write_beside(self, name: str, data: bytes) -> None:
        """Replace file `name` in the target's directory with `data` (0600, atomic): a record of rlark's own."""
        temp, handle = self.temp(private=True)
        try:
            with handle:
                handle.write(data if isinstance(data, bytes) else data.encode("utf-8"))
            os.replace(temp, name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except BaseException:
            self.remove(temp)
            raise

    def open_through(self, text: bool = False) -> BinaryIO:
        """The FIFO, terminal or device the user named, opened to append (never through a link); a terminal only
        for `text` (refuse_terminal)."""
        handle = os.fdopen(os.open(self.leaf, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                                   dir_fd=self.dir_fd), "ab")
        if not text:
            try:
                refuse_terminal(self.shown, handle)
            except UsageError:
                handle.close()
                raise
        return handle

    def commit(self, name: str, durable: bool = True) -> None:
        """Rename file `name` (made by `temp`) onto the target."""
        os.replace(name, self.leaf, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        if durable:
            with contextlib.suppress(OSError):
                os.fsync(self.dir_fd)

    def remove(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=self.dir_fd)

    def open_own(self, name: str, flags: int = os.O_RDONLY) -> tuple[BinaryIO, os.stat_result] | None:
        """File `name` in the directory when it is a regular file of the user's own, or root's with `root_ok`
        (never through a link)."""
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.dir_fd)
        except OSError:
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid not in ((os.geteuid(), 0) if self.root_ok else (os.geteuid(),)):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb+" if flags & os.O_RDWR else "rb"), info


def _is_terminal(handle: object) -> bool:
    try:
        return bool(handle.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # closed, or no descriptor (a test's capture)
        return False


def on_terminal(path: Path | str) -> bool:
    """Whether `path` names a standard stream (`-`, /dev/stdout, /dev/stderr) that is a terminal."""
    stream = STANDARD_STREAMS.get(str(path))
    return stream is not None and _is_terminal(getattr(sys, stream))


def refuse_terminal(path: Path | str, handle: object = None) -> None:
    """Binary output (an archive, an object's bytes) is never written to a terminal, as tar refuses to write an
    archive there: the bytes would reach it raw (a stored object's OSC 52 sets the clipboard, a gzip stream is
    noise). UsageError, one line, when `path` is a standard stream (`-`, /dev/stdout) on a terminal, or `handle`
    (the device `path` names, opened) is one."""
    stream = STANDARD_STREAMS.get(str(path))
    if handle is None and stream is not None:
        handle = getattr(sys, stream)
    if _is_terminal(handle):
        from rlark_tui.text.sinks import one_line

        where = f"the terminal on {stream}" if stream is not None else f"the terminal {one_line(str(path))}"
        raise UsageError(f"refusing to write binary output to {where}: redirect it to a file or a pipe, or name a file")


def said_beside(path: Path | str) -> TextIO:
    """Where a command's own lines go when it writes its output to `path`: stderr when that is stdout, so stdout
    holds the output alone (`rlark bundle J -o - | tar tz`), else stdout."""
    return sys.stderr if STANDARD_STREAMS.get(str(path)) == "stdout" else sys.stdout


def _standard(stream: str) -> BinaryIO:
    """The bytes side of our stdout or stderr; one the process was started without (`>&-`) is WriteFailed, one
    line, as any write of a command's output to it is (it ended `rlark bundle J -o -` in a crash report)."""
    buffer = getattr(getattr(sys, stream, None), "buffer", None)
    if buffer is None:
        raise WriteFailed(f"cannot write the output to {stream}: it is closed")
    return buffer


def _write_stream(stream: str, data: str | bytes) -> None:
    # Through our own stdout/stderr: the shell may have redirected it to a file, which a second open would
    # replace, truncate or overwrite at the wrong offset.
    out = getattr(sys, stream)
    if not isinstance(data, str):
        refuse_terminal(f"/dev/{stream}")
    payload = _payload(data, _is_terminal(out))
    buffer = _standard(stream)
    out.flush()
    buffer.write(payload)
    out.flush()


def write_file(path: Path | str, data: str | bytes, *, named: bool = False, durable: bool = True) -> None:
    """Replace `path` with `data` atomically (see the module): 0600, or the ordinary mode when `named`.

    `durable=False` skips the fsyncs (still atomic against a killed process, not against power loss): for
    state rewritten often and rebuilt anyway. Raises UnsafeDestination or OSError."""
    stream = STANDARD_STREAMS.get(str(path))
    if stream is not None:
        _write_stream(stream, data)
        return
    with atomic_output(path, named=named, durable=durable, text=isinstance(data, str)) as out:
        out.write(_payload(data, _is_terminal(out)))


def _payload(data: str | bytes, terminal: bool) -> bytes:
    """The bytes to write of `data`: text as UTF-8, cleaned for a terminal."""
    if not isinstance(data, str):
        return data
    from rlark_tui.text.sinks import utf8  # here: `rlark status --tmux` writes its lock (start-up time)
    if terminal:
        from rlark_tui.text.sanitize import clean
        data = clean(data)
    return utf8(data)


def write_private(path: Path | str, data: str | bytes, *, durable: bool = True) -> None:
    """A file for rlark and the user alone (state, records, drafts, keys, tokens): mode 0600."""
    write_file(path, data, durable=durable)


def write_named(path: Path | str, data: str | bytes, *, durable: bool = True) -> None:
    """A file at a path the user named (`--output`, a saved log, an export): the ordinary mode."""
    write_file(path, data, named=True, durable=durable)


@contextlib.contextmanager
def atomic_output(path: Path | str, *, named: bool = False, durable: bool = True,
                  text: bool = False) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content into; put in place when the block ends without an exception,
    removed when it raises. /dev/stdout (`-`), a FIFO or a device the user named is written through; a terminal
    only for `text`, which the caller cleans (refuse_terminal). No room for it (ENOSPC, EDQUOT, EFBIG) or a
    read-only file system is WriteFailed, one line."""
    stream = STANDARD_STREAMS.get(str(path))
    try:
        if stream is not None:
            out = getattr(sys, stream)
            if not text:
                refuse_terminal(path)
            buffer = _standard(stream)
            out.flush()
            yield buffer
            buffer.flush()
            return
        with Destination(path, named=named) as dest:
            if dest.through:
                with dest.open_through(text) as handle:
                    yield handle
                return
            name, handle = dest.temp()
            try:
                with handle:
                    yield handle
                    handle.flush()
                    if durable:
                        os.fsync(handle.fileno())
                dest.commit(name, durable)
            except BaseException:
                dest.remove(name)
                raise
    except OSError as exc:
        if exc.errno not in _NO_ROOM or isinstance(exc, RlarkError):
            raise
        raise WriteFailed(f"cannot write {path}: {exc.strerror}") from None


def open_append(path: Path | str) -> BinaryIO:
    """A private log (0600) opened to append, in a directory checked as for any write, never through a link."""
    with Destination(path) as dest:
        if dest.through:
            return dest.open_through()
        return os.fdopen(os.open(dest.leaf, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 0o600, dir_fd=dest.dir_fd), "ab")


UPDATE_WAIT = 2.0
"""How long `updating` waits for another process's update of the same file (each takes milliseconds)."""


@contextlib.contextmanager
def updating(path: Path | str) -> Iterator[None]:
    """Held while a file rlark keeps is read, changed and written back (the acknowledgements): an exclusive flock of
    `<path>.lock` beside it, made as the one writer makes a file (a directory of the user's own, no link followed,
    0600). Two rlark on one state dir (two TUIs, a TUI and rlark watch) then each add to what the other wrote, where
    each wrote back what it had read before the other's write, and one's changes were lost. A lock that cannot be
    made (the directory refused or read-only) is none: the write that follows says why."""
    import fcntl

    try:
        with Destination(f"{os.fspath(path)}.lock") as dest:
            fd = -1 if dest.through else os.open(dest.leaf, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                                                 0o600, dir_fd=dest.dir_fd)
    except (OSError, RlarkError):
        fd = -1
    try:
        deadline = time.monotonic() + UPDATE_WAIT
        while fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:  # held by a process stopped mid-update (^Z): go on without it
                    break
                time.sleep(0.01)
        yield
    finally:
        if fd >= 0:
            os.close(fd)


def remove_quietly(path: Path | str) -> None:
    """Delete `path` if it is there; a missing file or a failed delete is not an error."""
    try:
        os.unlink(path)
    except OSError:
        pass


READ_IDLE_SECONDS = 60.0
"""A pipe or FIFO that sends nothing for this long ends the read (a terminal is waited for)."""
READ_TOTAL_SECONDS = 300.0
"""A pipe or FIFO not read to its end within this long ends the read: one that sends a byte just inside each
READ_IDLE_SECONDS (another user's FIFO planted at a draft's name in /tmp) would take months to reach a bound."""


class _PipeTooSlow(TimeoutError):
    """A pipe not read to its end within READ_TOTAL_SECONDS."""


def _read_bounded(fd: int, limit: int, idle: float | None) -> bytes:
    """At most `limit + 1` bytes of `fd`; a pipe silent for `idle` seconds raises TimeoutError, one not read to its
    end within READ_TOTAL_SECONDS _PipeTooSlow."""
    import select
    chunks: list[bytes] = []
    size = 0
    poller = select.poll() if idle is not None else None
    if poller is not None:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    deadline = time.monotonic() + READ_TOTAL_SECONDS
    while size <= limit:
        if poller is not None and idle is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _PipeTooSlow
            if not poller.poll(min(idle, left) * 1000):
                raise _PipeTooSlow if left <= idle else TimeoutError
        chunk = os.read(fd, min(1 << 16, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_input(path: str, what: str, limit: int, *, idle: float | None = None) -> bytes:
    """The bytes of a user-named input ('-' = stdin), at most `limit`: a regular file, stdin, a pipe or a FIFO
    (these also ended by `idle` seconds without a byte; a terminal is waited for), or a device read up to the
    bound. UsageError (exit 2) with one line when it cannot be read, or naming the bound it passed."""
    shown = path
    idle = READ_IDLE_SECONDS if idle is None else idle
    try:
        if path == "-":
            if sys.stdin is None:  # started without one (`<&-`)
                raise OSError(errno.EBADF, "stdin is closed")
            try:
                fd, close = sys.stdin.fileno(), False
            except (AttributeError, OSError, ValueError):  # a stream without a descriptor (replaced in-process)
                data = sys.stdin.buffer.read(limit + 1)
                if len(data) > limit:
                    raise UsageError(f"{what} {shown}: {_larger_than(limit)}") from None
                return data
        else:
            fd, close = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK), True
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise UsageError(f"{what} {shown}: {_larger_than(limit)}")
            waits = stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)
            if close:
                os.set_blocking(fd, True)
            data = _read_bounded(fd, limit, idle if waits and not os.isatty(fd) else None)
        finally:
            if close:
                os.close(fd)
    except OSError as exc:
        raise _unreadable(exc, what, shown, idle) from None
    if len(data) > limit:
        raise UsageError(f"{what} {shown}: {_larger_than(limit)}")
    return data


def open_input(path: str, what: str) -> BinaryIO:
    """A user-named input too large to read into memory (a bundle), open for reading: a regular file only, opened
    without waiting (a FIFO another user planted at the name, or a device, is refused, never waited on). UsageError
    (exit 2) with one line when it is not one; the caller bounds what it reads."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise _unreadable(exc, what, path) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UsageError(f"{what} {path}: {_not_regular(info.st_mode)}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def file_problem(path: str) -> str:
    """Why `path` (through links) names no regular file another reader may open as one, in the words
    open_input refuses it with ('no such file', 'not a regular file (a FIFO)'); '' when it does. Not opened: a
    FIFO another user planted is judged, never waited on."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return _why_unreadable(exc)
    return "" if stat.S_ISREG(info.st_mode) else _not_regular(info.st_mode)


def _not_regular(mode: int) -> str:
    return "is a directory" if stat.S_ISDIR(mode) else f"not a regular file ({_kind(mode)})"


def _unreadable(exc: OSError, what: str, shown: str, idle: float | None = None) -> UsageError:
    """The one line (exit 2) for a user-named input that could not be opened or read; `idle`: a pipe's bound."""
    return UsageError(f"{what} {shown}: {_why_unreadable(exc, idle)}")


def _why_unreadable(exc: OSError, idle: float | None = None) -> str:
    if isinstance(exc, FileNotFoundError):
        why = "no such file"
    elif isinstance(exc, IsADirectoryError):
        why = "is a directory"
    elif isinstance(exc, PermissionError):
        why = "permission denied"
    elif isinstance(exc, _PipeTooSlow):
        why = f"not read to its end within {READ_TOTAL_SECONDS:g} s (the bound of a pipe)"
    elif isinstance(exc, TimeoutError) and idle is not None:
        why = f"nothing came for {idle:g} s (the bound of a pipe)"
    else:
        why = f"cannot read ({exc.strerror or exc})"
    return why


def _kind(mode: int) -> str:
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def read_settings(path: Path | str, what: str, limit: int, *, refused: str = "not read") -> bytes:
    """A settings file the user keeps for rlark (the config file: the gateway, rlark-server, Ray addresses and
    tokens, and alert thresholds rlark acts on; a kubeconfig whose exec plugin rlark would run), read only when no
    one else could have written it, as ssh reads its own: read_own's checks (a link on the way only where no one
    else may write, a regular file, at most `limit` bytes), the file and its directory the user's own or root's
    (an administrator's shared kubeconfig, as ssh trusts root's files), and no group or other may write either. FileNotFoundError when it is not there; otherwise UsageError (exit 2) in
    one line, `<what> <path>: <refused>: <why>`."""
    try:
        return read_own(path, limit, closed=True)
    except FileNotFoundError:
        raise
    except OSError as exc:
        from rlark_tui.text.sinks import one_line

        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, "not there", str(path)) from None  # nothing to believe
        why = exc.strerror or str(exc)
        if isinstance(exc, PermissionError):
            why += " (another user could have written it: keep it yours, mode 600, in a directory of your own)"
        raise UsageError(f"{what} {one_line(str(path))}: {refused}: {why}") from None


def keep_newest(folder: Path, suffix: str, count: int) -> None:
    """Delete the oldest (by modification time) of the files rlark keeps in `folder` whose names end with `suffix`,
    past the newest `count`: regular files of the user's own, found without following a link; a link, another
    user's file or a folder is left as it is, and a folder that cannot be read is no error (kept evidence of Jobs a
    control plane makes and deletes under new names would otherwise grow without end)."""
    uid = os.getuid()
    try:
        with os.scandir(folder) as entries:
            found = []
            for entry in entries:
                if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if info.st_uid == uid:
                        found.append((info.st_mtime_ns, entry.name))
    except OSError:
        return
    found.sort()
    for _, name in found[:max(0, len(found) - count)]:
        remove_quietly(folder / name)


def list_own(folder: Path, pattern: str) -> list[Path]:
    """The files in `folder` (one rlark keeps) whose names match the glob `pattern`, sorted by name; none when the
    folder is not there or cannot be read (a state directory of another user's: HOME kept by sudo -u, a shared
    RLARK_STATE_DIR). Each is then read with read_own, which judges the file itself."""
    try:
        return sorted(path for path in folder.glob(pattern) if path.is_file())
    except OSError:
        return []


def read_own(path: Path | str, limit: int, *, closed: bool = False) -> bytes:
    """A file rlark keeps for itself (its state, caches, records, kept evidence, view settings, the autosaved
    draft), read back as the one writer wrote it: found by the same walk (a link on the way only where no one else
    may write), in a directory of the user's own, a regular file of the user's own, at most `limit` bytes, opened
    without following a link or waiting on a FIFO. FileNotFoundError when it is not there; otherwise an OSError
    whose text says why it was not read (another user's file, directory or link, a FIFO or device, past `limit`),
    so a file planted in a shared state directory is never believed, never hangs the read and never fills memory.
    A file of the user's own that a group (not the user's private one) or others may write is refused too: rlark
    writes its files 0600, and another user could rewrite one an older rlark or a umask of 000 left (forged
    acknowledgements silenced an alert). With `closed` (read_settings), the file and its directory may be root's."""
    try:
        where = Destination(path, create_dirs=False, root_ok=closed)
    except UnsafeDestination as exc:
        raise PermissionError(errno.EACCES, str(exc).partition(": ")[2].removesuffix("; choose a directory of your own"),
                              str(path)) from None
    with where:
        if where.through:
            raise PermissionError(errno.EACCES, "not a regular file", str(path))
        opened = where.open_own(where.leaf, os.O_RDONLY | os.O_NONBLOCK)
        if opened is None:
            os.stat(where.leaf, dir_fd=where.dir_fd, follow_symlinks=False)  # FileNotFoundError when it is not there
            raise PermissionError(errno.EACCES, "not a regular file of your own" + (" or root's" if closed else ""),
                                  str(path))
        handle, info = opened
        if not _closed_to_others(info, handle.fileno()):  # rlark writes 0600: another user rewrote this one in place
            handle.close()
            raise PermissionError(errno.EACCES, "others may write it", str(path))
        with handle:
            if info.st_size > limit:
                raise OSError(errno.EFBIG, f"{_larger_than(limit)}", str(path))
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{_larger_than(limit)}", str(path))
    return data
