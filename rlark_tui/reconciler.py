"""The one background worker that owns refresh: list+watch of every kind, Ray polling, source health.

Blocking client calls run in threads; events are applied on the event loop, coalesced to at most one
immutable Snapshot per frame (the first change after a quiet frame is posted at once), and posted as
SnapshotChanged messages. Screens never call the API to render.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

from textual.message import Message

from rlark_tui.cluster.access import ClusterAccess, WatchEvent
from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.kinds import DOMAINS, JOBS, NODES, PODS, TASKS, Kind
from rlark_tui.model.views import Job
from rlark_tui.snapshot import Snapshot, SourceState

FRAME_SECONDS = 1 / 30
RAY_SECONDS = 2.0
PROBE_SECONDS = 30.0
PROBE_RETRY_SECONDS = 3.0
"""While a data plane or the gateway is not connected, probe this often, so the header recovers soon after."""
CONTROL_PLANE = "control plane"
GATEWAY = "gateway"
KINDS: tuple[Kind, ...] = (JOBS, TASKS, PODS, NODES, DOMAINS)


class SnapshotChanged(Message):
    """A new Snapshot; `changed` names the parts that differ (jobs, tasks, pods, nodes, domains, sources, ray)."""

    def __init__(self, snapshot: Snapshot, changed: frozenset[str]) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.changed = changed

    def can_replace(self, message: Message) -> bool:
        """A newer SnapshotChanged waiting in the queue supersedes this one (it holds everything): the app
        applies one Snapshot per turn however many arrived."""
        if not isinstance(message, SnapshotChanged):
            return False
        message.changed = message.changed | self.changed
        return True


class SourceChanged(Message):
    """One source's health changed (connected / stale / disconnected / unconfigured, with the reason)."""

    def __init__(self, source: SourceState) -> None:
        super().__init__()
        self.source = source


def source_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


