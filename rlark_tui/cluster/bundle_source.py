"""A bundle (`rlark bundle`, telemetry/bundle.py's layout) as the TUI's cluster: `rlark --bundle FILE` (issue 34
item 5). `BundleAccess` stands where a ClusterAccess stands for the Reconciler and the log follower: the Job, its
Tasks and Pod CRs as one list each (then nothing changes until the app ends), each member Pod as its data plane
would answer, and each captured container log as a finished stream. Members are read out of the archive directly
(never extracted), each at most its manifest size and MAX_MEMBER, at its offset in the archive read as a seekable
one (local/archives.Unpacked, at most MAX_UNPACKED unpacked): a log opened after one later in the archive unpacked
the gzip stream again from its start, up to ~16 s a log at the bound. What is read is the bundle's text, masked when
it was written, and is shown through the same cleaning as a live cluster's. No request leaves the machine.
"""

from __future__ import annotations

import collections
import heapq
import tarfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from rlark_tui.cluster.access import WatchEvent
from rlark_tui.cluster.errors import NotFound
from rlark_tui.cluster.kinds import JOBS, PODS, TASKS, Kind
from rlark_tui.cluster.metrics import thin
from rlark_tui.errors import RlarkError
from rlark_tui.local.archives import TooLarge, Unpacked, open_tar, reader
from rlark_tui.local.fsutil import open_input
from rlark_tui.model import keys
from rlark_tui.model.quantity import size_text
from rlark_tui.telemetry import bundle as layout
from rlark_tui.telemetry import diagnosis as pure
from rlark_tui.telemetry.curves import MetricsResult, MetricsState
from rlark_tui.telemetry.progress import MAX_TAGS
from rlark_tui.text.parse import load_json, load_yaml

MAX_MEMBER = 256 * 1024 * 1024
MAX_OBJECTS = 8 * 1024 * 1024
MAX_MEMBERS = 10_000
MAX_UNPACKED = 4 * 1024 * 1024 * 1024
"""A bundle is someone else's file (one attached to an issue): its index is read within these bounds, so an archive
of endless members, or one that never ends, is one line instead of a scan without end."""
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it: the pure-Python one took 112 s over an 8 MiB pods.yaml (MAX_OBJECTS)
before the TUI showed anything."""


KEPT_PODS_BYTES = 16 * 1024 * 1024
"""The data-plane Pods' members kept once read, in all (a Pod's is some KB)."""
LINE_PIECE = 1024 * 1024
"""A captured line longer than this is shown in pieces of it."""
BATCH = 1000


def _number(value: object, default: float) -> float:
    """A captured point's time or value: a JSON number, else `default` (a string or a list there raised in the
    metrics poll of `rlark --bundle`)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _parse_json(data: bytes | None) -> Any:
    try:
        return load_json(data) if data else None
    except ValueError:
        return None


def _parse_items(data: bytes | None) -> list[dict[str, Any]]:
    try:
        doc = load_yaml(data.decode("utf-8", "replace"), _YAML_LOADER) if data else None
    except (yaml.YAMLError, ValueError):
        return []
    if isinstance(doc, dict) and doc.get("kind") == "List":
        doc = doc.get("items")
    items = doc if isinstance(doc, list) else [doc]
    return [item for item in items if isinstance(item, dict)]


def _parse_metrics(data: bytes | None) -> tuple[str, str, dict[str, list[tuple[float, int, float]]], str] | None:
    """metrics.json as (job, source, series, what was left out), read as TensorBoard's tags are
    (cluster/metrics.py): the first MAX_TAGS in name order, each thinned."""
    value = _parse_json(data)
    if not isinstance(value, dict) or not isinstance(value.get("job"), str) or not isinstance(value.get("series"),
                                                                                               dict):
        return None
    listed = {str(tag): points for tag, points in value["series"].items() if isinstance(points, list)}
    series = {tag: thin([(_number(p[0], 0.0), p[1], _number(p[2], float("nan"))) for p in listed[tag]
                         if isinstance(p, list) and len(p) == 3 and isinstance(p[1], int)])
              for tag in heapq.nsmallest(MAX_TAGS, listed)}
    left_out = f"; the bundle has {len(listed):,} tags: the first {MAX_TAGS} read" if len(listed) > MAX_TAGS else ""
    return value["job"], str(value.get("source") or "log"), series, left_out


