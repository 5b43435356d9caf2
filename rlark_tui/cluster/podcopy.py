"""Files and directories in and out of a Pod's `main`, like `kubectl cp`: tar over exec.

Upload: a tar of the local path, named as the destination, unpacked by `tar -xmf - -C <dir>` in the Pod. The tar is
built here walking the source with directory descriptors and O_NOFOLLOW: nothing outside the named source is read
(a link is sent as a link, and only when it points inside the source; devices and FIFOs are refused).
Download: `tar cf - -C <dir> <name>` in the Pod, whatever that `tar` really sends, is spooled in a private (0700)
directory under a size bound (`--max-size`; an archive that never ends stops there, one line). Only then is any
entry judged, against the destination tree as it will be once EVERY entry has arrived: a path given twice (but a
directory), a path through a link, a symlink that resolves outside (followed through the final tree and what is on
disk, as the kernel would, so `a -> p/..` with a later `p -> .` is seen to leave it), a hard link to anything but a
file extracted before it, devices and FIFOs refuse the whole archive before anything is written. The destination's
directory is checked and held as for any write (rlark_tui.local.fsutil: the user's own, writable by nobody else);
extraction then walks it with directory descriptors and O_NOFOLLOW, so a link already on disk, or swapped in
meanwhile, is never followed, and each regular file is written to an unpredictable temporary name and renamed.
A download to `-` (stdout) writes the judged archive there, never to a terminal.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import secrets
import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from rlark_tui.cluster.podexec import CHUNK, ExecFailed, ExecSession, data_plane_client, run_command
from rlark_tui.errors import RlarkError
from rlark_tui.local import fsutil
from rlark_tui.local.archives import open_tar
from rlark_tui.model import keys
from rlark_tui.model.quantity import size_text
from rlark_tui.text.sinks import one_line

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

COPY_TIMEOUT = 3600.0
MAX_ARCHIVE = 64 << 30
"""Default bound of the archive a download spools (64 GiB; `rlark cp --max-size`)."""
MAX_ENTRIES = 200_000
"""Entries of one archive at most: each is held in memory until every entry has arrived (about 1 KB each), and a
Pod's tar can send a million empty ones in 512 MB."""


class CopyRefused(RlarkError):
    """The copy cannot be done safely or at all (an escaping archive path, a missing source)."""


def upload(access: ClusterAccess, cluster: str, pod: str, local: str, remote: str,
           namespace: str = keys.WORKLOAD_NAMESPACE) -> int:
    """Copy a local file or directory to `remote` in the Pod (into it, when it is a directory); bytes sent.
    The tar is spooled to a private temporary file and streamed, so its size does not matter."""
    if not os.path.exists(local):
        raise CopyRefused(f"{local}: no such file or directory")
    remote = posixpath.normpath(remote) if remote not in ("", ".") else "."
    check = run_command(access, cluster, pod, ["test", "-d", remote], namespace=namespace)
    if check.exit_code == 0:
        remote = posixpath.join(remote, os.path.basename(os.path.normpath(local)))
    with _spool() as spool:
        with tarfile.open(fileobj=spool, mode="w") as tar:
            pack(tar, local, posixpath.basename(remote) or ".")
        size = spool.tell()
        spool.seek(0)
        code, errors = _exec_stream(access, cluster, pod, ["tar", "-xmf", "-", "-C", posixpath.dirname(remote) or "."],
                                    namespace, stdin=spool)
    if code != 0:
        raise CopyRefused(f"copy to {pod}:{remote} failed: {_last_line(errors, code)}")
    return size


