"""Reading and writing storage objects through the gateway's storage file API (rlark-platform.md §5,
storage_handler.go): streamed downloads from the presigned URL the gateway answers, bounded in bytes and time,
resumed after a dropped connection, with their checksums.

A download goes to `<target dir>/.<name>.<etag>.part` (mode 0600) and is renamed onto the target only once it is
whole and matches the listed size; a dropped connection keeps the part, and the same download again continues it
with an HTTP Range request (the presigned URL is asked for anew).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import urllib3

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import Request, Unreachable, transport_error
from rlark_tui.errors import RlarkError
from rlark_tui.model.storage import Entry, download_target, local_target, parse_page
from rlark_tui.text.sanitize import clean

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


def _part_path(target: Path, entry: Entry) -> Path:
    tag = re.sub(r"[^0-9A-Za-z]", "", entry.etag)[:16] or "noetag"
    return target.parent / f".{target.name}.{tag}.part"


def download(access: ClusterAccess, storage_class: str, cluster: str, entry: Entry, target: Path, *,
             max_bytes: int = MAX_DOWNLOAD, on_progress: Callable[[int, int | None], None] | None = None,
             pool: urllib3.PoolManager | None = None) -> Downloaded:
    """Stream object `entry` to `target` (its directory must exist). Raises DownloadError (one line)."""
    try:
        return _download(access, storage_class, cluster, entry, target, max_bytes, on_progress, pool)
    except OSError as exc:  # the local side: a directory we may not write, a full disk
        raise DownloadError(f"cannot write {exc.filename or target}: {exc.strerror or exc}") from None


def _download(access, storage_class, cluster, entry, target, max_bytes, on_progress, pool) -> Downloaded:
    if entry.size is not None and entry.size > max_bytes:
        raise DownloadError(f"{clean(entry.key)} is {entry.size} bytes, more than the limit of {max_bytes} "
                            "(--max-size)")
    part = _part_path(target, entry)
    have = part.stat().st_size if part.exists() else 0
    if entry.size is not None and have > entry.size:
        part.unlink()
        have = 0
    url = access.storage_object_url(storage_class, cluster, entry.key)
    pool = pool or urllib3.PoolManager(retries=False)
    req = Request("download", "objects", entry.key, source="object storage")
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        resp = pool.request("GET", url, headers=headers, preload_content=False, redirect=False,
                            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=READ_TIMEOUT))
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise DownloadError(f"{transport_error(exc, req, READ_TIMEOUT)}; run the same command again") from None
    try:
        if resp.status == 200:
            have = 0
        elif resp.status != 206 or not have:
            body = resp.read(512).decode("utf-8", "replace")
            raise DownloadError(f"object storage answered {resp.status} for {clean(entry.key)}: "
                                f"{clean(body.strip().splitlines()[0]) if body.strip() else 'no reason given'}")
        digest_sha, digest_md5 = hashlib.sha256(), hashlib.md5()  # noqa: S324 - compared with S3's ETag
        if have:
            with part.open("rb") as existing:
                for chunk in iter(lambda: existing.read(CHUNK), b""):
                    digest_sha.update(chunk)
                    digest_md5.update(chunk)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if have else os.O_TRUNC), 0o600)
        size = have
        with os.fdopen(fd, "ab" if have else "wb") as out:
            try:
                for chunk in iter(lambda: resp.read1(CHUNK), b""):  # what arrived, so a cut keeps every byte
                    size += len(chunk)
                    if size > max_bytes or (entry.size is not None and size > entry.size):
                        out.close()
                        part.unlink()
                        raise DownloadError(f"{clean(entry.key)}: more bytes came than the listed "
                                            f"{entry.size if entry.size is not None else max_bytes}; nothing kept")
                    out.write(chunk)
                    digest_sha.update(chunk)
                    digest_md5.update(chunk)
                    if on_progress:
                        on_progress(size, entry.size)
            except urllib3.exceptions.HTTPError as exc:
                out.flush()
                raise DownloadError(f"download of {clean(entry.key)} cut after {size} of "
                                    f"{entry.size if entry.size is not None else '?'} bytes "
                                    f"({transport_error(exc, req, READ_TIMEOUT)}); run the same command again to "
                                    "resume") from None
            out.flush()
            os.fsync(out.fileno())
        if entry.size is not None and size != entry.size:
            raise DownloadError(f"download of {clean(entry.key)} ended after {size} of {entry.size} bytes; run the "
                                "same command again to resume")
        os.replace(part, target)
        return Downloaded(target, size, digest_sha.hexdigest(), digest_md5.hexdigest(), have)
    except Unreachable as exc:
        raise DownloadError(f"{exc}; run the same command again") from None
    finally:
        resp.release_conn()


def read_upload(path: Path, max_bytes: int = MAX_UPLOAD) -> bytes:
    """The bytes of a local file to upload (UsageError-like RlarkError when it is not a readable file or too big)."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise RlarkError(f"{path} is not a file")
        if size > max_bytes:
            raise RlarkError(f"{path} is {size} bytes; an upload is one request of at most {max_bytes} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise RlarkError(f"cannot read {path}: {exc.strerror or exc}") from None


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
            raise RlarkError(f"no object {storage_class}:{key} on {cluster}")
        if dest.endswith("/"):  # a directory, as typed: made when missing
            Path(dest).mkdir(parents=True, exist_ok=True)
        target = download_target(dest, key)
        if not target.parent.is_dir():
            raise RlarkError(f"{target.parent} is not a directory")
        return [_downloaded_line(download(access, storage_class, cluster, entry, target,
                                                  on_progress=on_progress), entry)]
    root = Path(dest)
    if root.exists() and not root.is_dir():
        raise RlarkError(f"{dest} is not a directory")
    lines, marker = [], ""
    while True:
        page = parse_page(access.storage_list(storage_class, cluster, key, delimiter="", marker=marker,
                                                      max_keys=500), key)
        for entry in page.entries:
            try:
                target = local_target(root, entry.key, key)
            except RlarkError as exc:
                lines.append(f"skipped: {exc}")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                lines.append(_downloaded_line(download(access, storage_class, cluster, entry, target,
                                                               on_progress=on_progress), entry))
            except RlarkError as exc:
                lines.append(f"failed: {exc}")
        if len(lines) >= MAX_FOLDER_OBJECTS:
            lines.append(f"stopped after {len(lines)} objects")
            return lines
        if not page.truncated or not page.next_marker or page.next_marker == marker:
            return lines
        marker = page.next_marker


def _downloaded_line(done, entry) -> str:
    match = done.matches(entry)
    verdict = "md5 matches the ETag" if match else ("md5 DOES NOT match the ETag" if match is False else
                                                    "ETag is no MD5")
    return f"{done.path}: {done.size} bytes, sha256 {done.sha256[:16]}…, {verdict}"
