"""Sandbox object storage: every API object of every plane, resourceVersions, persistence and watch history.
The HTTP server and the simulated agent share one Store; the agent uses it in-process (no HTTP).

Objects are keyed by (plane, resource, namespace, name): plane is `ROOT` ("root", the control plane) or a
data-plane cluster namespace such as "rlark-gpu-a"; resource is the plural ("jobs", "tasks", "pods", ...; on a
data plane "pods", "events", "services", "storageclasses" are the core ones); cluster-scoped objects use
namespace "". One global, monotonic resourceVersion counter spans all planes, as etcd's does.

API (all methods are thread-safe and synchronous; they never await):
- `get(resource, name, namespace="", plane=ROOT) -> dict | None` (a deep copy)
- `list(resource, namespace=None, plane=ROOT, labels=None, fields=None, copy=True) -> (items, resourceVersion)`;
  `labels` / `fields` are selector strings (see `selectors.py`); namespace None = all namespaces; `copy=False`
  hands out the stored objects to read at once (no deep copy).
- `create(resource, obj, plane=ROOT, dry_run=False)`; sets uid, resourceVersion, generation 1,
  creationTimestamp (and kind/apiVersion for known resources). Raises `Conflict` (AlreadyExists).
  `create_many(resource, objs, plane=ROOT)` stores objects the caller hands over, without copies (seeds).
- `update(resource, obj, plane=ROOT, subresource=None, dry_run=False)`: replaces the object; with
  `subresource="status"` only `.status` is taken, otherwise `.status` is kept from the stored object unless
  `keep_status=False`. A `metadata.resourceVersion` that is set must match (else `Conflict`). Generation grows
  when anything outside metadata/status changes; a no-op update returns the object unchanged (no new RV).
- `mutate(resource, name, fn, namespace="", plane=ROOT) -> dict`: read-modify-write under the lock; `fn`
  gets a deep copy and returns the new object (or None for no change). Status and spec are both taken.
- `delete(resource, name, namespace="", plane=ROOT, dry_run=False, orphan=False) -> dict`: with finalizers it
  only sets `deletionTimestamp`; the object goes once its finalizers are emptied. Objects whose ownerReferences
  name a deleted uid (same plane) are deleted in turn (garbage collection) unless `orphan`.
- `watch(resource=None, plane=ROOT, namespace=None, since=None, labels=None, fields=None) -> Subscription`
  (call inside a running event loop): `async for event in sub` yields `WatchEvent(type, object, rv)` with
  type ADDED / MODIFIED / DELETED. `since=None` first replays ADDED for every current object; `since="N"`
  replays history after N and raises `Gone` when N is older than the kept history (the ring holds the last
  `history` events; after a restart it starts empty). `sub.close()` ends it. resource/plane None = all.
- `wait_until(predicate, what, timeout=30.0)`: block until `predicate(store)` holds (tried at each change);
  AssertionError naming `what` on timeout. For tests that wait on the cluster side.
- `scan(resource, plane, predicate) -> list[dict]`: matching stored objects, unsorted and uncopied (fast lookups).
- `batch()`: a context manager that holds the lock and writes each changed object once at its end.
- `resource_version` (int) property; `clusters()` lists the data-plane namespaces known from Node CRs.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rlark_sandbox import selectors
from rlark_sandbox.resources import ROOT, resource_type
from rlark_tui.errors import RlarkError
from rlark_tui.local.fsutil import remove_quietly, write_private

__all__ = ["ROOT", "Store", "Subscription", "WatchEvent", "StoreError", "NotFound", "Conflict",
           "AlreadyExists", "Gone", "BadRequest"]


class StateError(RlarkError):
    """The state dir holds a file the store cannot read."""


class StoreError(Exception):
    """An API-level failure with a Kubernetes reason; the server turns it into a Status body."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, details: dict | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}


class NotFound(StoreError):
    code = 404
    reason = "NotFound"