@contextlib.contextmanager
def _spool() -> Iterator[IO[bytes]]:
    """A temporary file in a private (0700) directory of its own, both gone afterwards."""
    folder = fsutil.private_spool_dir()
    try:
        with tempfile.TemporaryFile(dir=folder) as spool:
            yield spool
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def download(access: ClusterAccess, cluster: str, pod: str, remote: str, local: str,
             namespace: str = keys.WORKLOAD_NAMESPACE, max_bytes: int = MAX_ARCHIVE) -> list[str]:
    """Copy a file or directory from the Pod to `local` (into it, when it is a directory); paths written. The
    archive is spooled up to `max_bytes`, then checked whole, then extracted."""
    remote = posixpath.normpath(remote)
    name = posixpath.basename(remote)
    if not name or name in (".", ".."):
        raise CopyRefused(f"cannot copy {remote!r}: name a file or directory")
    if os.path.isdir(local):
        local = os.path.join(local, name)
    with _spool() as spool:
        code, errors = _exec_stream(access, cluster, pod, ["tar", "cf", "-", "-C", posixpath.dirname(remote) or "/",
                                                           name], namespace, out=spool, limit=max_bytes,
                                    what=f"copy from {pod}:{remote}")
        if code != 0:
            raise CopyRefused(f"copy from {pod}:{remote} failed: {_last_line(errors, code)}")
        spool.seek(0)
        if local in fsutil.STANDARD_STREAMS:
            return stream(spool, name, local, max_bytes, f"{pod}:{remote}")
        return unpack(spool, name, local, max_bytes, f"{pod}:{remote}")


def stream(spool: IO[bytes], name: str, local: str, max_bytes: int, source: str) -> list[str]:
    """Write the archive `spool` holds to `local`, a standard stream (`-`: stdout, as `docker cp CONTAINER:/path -`
    takes it), once its entries are judged as unpack judges them (against an empty destination); their names.
    Never to a terminal (fsutil.atomic_output refuses it: the Pod's bytes would reach it raw)."""
    try:
        with open_tar(spool) as tar:
            members = safe_members(tar, name, None, max_bytes)
    except tarfile.TarError as exc:
        raise CopyRefused(f"copy from {source}: not an archive rlark takes ({one_line(str(exc))}); nothing was "
                          "written") from None
    spool.seek(0)
    with fsutil.atomic_output(local, named=True) as out:
        shutil.copyfileobj(spool, out, CHUNK)
    return [member.name for member, _ in members]


def unpack(spool: IO[bytes], name: str, local: str, max_bytes: int, source: str) -> list[str]:
    """extract the archive `spool` holds (read by local.archives.open_tar, its headers bounded); one line, not a
    traceback, when it is no archive rlark reads."""
    try:
        with open_tar(spool) as tar:
            return extract(tar, name, local, max_bytes)
    except tarfile.TarError as exc:
        raise CopyRefused(f"copy from {source}: not an archive rlark takes ({one_line(str(exc))}); nothing was "
                          "written") from None


def _exec_stream(access: ClusterAccess, cluster: str, pod: str, argv: list[str], namespace: str, *,
                 stdin: IO[bytes] | None = None, out: IO[bytes] | None = None, limit: int | None = None, what: str = "") -> tuple[int, bytes]:
    """Run `argv` with `stdin` (a file, sent in chunks, then closed) and its stdout into `out` (at most `limit`
    bytes: CopyRefused past it); (exit code, the start of stderr)."""
    session = ExecSession.open(data_plane_client(access, cluster), pod, argv, namespace=namespace,
                               stdin=stdin is not None, source=f"data plane {cluster}")
    errors = bytearray()
    taken = [0]

    def take(frames: list[tuple[int, bytes]]) -> None:
        for channel, data in frames:
            if channel == 1 and out is not None:
                taken[0] += len(data)
                if limit is not None and taken[0] > limit:
                    raise CopyRefused(f"{what} stopped: the archive passed the bound of {size_text(limit)} "
                                      "(--max-size); nothing was written")
                out.write(data)
            elif channel == 2 and len(errors) < CHUNK:
                errors.extend(data)

    deadline = time.monotonic() + COPY_TIMEOUT
    try:
        if stdin is not None:
            while chunk := stdin.read(CHUNK):
                session.write(chunk)
                take(session.read(timeout=0))
            session.close_stdin()
        while session.is_open and time.monotonic() < deadline:
            take(session.read(timeout=1.0))
        return session.exit_code(), bytes(errors)
    except ExecFailed as exc:
        raise CopyRefused(str(exc)) from None
    finally:
        session.close()


def _last_line(errors: bytes, code: int) -> str:
    lines = errors.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit code {code}"


