"""Job logs: which Pods a Job has, their `main` container logs (data plane, else gateway), and live follow.

Owns reading the last lines of several Pods, merging them by time, and following them across dropped
streams: a dropped stream is announced, reconnected with backoff and resumed without duplicates.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from rlark_tui.cluster.access import Backoff, ClusterAccess
from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.logmerge import LogLine, Resume, merge_by_time, source_name, split_line
from rlark_tui.errors import UsageError
from rlark_tui.model import keys
from rlark_tui.model.views import Job, Pod, Task

DISCOVER_SECONDS = 5.0


@dataclass(frozen=True)
class LogTarget:
    """One Pod whose `main` container is read: its role (task name inside the Job) and where it runs."""

    role: str
    pod: str
    cluster: str
    namespace: str
    phase: str = ""

    @property
    def source(self) -> str:
        return source_name(self.role, self.pod)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.cluster, self.namespace, self.pod


@dataclass(frozen=True)
class Notice:
    """A line about the stream itself (interrupted, reconnecting, unavailable), not from the Pod."""

    text: str


def resolve_targets(access: ClusterAccess, job_name: str, role: str | None = None,
                    pod: str | None = None) -> list[LogTarget]:
    """The Pods of a Job to read, optionally only one role (task name or platform role) or one Pod."""
    job = Job(access.get(JOBS, job_name))
    tasks = [Task(t) for t in access.job_tasks(job_name)]
    roles = {f"{job_name}-{spec.name}": spec for spec in job.tasks}
    if role is not None:
        wanted = role.lower()
        chosen = {name for name, spec in roles.items()
                  if wanted in (spec.name.lower(), spec.role.lower(), name.lower())}
        if not chosen:
            raise UsageError(f"job {job_name} has no role {role!r} "
                             f"(roles: {', '.join(s.name for s in job.tasks) or 'none'})")
        tasks = [t for t in tasks if t.name in chosen]
    order = {name: index for index, name in enumerate(roles)}
    targets = []
    for pod_cr in (Pod(p) for p in access.job_pods(job_name, [t.raw for t in tasks])):
        spec = roles.get(pod_cr.task_name)
        short = spec.name if spec else pod_cr.task_name.removeprefix(f"{job_name}-")
        if pod is not None and pod not in (pod_cr.pod_name, pod_cr.name):
            continue
        targets.append(LogTarget(short, pod_cr.pod_name or pod_cr.name, pod_cr.namespace,
                                 pod_cr.pod_namespace or keys.WORKLOAD_NAMESPACE, pod_cr.phase))
    if pod is not None and not targets:
        raise UsageError(f"job {job_name} has no Pod {pod!r}")
    targets.sort(key=lambda t: (order.get(f"{job_name}-{t.role}", 99), _ordinal(t.pod), t.pod))
    return targets


def _ordinal(name: str) -> int:
    tail = name.rpartition("-")[2]
    return int(tail) if tail.isascii() and tail.isdigit() else 0


class JobLogs:
    """The logs of a set of Pods: a merged backlog, then a live follow that resumes where each Pod was."""

    def __init__(self, access: ClusterAccess, job: str, targets: list[LogTarget], *, tail: int | None = None,
                 previous: bool = False, since_seconds: int | None = None, role: str | None = None,
                 pod: str | None = None) -> None:
        self.access = access
        self.job = job
        self.targets = list(targets)
        self.tail = tail
        self.previous = previous
        self.since_seconds = since_seconds
        self.role = role
        self.pod = pod
        self.resume: dict[tuple[str, str, str], Resume] = {}
        self.stop = threading.Event()
        self._streams: set = set()
        self._lock = threading.Lock()
        self._gateway_cache: list[dict] | None = None

    # -- backlog --------------------------------------------------------------------------------------------

    def backlog(self) -> tuple[list[LogLine], list[Notice]]:
        """The last lines of every target (data plane, else gateway), merged by time, plus per-Pod notices."""
        streams: list[list[LogLine]] = []
        notices: list[Notice] = []
        for target in self.targets:
            try:
                lines = self._read(target)
            except (ApiError, Unreachable) as exc:
                notices.append(Notice(f"-- [{target.source}] {exc}"))
                continue
            resume = self.resume.setdefault(target.key, Resume())
            streams.append([line for line in lines if resume.admit(line)])
        return merge_by_time(streams), notices

    def _read(self, target: LogTarget) -> list[LogLine]:
        if self.access.data_plane(target.cluster) is None:
            return self._gateway_lines(target)
        stream = self.access.pod_log(target.cluster, target.pod, namespace=target.namespace,
                                     previous=self.previous, tail=self.tail, since_seconds=self.since_seconds,
                                     read_timeout=30)
        return [split_line(raw, target.source) for raw in stream if raw]

    def _gateway_lines(self, target: LogTarget) -> list[LogLine]:
        if self.access.gateway is None:
            raise Unreachable(f"logs: no data-plane context or gateway configured for cluster {target.cluster} "
                              f"— see `rlark config`", "config")
        if self.previous:
            raise Unreachable("logs: the gateway has no previous-instance logs; configure a data-plane context "
                              f"for cluster {target.cluster} (see `rlark config`)", "config")
        if self._gateway_cache is None:
            self._gateway_cache = self.access.gateway_job_logs(self.job)
        for entry in self._gateway_cache:
            if entry.get("podName") == target.pod:
                text = entry.get("logs") or ""
                lines = [LogLine(target.source, raw) for raw in str(text).splitlines()]
                return lines[-self.tail:] if self.tail is not None and self.tail >= 0 else lines
        raise Unreachable(f"logs: the gateway returned nothing for pod {target.pod}", "other")

    # -- follow ---------------------------------------------------------------------------------------------

    def follow(self, on_line: Callable[[LogLine], None], on_notice: Callable[[Notice], None]) -> None:
        """Follow every present Pod until `stop` is set or none is left; blocking (run it in a thread).

        Every few seconds the Job's Pods are listed again, so new or replaced Pods are picked up.
        """
        threads: dict[tuple[str, str, str], threading.Thread] = {}
        warned: set[tuple[str, str, str]] = set()
        present = list(self.targets)
        while not self.stop.is_set():
            for target in present:
                running = threads.get(target.key)
                if running is not None and running.is_alive():
                    continue
                if self._plane_missing(target, on_notice, warned):
                    continue
                thread = threading.Thread(target=self._follow_one, args=(target, on_line, on_notice),
                                          name=f"logs-{target.pod}", daemon=True)
                threads[target.key] = thread
                thread.start()
            if not any(t.is_alive() for t in threads.values()):
                on_notice(Notice(f"-- no Pods left to follow for job {self.job}"))
                break
            if self.stop.wait(DISCOVER_SECONDS):
                break
            found = self._discover(on_notice)
            if found is None:
                break
            present = found
        self.close()

    def _plane_missing(self, target: LogTarget, on_notice, warned: set) -> bool:
        try:
            missing = self.access.data_plane(target.cluster) is None
            why = (f"cannot follow: no data-plane context for cluster {target.cluster} (the gateway only gives "
                   f"the last 1000 lines) — see `rlark config`")
        except Unreachable as exc:
            missing, why = True, str(exc)
        if missing and target.key not in warned:
            warned.add(target.key)
            on_notice(Notice(f"-- [{target.source}] {why}"))
        return missing

    def _discover(self, on_notice) -> list[LogTarget] | None:
        """The Job's Pods now; None when the Job is gone. A failed listing keeps the previous list."""
        try:
            found = resolve_targets(self.access, self.job, self.role, self.pod)
        except NotFound:
            on_notice(Notice(f"-- job {self.job} was deleted"))
            return None
        except UsageError:
            return []  # the --role / --pod asked for has no Pod any more: nothing is left to follow
        except (ApiError, Unreachable):
            return list(self.targets)
        self.targets = found
        return found

    def _follow_one(self, target: LogTarget, on_line, on_notice) -> None:
        resume = self.resume.setdefault(target.key, Resume())
        fresh = resume.last is None
        backoff = Backoff()
        last_refusal = ""
        while not self.stop.is_set():
            try:
                stream = self.access.pod_log(
                    target.cluster, target.pod, namespace=target.namespace, follow=True,
                    tail=self.tail if fresh and resume.last is None else None,
                    since_seconds=self.since_seconds if resume.last is None else None,
                    since_time=resume.since(), read_timeout=None)
            except NotFound:
                return
            except ApiError as exc:
                if exc.status == 400 and str(exc) != last_refusal:
                    last_refusal = str(exc)
                    on_notice(Notice(f"-- [{target.source}] {exc}; retrying"))
                elif exc.status != 400:
                    on_notice(Notice(f"-- stream interrupted: [{target.source}] {exc}; reconnecting"))
                self.stop.wait(backoff.next())
                continue
            except Unreachable as exc:
                on_notice(Notice(f"-- stream interrupted: [{target.source}] {exc}; reconnecting"))
                self.stop.wait(backoff.next())
                continue
            fresh = False
            with self._lock:
                self._streams.add(stream)
            resume.restart()
            try:
                for raw in stream:
                    if self.stop.is_set():
                        return
                    if not raw:
                        continue
                    line = split_line(raw, target.source)
                    if resume.admit(line):
                        on_line(line)
                        backoff.reset()
                why = "the server ended the stream"
            except Unreachable as exc:
                why = str(exc)
            finally:
                with self._lock:
                    self._streams.discard(stream)
            if self.stop.is_set():
                return
            if not self._still_there(target):
                return
            on_notice(Notice(f"-- stream interrupted: [{target.source}] {why}; reconnecting"))
            self.stop.wait(backoff.next())

    def _still_there(self, target: LogTarget) -> bool:
        """After a stream ends: False only when the data plane says the pod is gone."""
        try:
            self.access.data_plane_pod(target.cluster, target.pod, target.namespace)
        except NotFound:
            return False
        except (ApiError, Unreachable):
            return True
        return True

    def close(self) -> None:
        self.stop.set()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.abort()


async def stream_logs(access: ClusterAccess, job: str, *, role: str | None = None, pod: str | None = None,
                      tail: int | None = 1000, previous: bool = False, follow: bool = True,
                      since_seconds: int | None = None) -> AsyncIterator[LogLine | Notice]:
    """For the TUI: the merged backlog, then (with follow) live lines and notices; blocking I/O runs in threads."""
    loop = asyncio.get_running_loop()
    targets = await asyncio.to_thread(resolve_targets, access, job, role, pod)
    logs = JobLogs(access, job, targets, tail=tail, previous=previous, since_seconds=since_seconds, role=role,
                   pod=pod)
    if not targets:
        yield Notice("No Pod details yet — waiting for task sync")
    lines, notices = await asyncio.to_thread(logs.backlog)
    for notice in notices:
        yield notice
    for line in lines:
        yield line
    if not follow or previous:
        return
    queue: asyncio.Queue = asyncio.Queue()
    done = object()

    def push(item) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def run() -> None:
        try:
            logs.follow(push, push)
        finally:
            push(done)

    thread = threading.Thread(target=run, name=f"logs-{job}", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is done:
                return
            yield item
    finally:
        logs.close()

