"""Files and directories in and out of a Pod's `main`, like `kubectl cp`: tar over exec.

Upload: a tar of the local path, named as the destination, unpacked by `tar -xmf - -C <dir>` in the Pod.
Download: `tar cf - -C <dir> <name>` in the Pod, unpacked here entry by entry; an entry whose path or link
would land outside the destination, or that is not a file, directory or link, is refused before anything of it
is written.
"""

from __future__ import annotations

import os
import posixpath
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
            tar.add(local, arcname=posixpath.basename(remote) or ".", recursive=True)
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


def safe_members(tar: tarfile.TarFile, name: str, local: str) -> list[tuple[tarfile.TarInfo, str]]:
    """(entry, local path) for every entry, `name` mapped to `local`; refuses the whole archive when an entry's
    path or link target leaves `local`, or the entry is not a file, directory or link."""
    root = os.path.abspath(local)
    out = []
    for member in tar.getmembers():
        path = posixpath.normpath(member.name)
        if path != name and not path.startswith(name + "/"):
            raise CopyRefused(f"refusing archive path {member.name!r}: it is outside {name!r}")
        target = os.path.abspath(os.path.join(root, path[len(name):].lstrip("/")))
        if os.path.commonpath([root, target]) != root:
            raise CopyRefused(f"refusing archive path {member.name!r}: it escapes the destination")
        if member.issym() or member.islnk():
            base = os.path.dirname(target) if member.issym() else root
            link = os.path.abspath(os.path.join(base, member.linkname if member.issym() else
                                                member.linkname[len(name):].lstrip("/")))
            if posixpath.isabs(member.linkname) or os.path.commonpath([root, link]) != root:
                raise CopyRefused(f"refusing archive link {member.name!r} -> {member.linkname!r}: it escapes the "
                                  "destination")
        elif not (member.isfile() or member.isdir()):
            raise CopyRefused(f"refusing archive entry {member.name!r}: not a file, directory or link")
        out.append((member, target))
    return out


def extract(tar: tarfile.TarFile, name: str, local: str) -> list[str]:
    """Unpack the checked entries of `tar` (top entry `name`) as `local`; the paths written."""
    members = safe_members(tar, name, local)
    written = []
    for member, target in members:
        if member.isdir():
            os.makedirs(target, exist_ok=True)
        elif member.issym():
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.lexists(target):
                os.unlink(target)
            os.symlink(member.linkname, target)
        elif member.islnk():
            source = os.path.join(os.path.abspath(local), member.linkname[len(name):].lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.link(source, target)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as dst:
                while chunk := src.read(CHUNK):
                    dst.write(chunk)
            os.chmod(target, member.mode & 0o777)
        written.append(target)
    return written