MAX_LINK_DEPTH = 40
_NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


NAME_MAX = 255
"""The longest name of one path component, in bytes (Linux): a longer one is refused before anything is written."""


def _refuse(member: tarfile.TarInfo, why: str) -> CopyRefused:
    link = f" -> {member.linkname!r}" if member.issym() or member.islnk() else ""
    kind = "link" if link else "path" if why.startswith(("it is outside", "it escapes")) else "entry"
    return CopyRefused(f"refusing archive {kind} {member.name!r}{link}: {why}")


def _parts(path: str) -> list[str] | None:
    """The components of a relative archive path; None when it is absolute or holds `..`."""
    if path.startswith("/"):
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return None if ".." in parts else parts


class _Tree:
    """The destination as it will be once extracted: what the archive made so far (path -> kind, link target)
    over what is on disk already (read without following anything)."""

    def __init__(self, root: str | None) -> None:
        self.root = root
        """None: a destination with nothing in it (a stream)."""
        self.made: dict[tuple[str, ...], tuple[str, str]] = {}

    def kind(self, parts: tuple[str, ...]) -> tuple[str, str] | None:
        if parts in self.made or self.root is None:
            return self.made.get(parts)
        path = os.path.join(self.root, *parts) if parts else self.root
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            return "link", os.readlink(path)
        return ("dir" if stat.S_ISDIR(info.st_mode) else "file"), ""

    def resolve(self, base: tuple[str, ...], target: str, depth: int = 0) -> tuple[str, ...] | None:
        """Where `target` (a link's text, relative to directory `base`) leads inside the tree, following links as
        the kernel would; None when it leaves the tree (or loops)."""
        if target.startswith("/") or depth > MAX_LINK_DEPTH:
            return None
        where = list(base)
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not where:
                    return None
                where.pop()
                continue
            where.append(part)
            found = self.kind(tuple(where))
            if found is not None and found[0] == "link":
                resolved = self.resolve(tuple(where[:-1]), found[1], depth + 1)
                if resolved is None:
                    return None
                where = list(resolved)
        return tuple(where)


def safe_members(tar: tarfile.TarFile, name: str, local: str | None,
                 max_bytes: int = MAX_ARCHIVE) -> list[tuple[tarfile.TarInfo, tuple[str, ...]]]:
    """(entry, its path under `local` (None: an empty destination) as components) for every entry, `name` mapped to
    `local`; refuses the whole archive (CopyRefused naming the entry) when, judged against the tree once every entry
    has arrived, an entry's path or link leaves `local`, goes through a link or a file, is given twice (but a
    directory), hard links to anything but a file extracted before it, is not a file, directory or link, has a name
    longer than NAME_MAX or is a link to nothing; or when the files come to more than `max_bytes`, as they are
    written (a sparse file's holes are written as zeros: 10 KB of archive can claim a TiB), or the entries are more
    than MAX_ENTRIES."""
    tree = _Tree(os.path.abspath(local) if local is not None else None)
    top = _parts(name) or []
    out = []
    written = 0
    for count, member in enumerate(tar, 1):
        if count > MAX_ENTRIES:
            raise _refuse(member, f"the archive has more than {MAX_ENTRIES:,} entries; copy a part of it")
        parts = _parts(member.name)
        if parts is None or parts[:len(top)] != top:
            raise _refuse(member, f"it is outside {name!r}")
        rel = tuple(parts[len(top):])
        if any(len(os.fsencode(part)) > NAME_MAX for part in parts):
            raise _refuse(member, f"a name in its path is longer than {NAME_MAX} bytes")
        if member.issym() and not member.linkname:
            raise _refuse(member, "a link to nothing")
        if member.isdir():
            kind = ("dir", "")
        elif member.issym():
            if not rel:
                raise _refuse(member, "the copied path itself is a link")
            kind = ("link", member.linkname)
        elif member.isfile() or member.islnk():
            kind = ("file", "")
            written += member.size if member.isfile() else 0
            if written > max_bytes:
                raise _refuse(member, f"its files come to more than the bound of {size_text(max_bytes)} "
                                      "(--max-size); nothing was written")
        else:
            raise _refuse(member, "not a file, directory or link")
        existing = tree.made.get(rel)
        if existing is not None and not (existing[0] == kind[0] == "dir"):
            raise _refuse(member, "the archive gives this path twice"
                          + (" (it would replace a directory of the archive)" if "dir" in (existing[0], kind[0])
                             else ""))
        tree.made[rel] = kind
        out.append((member, rel))
    files_before: set[tuple[str, ...]] = set()
    for member, rel in out:  # every entry has arrived: each is judged against the final tree
        for depth in range(len(rel)):
            found = tree.kind(rel[:depth])
            if found is not None and found[0] != "dir":
                raise _refuse(member, f"it goes through {'a link' if found[0] == 'link' else 'a file'} "
                                      f"({'/'.join((name, *rel[:depth]))})")
        if member.issym() and tree.resolve(rel[:-1], member.linkname) is None:
            raise _refuse(member, "it escapes the destination")
        if member.islnk():
            linked = _parts(member.linkname)
            source = tuple(linked[len(top):]) if linked is not None and linked[:len(top)] == top else None
            if source is None or source not in files_before:
                raise _refuse(member, "it escapes the destination (a hard link must name a file extracted before it)")
        if member.isfile() or member.islnk():
            files_before.add(rel)
    return out


