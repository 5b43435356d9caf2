"""Files and directories in and out of a Pod's `main`, like `kubectl cp`: tar over exec.

Upload: a tar of the local path, named as the destination, unpacked by `tar -xmf - -C <dir>` in the Pod. The tar is
built here walking the source with directory descriptors and O_NOFOLLOW: nothing outside the named source is read
(a link is sent as a link, and only when it points inside the source; devices and FIFOs are refused).
Download: `tar cf - -C <dir> <name>` in the Pod, whatever that `tar` really sends. Every entry is first resolved
against the destination tree as it will be once extracted (links included, so `s -> .` then `e1 -> s/..` is seen
to leave it); links that point outside, hard links to anything not extracted before them, paths through a link,
devices and FIFOs refuse the whole archive before anything is written. Extraction then walks the destination with
directory descriptors and O_NOFOLLOW, so a link already on disk, or swapped in meanwhile, is never followed.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
import tarfile
import tempfile
import time

from rlark_tui.cluster.podexec import CHUNK, ExecFailed, ExecSession, data_plane_client, run_command
from rlark_tui.errors import RlarkError
from rlark_tui.model import keys

COPY_TIMEOUT = 3600.0


class CopyRefused(RlarkError):
    """The copy cannot be done safely or at all (an escaping archive path, a missing source)."""


def upload(access, cluster: str, pod: str, local: str, remote: str,
           namespace: str = keys.WORKLOAD_NAMESPACE) -> int:
    """Copy a local file or directory to `remote` in the Pod (into it, when it is a directory); bytes sent.
    The tar is spooled to a private temporary file and streamed, so its size does not matter."""
    if not os.path.exists(local):
        raise CopyRefused(f"{local}: no such file or directory")
    remote = posixpath.normpath(remote) if remote not in ("", ".") else "."
    check = run_command(access, cluster, pod, ["test", "-d", remote], namespace=namespace)
    if check.exit_code == 0:
        remote = posixpath.join(remote, os.path.basename(os.path.normpath(local)))
    with tempfile.TemporaryFile() as spool:
        with tarfile.open(fileobj=spool, mode="w") as tar:
            pack(tar, local, posixpath.basename(remote) or ".")
        size = spool.tell()
        spool.seek(0)
        code, errors = _exec_stream(access, cluster, pod, ["tar", "-xmf", "-", "-C", posixpath.dirname(remote) or "."],
                                    namespace, stdin=spool)
    if code != 0:
        raise CopyRefused(f"copy to {pod}:{remote} failed: {_last_line(errors, code)}")
    return size


def download(access, cluster: str, pod: str, remote: str, local: str,
             namespace: str = keys.WORKLOAD_NAMESPACE) -> list[str]:
    """Copy a file or directory from the Pod to `local` (into it, when it is a directory); paths written."""
    remote = posixpath.normpath(remote)
    name = posixpath.basename(remote)
    if not name or name in (".", ".."):
        raise CopyRefused(f"cannot copy {remote!r}: name a file or directory")
    if os.path.isdir(local):
        local = os.path.join(local, name)
    with tempfile.TemporaryFile() as spool:
        code, errors = _exec_stream(access, cluster, pod, ["tar", "cf", "-", "-C", posixpath.dirname(remote) or "/",
                                                           name], namespace, out=spool)
        if code != 0:
            raise CopyRefused(f"copy from {pod}:{remote} failed: {_last_line(errors, code)}")
        spool.seek(0)
        with tarfile.open(fileobj=spool, mode="r:") as tar:
            return extract(tar, name, local)


def _exec_stream(access, cluster: str, pod: str, argv: list[str], namespace: str, *, stdin=None,
                 out=None) -> tuple[int, bytes]:
    """Run `argv` with `stdin` (a file, sent in chunks, then closed) and its stdout into `out`; (exit code,
    the start of stderr)."""
    session = ExecSession.open(data_plane_client(access, cluster), pod, argv, namespace=namespace,
                               stdin=stdin is not None, source=f"data plane {cluster}")
    errors = bytearray()

    def take(frames) -> None:
        for channel, data in frames:
            if channel == 1 and out is not None:
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

    def __init__(self, root: str) -> None:
        self.root = root
        self.made: dict[tuple[str, ...], tuple[str, str]] = {}

    def kind(self, parts: tuple[str, ...]) -> tuple[str, str] | None:
        if parts in self.made:
            return self.made[parts]
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


def safe_members(tar: tarfile.TarFile, name: str, local: str) -> list[tuple[tarfile.TarInfo, tuple[str, ...]]]:
    """(entry, its path under `local` as components) for every entry, `name` mapped to `local`; refuses the whole
    archive (CopyRefused naming the entry) when an entry's path or link leaves `local`, goes through a link, hard
    links to anything not extracted before it, or is not a file, directory or link."""
    tree = _Tree(os.path.abspath(local))
    top = _parts(name) or []
    out = []
    for member in tar.getmembers():
        parts = _parts(member.name)
        if parts is None or parts[:len(top)] != top:
            raise _refuse(member, f"it is outside {name!r}")
        rel = tuple(parts[len(top):])
        for depth in range(len(rel)):
            found = tree.kind(rel[:depth])
            if found is not None and found[0] != "dir":
                raise _refuse(member, f"it goes through {'a link' if found[0] == 'link' else 'a file'} "
                                      f"({'/'.join((name, *rel[:depth]))})")
        existing = tree.made.get(rel)
        if member.isdir():
            kind = ("dir", "")
        elif member.issym():
            if not rel:
                raise _refuse(member, "the copied path itself is a link")
            if tree.resolve(rel[:-1], member.linkname) is None:
                raise _refuse(member, "it escapes the destination")
            kind = ("link", member.linkname)
        elif member.islnk():
            source = _parts(member.linkname)
            source = tuple(source[len(top):]) if source is not None and source[:len(top)] == top else None
            if source is None or tree.made.get(source, ("",))[0] != "file":
                raise _refuse(member, "it escapes the destination (a hard link must name a file extracted before it)")
            kind = ("file", "")
        elif member.isfile():
            kind = ("file", "")
        else:
            raise _refuse(member, "not a file, directory or link")
        if existing is not None and existing[0] == "dir" and kind[0] != "dir":
            raise _refuse(member, "it would replace a directory of the archive")
        tree.made[rel] = kind
        out.append((member, rel))
    return out


def extract(tar: tarfile.TarFile, name: str, local: str) -> list[str]:
    """Unpack the checked entries of `tar` (top entry `name`) as `local`; the paths written. Every step opens
    the next directory relative to the last with O_NOFOLLOW: a link on disk stops the copy, never is followed."""
    members = safe_members(tar, name, local)
    root = os.path.abspath(local)
    parent = os.path.dirname(root)
    written = []
    parent_fd = os.open(parent, _NOFOLLOW_DIR)
    try:
        for member, rel in members:
            path = (os.path.basename(root), *rel)
            directory = _walk(parent_fd, path[:-1], member, name)
            try:
                _place(tar, member, rel, directory, path[-1], parent_fd, os.path.basename(root), name)
            except OSError as exc:
                raise CopyRefused(f"stopped at archive entry {member.name!r}: {exc.strerror or exc} (the "
                                  "destination changed while being written)") from None
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
    return fd


def _place(tar, member, rel, directory: int, leaf: str, parent_fd: int, root_name: str, name: str) -> None:
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
        fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     member.mode & 0o777 | 0o200, dir_fd=directory)
        with os.fdopen(fd, "wb") as dst, tar.extractfile(member) as src:
            while chunk := src.read(CHUNK):
                dst.write(chunk)
            os.fchmod(dst.fileno(), member.mode & 0o777)


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


def _pack_dir(tar, fd: int, arcname: str, rel: tuple[str, ...], local: str, tree: _Tree) -> None:
    info = tarfile.TarInfo(arcname)
    stats = os.fstat(fd)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, stats.st_mode & 0o7777, int(stats.st_mtime)
    tar.addfile(info)
    for entry in sorted(os.listdir(fd)):
        _pack_entry(tar, fd, entry, f"{arcname}/{entry}", (*rel, entry), local, tree)


def _pack_entry(tar, dir_fd: int, entry: str, arcname: str, rel: tuple[str, ...], local: str, tree) -> None:
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
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if (opened.st_dev, opened.st_ino) != (stats.st_dev, stats.st_ino):
                raise CopyRefused(f"refusing to send {shown}: it changed while being read")
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = opened.st_size, opened.st_mode & 0o7777, int(opened.st_mtime)
            tar.addfile(info, handle)
    else:
        raise CopyRefused(f"refusing to send {shown}: not a file, directory or link")
