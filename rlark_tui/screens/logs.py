"""LogScreen: the `main` container logs of one Pod, one role, or all Pods of a Job merged with prefixes.

The screen picks the Pods (from the snapshot) and the options; the follower from intents.follow_logs
(cluster.logs.LogFollower) reads them (one thread per Pod, last 1000 lines then follow, resumed by timestamp
after a drop; `0`–`4` read it again from 1 min … 1 h ago with sinceSeconds) into the pane's bounded hand-off
queue, which the pane drains once per tenth of a second. `&!pattern` keeps the lines that do not match. When logs
cannot be read the pane says why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.flow.messages import LogSaved, OpenShell, SaveLog
from rlark_tui.model import keys
from rlark_tui.model.logtarget import LogTarget, Scope
from rlark_tui.model.objects import Pod
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.text.redact import LineRedactor, secret_values
from rlark_tui.text.sinks import object_file_name, one_line
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.widgets.filter_bar import FilterBar, Matcher, make_line_filter
from rlark_tui.widgets.log_pane import NOTICE, LogBuffer, LogView, PendingLines

if TYPE_CHECKING:
    from rlark_tui.cluster.logs import LogFollower

TAIL_LINES = 1000
BUFFER_LINES = 20_000
DRAIN_SECONDS = 0.1
"""The pane takes waiting lines 10 times/s (one repaint per batch): at 20,000 lines/s each repaint renders every
visible row anew, so 0.05 s cost the UI thread a fifth more CPU for no visible gain."""
STATUS_SECONDS = 0.5
"""While lines stream, the status line is redrawn at most this often; keys redraw it at once. Its height is fixed
(styles: `#log-status`), so an update needs no layout pass (which repaints the whole screen)."""
STARTED_PHASES = ("Running", "Succeeded", "Failed")

@dataclass(frozen=True)
class PodTarget:
    """One Pod of the scope: its Pod CR key (`namespace/name`), what the follower reads, and its phase."""

    key: str
    log: LogTarget
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
        Binding("0", "window(0)", "All lines", show=False),
        Binding("1", "window(60)", "Last 1 min", show=False),
        Binding("2", "window(300)", "Last 5 min", show=False),
        Binding("3", "window(900)", "Last 15 min", show=False),
        Binding("4", "window(3600)", "Last 1 h", show=False),
        Binding("x", "shell", "Shell"),
    ]
    MUTATIONS = frozenset({"shell"})

    def __init__(self, job_name: str, scope: Scope = Scope.ALL, previous: bool = False) -> None:
        super().__init__()
        self.job_name = job_name
        self.scope: Scope = scope
        self.previous = previous
        self.window = 0
        """Seconds of log read again by the keys 0–4 (sinceSeconds); 0: the last TAIL_LINES lines."""
        self.crumb = f"Jobs › {job_name} › logs"
        self.buffer = LogBuffer(BUFFER_LINES)
        self._pending = PendingLines(BUFFER_LINES)
        self._status_at = 0.0
        self._status_stale = False
        self._streams: dict[str, PodTarget] = {}
        self._follower: LogFollower | None = None
        """The log follower from intents.follow_logs (None: not following)."""
        self._slow = ""
        self.saved_path: Path | None = None
        self._streams_started = False
        """Set once on_mount started the streams: a Snapshot shown before that (from RlarkScreen.on_mount) waits."""

    def compose_body(self) -> ComposeResult:
        yield Static("", id="log-status", markup=False)
        yield FilterBar("search: text or regex, n / N to step (esc clears)", id="log-search")
        yield FilterBar("show only lines matching: text or regex (esc clears)", id="log-filter")
        yield LogView(self.buffer, self._pending, DRAIN_SECONDS, id="log-view")

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    @property
    def open_streams(self) -> int:
        """Pods whose log is being read right now."""
        return self._follower.open_streams if self._follower is not None else 0

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
        self.view.show_prefix = self.scope.kind in ("all", "role")
        if self.previous:
            self.view.set_follow(False)
        super().on_mount()
        self.focus_body()
        self._restart_streams()
        self._streams_started = True

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
            if self.scope.kind == "role" and self.scope.name != task_name:
                continue
            for pod in index.pods_by_task.get(task_name, []):
                key = f"{pod.namespace}/{pod.name}"
                if self.scope.kind == "pod" and self.scope.name != key:
                    continue
                found.append(_target(pod, key, spec.name))
        return found

    def scopes(self) -> list[Scope]:
        """Every source the `[` / `]` keys step through: all Pods, each role, each Pod."""
        index = self.state.index
        job = index.job(self.job_name) if index is not None else None
        if index is None or job is None:
            return [Scope.ALL]
        result: list[Scope] = [Scope.ALL]
        result += [Scope.role(job.task_name(spec)) for spec in job.tasks]
        for spec in job.tasks:
            result += [Scope.pod(f"{pod.namespace}/{pod.name}")
                       for pod in index.pods_by_task.get(job.task_name(spec), [])]
        return result

    def scope_label(self) -> str:
        if self.scope.kind == "role":
            return f"role {self.scope.name}"
        if self.scope.kind == "pod":
            target = self._streams.get(self.scope.name)
            return f"Pod {target.log.pod if target else self.scope.name}"
        return "all Pods"

    # ---- streams -----------------------------------------------------------------------------
    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        if not self._streams_started:
            return
        for target in self.targets(index):
            known = self._streams.get(target.key)
            if known is None or (known.phase not in STARTED_PHASES and target.phase in STARTED_PHASES):
                self._start(target)
        self._update_status()

    def _restart_streams(self) -> None:
        self._stop_streams()
        self.view.clear()
        self.view.show_prefix = self.scope.kind in ("all", "role")
        window = self.window or None
        take, job, redact = self._line_taker()
        self._follower = self.intents.follow_logs(take, self._notice,
                                                   tail=None if window else TAIL_LINES, previous=self.previous,
                                                   since_seconds=window, masking=(job, redact.add_known))
        if self._follower is None:
            self._notice("logs: not connected to a cluster (no kubeconfig context) — nothing to read")
        targets = self.targets(self.state.index)
        if not targets and self.state.index is not None:
            self._notice(f"logs: {self.job_name} has no Pods in {self.scope_label()} yet — "
                         "waiting for task sync")
        for target in targets:
            self._start(target)
        self._update_status()

    def _start(self, target: PodTarget) -> None:
        self._streams[target.key] = target
        if self._follower is None:
            return
        if target.phase not in STARTED_PHASES:
            self._notice(f"logs: Pod {target.log.pod} is {target.phase or 'Pending'} — its container has "
                         "not started; the log appears when it runs")
            return
        self._follower.add(target.log, self.job_name)

    def _stop_streams(self) -> None:
        if self._follower is not None:
            self._follower.close()
            self._follower = None
        self._streams.clear()
        self._pending.clear()

    def _push(self, source: str, stamp: str, text: str) -> None:
        self._pending.push(source, stamp, text)

    def _line_taker(self):
        """The follower's lines callback (run on its reading threads, not the UI's, with the lines of one read):
        each line has no escape sequence (a Pod's OSC 52 would write the user's clipboard) and then the Job's own
        secret values and every other secret masked in what is left (a private key across lines too; a secret split
        by a sequence is whole again), both by PendingLines.push_lines, once a read, before the pane, its search or
        ctrl+s sees it. Also the Job (raw, or None) and the
        redactor's add_known, for the follower to add the values of the Secrets the Job's Pods reference (read on
        its threads before their first lines)."""
        index = self.state.index
        job = index.job(self.job_name) if index is not None else None
        redact = LineRedactor(secret_values(job.raw) if job is not None else ())
        push, mask = self._pending.push_lines, redact.lines

        def take(source: str, stamps: list[str], texts: list[str]) -> None:
            push(source, stamps, texts, mask)
        return take, job.raw if job is not None else None, redact

    def _notice(self, text: str) -> None:
        self._pending.push("", "", one_line(f"-- {text}"), True)

    @on(LogView.Drained)
    def _drained(self, event: LogView.Drained) -> None:
        """Lines arrived: the status is redrawn at most every STATUS_SECONDS while they flow, at once after."""
        if event.lines:
            self._status_stale = True
        if self._status_stale and (not event.lines or time.monotonic() - self._status_at >= STATUS_SECONDS):
            self._update_status()

    # ---- status --------------------------------------------------------------------------------
    def _update_status(self) -> None:
        self._status_at = time.monotonic()
        self._status_stale = False
        view = self.view
        # the Job's name, a role's (the Job author's text) and a Pod's (the data plane's): one line
        parts = [one_line(f"{self.job_name} › {self.scope_label()}") + (" (previous instance)" if self.previous else "")
                 + (f" (last {_window_label(self.window)})" if self.window else ""),
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
        if self._slow:
            parts.append(self._slow)
        self.query_one("#log-status", Static).update(" · ".join(parts), layout=False)

    @on(LogView.SlowPattern)
    def _slow_pattern(self, event: LogView.SlowPattern) -> None:
        self._slow = f"pattern too slow: {event.text!r} (the {event.kind} is off; try a simpler one)"
        self.notify(self._slow, severity="warning")
        self._update_status()

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
        self._slow = ""
        self.view.set_search(matcher)
        if matcher.pattern is not None:
            self.view.find(True, include_current=True)
        self._update_status()

    def _filter_changed(self, matcher: Matcher) -> None:
        self._slow = ""
        self.view.set_option(line_filter=make_line_filter(matcher.text) if matcher.text.startswith("!") else matcher)
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
        self.scope = Scope.ALL
        self._restart_streams()

    def action_scope_step(self, step: int) -> None:
        scopes = self.scopes()
        position = scopes.index(self.scope) if self.scope in scopes else 0
        self.scope = scopes[(position + step) % len(scopes)]
        self._restart_streams()

    def action_reconnect(self) -> None:
        self._restart_streams()

    def action_window(self, seconds: int) -> None:
        """k9s's 0–4: read the log again from `seconds` ago (sinceSeconds; 0: the last TAIL_LINES lines), then
        follow."""
        self.window = seconds
        self._restart_streams()

    def action_shell(self) -> None:
        """A shell in the current source's Pod (its first Pod for a role; the Header Pod for all Pods)."""
        self.post_message(OpenShell(self.job_name, self.scope))

    def action_save(self) -> None:
        """Write the lines shown (filter applied) to ./<job>-logs-<time>.log with secrets redacted (the app's worker
        places it in the working directory)."""
        lines = [self.view.line_text(line) for line in self.view.shown_lines if not line[NOTICE]]
        name = f"{object_file_name(self.job_name)}-logs-{datetime.now():%Y%m%d-%H%M%S}.log"
        self.post_message(SaveLog(self, name, tuple(lines)))

    def on_log_saved(self, message: LogSaved) -> None:
        """The app wrote the file (secrets redacted there)."""
        if message.error:
            self.notify(message.error, severity="error")
            return
        self.saved_path = Path(message.path)
        self.notify(f"Saved {message.lines} lines (secrets redacted) to {message.path}")


def _window_label(seconds: int) -> str:
    return f"{seconds // 3600} h" if seconds >= 3600 else f"{seconds // 60} min"


def _target(pod: Pod, key: str, role: str) -> PodTarget:
    log = LogTarget(role, pod.pod_name or pod.name, pod.namespace, pod.pod_namespace or keys.WORKLOAD_NAMESPACE,
                    pod.phase)
    return PodTarget(key, log, pod.phase)