def extract(tar: tarfile.TarFile, name: str, local: str, max_bytes: int = MAX_ARCHIVE) -> list[str]:
    """Unpack the checked entries of `tar` (top entry `name`) as `local`, its files at most `max_bytes` in all;
    the paths written. Every step opens the next directory relative to the last with O_NOFOLLOW: a link on disk
    stops the copy, never is followed."""
    members = safe_members(tar, name, local, max_bytes)
    root = os.path.abspath(local)
    parent = os.path.dirname(root)
    written = []
    try:
        with fsutil.Destination(root, named=True, create_dirs=False, directory_ok=True) as dest:
            parent_fd = os.dup(dest.dir_fd)
            root_name = dest.leaf
    except OSError as exc:
        raise CopyRefused(f"cannot write {local}: {exc.strerror or exc}") from None
    try:
        for member, rel in members:
            path = (root_name, *rel)
            directory = _walk(parent_fd, path[:-1], member, name)
            try:
                _place(tar, member, rel, directory, path[-1], parent_fd, root_name, name)
            except OSError as exc:
                raced = exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST, errno.ENOENT)
                raise CopyRefused(f"stopped at archive entry {member.name!r}: {exc.strerror or exc}"
                                  + (" (the destination changed while being written)" if raced else "")) from None
            finally:
                os.close(directory)
            written.append(os.path.join(parent, *path))
    finally:
        os.close(parent_fd)
    return written


def _walk(start_fd: int, parts: tuple[str, ...], member: tarfile.TarInfo, name: str) -> int:
    """A descriptor of directory `parts` under `start_fd`, made where missing, never through a link."""
    fd = os.dup(start_fd)
    for part in parts:
        try:
            nxt = os.open(part, _NOFOLLOW_DIR, dir_fd=fd)
        except FileNotFoundError:
            os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, _NOFOLLOW_DIR, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _refuse(member, f"{part!r} on the way is a link or not a directory on disk") from None
            raise CopyRefused(f"cannot write {member.name!r}: {exc.strerror}") from None
        os.close(fd)
        fd = nxt
        why = fsutil.why_not_own(fd)
        if why is not None:
            os.close(fd)
            raise _refuse(member, f"{part!r} on the way is not yours to write in ({why})")
    return fd