_CAPTURED: Mapping[str, Callable[[bytes | None], Any]] = MappingProxyType({
    layout.MANIFEST: _parse_json, layout.JOB: _parse_items, layout.TASKS: _parse_items,
    layout.POD_CRS: _parse_items, layout.DIAGNOSIS: lambda data: pure.from_json(_parse_json(data)),
    layout.METRICS: _parse_metrics})
"""The members rlark reads of every bundle, each read as what it holds."""


class BundleLog:
    """A captured log as the follower reads a stream: its lines in batches, then open until aborted (a follow of a
    finished log shows what was captured and waits, instead of reconnecting); a previous instance's just ends.
    The lines are read from the member as they are asked for, and with `tail` only the last `tail` are kept while
    the member is read, as a cluster answers `tailLines`: a member of 256 MiB of empty lines (a 1 MB bundle) made a
    list of 268 million strings, some 15 GB, when its Pod's log was opened."""

    def __init__(self, lines: Iterable[str], hold: bool, tail: int | None = None) -> None:
        self._lines, self._hold, self._tail = lines, hold, tail
        self._aborted = threading.Event()

    def __iter__(self) -> Iterator[str]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[str]]:
        lines: Iterable[str] = self._lines
        if self._tail is not None:
            lines = collections.deque(lines, maxlen=max(self._tail, 0))
        batch: list[str] = []
        for line in lines:
            if self._aborted.is_set():
                return
            batch.append(line)
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch
        if self._hold:
            self._aborted.wait()

    def abort(self) -> None:
        self._aborted.set()

    close = abort


