"""Reading and writing storage objects through the gateway's storage file API (rlark-platform.md §5,
storage_handler.go): streamed downloads from the presigned URL the gateway answers, bounded in bytes and time,
resumed after a dropped connection, with their checksums.

A download is written through rlark_tui.local.fsutil: into a directory of the user's own, to a part file of an
unpredictable name (O_EXCL, O_NOFOLLOW), renamed onto the target only once it is whole and matches the listed size.
A dropped connection keeps the part and a record beside it (`.<name>.<etag>.rlark-part`, 0600: the part's name,
owner, device, inode and size); the same download again continues that part with an HTTP Range request (the
presigned URL is asked for anew) only when it is still that file, else it starts anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import urllib3

from rlark_tui.cluster import tls
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import Request, Unreachable, transport_error
from rlark_tui.errors import RlarkError
from rlark_tui.local import fsutil
from rlark_tui.model.storage import Entry, Page, download_target, local_name_key, local_target, pages, parse_page
from rlark_tui.text.parse import load_json
from rlark_tui.text.sinks import one_line

MAX_DOWNLOAD = 64 << 30
"""Default bound of one download (64 GiB)."""
MAX_FOLDER_OBJECTS = 10_000
"""A folder download stops after this many objects."""
MAX_UPLOAD = 512 << 20
"""One upload is sent as one multipart form, read into memory: at most 512 MiB."""
CHUNK = 1 << 20
READ_TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0


class DownloadError(RlarkError):
    """A download that did not complete; the message is one line and says whether running it again resumes."""


@dataclass(frozen=True)
class Downloaded:
    path: Path
    size: int
    sha256: str
    md5: str
    resumed_from: int = 0

    def matches(self, entry: Entry) -> bool | None:
        """Whether the MD5 matches the listing's ETag (None: the ETag is no MD5, e.g. a multipart upload)."""
        return None if entry.md5 is None else entry.md5 == self.md5


def find_object(access: ClusterAccess, storage_class: str, cluster: str, key: str,
                max_pages: int = 50) -> Entry | None:
    """The listing's entry of exactly `key` (size, ETag), or None when there is no such object.

    The platform leaves out an object whose key equals the prefix (storage/list.go: the folder marker), so this
    lists the prefix one character shorter, folded at `/`, in key order until it passes `key`."""
    prefix, marker = key[:-1], ""
    for _ in range(max_pages):
        page = parse_page(access.storage_list(storage_class, cluster, prefix, delimiter="/", marker=marker,
                                              max_keys=100), prefix)
        for entry in page.entries:
            if not entry.folder and entry.key == key:
                return entry
        if not page.truncated or not page.next_marker or page.next_marker == marker or any(
                e.key > key for e in page.entries):
            return None
        marker = page.next_marker
    return None


def _record_name(dest: fsutil.Destination, entry: Entry) -> str:
    tag = re.sub(r"[^0-9A-Za-z]", "", entry.etag)[:16] or "noetag"
    return f".{fsutil.name_head(dest.leaf)}.{tag}.rlark-part"


def _write_record(dest: fsutil.Destination, record: str, part: str, handle: BinaryIO) -> None:
    info = os.fstat(handle.fileno())
    dest.write_beside(record, json.dumps({"part": part, "dev": info.st_dev, "ino": info.st_ino, "uid": info.st_uid,
                                          "size": info.st_size}).encode("utf-8"))


def _open_part(dest: fsutil.Destination, entry: Entry) -> tuple[str, str, BinaryIO, int]:
    """(record name, part name, the part open for writing, bytes it holds). A part is continued only when the
    record this rlark left beside it names it, and it is still the same file: the user's own, same device, inode
    and size; anything else starts anew."""
    record = _record_name(dest, entry)
    kept = dest.open_own(record)
    if kept is not None:
        with kept[0] as handle:
            try:
                noted = load_json(handle.read(4096))
                part = str(noted["part"])
                if "/" in part or not part.startswith("."):
                    raise ValueError(part)
            except (ValueError, KeyError, TypeError):
                noted, part = None, ""
        opened = dest.open_own(part, os.O_RDWR) if noted else None
        if opened is not None:
            handle, info = opened
            same = [info.st_dev, info.st_ino, info.st_uid, info.st_size] == [
                noted.get("dev"), noted.get("ino"), noted.get("uid"), noted.get("size")]
            if same and (entry.size is None or info.st_size <= entry.size):
                return record, part, handle, info.st_size
            handle.close()
            dest.remove(part)
    part, handle = dest.temp("part")
    _write_record(dest, record, part, handle)
    return record, part, handle, 0