def _umask() -> int:
    """This process's umask, as tar applies it for a user who is not root: a file the Pod marked 0777 is not
    left writable by the bastion's other users. Read from /proc (os.umask would change it for every thread
    while it is read); 0o022 where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    value = line.split(":", 1)[1].strip()
                    if len(value) == 4 and all(c in "01234567" for c in value):
                        return int(value, 8)
    except OSError:
        pass
    return 0o022


def _place(tar: tarfile.TarFile, member: tarfile.TarInfo, rel: tuple[str, ...], directory: int, leaf: str, parent_fd: int, root_name: str, name: str) -> None:
    if member.isdir():
        try:
            os.mkdir(leaf, 0o755, dir_fd=directory)
        except FileExistsError:
            os.close(_walk(directory, (leaf,), member, name))
        return
    try:
        info = os.stat(leaf, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        info = None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise _refuse(member, "a directory is there on disk")
        os.unlink(leaf, dir_fd=directory)
    if member.issym():
        os.symlink(member.linkname, leaf, dir_fd=directory)
    elif member.islnk():
        source = (root_name, *(_parts(member.linkname) or [])[len(_parts(name) or []):])
        source_dir = _walk(parent_fd, source[:-1], member, name)
        try:
            os.link(source[-1], leaf, src_dir_fd=source_dir, dst_dir_fd=directory, follow_symlinks=False)
        finally:
            os.close(source_dir)
    else:
        src = tar.extractfile(member)
        if src is None:  # safe_members let only files, directories and links through
            raise _refuse(member, "not a file, directory or link")
        temp = f".{fsutil.name_head(leaf)}.{secrets.token_hex(8)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=directory)
        try:
            with os.fdopen(fd, "wb") as dst, src:
                while chunk := src.read(CHUNK):
                    dst.write(chunk)
                os.fchmod(dst.fileno(), member.mode & 0o777 & ~_umask())
            os.replace(temp, leaf, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=directory)
            raise


def pack(tar: tarfile.TarFile, local: str, arcname: str) -> None:
    """Add `local` (as `arcname`) and everything under it, read through directory descriptors with O_NOFOLLOW:
    links go in as links when they point inside `local` (else CopyRefused), devices and FIFOs are refused."""
    root = os.path.realpath(local)
    info = os.lstat(root)
    if stat.S_ISDIR(info.st_mode):
        fd = os.open(root, _NOFOLLOW_DIR)
        try:
            _pack_dir(tar, fd, arcname, (), local, _Tree(root))
        finally:
            os.close(fd)
        return
    parent = os.open(os.path.dirname(root), _NOFOLLOW_DIR)
    try:
        _pack_entry(tar, parent, os.path.basename(root), arcname, (), local, None)
    finally:
        os.close(parent)


def _pack_dir(tar: tarfile.TarFile, fd: int, arcname: str, rel: tuple[str, ...], local: str, tree: _Tree | None) -> None:
    info = tarfile.TarInfo(arcname)
    stats = os.fstat(fd)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, stats.st_mode & 0o7777, int(stats.st_mtime)
    tar.addfile(info)
    for entry in sorted(os.listdir(fd)):
        _pack_entry(tar, fd, entry, f"{arcname}/{entry}", (*rel, entry), local, tree)


def _pack_entry(tar: tarfile.TarFile, dir_fd: int, entry: str, arcname: str, rel: tuple[str, ...], local: str,
                tree: _Tree | None) -> None:
    shown = os.path.join(local, *rel) if rel else local
    stats = os.stat(entry, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(stats.st_mode):
        target = os.readlink(entry, dir_fd=dir_fd)
        if tree is None or tree.resolve(rel[:-1], target) is None:
            raise CopyRefused(f"refusing to send link {shown} -> {target}: it points outside {local}")
        info = tarfile.TarInfo(arcname)
        info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, int(stats.st_mtime)
        tar.addfile(info)
    elif stat.S_ISDIR(stats.st_mode):
        fd = os.open(entry, _NOFOLLOW_DIR, dir_fd=dir_fd)
        try:
            _pack_dir(tar, fd, arcname, rel, local, tree)
        finally:
            os.close(fd)
    elif stat.S_ISREG(stats.st_mode):
        # O_NONBLOCK: a FIFO swapped in since the look above is opened without waiting for a writer, then refused
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (stats.st_dev, stats.st_ino):
                raise CopyRefused(f"refusing to send {shown}: it changed while being read")
            os.set_blocking(fd, True)
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = opened.st_size, opened.st_mode & 0o7777, int(opened.st_mtime)
            tar.addfile(info, handle)
    else:
        raise CopyRefused(f"refusing to send {shown}: not a file, directory or link")