class Conflict(StoreError):
    code = 409
    reason = "Conflict"


class AlreadyExists(Conflict):
    reason = "AlreadyExists"


class Gone(StoreError):
    code = 410
    reason = "Expired"


class BadRequest(StoreError):
    code = 400
    reason = "BadRequest"


@dataclass(frozen=True)
class WatchEvent:
    type: str
    object: dict
    rv: int
    plane: str
    resource: str


Key = tuple[str, str, str, str]


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def qualified(resource: str, plane: str) -> str:
    """`jobs.rlinf.io` on the control plane, `pods` for core data-plane resources (as messages name them)."""
    rtype = resource_type(plane, resource)
    return f"{resource}.{rtype.group}" if rtype and rtype.group else resource


class Subscription:
    """One watcher: an asyncio queue fed from any thread by the store."""

    def __init__(self, store: Store, match: Callable[[WatchEvent], bool], loop: asyncio.AbstractEventLoop):
        self._store = store
        self._match = match
        self._loop = loop
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self.closed = False

    def _offer(self, event: WatchEvent) -> None:
        if not self.closed and self._match(event):
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
            except RuntimeError:
                self.closed = True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._store._unsubscribe(self)
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
            except RuntimeError:
                pass

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> WatchEvent:
        event = await self._queue.get()
        if event is None:
            raise StopAsyncIteration
        return event

    async def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event, or None on timeout or when closed."""
        try:
            event = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
        if event is None:
            self._queue.put_nowait(None)
        return event


class Store:
    def __init__(self, state_dir: Path | str | None = None, history: int = 5000):
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._objects: dict[Key, dict] = {}
        self._rv = 0
        self._history: deque[WatchEvent] = deque()
        self._history_max = history
        self._floor = 0
        self._subs: list[Subscription] = []
        self._dirty: set[Key] | None = None
        self._share_events = False
        self._dir = Path(state_dir) / "objects" if state_dir else None
        if self._dir:
            self._load()

    # ----- persistence -----
    def _root(self) -> Path:
        """The state directory (the persistence methods run only for a Store that has one)."""
        if self._dir is None:
            raise StateError("this sandbox store keeps no state on disk")
        return self._dir

    def _path(self, key: Key) -> Path:
        plane, resource, namespace, name = key
        return self._root() / plane / resource / (namespace or "_cluster") / f"{name}.json"

    def _load(self) -> None:
        root = self._root()
        meta = root / "meta.json"
        if meta.exists():
            try:
                self._rv = int(json.loads(meta.read_text())["resourceVersion"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise StateError(f"unreadable sandbox state {meta}: {exc}") from None
        for path in root.glob("*/*/*/*.json"):
            try:
                obj = json.loads(path.read_text())
                obj["metadata"]["name"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise StateError(f"unreadable sandbox object {path}: {exc}") from None
            plane, resource, namespace = path.parts[-4], path.parts[-3], path.parts[-2]
            key = (plane, resource, "" if namespace == "_cluster" else namespace, obj["metadata"]["name"])
            self._objects[key] = obj
            self._rv = max(self._rv, int(obj["metadata"].get("resourceVersion", 0)))
        self._floor = self._rv

    def _write(self, path: Path, data: dict) -> None:
        write_private(path, json.dumps(data, separators=(",", ":")), durable=False)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the lock and write each changed object once at the end (seeding many objects). With nobody
        watching, the watch history holds the stored objects themselves until the end (stored objects are
        replaced, never changed in place) and only the events the history still keeps are copied then."""
        with self._lock:
            self._dirty = set()
            self._share_events = not self._subs
            start = self._rv
            try:
                yield
            finally:
                dirty, self._dirty = self._dirty, None
                if self._share_events:
                    self._share_events = False
                    self._history = deque(
                        WatchEvent(e.type, _clone(e.object), e.rv, e.plane, e.resource) if e.rv > start else e
                        for e in self._history)
                if self._dir:
                    self._write_many([(key, self._objects.get(key)) for key in dirty])
                    self._write(self._dir / "meta.json", {"resourceVersion": self._rv})

    def _write_many(self, items: list[tuple[Key, dict | None]]) -> None:
        """Store each object in its file, or remove the file for None: atomic replace, files 0600, directories
        0700, one mkdir per directory and no per-file temp-name search (a 60,000-object seed writes in seconds)."""
        made: set[str] = set()
        base = os.fspath(self._root())
        suffix = f".{os.getpid()}.{threading.get_ident()}.tmp"
        for (plane, resource, namespace, name), obj in items:
            directory = os.path.join(base, plane, resource, namespace or "_cluster")
            path = os.path.join(directory, f"{name}.json")
            if obj is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                continue
            if directory not in made:
                os.makedirs(directory, mode=0o700, exist_ok=True)
                made.add(directory)
            temp = os.path.join(directory, f".{name}.json{suffix}")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(json.dumps(obj, separators=(",", ":")).encode())
                os.replace(temp, path)
            except BaseException:
                remove_quietly(temp)
                raise

    def _persist(self, key: Key, obj: dict | None) -> None:
        if not self._dir:
            return
        if self._dirty is not None:
            self._dirty.add(key)
            return
        self._write_many([(key, obj)])
        self._write(self._dir / "meta.json", {"resourceVersion": self._rv})

    # ----- reads -----
    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def get(self, resource: str, name: str, namespace: str = "", plane: str = ROOT) -> dict | None:
        with self._lock:
            obj = self._objects.get((plane, resource, namespace or "", name))
            return _clone(obj) if obj is not None else None

    def _iter(self, resource: str | None, plane: str | None, namespace: str | None) -> Iterator[tuple[Key, dict]]:
        for key, obj in self._objects.items():
            if (plane is None or key[0] == plane) and (resource is None or key[1] == resource) and (
                    namespace is None or key[2] == namespace):
                yield key, obj

    def list(self, resource: str, namespace: str | None = None, plane: str = ROOT,
             labels: str | None = None, fields: str | None = None,
             copy: bool = True) -> tuple[list[dict], int]:
        """`copy=False` returns the stored objects themselves, for a caller that only reads them at once (the
        server serializing a list of 50,000 Pods): stored objects are replaced on change, never edited."""
        match = selectors.object_matcher(labels, fields)
        with self._lock:
            found = (obj for _, obj in sorted(self._iter(resource, plane, namespace)) if match(obj))
            items = [_clone(obj) for obj in found] if copy else list(found)
            return items, self._rv

    def scan(self, resource: str, plane: str, predicate: Callable[[dict], bool]) -> builtins.list[dict]:
        """The stored objects of `resource` on `plane` for which `predicate` holds, unsorted and not copied (read
        them at once): a lookup by any field without `list`'s sorting and selector parsing."""
        with self._lock:
            return [obj for key, obj in self._objects.items()
                    if key[0] == plane and key[1] == resource and predicate(obj)]

    def clusters(self) -> builtins.list[str]:
        """Data-plane cluster namespaces: the namespaces of Node CRs."""
        with self._lock:
            return sorted({key[2] for key, _ in self._iter("nodes", ROOT, None)})

    # ----- writes -----
    def _emit(self, kind: str, plane: str, resource: str, obj: dict) -> None:
        shared = self._share_events and self._dirty is not None
        event = WatchEvent(kind, obj if shared else _clone(obj), self._rv, plane, resource)
        self._history.append(event)
        while len(self._history) > self._history_max:
            self._floor = self._history.popleft().rv
        for sub in list(self._subs):
            sub._offer(event)
        self._changed.notify_all()

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _fill_type(self, resource: str, plane: str, obj: dict) -> None:
        rtype = resource_type(plane, resource)
        if rtype:
            obj["apiVersion"] = rtype.api_version
            obj["kind"] = rtype.kind

    def create(self, resource: str, obj: dict, plane: str = ROOT, dry_run: bool = False) -> dict:
        stored = self._insert(resource, _clone(obj), plane, dry_run)
        return stored if dry_run else _clone(stored)

    def create_many(self, resource: str, objs: Iterable[dict], plane: str = ROOT, created: str | None = None
                    ) -> builtins.list[dict]:
        """`create` for many new objects the caller hands over: they are stored as given (not copied) and
        returned as stored, so the caller must not change them afterwards. For seeds (60,000 objects);
        `created`, their creationTimestamp (a seed of old objects), else now."""
        with self._lock:
            return [self._insert(resource, obj, plane, False, created) for obj in objs]

    def _insert(self, resource: str, obj: dict, plane: str, dry_run: bool, created: str | None = None) -> dict:
        """Store `obj` (owned by the store from here on) as a new object; `create` without the copies."""
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name:
            raise BadRequest("name or generateName is required")
        namespace = meta.get("namespace") or ""
        key = (plane, resource, namespace, name)
        self._fill_type(resource, plane, obj)
        with self._lock:
            if key in self._objects:
                raise AlreadyExists(f'{qualified(resource, plane)} "{name}" already exists',
                                    {"name": name, "group": _group(resource, plane), "kind": resource})
            for field in ("resourceVersion", "deletionTimestamp"):
                meta.pop(field, None)
            meta["uid"] = str(uuid.uuid4())
            meta["generation"] = 1
            meta["creationTimestamp"] = created or now_iso()
            if dry_run:
                return obj
            meta["resourceVersion"] = self._next_rv()
            self._objects[key] = obj
            self._persist(key, obj)
            self._emit("ADDED", plane, resource, obj)
            return obj

    def update(self, resource: str, obj: dict, plane: str = ROOT, subresource: str | None = None,
               dry_run: bool = False, keep_status: bool = True) -> dict:
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name"), meta.get("namespace") or ""
        with self._lock:
            key = (plane, resource, namespace, name if isinstance(name, str) else "")
            old = self._objects.get(key)
            if old is None:
                raise NotFound(f'{qualified(resource, plane)} "{name}" not found',
                               {"name": name, "group": _group(resource, plane), "kind": resource})
            sent_rv = meta.get("resourceVersion")
            if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
                raise Conflict(
                    f'Operation cannot be fulfilled on {qualified(resource, plane)} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                    {"name": name, "group": _group(resource, plane), "kind": resource})
            if subresource == "status":
                new = _clone(old)
                if "status" in obj:
                    new["status"] = _clone(obj["status"])
                else:
                    new.pop("status", None)
            else:
                new = _clone(obj)
                if keep_status:
                    new.pop("status", None)
                    if "status" in old:
                        new["status"] = _clone(old["status"])
            return self._replace(key, old, new, dry_run)

    def _replace(self, key: Key, old: dict, new: dict, dry_run: bool) -> dict:
        plane, resource = key[0], key[1]
        self._fill_type(resource, plane, new)
        meta = new.setdefault("metadata", {})
        for field in ("uid", "creationTimestamp", "generation", "resourceVersion", "deletionTimestamp"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
            else:
                meta.pop(field, None)
        meta["name"], meta["namespace"] = old["metadata"]["name"], old["metadata"].get("namespace")
        if not meta["namespace"]:
            del meta["namespace"]
        if new == old:
            return _clone(old)
        if _spec_part(new) != _spec_part(old):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        if dry_run:
            return new
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(key, new)
        meta["resourceVersion"] = self._next_rv()
        self._objects[key] = new
        self._persist(key, new)
        self._emit("MODIFIED", plane, resource, new)
        return _clone(new)

    def mutate(self, resource: str, name: str, fn: Callable[[dict], dict | None], namespace: str = "",
               plane: str = ROOT) -> dict:
        with self._lock:
            key = (plane, resource, namespace or "", name)
            old = self._objects.get(key)
            if old is None:
                raise NotFound(f'{qualified(resource, plane)} "{name}" not found',
                               {"name": name, "group": _group(resource, plane), "kind": resource})
            new = fn(_clone(old))
            if new is None:
                return _clone(old)
            return self._replace(key, old, new, False)

    def delete(self, resource: str, name: str, namespace: str = "", plane: str = ROOT,
               dry_run: bool = False, orphan: bool = False) -> dict:
        with self._lock:
            key = (plane, resource, namespace or "", name)
            old = self._objects.get(key)
            if old is None:
                raise NotFound(f'{qualified(resource, plane)} "{name}" not found',
                               {"name": name, "group": _group(resource, plane), "kind": resource})
            if dry_run:
                return _clone(old)
            if old["metadata"].get("finalizers"):
                if old["metadata"].get("deletionTimestamp"):
                    return _clone(old)
                new = _clone(old)
                new["metadata"]["deletionTimestamp"] = now_iso()
                new["metadata"]["resourceVersion"] = self._next_rv()
                self._objects[key] = new
                self._persist(key, new)
                self._emit("MODIFIED", key[0], key[1], new)
                return _clone(new)
            return self._remove(key, old, orphan)

    def _remove(self, key: Key, obj: dict, orphan: bool = False) -> dict:
        self._objects.pop(key, None)
        obj = _clone(obj)
        obj["metadata"]["resourceVersion"] = self._next_rv()
        self._persist(key, None)
        self._emit("DELETED", key[0], key[1], obj)
        if orphan:
            return _clone(obj)
        uid = obj["metadata"].get("uid")
        dependents = [k for k, o in self._objects.items() if k[0] == key[0] and any(
            ref.get("uid") == uid for ref in o.get("metadata", {}).get("ownerReferences") or [])]
        for dep in dependents:
            if dep in self._objects:
                self.delete(dep[1], dep[3], dep[2], dep[0])
        return _clone(obj)

    # ----- watch -----
    def watch(self, resource: str | None = None, plane: str | None = ROOT, namespace: str | None = None,
              since: str | int | None = None, labels: str | None = None, fields: str | None = None) -> Subscription:
        select = selectors.object_matcher(labels, fields)

        def match(event: WatchEvent) -> bool:
            meta = event.object.get("metadata", {})
            return ((plane is None or event.plane == plane) and (resource is None or event.resource == resource)
                    and (namespace is None or (meta.get("namespace") or "") == namespace)
                    and select(event.object))

        loop = asyncio.get_running_loop()
        with self._lock:
            sub = Subscription(self, match, loop)
            if since in (None, "", "0", 0):
                for key, obj in sorted(self._iter(resource, plane, namespace)):
                    sub._offer(WatchEvent("ADDED", _clone(obj), self._rv, key[0], key[1]))
            else:
                start = int(since)
                if start < self._floor:
                    raise Gone(f"too old resource version: {start} ({self._floor + 1})")
                for event in self._history:
                    if event.rv > start:
                        sub._offer(event)
            self._subs.append(sub)
        return sub

    def wait_until(self, predicate: Callable[[Store], object], what: str, timeout: float = 30.0) -> object:
        """Block until `predicate(store)` is true, tried now and after each change (under the store's lock: it
        only reads); its value. A test's wait on the cluster side: AssertionError naming `what` when it is not
        true within `timeout` seconds."""
        with self._changed:
            value = self._changed.wait_for(lambda: predicate(self), timeout)
        if not value:
            raise AssertionError(f"the sandbox's store did not reach {what} within {timeout:g} s")
        return value

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def expire_history(self) -> None:
        """Forget the watch history (as an etcd compaction does): older resourceVersions answer 410."""
        with self._lock:
            self._history.clear()
            self._floor = self._rv


def _clone(value):
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _group(resource: str, plane: str) -> str:
    rtype = resource_type(plane, resource)
    return rtype.group if rtype else ""