def download(access: ClusterAccess, storage_class: str, cluster: str, entry: Entry, target: Path, *,
             max_bytes: int = MAX_DOWNLOAD, on_progress: Callable[[int, int | None], None] | None = None,
             pool: urllib3.PoolManager | None = None) -> Downloaded:
    """Stream object `entry` to `target` through rlark_tui.local.fsutil (its directory must exist and be the
    user's own). Raises DownloadError (one line), or fsutil.UnsafeDestination."""
    if entry.size is not None and entry.size > max_bytes:
        raise DownloadError(f"{one_line(entry.key)} is {entry.size} bytes, more than the limit of {max_bytes} "
                            "(--max-size)")
    try:
        if str(target) in fsutil.STANDARD_STREAMS:
            with fsutil.atomic_output(target, named=True) as out:
                return _fetch(access, storage_class, cluster, entry, target, out, 0, max_bytes, on_progress, pool)
        with fsutil.Destination(target, named=True) as dest:
            if dest.through:
                with dest.open_through() as out:
                    return _fetch(access, storage_class, cluster, entry, target, out, 0, max_bytes, on_progress,
                                  pool)
            return _download_part(access, storage_class, cluster, entry, target, dest, max_bytes, on_progress, pool)
    except fsutil.WriteFailed:  # one line already (no room, a closed stdout)
        raise
    except OSError as exc:  # the local side: a directory we may not write, a full disk
        raise DownloadError(f"cannot write {one_line(exc.filename or target)}: {exc.strerror or exc}") from None


def _download_part(access: ClusterAccess, storage_class: str, cluster: str, entry: Entry, target: Path,
                   dest: fsutil.Destination, max_bytes: int, on_progress: Callable[[int, int | None], None] | None,
                   pool: urllib3.PoolManager | None) -> Downloaded:
    record, part, out, have = _open_part(dest, entry)
    committed = False
    try:
        with out:
            done = _fetch(access, storage_class, cluster, entry, target, out, have, max_bytes, on_progress, pool)
            out.flush()
            os.fsync(out.fileno())
            if entry.size is not None and done.size != entry.size:
                raise DownloadError(f"download of {one_line(entry.key)} ended after {done.size} of {entry.size} bytes; "
                                    "run the same command again to resume")
            dest.commit(part)
            committed = True
            dest.remove(record)
            return done
    except _Overflow:
        dest.remove(part)
        dest.remove(record)
        raise
    finally:
        if not committed:  # what it holds now, so the same command resumes it
            kept = dest.open_own(part)
            if kept is not None:
                with kept[0] as handle:
                    _write_record(dest, record, part, handle)


class _Overflow(DownloadError):
    """More bytes came than listed: nothing is kept."""


def _fetch(access: ClusterAccess, storage_class: str, cluster: str, entry: Entry, target: Path, out: BinaryIO, have: int,
           max_bytes: int, on_progress: Callable[[int, int | None], None] | None,
           pool: urllib3.PoolManager | None) -> Downloaded:
    """GET the object (from byte `have`, which `out` holds already) into `out`."""
    url = access.storage_object_url(storage_class, cluster, entry.key)
    pool = pool or tls.pool_manager(tls.public_context(), retries=False)
    req = Request("download", "objects", entry.key, source="object storage")
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:  # the bytes as stored, whatever Content-Encoding the object was stored with (what the ETag is the MD5 of)
        resp = pool.request("GET", url, headers=headers, preload_content=False, decode_content=False,
                            redirect=False, timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=READ_TIMEOUT))
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise DownloadError(f"{transport_error(exc, req, READ_TIMEOUT)}; run the same command again") from None
    restart = False
    try:
        if resp.status == 200:
            restart, have = bool(have), 0
        elif resp.status != 206 or not have:
            body = resp.read(512).decode("utf-8", "replace")
            raise DownloadError(f"object storage answered {resp.status} for {one_line(entry.key)}: "
                                f"{one_line(body.strip().splitlines()[0]) if body.strip() else 'no reason given'}")
        digest_sha, digest_md5 = hashlib.sha256(), hashlib.md5()  # noqa: S324 - compared with S3's ETag
        if have:
            out.seek(0)
            for chunk in iter(lambda: out.read(CHUNK), b""):
                digest_sha.update(chunk)
                digest_md5.update(chunk)
        elif restart:  # the part this rlark made, answered whole: begun again. Never another file: stdout
            out.seek(0)  # appended to a log (`>> app.log`) was truncated, the log lost
            out.truncate()
        size = have
        try:
            for chunk in iter(lambda: resp.read1(CHUNK), b""):  # what arrived, so a cut keeps every byte
                size += len(chunk)
                if size > max_bytes or (entry.size is not None and size > entry.size):
                    raise _Overflow(f"{one_line(entry.key)}: more bytes came than the listed "
                                    f"{entry.size if entry.size is not None else max_bytes}; nothing kept")
                out.write(chunk)
                digest_sha.update(chunk)
                digest_md5.update(chunk)
                if on_progress:
                    on_progress(size, entry.size)
        except urllib3.exceptions.HTTPError as exc:
            out.flush()
            raise DownloadError(f"download of {one_line(entry.key)} cut after {size} of "
                                f"{entry.size if entry.size is not None else '?'} bytes "
                                f"({transport_error(exc, req, READ_TIMEOUT)}); run the same command again to "
                                "resume") from None
        return Downloaded(target, size, digest_sha.hexdigest(), digest_md5.hexdigest(), have)
    except Unreachable as exc:
        raise DownloadError(f"{exc}; run the same command again") from None
    finally:
        resp.release_conn()


