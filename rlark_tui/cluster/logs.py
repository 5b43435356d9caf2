"""Job logs: which Pods a Job has, their `main` container logs (data plane, else gateway), and the one follower.

Owns reading the last lines of several Pods, merging them by time, and following them across dropped streams
(LogFollower, used by `rlark logs -f` and the TUI log pane): announced, reconnected with back-off, resumed
without duplicates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlark_tui.cluster.access import Backoff, ClusterAccess
from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.http import LineStream, TailRead, tail_bytes, tail_left_out
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.logmerge import LogLine, Resume, merge_by_time, split_line, split_raw
from rlark_tui.errors import UsageError
from rlark_tui.model import keys
from rlark_tui.model.logtarget import LogTarget
from rlark_tui.model.objects import Job, Pod, Task
from rlark_tui.text.parse import ascii_int

DISCOVER_SECONDS = 5.0
GATEWAY_LINES = 1000
WHOLE_LOG_BYTES = 64 << 20
"""A read of a Pod's whole log (`rlark logs` without --tail, or with only --since) holds at most this much of its
newest lines as strings (a data plane may answer lines of 16 MiB without end). A kubelet answers it from the log's
current file, which the runtime rotates past 10 MiB (the kubelet's default containerLogMaxSize), and an entry takes
at most 4.7 times its bytes there as a str (one character outside the BMP: 35 bytes on disk, 164 as its line), so a
real log's 47 MiB are never cut."""


@dataclass(frozen=True)
class Notice:
    """A line about the stream itself (interrupted, reconnecting, unavailable), not from the Pod."""

    text: str


def resolve_targets(access: ClusterAccess, job_name: str, role: str | None = None,
                    pod: str | None = None) -> list[LogTarget]:
    """The Pods of a Job to read, optionally only one role (task name or platform role) or one Pod."""
    job = Job(access.get(JOBS, job_name))
    tasks = [Task(t) for t in access.job_tasks(job_name)]
    roles = {job.task_name(spec): spec for spec in job.tasks}
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
    return ascii_int(name.rpartition("-")[2]) or 0


class JobLogs:
    """The logs of a Job's Pods for `rlark logs`: a merged backlog, then a live follow that resumes where each Pod
    was and picks up new or replaced Pods."""

    def __init__(self, access: ClusterAccess, job: str, targets: list[LogTarget], *, tail: int | None = None,
                 previous: bool = False, since_seconds: int | None = None, role: str | None = None,
                 pod: str | None = None, before_read: Callable[[LogTarget], None] | None = None) -> None:
        self.access = access
        self.job = job
        self.before_read = before_read
        self.targets = list(targets)
        self.tail = tail
        self.previous = previous
        self.since_seconds = since_seconds
        self.role = role
        self.pod = pod
        self.resume: dict[tuple[str, str, str], Resume] = {}
        self.stop = threading.Event()
        self._follower: LogFollower | None = None
        self._gateway_cache: dict[str, list[dict[str, Any]]] = {}

    # -- backlog --------------------------------------------------------------------------------------------

    def backlog(self) -> tuple[list[LogLine], list[Notice]]:
        """The last lines of every target (data plane, else gateway), merged by time, plus per-Pod notices."""
        streams: list[list[LogLine]] = []
        notices: list[Notice] = []
        for target in self.targets:
            try:
                if self.access.data_plane(target.cluster) is None:
                    lines = gateway_lines(self.access, self.job, target, self.tail, self.previous,
                                          self._gateway_cache)
                    notices.append(Notice(f"-- [{target.source}] from the gateway: its last {GATEWAY_LINES} lines "
                                          f"({self.access.server_problem or 'no rlark-server'})"))
                else:
                    lines, left_out = self._read(target)
                    if left_out:
                        notices.append(Notice(f"-- [{target.source}] {left_out}"))
            except (ApiError, Unreachable) as exc:
                notices.append(Notice(f"-- [{target.source}] {exc}"))
                continue
            resume = self.resume.setdefault(target.key, Resume())
            streams.append([line for line in lines if resume.admit(line)])
        return merge_by_time(streams), notices

    def _read(self, target: LogTarget) -> tuple[list[LogLine], str]:
        """The target's lines and what the read left out to hold at most its bound (its tail's, else
        WHOLE_LOG_BYTES), in one line ('' if none)."""
        held = WHOLE_LOG_BYTES if self.tail is None else _tail_bytes(self.tail)
        stream = self.access.pod_log(target.cluster, target.pod, namespace=target.namespace,
                                     previous=self.previous, tail=self.tail, since_seconds=self.since_seconds,
                                     read_timeout=30, tail_bytes=held)
        return [split_line(raw, target.source) for raw in stream if raw], tail_left_out(stream)

    # -- follow ---------------------------------------------------------------------------------------------

    def follow(self, on_line: Callable[[LogLine], None], on_notice: Callable[[Notice], None]) -> None:
        """Follow every present Pod until `stop` is set or none is left; blocking (run it in a thread).

        Every few seconds the Job's Pods are listed again, so new or replaced Pods are picked up.
        """
        def on_lines(source: str, stamps: list[str], texts: list[str]) -> None:
            for stamp, text in zip(stamps, texts):
                on_line(LogLine(source, text, None, stamp))
        follower = LogFollower(self.access, on_lines, lambda text: on_notice(Notice(f"-- {text}")), tail=self.tail,
                               since_seconds=self.since_seconds, resume=self.resume, before_read=self.before_read)
        self._follower = follower
        if self.stop.is_set():
            follower.close()
        warned: set[tuple[str, str, str]] = set()
        present = list(self.targets)
        while not self.stop.is_set():
            for target in present:
                if not follower.following(target) and not self._plane_missing(target, on_notice, warned):
                    follower.add(target, self.job)
            if not follower.any_alive():
                on_notice(Notice(f"-- no Pods left to follow for job {self.job}"))
                break
            if self.stop.wait(DISCOVER_SECONDS):
                break
            found = self._discover(on_notice)
            if found is None:
                break
            present = found
        self.close()

    def _plane_missing(self, target: LogTarget, on_notice: Callable[[Notice], None],
                       warned: set[tuple[str, str, str]]) -> bool:
        try:
            missing = self.access.data_plane(target.cluster) is None
            why = (f"cannot follow: no data plane for cluster {target.cluster} (the gateway only gives "
                   f"the last {GATEWAY_LINES} lines) — see `rlark config`")
        except Unreachable as exc:
            missing, why = True, str(exc)
        if missing and target.key not in warned:
            warned.add(target.key)
            on_notice(Notice(f"-- [{target.source}] {why}"))
        return missing

    def _discover(self, on_notice: Callable[[Notice], None]) -> list[LogTarget] | None:
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

    def close(self) -> None:
        self.stop.set()
        if self._follower is not None:
            self._follower.close()


def _tail_bytes(tail: int | None) -> int | None:
    """A tail read's bound on what its lines hold (http.tail_bytes: what a kubelet's answer may take; a data plane
    may answer lines of 16 MiB, so `tail` lines were up to `tail` × 16 MiB)."""
    return tail_bytes(tail) if tail is not None and tail >= 0 else None


def gateway_lines(access: ClusterAccess, job: str, target: LogTarget, tail: int | None, previous: bool,
                  cache: dict[str, list[dict[str, Any]]]) -> list[LogLine]:
    """A Pod's last lines from the gateway's `jobs/<job>/logs` (read once per job into `cache`)."""
    if access.gateway is None:
        raise Unreachable(f"logs: no data plane for cluster {target.cluster} "
                          f"({access.server_problem or 'no rlark-server'}) and no gateway — see `rlark config`",
                          "config")
    if previous:
        raise Unreachable("logs: the gateway has no previous-instance logs; rlark-server is needed for "
                          f"cluster {target.cluster} (see `rlark config`)", "config")
    if job not in cache:
        cache[job] = access.gateway_job_logs(job)
    for entry in cache[job]:
        if entry.get("podName") == target.pod:
            text = entry.get("logs") or ""
            lines = [LogLine(target.source, raw) for raw in str(text).splitlines()]
            return lines[max(0, len(lines) - tail):] if tail is not None and tail >= 0 else lines
    raise Unreachable(f"logs: the gateway returned nothing for pod {target.pod}", "other")


class LogFollower:
    """Follows the `main` log of Pods, each on its own daemon thread (a slow Pod never holds another back).

    A Pod is read from its last `tail` lines (or `since_seconds`), then live; a dropped stream is announced,
    reconnected with back-off and resumed by timestamp plus count, so no line is repeated or lost, the end of
    an instance that was replaced meanwhile included (read with `previous` before following the new one). Lines go to
    `on_lines(source, stamps, texts)`, all the new lines of one read at once (the hot path: no object per line,
    and whoever takes them masks, cleans and hands them over per read), notices to `on_notice(text)`; both are
    called on the reading threads. With `previous` each Pod's previous instance is read once, without follow.
    Without a data plane for a Pod's cluster, the gateway's last lines are given once instead (no follow).
    """

    def __init__(self, access: ClusterAccess, on_lines: Callable[[str, list[str], list[str]], None],
                 on_notice: Callable[[str], None], *, tail: int | None = None, since_seconds: int | None = None,
                 previous: bool = False, resume: dict[tuple[str, str, str], Resume] | None = None,
                 before_read: Callable[[LogTarget], None] | None = None) -> None:
        self.access = access
        self.on_lines = on_lines
        self.on_notice = on_notice
        self.before_read = before_read
        """Called on a Pod's reading thread before its first read, and before each read again after a dropped stream
        (cluster/secrets.py learns what to mask)."""
        self.tail = tail
        self.since_seconds = since_seconds
        self.previous = previous
        self.resume = resume if resume is not None else {}
        self.stop = threading.Event()
        self._threads: dict[tuple[str, str, str], threading.Thread] = {}
        self._open: dict[tuple[str, str, str], LineStream | TailRead] = {}
        self._lock = threading.Lock()
        self._gateway_cache: dict[str, list[dict[str, Any]]] = {}

    @property
    def open_streams(self) -> int:
        """Pods whose log stream is open right now."""
        return len(self._open)

    def following(self, target: LogTarget) -> bool:
        thread = self._threads.get(target.key)
        return thread is not None and thread.is_alive()

    def any_alive(self) -> bool:
        return any(thread.is_alive() for thread in list(self._threads.values()))

    def add(self, target: LogTarget, job: str = "") -> None:
        """Start following `target` unless it is followed already (`job` names it for the gateway fallback)."""
        if self.stop.is_set() or self.following(target):
            return
        thread = threading.Thread(target=self._run, args=(target, job), name=f"logs-{target.pod}", daemon=True)
        self._threads[target.key] = thread
        thread.start()

    def close(self) -> None:
        """Stop every reader now (safe from any thread, more than once)."""
        self.stop.set()
        with self._lock:
            streams = list(self._open.values())
        for stream in streams:
            stream.abort()

    def _run(self, target: LogTarget, job: str) -> None:
        try:
            if self.before_read is not None:
                self.before_read(target)
            self._follow(target, job)
        except Exception as exc:  # a reader's last word goes to the user, never to stderr as a traceback
            if not self.stop.is_set():
                self.on_notice(f"[{target.source}] reading the log failed: {exc}")

    def _follow(self, target: LogTarget, job: str) -> None:
        resume = self.resume.setdefault(target.key, Resume())
        backoff = Backoff()
        last_refusal = ""
        source, on_lines = target.source, self.on_lines
        dropped = False
        tail_read = False
        while not self.stop.is_set():
            tail = self.tail if resume.last is None and not tail_read else None
            if tail and not self.previous and not dropped:
                tail_read = self._tail_first(target, resume)
                tail = None if tail_read else tail
            if self.stop.is_set():
                return
            if dropped and self.before_read is not None:  # the container may run anew, with other Secrets
                self.before_read(target)
            try:
                stream = self.access.pod_log(
                    target.cluster, target.pod, namespace=target.namespace, follow=not self.previous,
                    previous=self.previous, tail=tail,
                    since_seconds=self.since_seconds if resume.last is None else None,
                    since_time=resume.since(), read_timeout=None, tail_bytes=_tail_bytes(tail))
            except NotFound:
                self.on_notice(f"[{source}] Pod {target.pod} is gone (stopped or replaced)")
                return
            except Unreachable as exc:
                if exc.kind == "config":
                    self._gateway_snapshot(target, job, str(exc))
                    return
                self.on_notice(f"stream interrupted: [{source}] {exc}; reconnecting")
                self.stop.wait(backoff.next())
                continue
            except ApiError as exc:
                if self.previous:
                    self.on_notice(f"[{source}] {exc}")
                    return
                if exc.status != 400:
                    self.on_notice(f"stream interrupted: [{source}] {exc}; reconnecting")
                elif str(exc) != last_refusal:  # e.g. "container is waiting to start": said once, retried quietly
                    last_refusal = str(exc)
                    self.on_notice(f"[{source}] {exc}; retrying")
                self.stop.wait(backoff.next())
                continue
            with self._lock:
                self._open[target.key] = stream
            if self.stop.is_set():  # closed while connecting: close() did not see this stream
                stream.abort()
            if dropped and resume.last is not None and not self.previous and not self._previous_instance(
                    target, resume):
                with self._lock:
                    self._open.pop(target.key, None)
                stream.abort()
                self.on_notice(f"stream interrupted: [{source}] the previous instance could not be read; "
                               "reconnecting")
                self.stop.wait(backoff.next())
                continue
            resume.restart()
            shown = False
            try:
                for batch in stream.batches():
                    if self.stop.is_set():
                        return
                    stamps, texts = _admitted(batch, resume)
                    if texts:
                        on_lines(source, stamps, texts)
                        shown = True
                why = "the server ended the stream"
            except Unreachable as exc:
                why = str(exc)
            finally:
                with self._lock:
                    if self._open.get(target.key) is stream:
                        del self._open[target.key]
            if self.stop.is_set():
                return
            left_out = tail_left_out(stream)  # a read without follow (the previous instance) holds its tail
            if left_out:
                self.on_notice(f"[{source}] {left_out}")
            if self.previous:
                self.on_notice(f"[{source}] end of the previous instance of {target.pod}")
                return
            if shown:
                backoff.reset()
            if not self._still_there(target):
                self.on_notice(f"[{source}] Pod {target.pod} is gone (stopped or replaced)")
                return
            self.on_notice(f"stream interrupted: [{source}] {why}; reconnecting")
            dropped = True
            self.stop.wait(backoff.next())

    def _tail_first(self, target: LogTarget, resume: Resume) -> bool:
        """A follow's first `tail` lines, read as a tail (access.pod_log's TailRead: the kubelet's tailLines counts
        a line longer than 16 KiB as several, so the log pane's first 1,000 of 40 KB lines were 334) and shown, with
        what the read left out or why it has fewer; the follow then goes on from them by sinceTime, lines shown
        dropped by Resume. False when the read failed, and the follow asks its tailLines as before."""
        try:
            stream = self.access.pod_log(target.cluster, target.pod, namespace=target.namespace, tail=self.tail,
                                         since_seconds=self.since_seconds, read_timeout=30,
                                         tail_bytes=_tail_bytes(self.tail))
        except (ApiError, Unreachable):
            return False
        with self._lock:
            self._open[target.key] = stream
        if self.stop.is_set():  # closed while connecting: close() did not see this read
            stream.abort()
        try:
            resume.restart()
            for batch in stream.batches():
                stamps, texts = _admitted(batch, resume)
                if texts and not self.stop.is_set():
                    self.on_lines(target.source, stamps, texts)
                if texts and isinstance(stream, TailRead) and not stream.whole and resume.count_at_last == len(texts):
                    resume.all_seen_at_last()
        except Unreachable as exc:
            if not self.stop.is_set():
                self.on_notice(f"stream interrupted: [{target.source}] {exc}; reconnecting")
            return False
        finally:
            with self._lock:
                if self._open.get(target.key) is stream:
                    del self._open[target.key]
        left_out = tail_left_out(stream)
        if left_out and not self.stop.is_set():
            self.on_notice(f"[{target.source}] {left_out}")
        return True

    def _previous_instance(self, target: LogTarget, resume: Resume) -> bool:
        """After a dropped stream, once the follow of the current instance is open and before it is read: what
        the instance before that one wrote after the resume point. The container may have been restarted
        meanwhile (the runtime or its node crashed), and a follow of the current instance never shows the end of
        the old one. Asked after the follow is open, as the kubelet picks the instance a request reads when it
        arrives: a restart between the two requests leaves the old instance as the previous one, never skipped.
        Lines already shown are dropped by timestamp and count; no previous instance, or none newer, shows
        nothing. False when the answer could not be had (the server unreachable or failing), so the caller asks
        again rather than read past the old instance's end."""
        try:
            stream = self.access.pod_log(target.cluster, target.pod, namespace=target.namespace, previous=True,
                                         since_time=resume.since(), read_timeout=30)
            resume.restart()
            for batch in stream.batches():
                if self.stop.is_set():
                    return True
                stamps, texts = _admitted(batch, resume)
                if texts:
                    self.on_lines(target.source, stamps, texts)
        except ApiError as exc:
            return exc.status < 500
        except Unreachable:
            return False
        return True

    def _still_there(self, target: LogTarget) -> bool:
        """After a stream ends: False only when the data plane says the pod is gone."""
        try:
            self.access.data_plane_pod(target.cluster, target.pod, target.namespace)
        except NotFound:
            return False
        except (ApiError, Unreachable):
            return True
        return True

    def _gateway_snapshot(self, target: LogTarget, job: str, reason: str) -> None:
        """No data plane for this Pod's cluster: the gateway's last 1000 lines, once, when it has them."""
        try:
            lines = gateway_lines(self.access, job, target, self.tail, self.previous, self._gateway_cache)
        except (ApiError, Unreachable) as exc:
            self.on_notice(f"[{target.source}] {reason}; gateway: {exc}" if self.access.gateway else
                           f"[{target.source}] {exc}")
            return
        if lines:
            self.on_lines(target.source, [line.stamp for line in lines], [line.text for line in lines])
        self.on_notice(f"[{target.source}] from the gateway: its last {GATEWAY_LINES} lines, no follow ({reason})")


def _admitted(batch: list[str], resume: Resume) -> tuple[list[str], list[str]]:
    """The timestamps and texts of the lines of one read that `resume` admits (not shown before); an empty line
    is no line."""
    stamps: list[str] = []
    texts: list[str] = []
    admit = resume.admit_ts
    for raw in batch:
        if raw:
            stamp, ts, text = split_raw(raw)
            if admit(ts):
                stamps.append(stamp)
                texts.append(text)
    return stamps, texts
