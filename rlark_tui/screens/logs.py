"""LogScreen: the `main` container logs of one Pod, one role, or all Pods of a Job merged with prefixes.

One daemon thread per Pod streams through ClusterAccess (last 1000 lines, then follow; resume after a drop by
timestamp). Not Textual thread workers: those share the loop's default executor of cpu_count + 4 threads, so a Job
of 10 Pods on 2 cores followed only 6 and starved the app's other work. The threads hand lines to a bounded
PendingLines; the pane takes them in one batch per DRAIN_SECONDS (one repaint per batch, however fast lines come).
When logs cannot be read the pane says why (no data plane or gateway, Pod not started, stream dropped —
reconnecting).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.cluster.logmerge import Resume, split_line, split_raw
from rlark_tui.fsutil import write_private
from rlark_tui.model import Pod, keys
from rlark_tui.model.redact import redact_text
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.screens.view_model import SnapshotIndex
from rlark_tui.widgets.filter_bar import FilterBar, Matcher
from rlark_tui.widgets.log_pane import LogBuffer, LogView, PendingLines

TAIL_LINES = 1000
BUFFER_LINES = 20_000
DRAIN_SECONDS = 0.1
"""10 repaints/s while lines flow: at 20,000 lines/s each repaint renders every visible row anew, so 0.05 s cost the
UI thread a fifth more CPU for no visible gain."""
STATUS_SECONDS = 0.5
"""While lines stream, the status line is redrawn at most this often; keys redraw it at once. Its height is fixed
(styles: `#log-status`), so an update needs no layout pass (which repaints the whole screen)."""
STARTED_PHASES = ("Running", "Succeeded", "Failed")

Scope = tuple[str, str] | None
"""None = all Pods of the Job; ("role", task name); ("pod", Pod CR key `namespace/name`)."""


@dataclass(frozen=True)
class PodTarget:
    """One Pod whose log is read: where it runs and the prefix its lines get."""

    key: str
    cluster: str
    pod_name: str
    pod_namespace: str
    source: str
    phase: str


class LogScreen(RlarkScreen):
    """Logs of a Job; `[` and `]` step through all Pods / each role / each Pod."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("s", "follow", "Follow"),
        Binding("w", "wrap", "Wrap"),
        Binding("t", "timestamps", "Timestamps"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "find(True)", "Next"),
        Binding("N", "find(False)", "Prev"),
        Binding("ampersand", "line_filter", "Filter lines", key_display="&"),
        Binding("e", "first_error", "First error"),
        Binding("p", "previous", "Previous instance"),
        Binding("ctrl+s", "save", "Save"),
        Binding("a", "scope_all", "All Pods"),
        Binding("right_square_bracket", "scope_step(1)", "Next source", key_display="]"),
        Binding("left_square_bracket", "scope_step(-1)", "Prev source", key_display="[", show=False),
        Binding("ctrl+r", "reconnect", "Reconnect", show=False),
    ]

    def __init__(self, job_name: str, scope: Scope = None) -> None:
        super().__init__()
        self.job_name = job_name
        self.scope: Scope = scope
        self.previous = False
        self.crumb = f"Jobs › {job_name} › logs"
        self.buffer = LogBuffer(BUFFER_LINES)
        self._pending = PendingLines(BUFFER_LINES)
        self._status_at = 0.0
        self._status_stale = False
        self._streams: dict[str, PodTarget] = {}
        self._open: dict[str, object] = {}
        self._stop = threading.Event()
        self.saved_path: Path | None = None
        self._ready = False

    def compose_body(self) -> ComposeResult:
        yield Static("", id="log-status", markup=False)
        yield FilterBar("search: text or regex, n / N to step (esc clears)", id="log-search")
        yield FilterBar("show only lines matching: text or regex (esc clears)", id="log-filter")
        yield LogView(self.buffer, id="log-view")

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    @property
    def open_streams(self) -> int:
        """Pods whose log is being read right now."""
        return len(self._open)

    @property
    def skipped(self) -> int:
        """Lines never shown because the pane fell a whole buffer behind the streams."""
        return self._pending.skipped

    def focus_body(self) -> None:
        self.view.focus()

    def on_mount(self) -> None:
        for bar in self.query(FilterBar):
            bar.on_close = self.focus_body
        self.query_one("#log-search", FilterBar).on_change = self._search_changed
        self.query_one("#log-filter", FilterBar).on_change = self._filter_changed
        self.view.show_prefix = self.scope is None or self.scope[0] == "role"
        self.set_interval(DRAIN_SECONDS, self._drain)
        super().on_mount()
        self.focus_body()
        self._restart_streams()
        self._ready = True

    def on_unmount(self) -> None:
        super().on_unmount()
        self._stop_streams()

    # ---- pods in scope -----------------------------------------------------------------------
    def targets(self, index: SnapshotIndex | None) -> list[PodTarget]:
        """The Pods the current scope covers, in role order."""
        if index is None:
            return []
        job = index.job(self.job_name)
        if job is None:
            return []
        found = []
        for spec in job.tasks:
            task_name = job.task_name(spec)
            if self.scope is not None and self.scope[0] == "role" and self.scope[1] != task_name:
                continue
            for pod in index.pods_by_task.get(task_name, []):
                key = f"{pod.namespace}/{pod.name}"
                if self.scope is not None and self.scope[0] == "pod" and self.scope[1] != key:
                    continue
                found.append(_target(pod, key, spec.name))
        return found

    def scopes(self) -> list[Scope]:
        """Every source the `[` / `]` keys step through: all Pods, each role, each Pod."""
        index = self.rlark.index
        job = index.job(self.job_name) if index is not None else None
        if job is None:
            return [None]
        result: list[Scope] = [None]
        result += [("role", job.task_name(spec)) for spec in job.tasks]
        for spec in job.tasks:
            result += [("pod", f"{pod.namespace}/{pod.name}")
                       for pod in index.pods_by_task.get(job.task_name(spec), [])]
        return result

    def scope_label(self) -> str:
        if self.scope is None:
            return "all Pods"
        if self.scope[0] == "role":
            return f"role {self.scope[1]}"
        target = self._streams.get(self.scope[1])
        return f"Pod {target.pod_name if target else self.scope[1]}"

    # ---- streams -----------------------------------------------------------------------------
    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        if not self._ready:
            return
        for target in self.targets(index):
            known = self._streams.get(target.key)
            if known is None or (known.phase not in STARTED_PHASES and target.phase in STARTED_PHASES):
                self._start(target)
        self._update_status()

    def _restart_streams(self) -> None:
        self._stop_streams()
        self._stop = threading.Event()
        self.view.clear()
        self.view.show_prefix = self.scope is None or self.scope[0] == "role"
        if self.rlark.access is None:
            self._notice("logs: not connected to a cluster (no kubeconfig context) — nothing to read")
        targets = self.targets(self.rlark.index)
        if not targets and self.rlark.index is not None:
            self._notice(f"logs: {self.job_name} has no Pods in {self.scope_label()} yet — "
                         "waiting for task sync")
        for target in targets:
            self._start(target)
        self._update_status()

    def _start(self, target: PodTarget) -> None:
        self._streams[target.key] = target
        if self.rlark.access is None:
            return
        if target.phase not in STARTED_PHASES:
            self._notice(f"logs: Pod {target.pod_name} is {target.phase or 'Pending'} — its container has "
                         "not started; the log appears when it runs")
            return
        threading.Thread(target=self._stream, args=(target, self.previous, self._stop),
                         name=f"log-{target.pod_name}", daemon=True).start()

    def _stop_streams(self) -> None:
        self._stop.set()
        for stream in list(self._open.values()):
            stream.abort()
        self._open.clear()
        self._streams.clear()
        self._pending.clear()

    def _stream(self, target: PodTarget, previous: bool, stop: threading.Event) -> None:
        """Read one Pod's log: tail, then follow; reconnect from the last timestamp after a drop."""
        try:
            self._follow(target, previous, stop)
        except Exception as exc:  # the thread's last word goes into the pane, not to stderr
            if not stop.is_set():
                self._notice(f"logs: reading {target.pod_name} failed: {exc}")

    def _follow(self, target: PodTarget, previous: bool, stop: threading.Event) -> None:
        access = self.rlark.access
        resume = Resume()
        delay = 1.0
        while not stop.is_set():
            since = resume.since()
            try:
                stream = access.pod_log(
                    target.cluster, target.pod_name, namespace=target.pod_namespace, follow=not previous,
                    previous=previous, timestamps=True, tail=TAIL_LINES if since is None else None,
                    since_time=since)
            except Unreachable as exc:
                if exc.kind == "config":
                    self._gateway_fallback(target, str(exc))
                    return
                self._notice(f"logs: {target.pod_name}: {exc} — reconnecting in {delay:.0f}s")
            except NotFound:
                self._notice(f"logs: Pod {target.pod_name} is gone (stopped or replaced)")
                return
            except ApiError as exc:
                self._notice(f"logs: {target.pod_name}: {exc}")
                if previous:
                    return
            else:
                self._open[target.key] = stream
                if stop.is_set():  # stopped while connecting: _stop_streams did not see this stream
                    stream.abort()
                resume.restart()
                try:
                    push, source = self._pending.push, target.source
                    for raw in stream:
                        if stop.is_set():
                            return
                        stamp, ts, text = split_raw(raw)
                        if resume.admit_ts(ts):
                            push(source, stamp, text)
                    if previous:
                        self._notice(f"logs: end of the previous instance of {target.pod_name}")
                        return
                    if not stop.is_set():
                        self._notice(f"logs: stream of {target.pod_name} ended — reconnecting")
                    delay = 1.0
                except Unreachable as exc:
                    if not stop.is_set():
                        self._notice(f"logs: stream of {target.pod_name} dropped ({exc}) — "
                                     f"reconnecting in {delay:.0f}s")
                finally:
                    if self._open.get(target.key) is stream:  # a restarted screen may have a newer one
                        del self._open[target.key]
            if stop.wait(delay):
                return
            delay = min(15.0, delay * 2)

    def _gateway_fallback(self, target: PodTarget, reason: str) -> None:
        """No data-plane context: read the gateway's last-1000-lines snapshot once, if one is configured."""
        if not self.rlark.access.gateway:
            self._notice(reason)
            return
        try:
            pods = self.rlark.access.gateway_job_logs(self.job_name)
        except (ApiError, Unreachable) as exc:
            self._notice(f"{reason}; gateway: {exc}")
            return
        entry = next((p for p in pods if p.get("podName") == target.pod_name), None)
        if entry is None:
            self._notice(f"{reason}; the gateway has no log for {target.pod_name}")
            return
        logs = entry.get("logs")
        lines = logs.splitlines() if isinstance(logs, str) else [str(x) for x in logs or []]
        for raw in lines:
            line = split_line(raw, target.source)
            self._push(target.source, line.stamp, line.text)
        self._notice(f"logs of {target.pod_name} from the gateway (last {TAIL_LINES} lines, no follow: "
                     "no data-plane context); ctrl+r fetches again")

    def _push(self, source: str, stamp: str, text: str) -> None:
        self._pending.push(source, stamp, text)

    def _notice(self, text: str) -> None:
        self._pending.push("", "", f"-- {text}", True)

    def _drain(self) -> None:
        batch = self._pending.take()
        if batch:
            self.view.add_lines(self.buffer.extend(batch))
            self._status_stale = True
        if self._status_stale and (not batch or time.monotonic() - self._status_at >= STATUS_SECONDS):
            self._update_status()

    # ---- status --------------------------------------------------------------------------------
    def _update_status(self) -> None:
        self._status_at = time.monotonic()
        self._status_stale = False
        view = self.view
        parts = [f"{self.job_name} › {self.scope_label()}" + (" (previous instance)" if self.previous else ""),
                 f"follow {'on' if view.follow else 'off'}", f"wrap {'on' if view.wrap else 'off'}",
                 f"timestamps {'on' if view.show_timestamps else 'off'}",
                 f"{len(self.buffer)} lines" + (f", {self.buffer.dropped} dropped" if self.buffer.dropped else "")]
        if self.skipped:
            parts.append(f"{self.skipped} skipped (arriving faster than shown)")
        if view.new_below:
            parts.append(f"{view.new_below} new below (s or G follows)")
        if view.search.text:
            parts.append(f"search {view.search.text!r}")
        if view.line_filter.text:
            parts.append(f"filter {view.line_filter.text!r}")
        for bar in self.query(FilterBar):
            if bar.matcher.error:
                parts.append(bar.matcher.error)
        self.query_one("#log-status", Static).update(" · ".join(parts), layout=False)

    @on(LogView.FollowChanged)
    def _follow_changed(self) -> None:
        self._update_status()

    # ---- keys ----------------------------------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_follow(self) -> None:
        self.view.set_follow(not self.view.follow)
        self._update_status()

    def action_wrap(self) -> None:
        self.view.set_option(wrap=not self.view.wrap)
        self._update_status()

    def action_timestamps(self) -> None:
        self.view.set_option(timestamps=not self.view.show_timestamps)
        self._update_status()

    def action_search(self) -> None:
        self.query_one("#log-search", FilterBar).open()

    def action_line_filter(self) -> None:
        self.query_one("#log-filter", FilterBar).open()

    def _search_changed(self, matcher: Matcher) -> None:
        self.view.set_search(matcher)
        if matcher.pattern is not None:
            self.view.find(True, include_current=True)
        self._update_status()

    def _filter_changed(self, matcher: Matcher) -> None:
        self.view.set_option(line_filter=matcher)
        self._update_status()

    def action_find(self, forward: bool) -> None:
        if self.view.search.pattern is None:
            self.notify("Nothing to find: press / and type a search first", severity="warning")
            return
        if self.view.find(forward) is None:
            self.notify(f"No line matches {self.view.search.text!r}", severity="warning")
        self._update_status()

    def action_first_error(self) -> None:
        if self.view.first_error() is None:
            self.notify(f"No error lines in the {len(self.view.shown_lines)} lines shown")
        self._update_status()

    def action_previous(self) -> None:
        self.previous = not self.previous
        self.view.set_follow(not self.previous)
        self._restart_streams()

    def action_scope_all(self) -> None:
        self.scope = None
        self._restart_streams()

    def action_scope_step(self, step: int) -> None:
        scopes = self.scopes()
        position = scopes.index(self.scope) if self.scope in scopes else 0
        self.scope = scopes[(position + step) % len(scopes)]
        self._restart_streams()

    def action_reconnect(self) -> None:
        self._restart_streams()

    def action_save(self) -> None:
        """Write the lines shown (filter applied) to ./<job>-logs-<time>.log with secrets redacted."""
        lines = [self.view.line_text(line) for line in self.view.shown_lines if not line.notice]
        path = Path.cwd() / f"{self.job_name}-logs-{datetime.now():%Y%m%d-%H%M%S}.log"
        try:
            write_private(path, redact_text("\n".join(lines)) + "\n" if lines else "")
        except OSError as exc:
            self.notify(f"Cannot save the log: {exc.strerror or exc}", severity="error")
            return
        self.saved_path = path
        self.notify(f"Saved {len(lines)} lines (secrets redacted) to {path}")


def _target(pod: Pod, key: str, role: str) -> PodTarget:
    name = pod.pod_name or pod.name
    return PodTarget(key=key, cluster=pod.namespace, pod_name=name,
                     pod_namespace=pod.pod_namespace or keys.WORKLOAD_NAMESPACE, source=f"{role}/{name}",
                     phase=pod.phase)
