"""The output probe: a run's outputs read where they live — inside a Pod with fixed read-only commands
(model/fixed_commands.py: `list-files`, a `find` with sizes and mtimes, and `hash-files`, `sha256sum` of the newest
files) or in object storage through the gateway's file API.

I/O edge of the run check (never opens an output path on this machine); check 5 judges the listing.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Protocol

from rlark_tui.checks.evidence import OutputFile, OutputProbe
from rlark_tui.errors import RlarkError
from rlark_tui.model.fixed_commands import command
from rlark_tui.text.parse import ascii_float, ascii_int

MAX_FILES = 2000
HASH_FILES = 20
"""Read back (sha256) at most this many of the newest files…"""
HASH_BUDGET_BYTES = 256 * 1024 * 1024
"""…and at most this many bytes in total; larger trees get partial checksums (noted by check 5)."""
PAGE_KEYS = 1000
MAX_PAGES = 5
URL_TIMEOUT = 15.0

class Ran(Protocol):
    """What the probe reads of a finished fixed command (cluster/podexec.ExecResult)."""

    @property
    def exit_code(self) -> int | None: ...
    @property
    def stdout(self) -> bytes: ...
    @property
    def truncated(self) -> bool: ...


Runner = Callable[..., Ran]
"""`run(name, *params) -> ExecResult`: a fixed command in the chosen Pod (cluster/podexec.run_fixed bound to it)."""


def parse_listing(data: bytes) -> list[OutputFile]:
    """`find -printf '%T@ %s %p\\0'` as the Pod answered it: each file whose time and size are numbers as text.parse
    reads them (the Job's image answers the listing: a size of 4,000 digits raised OverflowError in the SIZE cell)."""
    files = []
    for entry in data.split(b"\0"):
        parts = entry.decode("utf-8", "replace").split(" ", 2)
        if len(parts) != 3:
            continue
        at, size = ascii_float(parts[0]), ascii_int(parts[1])
        if at is None or size is None:
            continue
        try:
            mtime = datetime.fromtimestamp(at, tz=UTC)
        except (ValueError, OverflowError, OSError):
            continue
        files.append(OutputFile(parts[2], size, mtime))
    return files


def parse_sums(data: bytes) -> dict[str, str]:
    """`sha256sum` lines (`<hex>  <path>`) as path -> hex."""
    sums = {}
    for line in data.decode("utf-8", "replace").splitlines():
        digest, _, path = line.partition("  ")
        if len(digest) == 64 and path:
            sums[path] = digest
    return sums


def _newest_to_hash(files: list[OutputFile]) -> list[str]:
    chosen: list[str] = []
    budget = HASH_BUDGET_BYTES
    for item in files:
        if len(chosen) >= HASH_FILES:
            break
        if 0 < item.size <= budget:
            chosen.append(item.path)
            budget -= item.size
    return chosen


def probe_in_pod(run: Runner, location: str, where: str) -> OutputProbe:
    """List `location` inside a Pod and checksum its newest files; `where` names the Pod for the record."""
    source = f"in Pod {where} (exec: find, sha256sum)"
    listing = command("list-files")
    try:
        listed = run("list-files", location)
    except RlarkError as exc:
        return OutputProbe(location, error=f"cannot exec in Pod {where}: {exc}", source=source)
    if listed.exit_code is None and not listed.truncated:
        return OutputProbe(location, error=f"listing in Pod {where} did not finish within {listing.timeout:g} s",
                           source=source)
    files = sorted(parse_listing(listed.stdout), key=lambda f: f.mtime, reverse=True)[:MAX_FILES]
    if not files:
        return OutputProbe(location, source=source)
    wanted = _newest_to_hash(files)
    sums: dict[str, str] = {}
    if wanted:
        try:
            hashed = run("hash-files", *wanted)
            sums = parse_sums(hashed.stdout)
        except RlarkError:
            sums = {}
    files = [OutputFile(f.path, f.size, f.mtime, sums.get(f.path)) for f in files]
    if listed.truncated:
        source += f"; listing cut at {listing.max_output} bytes"
    return OutputProbe(location, tuple(files), source=source)


GetJson = Callable[[str, list[tuple[str, str]]], object]
"""`get_json(path, query)`: one GET to the gateway, its decoded JSON (RlarkError when it fails)."""
ReadUrl = Callable[[str, float, int], Iterator[bytes]]
"""`read_url(url, timeout, max_bytes)`: a presigned URL's body in pieces (RlarkError when it fails or passes
`max_bytes`); gather binds cluster/http.py's transport to it."""


def probe_object_storage(get_json: GetJson, read_url: ReadUrl, storage_class: str, cluster: str, target: str,
                         location: str) -> OutputProbe:
    """List the objects under `location` (a path below the storage mount `target`) through the gateway's storage
    file API, then read the newest back through their presigned URLs for a checksum. An unreachable URL leaves the
    file without a checksum (check 5 stays pending), never a failure."""
    source = f"from object storage {storage_class}/{cluster} (gateway file API)"
    relative = location[len(target):].strip("/")
    prefix = relative + "/" if relative else ""
    base = f"/api/v1/storage/storageclass/{_quoted(storage_class)}/{_quoted(cluster)}"
    files, marker = [], ""
    for _ in range(MAX_PAGES):
        query = [("prefix", prefix), ("delimiter", ""), ("maxKeys", str(PAGE_KEYS))]
        if marker:
            query.append(("marker", marker))
        try:
            page = get_json(f"{base}/list", query)
        except RlarkError as exc:
            return OutputProbe(location, error=f"cannot list {storage_class}/{cluster}: {exc}", source=source)
        page = page if isinstance(page, dict) else {}
        objects = page.get("objects")
        for obj in objects if isinstance(objects, list) else []:
            item = _object_file(obj, target)
            if item is not None:
                files.append(item)
        marker = str(page.get("next_marker") or "")
        if not page.get("is_truncated") or not marker:
            break
    files.sort(key=lambda f: f.mtime, reverse=True)
    errors: list[str] = []
    wanted = set(_newest_to_hash(files))
    result = []
    for item in files:
        digest = None
        if item.path in wanted:
            digest = _read_back(get_json, read_url, base, item.path[len(target):].lstrip("/"), item.size, errors)
        result.append(OutputFile(item.path, item.size, item.mtime, digest))
    if errors:
        source += f"; read-back failed: {errors[0]}"
    return OutputProbe(location, tuple(result), source=source)


def _object_file(obj: object, target: str) -> OutputFile | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("key"), str):
        return None
    size = obj.get("size")  # the gateway's: 1e400 (inf once decoded), '²', a list
    size = size if isinstance(size, int) and not isinstance(size, bool) else \
        ascii_int(size) if isinstance(size, str) else None
    try:
        mtime = datetime.fromisoformat(str(obj.get("last_modified")).replace("Z", "+00:00"))
    except ValueError:
        return None
    if size is None:
        return None
    if mtime.tzinfo is None:
        mtime = mtime.replace(tzinfo=UTC)
    return OutputFile(target.rstrip("/") + "/" + obj["key"], size, mtime)


def _quoted(text: str) -> str:
    """A path's part percent-encoded (`/` kept) from its UTF-8, a lone surrogate (JSON's `\\ud800`: an object key
    in the gateway's listing, a Job author's storage class) as its own bytes: urllib's quote of the text raised
    UnicodeEncodeError out of rlark check."""
    return urllib.parse.quote(text.encode("utf-8", "surrogatepass"))


def _read_back(get_json: GetJson, read_url: ReadUrl, base: str, key: str, size: int,
               errors: list[str]) -> str | None:
    try:
        answer = get_json(f"{base}/object/{_quoted(key)}", [])
        url = answer.get("url") if isinstance(answer, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise RlarkError("no presigned URL in the answer")
        digest = hashlib.sha256()
        for chunk in read_url(url, URL_TIMEOUT, size):  # the size listed: an object that grew is not hashed whole
            digest.update(chunk)
        return digest.hexdigest()
    except RlarkError as exc:
        errors.append(f"{key}: {exc}")
        return None