class Reconciler:
    """Keeps the latest Snapshot of one ClusterAccess and posts it; call `run(post)` once (e.g. as a worker)."""

    def __init__(self, access: ClusterAccess, *, frame: float = FRAME_SECONDS, ray_interval: float = RAY_SECONDS,
                 probe_interval: float = PROBE_SECONDS, kinds: tuple[Kind, ...] = KINDS,
                 start: Snapshot | None = None) -> None:
        """`start`: the last Snapshot of a reconciler of the same access (ctrl+r); its objects stay published
        until each kind is listed again, instead of the screens going blank meanwhile."""
        self.access = access
        self.frame = frame
        self.ray_interval = max(RAY_SECONDS, ray_interval)
        self.probe_interval = probe_interval
        self.kinds = kinds
        self._objects: dict[str, dict[str, dict]] = {kind.plural: {} for kind in KINDS}
        self._listed: set[str] = set()
        self._errors: dict[str, str] = {}
        self._sources: dict[str, SourceState] = {
            CONTROL_PLANE: SourceState(CONTROL_PLANE, "stale", "connecting"),
        }
        self._ray: dict[str, dict] = {}
        self._ray_watched: set[str] = set()
        self._changed: set[str] = set()
        self._delta: dict[str, set[str] | None] = {}
        self._snapshot = Snapshot(sources=MappingProxyType(dict(self._sources)))
        if start is not None:
            self._objects = {plural: dict(getattr(start, plural)) for plural in self._objects}
            self._ray = dict(start.ray)
            self._snapshot = replace(start, sources=self._snapshot.sources)
        self._stop = threading.Event()
        self._streams: dict[str, object] = {}
        self._queue: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def snapshot(self) -> Snapshot:
        """The latest published Snapshot."""
        return self._snapshot

    def watch_ray(self, job_name: str) -> None:
        """Poll this Job's Ray dashboard (every ≥ 2 s) while it is watched."""
        self._ray_watched.add(job_name)

    def unwatch_ray(self, job_name: str) -> None:
        self._ray_watched.discard(job_name)

    def stop(self) -> None:
        """Stop the watch threads and close their streams (run() returns)."""
        self._stop.set()
        for stream in list(self._streams.values()):
            stream.abort()
        self._wake(("stop", None, None))

    def _wake(self, item) -> None:
        if self._loop is not None and self._queue is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    # -- main loop ----------------------------------------------------------------------------------------

    async def run(self, post: Callable[[Message], object]) -> None:
        """Start the watchers and publish coalesced snapshots through `post` until cancelled or stopped."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._stop.clear()
        self._initial_sources()
        # the first kind (Jobs) is listed alone: the first list paints without waiting behind, or competing
        # with, the decoding of every Pod; the other kinds start once it answered (listed or failed)
        self._start_watches(self.kinds[:1], then=self.kinds[1:])
        helpers = [asyncio.create_task(self._ray_loop()), asyncio.create_task(self._probe_loop())]
        self._publish(post)
        published = self._loop.time()
        try:
            while not self._stop.is_set():
                item = await self._queue.get()
                self._apply(item, post)
                # at most one Snapshot per frame, but the first change after a quiet frame goes out at once
                deadline = published + self.frame
                while (remaining := deadline - self._loop.time()) > 0 or not self._queue.empty():
                    try:
                        item = (self._queue.get_nowait() if remaining <= 0 or not self._queue.empty()
                                else await asyncio.wait_for(self._queue.get(), remaining))
                    except (asyncio.TimeoutError, asyncio.QueueEmpty):
                        break
                    self._apply(item, post)
                self._publish(post)
                published = self._loop.time()
        finally:
            for task in helpers:
                task.cancel()
            self.stop()

    def _start_watches(self, kinds: tuple[Kind, ...], then: tuple[Kind, ...] = ()) -> None:
        for kind in kinds:
            threading.Thread(target=self._watch_thread, args=(kind, then), name=f"watch-{kind.plural}",
                             daemon=True).start()

    def _watch_thread(self, kind: Kind, then: tuple[Kind, ...] = ()) -> None:
        def keep(stream) -> None:
            self._streams[kind.plural] = stream

        for event in self.access.list_watch(kind, self._stop, on_stream=keep):
            if self._stop.is_set():
                return
            self._wake(("watch", kind.plural, event))
            if then:
                self._start_watches(then)
                then = ()

    def _apply(self, item, post) -> None:
        what, name, payload = item
        if what == "watch":
            self._apply_watch(name, payload, post)
        elif what == "ray":
            self._ray[name] = payload
            self._changed.add("ray")
            ok = not payload.get("error")
            self._set_source(f"ray {name}", "connected" if ok else "disconnected", payload.get("error") or "",
                             post)
        elif what == "source":
            self._set_source(name, payload[0], payload[1], post)

    def _apply_watch(self, plural: str, event: WatchEvent, post) -> None:
        objects = self._objects[plural]
        if event.type == "RELIST":
            self._objects[plural] = {source_key(obj): obj for obj in event.items}
            self._listed.add(plural)
            self._changed.add(plural)
            self._delta[plural] = None
        elif event.type in ("ADDED", "MODIFIED"):
            key = source_key(event.obj)
            objects[key] = event.obj
            self._errors.pop(plural, None)
            self._note(plural, key)
        elif event.type == "DELETED":
            key = source_key(event.obj)
            objects.pop(key, None)
            self._note(plural, key)
        elif event.type == "CONNECTED":
            self._errors.pop(plural, None)
        elif event.type == "ERROR":
            self._errors[plural] = str(event.error)
        self._update_control_plane(post)

    def _note(self, plural: str, key: str) -> None:
        self._changed.add(plural)
        keys = self._delta.setdefault(plural, set())
        if keys is not None:
            keys.add(key)

    def _update_control_plane(self, post) -> None:
        if self._errors:
            # a kind never listed has no data at all (disconnected, not stale); Jobs' error first
            failing = sorted(self._errors, key=lambda plural: (plural in self._listed, plural != JOBS.plural))
            why = self._errors[failing[0]]
            if failing[0] in self._listed:
                self._set_source(CONTROL_PLANE, "stale", f"{why}; reconnecting", post)
            else:
                self._set_source(CONTROL_PLANE, "disconnected", why, post)
        elif self._listed >= {k.plural for k in self.kinds}:
            self._set_source(CONTROL_PLANE, "connected", "", post)

    def _set_source(self, name: str, status: str, reason: str, post) -> None:
        state = SourceState(name, status, reason)
        if self._sources.get(name) == state:
            return
        self._sources[name] = state
        self._changed.add("sources")
        post(SourceChanged(state))

    def _publish(self, post) -> None:
        if not self._changed and self._snapshot.sources:
            return
        previous = self._snapshot

        def part(name: str, current: dict) -> MappingProxyType:
            """A frozen copy of what changed; the previous Snapshot's very mapping for what did not."""
            return MappingProxyType(dict(current)) if name in self._changed else getattr(previous, name)

        self._snapshot = Snapshot(
            jobs=part(JOBS.plural, self._objects[JOBS.plural]),
            tasks=part(TASKS.plural, self._objects[TASKS.plural]),
            pods=part(PODS.plural, self._objects[PODS.plural]),
            nodes=part(NODES.plural, self._objects[NODES.plural]),
            domains=part(DOMAINS.plural, self._objects[DOMAINS.plural]),
            sources=part("sources", self._sources),
            ray=part("ray", self._ray),
            version=previous.version + 1,
            changes=MappingProxyType({plural: frozenset(keys) for plural, keys in self._delta.items()
                                      if keys is not None}),
        )
        changed = frozenset(self._changed)
        self._changed.clear()
        self._delta.clear()
        post(SnapshotChanged(self._snapshot, changed))

    # -- sources other than the control plane ---------------------------------------------------------------

    def _initial_sources(self) -> None:
        planes = self.access.data_plane_contexts()
        for cluster, (context, _origin) in planes.items():
            self._sources[f"data plane {cluster}"] = SourceState(f"data plane {cluster}", "stale",
                                                                 f"context {context}, not contacted yet")
        self._sources[GATEWAY] = (SourceState(GATEWAY, "stale", "not contacted yet") if self.access.gateway
                                  else SourceState(GATEWAY, "unconfigured", "no gateway configured — see "
                                                                            "`rlark config`"))
        self._changed.add("sources")

    async def _probe_loop(self) -> None:
        while not self._stop.is_set():
            results = await asyncio.to_thread(self._probe)
            for name, status, reason in results:
                self._wake(("source", name, (status, reason)))
            healthy = all(status == "connected" for _, status, _ in results)
            await asyncio.sleep(self.probe_interval if healthy else min(self.probe_interval, PROBE_RETRY_SECONDS))

    def _probe(self) -> list[tuple[str, str, str]]:
        """Contact each data plane and the gateway once (blocking; runs in a thread)."""
        results = []
        for cluster in sorted(self.access.data_plane_contexts()):
            name = f"data plane {cluster}"
            try:
                plane = self.access.data_plane(cluster)
                plane.json("GET", "/api/v1/namespaces/rlark-system/pods", Request("list", "pods", source=name),
                           [("limit", "1")], timeout=5)
                results.append((name, "connected", ""))
            except (ApiError, Unreachable, AttributeError) as exc:
                results.append((name, "disconnected", str(exc)))
        if self.access.gateway:
            try:
                self.access.gateway_clusters()
                results.append((GATEWAY, "connected", ""))
            except (ApiError, Unreachable) as exc:
                results.append((GATEWAY, "disconnected", str(exc)))
        return results

    async def _ray_loop(self) -> None:
        last: dict[str, float] = {}
        while not self._stop.is_set():
            now = time.monotonic()
            for name in sorted(self._ray_watched):
                raw = self._objects[JOBS.plural].get(name)
                if raw is None or now - last.get(name, 0.0) < self.ray_interval:
                    continue
                last[name] = now
                job = Job(raw)
                head = next((key.partition("/")[0] for key in self._objects[TASKS.plural]
                             if key.partition("/")[2] == job.head_task_name), None)
                status = await asyncio.to_thread(self.access.ray_status, job, head)
                if name in self._ray_watched:
                    self._wake(("ray", name, status))
            await asyncio.sleep(0.5)