def read_upload(path: Path, max_bytes: int = MAX_UPLOAD) -> bytes:
    """The bytes of a local file to upload (UsageError-like RlarkError when it is not a readable file or too big)."""
    return fsutil.read_input(str(path), "upload", max_bytes)


def download_to(access: ClusterAccess | None, storage_class: str, cluster: str, key: str, dest: str,
                on_progress: Callable[[int, int | None], None] | None = None) -> list[str]:
    """Blocking (the app runs it on a worker thread): download object `key` to `dest` (a file, or a directory
    that gets the key's last part), or, for a folder key ending in `/`, every object below it to directory
    `dest` with the keys' paths below the folder (a key that would land outside `dest` is skipped and named).
    Returns one line per object; raises RlarkError (one line) when nothing could be done."""
    if access is None:
        raise RlarkError("not connected to a cluster")
    if not key.endswith("/"):
        entry = find_object(access, storage_class, cluster, key)
        if entry is None:
            raise RlarkError(f"no object {storage_class}:{one_line(key)} on {cluster}")
        target = download_target(dest, key)  # a directory typed with its `/` is made by the write when missing
        if not dest.endswith("/") and not target.parent.is_dir():
            raise RlarkError(f"{target.parent} is not a directory")
        return [_downloaded_line(download(access, storage_class, cluster, entry, target,
                                                  on_progress=on_progress), entry)]
    root = Path(dest)
    if root.exists() and not root.is_dir():
        raise RlarkError(f"{dest} is not a directory")
    lines: list[str] = []
    written: dict[str, str] = {}
    """A local name (local_name_key) -> the key written there: a second key of that name is skipped, never written
    over the first."""

    def fetch(marker: str) -> Page:
        return parse_page(access.storage_list(storage_class, cluster, key, delimiter="", marker=marker,
                                              max_keys=500), key)

    for page in pages(fetch, f"storage cp {storage_class}:{key}"):
        for entry in page.entries:
            try:
                target = local_target(root, entry.key, key)
            except RlarkError as exc:
                lines.append(f"skipped: {exc}")
                continue
            first = written.setdefault(local_name_key(target), entry.key)
            if first != entry.key:
                lines.append(f"skipped: object key {one_line(entry.key)!r} lands on the local file of "
                              f"{one_line(first)!r} (one file name on a case-insensitive file system): not written")
                continue
            try:  # the write makes the key's folders below `dest`, checked as any write
                lines.append(_downloaded_line(download(access, storage_class, cluster, entry, target,
                                                               on_progress=on_progress), entry))
            except RlarkError as exc:
                lines.append(f"failed: {exc}")
        if len(lines) >= MAX_FOLDER_OBJECTS:
            lines.append(f"stopped after {len(lines)} objects")
            return lines
    return lines


def _downloaded_line(done: Downloaded, entry: Entry) -> str:
    match = done.matches(entry)
    verdict = "md5 matches the ETag" if match else ("md5 DOES NOT match the ETag" if match is False else
                                                    "ETag is no MD5")
    return f"{one_line(done.path)}: {done.size} bytes, sha256 {done.sha256[:16]}…, {verdict}"
