"""Object storage as the console's Storage page sees it (gateway storage file API, rlark-platform.md §5): the
`CLASS:KEY` / `CLASS[/PREFIX]` arguments, listing pages turned into rows, where a downloaded key may land, and which
object-storage mount of a Job covers a path its Pods write (`mount_over`: the run check's outputs, the checkpoints).

Pure. Keys and sizes come from the cluster: every string is sanitised for the terminal, and a key only becomes a
local path through `local_target`, which refuses anything that would leave the chosen directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.model import keys
from rlark_tui.model.objects import Job
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import encodable

CLASS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
"""A StorageClass name (a DNS-1123 subdomain)."""
MAX_KEY_BYTES = 1024
"""S3's longest object key."""


@dataclass(frozen=True)
class Remote:
    storage_class: str
    key: str


def is_remote(text: str) -> bool:
    """`CLASS:KEY` with a storage class name before the first colon (a local path with a colon has a `/` or a
    character no class name has before it: `./a:b`, `/tmp/x:y`)."""
    head, colon, _ = text.partition(":")
    return bool(colon) and CLASS_NAME.match(head) is not None


def parse_remote(text: str, *, key_required: bool = True) -> Remote:
    """`CLASS:KEY` (a UsageError names what is wrong)."""
    head, colon, key = text.partition(":")
    if not colon or CLASS_NAME.match(head) is None:
        raise UsageError(f"{text!r} is not CLASS:KEY (a storage class name, a colon, an object key)")
    key = key.lstrip("/")
    check_key(key, required=key_required)
    return Remote(head, key)