class BundleAccess:
    """The read side of ClusterAccess that the TUI uses, answered from one bundle."""

    gateway = None
    kubeconfig = None
    first_list = None
    ray_tokens = None
    server_problem = "a bundle: no cluster"
    read_only_reason = "a bundle is read-only"
    """What flow/actions.py says when it refuses a mutation (a bundle session is read-only)."""

    def __init__(self, path: str | Path) -> None:
        from rlark_tui.local.config import load_config

        self.path = str(path)
        self._file = open_input(self.path, "--bundle")
        try:
            self._tar = open_tar(Unpacked(self._file, MAX_UNPACKED))
            self._members = self._index()
        except TooLarge:
            self._file.close()
            raise self._too_large() from None
        except (OSError, tarfile.TarError) as exc:
            self._file.close()
            raise RlarkError(f"--bundle {self.path}: not a bundle ({exc})") from None
        except RlarkError:
            self._file.close()
            raise
        self._lock = threading.Lock()
        self._read_once: dict[str, Any] = {}
        """What a member held, parsed, by its name: read once (see _once)."""
        self._kept_pods = 0
        for name in sorted(_CAPTURED, key=lambda name: self._members[name].offset if name in self._members else 0):
            self._once(name, _CAPTURED[name])  # in their order in the archive: unpacked once
        manifest = layout.parse_manifest(self._once(layout.MANIFEST, _parse_json))
        if manifest is None:
            raise RlarkError(f"--bundle {self.path}: no manifest.json of rlark bundle in it")
        self.manifest = manifest
        self.config = load_config()
        self.context = f"bundle {Path(self.path).name}, captured {manifest.captured}"
        self._objects = {JOBS.plural: self._items(layout.JOB), TASKS.plural: self._items(layout.TASKS),
                         PODS.plural: self._items(layout.POD_CRS)}

    def _too_large(self) -> RlarkError:
        return RlarkError(f"--bundle {self.path}: more than {MAX_MEMBERS} members or {size_text(MAX_UNPACKED)} "
                          "unpacked: not a bundle rlark wrote")

    def _index(self) -> dict[str, tarfile.TarInfo]:
        """The bundle's files by name, its headers read one by one within MAX_MEMBERS and MAX_UNPACKED."""
        members: dict[str, tarfile.TarInfo] = {}
        for count, member in enumerate(self._tar, 1):
            if count > MAX_MEMBERS:
                raise self._too_large()
            if member.isfile():
                members[member.name] = member
        return members

    def read(self, name: str, limit: int = MAX_MEMBER) -> bytes | None:
        """A member's bytes (None when the bundle has none of that name)."""
        member = self._members.get(name)
        if member is None:
            return None
        with self._lock:
            try:
                read = reader(self._tar, member)
                return read(min(member.size, limit)) if read is not None else None
            except tarfile.TarError as exc:
                raise self._cut(name, exc) from None

    def _cut(self, name: str, exc: tarfile.TarError) -> RlarkError:
        return RlarkError(f"--bundle {self.path}: {name}: {exc}")

    def lines(self, name: str, limit: int = MAX_MEMBER) -> Iterator[str] | None:
        """A member's lines as they are read, a piece of at most LINE_PIECE bytes at a time (at most `limit` bytes;
        a line longer than a piece is cut there), None when the bundle has none of that name."""
        member = self._members.get(name)
        if member is None:
            return None
        with self._lock:
            handle = reader(self._tar, member)
        if handle is None:
            return None

        def read() -> Iterator[str]:
            left, rest = min(member.size, limit), b""
            while left > 0:
                with self._lock:
                    try:
                        chunk = handle(min(LINE_PIECE, left))
                    except tarfile.TarError as exc:
                        raise self._cut(name, exc) from None
                if not chunk:
                    break
                left -= len(chunk)
                head, newline, rest = (rest + chunk).rpartition(b"\n")
                if len(rest) >= LINE_PIECE:
                    head, newline, rest = head + newline + rest, b"\n", b""
                if newline:
                    yield from (head + newline).decode("utf-8", "replace").splitlines()
            if rest:
                yield from rest.decode("utf-8", "replace").splitlines()
        return read()

    def _once(self, name: str, parse: Callable[[bytes | None], Any]) -> Any:
        """`parse` of a member's bytes, read and parsed once (an 8 MiB pods.yaml is not parsed again at each poll).
        Kept are the captured objects, the diagnosis and the metrics as read, and the data-plane Pods while their
        members come to at most KEPT_PODS_BYTES; never a log."""
        if name in self._read_once:
            return self._read_once[name]
        found = parse(self.read(name, MAX_OBJECTS))
        size = self._members[name].size if name in self._members else 0
        if not name.startswith("pods/") or self._kept_pods + size <= KEPT_PODS_BYTES:
            self._kept_pods += size if name.startswith("pods/") else 0
            self._read_once[name] = found
        return found

    def _items(self, name: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self._once(name, _parse_items)
        return items

    # -- what the Reconciler asks ---------------------------------------------------------------------------

    def list_watch(self, kind: Kind, stop: threading.Event, **_options: Any) -> Iterator[WatchEvent]:
        items = [dict(item, kind=kind.kind) for item in self._objects.get(kind.plural, [])]
        yield WatchEvent("RELIST", items=items)
        yield WatchEvent("CONNECTED")
        stop.wait()

    def answers(self, timeout: float) -> None:
        """A bundle always answers."""

    def member_clusters(self) -> list[str]:
        return []

    def data_plane(self, cluster: str) -> None:
        return None

    def server_endpoint(self) -> None:
        return None

    # -- what the log follower and the reads of a Job ask -------------------------------------------------

    def data_plane_pod(self, cluster: str, pod: str, namespace: str = keys.WORKLOAD_NAMESPACE) -> dict[str, Any]:
        legacy = self.manifest.format == layout.LEGACY_FORMAT
        items = self._items(layout.legacy_pod_member(pod) if legacy else layout.pod_member(cluster, namespace, pod))
        if not items:
            raise NotFound(f"pod {pod}: not in the bundle", 404, "Not Found")
        return items[0]

    def pod_log(self, cluster: str, pod: str, *, namespace: str = keys.WORKLOAD_NAMESPACE,
                container: str = keys.MAIN_CONTAINER, follow: bool = False, previous: bool = False,
                tail: int | None = None, **_options: Any) -> BundleLog:
        legacy = self.manifest.format == layout.LEGACY_FORMAT
        names = (layout.legacy_log_member(pod, container, previous),) if legacy \
            else layout.log_members(cluster, namespace, pod, container, previous)
        lines = next((found for found in map(self.lines, names) if found is not None), None)
        if lines is None:
            raise NotFound(f"the {'previous ' if previous else ''}log of {pod}/{container}: not in the bundle",
                           404, "Not Found")
        return BundleLog(lines, hold=follow, tail=tail)

    def diagnosis(self, job: str) -> pure.Diagnosis | None:
        found = self._once(layout.DIAGNOSIS, _CAPTURED[layout.DIAGNOSIS])
        return found if found is not None and found.job == job else None

    def metrics(self, job: str) -> MetricsState | None:
        captured = self._once(layout.METRICS, _CAPTURED[layout.METRICS])
        if captured is None or captured[0] != job:
            return None
        _, source, series, left_out = captured
        return MetricsState(MetricsResult(job, source, dict(series), note=f"captured {self.manifest.captured}{left_out}"))

    def close(self) -> None:
        self._tar.close()
        self._file.close()
