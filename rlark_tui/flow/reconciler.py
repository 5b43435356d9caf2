"""The one background worker that owns refresh: list+watch of every kind, the subscriptions' periodic reads
(rlark_tui.flow.polls: Ray status, Pod health, run-check evidence, gateway lookups, …), source health.

Blocking client calls run in threads; events are applied on the event loop, coalesced to at most one
immutable Snapshot per frame (the first change after a quiet frame is posted at once), indexed once
(view.index.SnapshotIndex, derived from the previous one) and handed with its index to `publish` (the app
posts it as messages.SnapshotChanged; `rlark watch` prints from it). Topic reads get the latest index. No Textual
here: the headless commands run the same reconciler. Screens never call the API to render.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from functools import partial
from types import MappingProxyType
from typing import Any

from rlark_tui.cluster.access import Backoff, ClusterAccess, WatchEvent
from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.http import LineStream
from rlark_tui.cluster.kinds import DOMAINS, JOBS, NODES, PODS, TASKS, Kind
from rlark_tui.flow.polls import TOPICS, Topic
from rlark_tui.flow.snapshot import Snapshot, SourceState, SourceStatus, source_key
from rlark_tui.view.index import SnapshotIndex

FRAME_SECONDS = 1 / 30
POLL_TICK_SECONDS = 0.25
NOTHING_YET_SECONDS = 1.0
"""A subscription whose read found nothing to read yet is tried again after this long."""
MAX_PARALLEL_POLLS = 4
"""At most this many subscription reads at once (the most overdue for their interval first): dozens of Jobs' reads falling due
together must not crowd the UI thread out of the interpreter."""
MAX_POLLS_PER_KEY = 2
"""At most this many reads of one key (one Job's topics) at once: a Job whose Ray head, TensorBoard and data plane
answer slowly held every place with its detail's reads (Ray, Diagnosis, Health, Metrics), and every other Job's
reads and the alert round waited behind them."""
PROBE_SECONDS = 30.0
PROBE_RETRY_SECONDS = 3.0
"""While a data plane, the gateway or a silent control plane is not connected, probe this often, so the header
recovers soon after."""
PROBE_TIMEOUT = 5.0
"""A control plane's probe is answered within this long (or its probe interval, when shorter)."""
CONTROL_PLANE = "control plane"
GATEWAY = "gateway"
KINDS: tuple[Kind, ...] = (JOBS, TASKS, PODS, NODES, DOMAINS)
RESTART_RESET_SECONDS = 60.0
"""A kind's watch or a helper loop that a bug ended after running this long is started again after the back-off's
first delay (0.5 s); one that ends sooner waits twice as long as before, up to 15 s (cluster.access.Backoff)."""
BLURRED_PACE = 5.0
"""While the terminal says it lost focus (Textual's AppBlur), the subscriptions' reads come at a fifth of their rate
(k9s #3645, btop #1664): a window in another tmux pane or behind the browser needs no 2 s alert round."""


@dataclass(frozen=True)
class Published:
    """One published Snapshot and its index."""

    snapshot: Snapshot
    index: SnapshotIndex




class Reconciler:
    """Keeps the latest Snapshot of one ClusterAccess and posts it; call `run(post)` once (e.g. as a worker)."""

    def __init__(self, access: ClusterAccess, *, frame: float = FRAME_SECONDS,
                 probe_interval: float = PROBE_SECONDS, kinds: tuple[Kind, ...] = KINDS,
                 start: SnapshotIndex | None = None, topics: Mapping[str, Topic] = TOPICS,
                 hold: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        """`start`: the last index of a reconciler of the same access (ctrl+r); its objects and results stay
        published until read again, instead of the screens going blank meanwhile, and the new indexes derive
        from it. `topics`: the periodic reads a subscription can name (rlark_tui.flow.polls.TOPICS). `hold`: the
        other kinds' watches, the subscriptions' reads and the probes wait, after the first kind (Jobs)
        answered, until `release` says the Snapshot with its answer is shown (the TUI's first list). `clock`: what
        the subscriptions' intervals are measured on (a test passes its own)."""
        self.access = access
        self._clock = clock
        self.frame = frame
        self.topics = topics
        self.probe_interval = probe_interval
        self.kinds = kinds
        self._objects: dict[str, dict[str, dict]] = {kind.plural: {} for kind in KINDS}
        self._listed: set[str] = set()
        self._errors: dict[str, str] = {}
        self._heard = time.monotonic()
        """When a watch last brought anything (monotonic): the control plane is probed after a probe interval of
        silence."""
        self._silent = ""
        """Why the control plane did not answer its last probe ('' when it did)."""
        self._sources: dict[str, SourceState] = {
            CONTROL_PLANE: SourceState(CONTROL_PLANE, "stale", "connecting"),
        }
        self._results: dict[str, dict[str, object]] = {name: {} for name in topics}
        self._subscribed: dict[tuple[str, str], bool] = {}
        """Each subscription and whether it asks for detail (polls.Topic.detailed)."""
        self._polled_at: dict[tuple[str, str], float] = {}
        self.pace = 1.0
        """Each subscription's interval times this (`set_pace`)."""
        self._in_flight: set[tuple[str, str]] = set()
        self._rounds: dict[str, Callable] = {}
        """The fetch of each topic that keeps bookkeeping between its reads (polls.Topic.rounds), made once here."""
        self._polls: set[asyncio.Task] = set()
        self._changed: set[str] = set()
        self._delta: dict[str, set[str] | None] = {}
        self._snapshot = Snapshot(sources=MappingProxyType(dict(self._sources)))
        if start is not None:
            self._objects = {plural: dict(getattr(start.snapshot, plural)) for plural in self._objects}
            self._results = {name: dict(getattr(start.snapshot, name)) for name in topics}
            self._snapshot = replace(start.snapshot, sources=self._snapshot.sources)
        self._index = SnapshotIndex(self._snapshot, start)
        self._stop = threading.Event()
        self._streams: dict[str, LineStream] = {}
        self._hold = hold
        self._shown = threading.Event()
        """Set once the first kind's answer is shown (at once when not held): its watch opens then, so that
        opening it does not compete with painting the first list."""
        if not hold:
            self._shown.set()
        self._first_answered = False
        self._answered_in: int | None = None
        """Version of the first Snapshot published with the first kind's answer (listed or failed)."""
        self._helpers: dict[str, asyncio.Task] = {}
        """The subscriptions' loop and the probes' loop, by name."""
        self._restarts: dict[str, Backoff] = {}
        """The back-off between starts of each kind's watch or each helper loop after a bug ended it (`_watch_ended`,
        `_helper_ended`)."""
        self._queue: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def snapshot(self) -> Snapshot:
        """The latest published Snapshot."""
        return self._snapshot

    @property
    def index(self) -> SnapshotIndex:
        """The latest published Snapshot's index."""
        return self._index

    # -- subscriptions -------------------------------------------------------------------------------------

    def subscribe(self, topic: str, key: str, *, detail: bool = False) -> None:
        """Run topic's read for `key` (a Job name; polls.GATEWAY_KEY for lookups) every `interval` seconds
        until unsubscribed; results land in `snapshot.<topic>[key]`. Subscribing again sets the detail level of
        the one subscription (`services.Intents` counts its subscribers); more detail is read at once."""
        if topic not in self.topics:
            raise KeyError(f"unknown topic {topic!r}")
        before = self._subscribed.get((topic, key))
        self._subscribed[(topic, key)] = detail
        if detail and before is False:
            self._polled_at.pop((topic, key), None)

    def unsubscribe(self, topic: str, key: str) -> None:
        """Stop reading (a read under way still publishes its result); a per-Job topic's result of a Job no longer
        listed is dropped."""
        self._subscribed.pop((topic, key), None)
        self._forget(topic, key)

    def _forget(self, topic: str, key: str) -> None:
        """Drop `topic`'s result for `key` when the topic is per Job (Topic.per_job), no one subscribes to it and no
        Job of that name is listed: under churn each Job ever read would otherwise be held for the session."""
        if not self.topics[topic].per_job or (topic, key) in self._subscribed or key in self._objects[JOBS.plural]:
            return
        self._polled_at.pop((topic, key), None)
        if self._results[topic].pop(key, None) is not None:
            self._changed.add(topic)

    def set_pace(self, factor: float) -> None:
        """Every subscription reads at its interval times `factor` (BLURRED_PACE while the terminal has lost focus,
        1 again when it has it back). Back at 1, a read overdue at its own interval runs at the next tick: what is on
        screen catches up at once."""
        self.pace = factor

    def poll_now(self, topic: str, key: str) -> None:
        """Read a subscribed topic again at the next tick instead of waiting for its interval (ctrl+r)."""
        self._polled_at.pop((topic, key), None)

    def poll_soon(self, topic: str, key: str) -> None:
        """`poll_now` from any thread (a topic read that found another subscription's data new)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.poll_now, topic, key)

    @property
    def subscriptions(self) -> frozenset[tuple[str, str]]:
        return frozenset(self._subscribed)

    def release(self, shown_version: int) -> None:
        """The Snapshot of `shown_version` is on screen: once that one carries the first kind's answer, a held
        reconciler starts the rest of its reads (see `hold`)."""
        if self._hold and self._answered_in is not None and shown_version >= self._answered_in:
            self._hold = False
            self._shown.set()
            self._start_background()

    @property
    def held(self) -> bool:
        """Whether the reads after the first kind's list still wait for `release`."""
        return self._hold

    def stop(self) -> None:
        """Stop the watch threads and close their streams (run() returns)."""
        self._stop.set()
        self._shown.set()
        for stream in list(self._streams.values()):
            stream.abort()
        self._wake(("stop", None, None))

    def _wake(self, item) -> None:
        if self._loop is not None and self._queue is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    # -- main loop ----------------------------------------------------------------------------------------

    async def run(self, post: Callable[[Published], object]) -> None:
        """Start the watchers and publish coalesced snapshots through `post` until cancelled or stopped."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._stop.clear()
        self._initial_sources()
        # the first kind (Jobs) is listed alone: the first list paints without waiting behind, or competing
        # with, the decoding of every Pod, the subscriptions' reads and the probes (and the imports they pull
        # in); those start once it answered (listed or failed) and, when held, once that answer is shown
        self._start_watches(self.kinds[:1])
        with contextlib.suppress(asyncio.TimeoutError):
            # an answer within a frame (the TUI's first list, read while it started) is in the first Snapshot,
            # without a Snapshot saying "connecting" painted just before it
            self._apply(await asyncio.wait_for(self._queue.get(), self.frame), post)
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
                    except (TimeoutError, asyncio.QueueEmpty):
                        break
                    self._apply(item, post)
                self._publish(post)
                published = self._loop.time()
        finally:
            for task in [*self._helpers.values(), *self._polls]:
                task.cancel()
            self.stop()

    def _start_background(self) -> None:
        """The other kinds' watches, the subscriptions' reads and the probes."""
        if self._stop.is_set() or self._helpers:
            return
        self._start_watches(self.kinds[1:])
        self._start_helper(self._poll_loop)
        self._start_helper(self._probe_loop)

    def _start_helper(self, body: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._stop.is_set():
            return
        task = self._helpers[body.__name__] = asyncio.create_task(body())
        task.add_done_callback(partial(self._helper_ended, body, time.monotonic()))

    def _helper_ended(self, body: Callable[[], Coroutine[Any, Any, None]], started: float, task: asyncio.Task) -> None:
        """A helper loop that a bug ended (the task is held here, so asyncio never said its exception): told to the
        loop's exception handler (crash.Teller: one line naming a masked report), the sources the probes keep read
        stale meanwhile, and the loop started again after a back-off, as a kind's watch is (`_watch_ended`)."""
        if task.cancelled() or self._stop.is_set() or self._loop is None or (error := task.exception()) is None:
            return
        self._loop.call_exception_handler({"message": f"the reconciler's {body.__name__} failed", "exception": error,
                                           "task": task})
        if body == self._probe_loop:
            for name, state in self._sources.items():
                if name != CONTROL_PLANE and not name.startswith("ray ") and state.status != "unconfigured":
                    self._wake(("source", name, ("stale", f"its probe failed ({type(error).__name__}); probing again")))
        backoff = self._restarts.setdefault(body.__name__, Backoff())
        if time.monotonic() - started >= RESTART_RESET_SECONDS:
            backoff.reset()
        self._loop.call_later(backoff.next(), self._start_helper, body)

    def _start_watches(self, kinds: tuple[Kind, ...]) -> None:
        for kind in kinds:
            threading.Thread(target=self._watch_thread, args=(kind,), name=f"watch-{kind.plural}",
                             daemon=True).start()

    def _watch_thread(self, kind: Kind) -> None:
        """One kind's list+watch. A bug that ends it (an exception list_watch's guards do not expect, such as one
        a hostile object raises in a derivation) is told by threading.excepthook (crash.Teller: one line naming a
        masked report), and said on the loop, which starts the watch again after a back-off (`_watch_ended`)."""
        def keep(stream: LineStream) -> None:
            self._streams[kind.plural] = stream

        started = time.monotonic()
        try:
            for event in self.access.list_watch(kind, self._stop, on_stream=keep):
                if self._stop.is_set():
                    return
                self._heard = time.monotonic()
                self._wake(("watch", kind.plural, event))
                if event.type == "RELIST" and kind is self.kinds[0]:
                    self._shown.wait()
        except Exception as exc:
            stream = self._streams.pop(kind.plural, None)
            if stream is not None:
                stream.abort()
            self._wake(("ended", kind, (exc, time.monotonic() - started)))
            raise

    def _watch_ended(self, kind: Kind, error: Exception, lasted: float) -> None:
        """A kind's watch a bug ended: the control plane reads as for a dropped watch of that kind (stale, or
        disconnected before its first list: the header, :alerts' source-unreachable) until the watch, started
        again after its back-off (reset once a watch lasted RESTART_RESET_SECONDS), answers."""
        if kind is self.kinds[0]:
            self._first_answered = True  # an answer, as a failed list is: a held reconciler goes on
        backoff = self._restarts.setdefault(kind.plural, Backoff())
        if lasted >= RESTART_RESET_SECONDS:
            backoff.reset()
        self._errors[kind.plural] = f"the watch of {kind.plural} failed ({type(error).__name__})"
        if self._loop is not None and not self._stop.is_set():
            self._loop.call_later(backoff.next(), self._restart_watch, kind)

    def _restart_watch(self, kind: Kind) -> None:
        if not self._stop.is_set():
            self._start_watches((kind,))

    def _apply(self, item, post) -> None:
        """Apply one queued answer. A bug applying it (an exception of rlark's own code over one answer: it ended the
        reconciler, and nothing more reached the screens or rlark watch) is told to the loop's exception handler
        (crash.Teller: one line naming a masked report), and that answer is left out."""
        try:
            self._apply_item(item, post)
        except Exception as exc:
            asyncio.get_running_loop().call_exception_handler({"message": "the reconciler could not apply an answer",
                                                               "exception": exc})

    def _apply_item(self, item, post) -> None:
        what, name, payload = item
        if what == "watch":
            self._apply_watch(name, payload, post)
        elif what == "poll":
            topic, key = name
            if self._results[topic].get(key) == payload:
                return
            self._results[topic][key] = payload
            self._changed.add(topic)
            self._forget(topic, key)  # read for a Job deleted, and unsubscribed, while its answer was on its way
            source = self.topics[topic].source
            if source is not None:
                self._set_source(*source(key, payload), post)
        elif what == "source":
            self._set_source(name, payload[0], payload[1], post)
        elif what == "silent":
            self._silent = payload
            self._update_control_plane(post)
        elif what == "ended":
            self._watch_ended(name, *payload)
            self._update_control_plane(post)

    def _apply_watch(self, plural: str, event: WatchEvent, post) -> None:
        objects = self._objects[plural]
        if plural == self.kinds[0].plural:
            self._first_answered = True
        if event.type == "RELIST":
            gone = objects.keys() - {source_key(obj) for obj in event.items} if plural == JOBS.plural else set()
            self._objects[plural] = {source_key(obj): obj for obj in event.items}
            self._listed.add(plural)
            self._changed.add(plural)
            self._delta[plural] = None
            self._forget_jobs(gone)
        elif event.type in ("ADDED", "MODIFIED") and event.obj is not None:
            key = source_key(event.obj)
            objects[key] = event.obj
            self._errors.pop(plural, None)
            self._note(plural, key)
        elif event.type == "DELETED" and event.obj is not None:
            key = source_key(event.obj)
            objects.pop(key, None)
            self._note(plural, key)
            if plural == JOBS.plural:
                self._forget_jobs({key})
        elif event.type == "CONNECTED":
            self._errors.pop(plural, None)
        elif event.type == "ERROR":
            self._errors[plural] = str(event.error)
        self._update_control_plane(post)

    def _forget_jobs(self, names: set[str]) -> None:
        for name in names:
            for topic in self._results:
                self._forget(topic, name)

    def _note(self, plural: str, key: str) -> None:
        self._changed.add(plural)
        keys = self._delta.setdefault(plural, set())
        if keys is not None:
            keys.add(key)

    def _update_control_plane(self, post) -> None:
        if self._silent:
            self._set_source(CONTROL_PLANE, "stale" if self._listed else "disconnected",
                             f"{self._silent}; reconnecting" if self._listed else self._silent, post)
        elif self._errors:
            # a kind never listed has no data at all (disconnected, not stale); Jobs' error first
            failing = sorted(self._errors, key=lambda plural: (plural in self._listed, plural != JOBS.plural))
            why = self._errors[failing[0]]
            if failing[0] in self._listed:
                self._set_source(CONTROL_PLANE, "stale", f"{why}; reconnecting", post)
            else:
                self._set_source(CONTROL_PLANE, "disconnected", why, post)
        elif self._listed >= {k.plural for k in self.kinds}:
            self._set_source(CONTROL_PLANE, "connected", "", post)

    def _set_source(self, name: str, status: SourceStatus, reason: str, post) -> None:
        state = SourceState(name, status, reason)
        if self._sources.get(name) == state:
            return
        known = name in self._sources
        self._sources[name] = state
        if not known:  # data planes are found by the first probe: keep the header's order (gateway last)
            self._sources = dict(sorted(self._sources.items(), key=lambda item: item[0] == GATEWAY))
        self._changed.add("sources")

    def _publish(self, post) -> None:
        if not self._changed and self._snapshot.sources:
            return
        previous = self._snapshot

        def part(name: str, current: dict) -> MappingProxyType:
            """A frozen copy of what changed; the previous Snapshot's very mapping for what did not."""
            return MappingProxyType(dict(current)) if name in self._changed else getattr(previous, name)

        snapshot = Snapshot(
            jobs=part(JOBS.plural, self._objects[JOBS.plural]),
            tasks=part(TASKS.plural, self._objects[TASKS.plural]),
            pods=part(PODS.plural, self._objects[PODS.plural]),
            nodes=part(NODES.plural, self._objects[NODES.plural]),
            domains=part(DOMAINS.plural, self._objects[DOMAINS.plural]),
            sources=part("sources", self._sources),
            **{name: part(name, results) for name, results in self._results.items()},
            version=previous.version + 1,
            changes=MappingProxyType({plural: frozenset(keys) for plural, keys in self._delta.items()
                                      if keys is not None}),
        )
        self._changed.clear()
        self._delta.clear()
        self._index = SnapshotIndex(snapshot, self._index)
        self._snapshot = snapshot
        post(Published(snapshot, self._index))
        if self._first_answered and self._answered_in is None:
            self._answered_in = snapshot.version
            if not self._hold:
                self._start_background()

    # -- sources other than the control plane ---------------------------------------------------------------

    def _initial_sources(self) -> None:
        self._sources[GATEWAY] = (SourceState(GATEWAY, "stale", "not contacted yet") if self.access.gateway
                                  else SourceState(GATEWAY, "unconfigured", "no gateway configured — see "
                                                                            "`rlark config`"))
        self._changed.add("sources")

    async def _probe_loop(self) -> None:
        while not self._stop.is_set():
            silent = await asyncio.to_thread(self._probe_control_plane)
            results = await asyncio.to_thread(self._probe)
            for name, status, reason in results:
                self._wake(("source", name, (status, reason)))
            healthy = not silent and all(status == "connected" for _, status, _ in results)
            await asyncio.sleep(self.probe_interval if healthy else min(self.probe_interval, PROBE_RETRY_SECONDS))

    def _probe_control_plane(self) -> str:
        """After a probe interval without a watch event (or while it was silent), ask the control plane once
        (blocking; runs in a thread). A server that keeps the watches open but answers nothing (stopped, a link gone
        silent) then reads stale within a probe instead of connected until the watches' read timeout (minutes), and
        its watches are opened again. Returns why it did not answer ('' when it did, or was not asked)."""
        if not self._silent and time.monotonic() - self._heard < self.probe_interval:
            return ""
        try:
            self.access.answers(min(PROBE_TIMEOUT, self.probe_interval))
            silent = ""
        except Unreachable as exc:
            silent = str(exc)
        was = self._silent
        if silent != was:  # first, so the header says why: an aborted watch's own error comes after it
            self._wake(("silent", "", silent))
        if silent and not was:
            for stream in list(self._streams.values()):
                stream.abort()
        return silent

    def _probe(self) -> list[tuple[str, str, str]]:
        """Contact each member cluster's data plane (through rlark-server) and the gateway once (blocking; runs in a
        thread)."""
        results = []
        for cluster in self.access.member_clusters():
            name = f"data plane {cluster}"
            try:
                plane = self.access.data_plane(cluster)
                if plane is None:
                    raise Unreachable(self.access.server_problem or "no rlark-server", "config")
                plane.json("GET", "/api/v1/namespaces/rlark-system/pods", Request("list", "pods", source=name),
                           [("limit", "1")], timeout=5)
                endpoint = self.access.server_endpoint()
                unverified = endpoint is not None and not endpoint.verified
                results.append((name, "connected", "rlark-server unverified" if unverified else ""))
            except (ApiError, Unreachable) as exc:
                results.append((name, "disconnected", str(exc)))
        if self.access.gateway:
            try:
                self.access.gateway_clusters()
                results.append((GATEWAY, "connected", ""))
            except (ApiError, Unreachable) as exc:
                results.append((GATEWAY, "disconnected", str(exc)))
        return results

    async def _poll_loop(self) -> None:
        """Start each subscription's read when its interval has passed (one read per subscription at a time, at
        most MAX_PARALLEL_POLLS in all and MAX_POLLS_PER_KEY of one key, the most overdue for its interval first: the
        2 s alert round is not kept waiting behind a burst of 10 s reads of the Jobs on screen falling due together;
        a reserved topic's reads, the alert round's, have places of their own)."""
        while not self._stop.is_set():
            now = self._clock()
            due = []
            for sub, detail in self._subscribed.items():
                interval = self.topics[sub[0]].read(detail)[1] * self.pace
                waited = now - self._polled_at.get(sub, float("-inf"))
                if sub not in self._in_flight and waited >= interval:
                    due.append((-waited / interval, sub))
            places = MAX_PARALLEL_POLLS - sum(1 for name, _ in self._in_flight if not self.topics[name].reserved)
            per_key: dict[str, int] = {}
            for name, key in self._in_flight:
                per_key[key] = per_key.get(key, 0) + (not self.topics[name].reserved)
            for _, (topic, key) in sorted(due):
                if not self.topics[topic].reserved:
                    if places <= 0 or per_key.get(key, 0) >= MAX_POLLS_PER_KEY:
                        continue
                    places -= 1
                    per_key[key] = per_key.get(key, 0) + 1
                self._in_flight.add((topic, key))
                self._polled_at[(topic, key)] = now
                task = asyncio.create_task(self._poll(self.topics[topic], key, self._subscribed[(topic, key)]))
                self._polls.add(task)
                task.add_done_callback(self._polls.discard)
            await asyncio.sleep(POLL_TICK_SECONDS)

    async def _poll(self, topic: Topic, key: str, detail: bool) -> None:
        fetch, interval = topic.read(detail)
        if fetch is None:
            fetch = self._rounds.get(topic.name)
        if fetch is None:
            if topic.rounds is None:
                raise ValueError(f"topic {topic.name} has neither a fetch nor rounds")
            fetch = self._rounds[topic.name] = topic.rounds(self.poll_soon)

        def read() -> object:
            # the interval runs from when the read starts: one started late by a busy thread pool does not let
            # the next one follow it sooner than `interval`
            self._polled_at[(topic.name, key)] = self._clock()
            return fetch(self.access, self._index, key)

        try:
            result = await asyncio.to_thread(read)
        finally:
            self._in_flight.discard((topic.name, key))
            if (topic.name, key) not in self._subscribed:  # unsubscribed while it read: nothing more to time
                self._polled_at.pop((topic.name, key), None)
        if (topic.name, key) not in self._subscribed:
            return
        if result is None:
            # nothing to read yet (e.g. the Job is not listed): try again after NOTHING_YET_SECONDS, not at every tick,
            # so many such subscriptions do not keep the thread pool busy
            retry = min(interval, NOTHING_YET_SECONDS)
            self._polled_at[(topic.name, key)] = self._clock() - interval + retry
            return
        self._wake(("poll", (topic.name, key), result))