def parse_location(text: str) -> Remote:
    """`CLASS[/PREFIX]` for a listing (also `CLASS:PREFIX`); a non-empty prefix is a folder and ends with `/`."""
    head, sep, prefix = text.partition(":") if ":" in text.split("/", 1)[0] else text.partition("/")
    if CLASS_NAME.match(head) is None:
        raise UsageError(f"{head!r} is not a storage class name (lower-case letters, digits, '-' and '.')")
    prefix = prefix.lstrip("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    check_key(prefix, required=False)
    return Remote(head, prefix)


def check_key(key: str, *, required: bool = True) -> None:
    if required and not key:
        raise UsageError("an object key is required (CLASS:KEY)")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise UsageError(f"object key longer than {MAX_KEY_BYTES} bytes")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise UsageError("object key with a control character")


# ----- a Job's storage mounts -----

def under(path: str, prefix: str) -> bool:
    """`path` is `prefix` or below it, on path-segment boundaries (`/out/run-1` is not under `/out/run`)."""
    path, prefix = path.rstrip("/"), prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


@dataclass(frozen=True)
class StorageMount:
    """An object-storage mount (a PVC the task's `pvcStorageMap` backs with a StorageClass) as the gateway's
    storage routes reach it: the class, the cluster's agent ID (`gpu-a`) and the path it is mounted at."""

    storage_class: str
    cluster: str
    target: str

    def key(self, path: str) -> str:
        """The object key (or prefix) of `path`, a path at or below the mount."""
        return path[len(self.target.rstrip("/")):].strip("/")

    def path(self, key: str) -> str:
        """The path in the Pods of object `key`."""
        return self.target.rstrip("/") + "/" + key


def mount_over(job: Job, task_namespaces: Mapping[str, str], location: str) -> StorageMount | None:
    """The object-storage mount of the Job's roles (the Header's first) that covers `location`, an absolute path in
    the Pods; `task_namespaces` maps a Task's name to its cluster namespace (`rlark-<agent ID>`). None when no
    storage mount covers it."""
    for spec in sorted(job.tasks, key=lambda spec: not spec.head):
        for mount in spec.mounts:
            if mount["type"] == "storage" and mount["target"].startswith("/") and under(location, mount["target"]):
                namespace = task_namespaces.get(job.task_name(spec), "")
                return StorageMount(spec.pvc_storage_map.get(mount["source"]) or "default",
                                    namespace.removeprefix(keys.CLUSTER_NAMESPACE_PREFIX), mount["target"])
    return None


# ----- listing -----

@dataclass(frozen=True)
class Entry:
    """One row of a folder: a sub-folder (`folder`, key ends with `/`) or an object. `name` is relative to the
    listed prefix; every text field is sanitised."""

    key: str
    name: str
    folder: bool
    size: int | None = None
    modified: str = ""
    etag: str = ""

    @property
    def md5(self) -> str | None:
        """The ETag as an MD5 hex digest when it is one (S3 single-part uploads); None for multipart ETags."""
        tag = self.etag.strip('"').lower()
        return tag if re.fullmatch(r"[0-9a-f]{32}", tag) else None


@dataclass(frozen=True)
class Page:
    entries: tuple[Entry, ...]
    truncated: bool
    next_marker: str


def parse_page(body: object, prefix: str) -> Page:
    """One answer of `GET .../list` (`{objects, common_prefixes, is_truncated, next_marker, max_keys}`)."""
    body = body if isinstance(body, dict) else {}
    entries: list[Entry] = []
    commons, objects = body.get("common_prefixes"), body.get("objects")
    for common in commons if isinstance(commons, list) else []:
        if isinstance(common, str) and common.startswith(prefix) and common != prefix:
            entries.append(Entry(common, clean(common[len(prefix):]), True))
    for obj in objects if isinstance(objects, list) else []:
        if not isinstance(obj, dict) or not isinstance(obj.get("key"), str):
            continue
        key = obj["key"]
        if not key.startswith(prefix) or key == prefix:
            continue
        size = obj.get("size")
        entries.append(Entry(key, clean(key[len(prefix):]), False,
                             size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
                             clean(str(obj.get("last_modified") or "")), clean(str(obj.get("etag") or ""))))
    marker = body.get("next_marker")
    return Page(tuple(entries), body.get("is_truncated") is True, marker if isinstance(marker, str) else "")


MAX_PAGES = 1000
"""The most pages one listing reads (a gateway that always answers `is_truncated` would be paged forever)."""


class ListingBound(RlarkError):
    """A listing stopped at MAX_PAGES pages."""


def pages(fetch: Callable[[str], Page], what: str, max_pages: int = MAX_PAGES) -> Iterator[Page]:
    """Every page of a listing, `fetch(marker)` from marker "" on, until one is not truncated, has no next marker
    or repeats the last one; ListingBound after `max_pages` pages, naming the bound."""
    marker = ""
    for _ in range(max_pages):
        page = fetch(marker)
        yield page
        if not page.truncated or not page.next_marker or page.next_marker == marker:
            return
        marker = page.next_marker
    raise ListingBound(f"{what}: stopped after {max_pages} pages (the gateway still said there were more)")


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(size)


# ----- local paths -----

def local_target(root: Path, key: str, base: str = "") -> Path:
    """Where object `key` lands under directory `root` when the folder `base` (a prefix of `key`) is downloaded:
    its path below `base`, part by part. A key that is empty there, absolute, or holds `..`, `.`, an empty part
    (`a//b`, which S3 keeps beside `a/b`: one local file), a backslash, a NUL or a lone surrogate (JSON's `\\ud800`,
    which no file name holds: the folder download ended in UnicodeEncodeError) is refused (UsageError), so nothing
    is ever written outside `root` and no two keys name one path."""
    if base and not key.startswith(base):
        raise UsageError(f"object key {clean(key)!r} is not under {clean(base)!r}")
    relative = key[len(base):]
    parts = PurePosixPath(relative).parts if relative else ()
    if (not parts or relative.startswith("/") or "\\" in relative or "\x00" in relative
            or encodable(relative) != relative or any(part in ("..", ".", "") for part in relative.split("/"))):
        raise UsageError(f"object key {clean(key)!r} cannot be a local file name below {root}")
    target = root.joinpath(*parts)
    resolved_root = root.resolve()
    if resolved_root not in target.resolve().parents:
        raise UsageError(f"object key {clean(key)!r} would be written outside {root}")
    return target


def local_name_key(target: Path) -> str:
    """What names one local file whatever the file system: a case-insensitive one (macOS, Windows) makes `A.pt` and
    `a.pt` one file, and macOS's makes the composed and decomposed forms of `é` one; a folder download writes one
    object of each."""
    import unicodedata

    return unicodedata.normalize("NFC", str(target)).casefold()


def download_target(dest: str, key: str) -> Path:
    """`rlark storage cp CLASS:KEY DEST`: DEST itself, or DEST/<last part of the key> when DEST is a directory
    (or, as typed, ends with `/`)."""
    path = Path(dest)
    if path.is_dir() or dest.endswith("/"):
        name = key.rstrip("/").rsplit("/", 1)[-1]
        return local_target(path, name)
    return path
