"""JobDetailScreen: one Job — Overview, Workers (roles → Pod subtable, GPU use by role), Events, YAML, Ray, Metrics,
Checkpoints.

Everything shown comes from the Snapshot (secrets as `***`); while the screen is open it subscribes to the
Job's Ray status, its Pods' restart counts and its first failure (the Overview's Diagnosis card; rlark_tui.flow.polls),
and to its METRICS while that tab is shown. The header's step time (telemetry.steptime.step_time_cell) is the breakdown of
the newest METRICS read (that tab's or the compare screen's). Opening the Checkpoints tab (or ctrl+r there) posts
a LoadCheckpoints read for the app's worker; `u` there asks the app to resume from the selected one (ResumeJob).
The Workers tab's imbalance note names RLinf's component placement once a checkpoints read brought the resolved
config (the first imbalance shown asks for one).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane, Tree

from rlark_tui.flow.messages import (
    CheckpointsLoaded,
    CloneJob,
    DeleteJob,
    EditJob,
    LoadCheckpoints,
    OpenCheck,
    OpenLogs,
    OpenShell,
    OpenStacks,
    OpenTunnels,
    RenderYaml,
    RestartJob,
    ResumeJob,
    StopStartJob,
    YamlRendered,
)
from rlark_tui.flow.polls import ALL_KEY, DIAGNOSIS, GATEWAY_KEY, HEALTH, LOOKUPS, METRICS, PROGRESS, RAY
from rlark_tui.model.logtarget import Scope
from rlark_tui.model.naming import tensorboard_url
from rlark_tui.model.objects import Job
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.telemetry.diagnosis import Diagnosis
from rlark_tui.telemetry.progress import ProgressState
from rlark_tui.telemetry.steptime import step_time_cell
from rlark_tui.telemetry.usage import pod_usage
from rlark_tui.text.redact import KnownSecrets, redact_env, redact_text, secret_values
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import cut, one_line, shell_line
from rlark_tui.view.index import (
    MAX_PODS_SHOWN,
    MAX_ROLES_SHOWN,
    JobRow,
    SnapshotIndex,
    cpu_memory,
    first_pod,
    gpu_by_role,
    job_row,
    role_rows,
    running_time,
    ssh_fingerprint,
    ssh_jump_command,
    tasks_with_events,
)
from rlark_tui.widgets.checkpoints import CheckpointsView
from rlark_tui.widgets.metrics_view import MetricsView, Run
from rlark_tui.widgets.workers import RoleGpuUse, WorkersTree

EVENT_LINES = 200
"""Image pulls and events the Events tab shows in all (500 events of each of 64 Tasks were 32,000 lines laid out at
each change of the Job while its detail was open, whichever tab was shown); the rest are counted."""
EVENT_CHARS = 300
"""Characters of an event's reason or message, or a pull's, the Events tab shows (a message is its writer's)."""

TABS = ("overview", "workers", "events", "yaml", "ray", "metrics", "checkpoints")
MAX_SCRIPT_LINES = 200
RAY_JOB_CHARS = 300
"""A Ray job's status and entrypoint are shown to here: the Ray head's list is the Job's code's (each entrypoint
of any length), redacted and laid out at each change of the Job."""
RAY_STATUS_LINES = 200
"""Lines of `ray status` the Ray tab shows, each cut at RAY_JOB_CHARS: Ray's text is the head's (a real one is ~50
lines), redacted and laid out at each Ray poll whichever tab is shown, and 4 MB of it were 2.4 s of the UI thread
each time."""
"""Lines of a script the Overview shows (a 1.5 MB prepareScript is 100,000 lines)."""
MAX_ITEMS = 50
"""Entries of a role's node selector, devices, mounts and env the Overview shows; the rest are counted (3 roles of
10,000 env entries each, within an object's 1.5 MB, were 2 s of the UI thread to open the detail and 1 s at each
change of the Job while it was open, whichever tab was shown)."""


class Section(Static):
    """A Static whose label/heading styles come from tcss component classes."""

    COMPONENT_CLASSES = {"section--heading", "section--label", "section--muted"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known = KnownSecrets()
        """The Job's secret env values (`redact.secret_values`), masked in every text the section shows: a value
        masked in its env entry showed in the run script that echoes it, and in the YAML tab."""

    def heading(self, text: Text, title: str) -> None:
        """A heading on one line (sinks.one_line): it names a role or a Task, the Job author's or the cluster's
        text, so a break in it cannot forge a field of its own on the next line."""
        text.append(one_line(cut(self.known.mask_lines(title))) + "\n", self.get_component_rich_style("section--heading"))

    def field(self, text: Text, label: str, value: str, indent: int = 0) -> None:
        """`label: value` on one line: a break or bidi control in the label or value is shown as its escape
        (sinks.one_line), so a cluster value, or an event's reason or an image named in a label, cannot forge a
        field of its own on the next line."""
        text.append(" " * indent + f"{one_line(cut(self.known.mask_lines(label)))}: ",
                    self.get_component_rich_style("section--label"))
        text.append((one_line(cut(self.known.mask_lines(value))) if value else "—") + "\n")

    def script(self, text: Text, label: str, value: str, indent: int = 0) -> None:
        """A script's lines, each indented under its label (as `rlark describe` shows them)."""
        if not value:
            return self.field(text, label, value, indent)
        text.append(" " * indent + f"{label}:\n", self.get_component_rich_style("section--label"))
        lines = self.known.mask_lines(value).rstrip("\n").splitlines()
        for line in lines[:MAX_SCRIPT_LINES]:
            text.append(" " * (indent + 4) + clean(cut(line)) + "\n")
        if len(lines) > MAX_SCRIPT_LINES:
            self.muted(text, " " * (indent + 4) + f"… {len(lines) - MAX_SCRIPT_LINES:,} more lines (the first "
                                                   f"{MAX_SCRIPT_LINES} shown; Y copies the YAML)")
        return None

    def muted(self, text: Text, value: str) -> None:
        """A muted line; one line (sinks.one_line) whatever the Job name it quotes."""
        text.append(one_line(cut(self.known.mask_lines(value))) + "\n", self.get_component_rich_style("section--muted"))


class JobDetailScreen(RlarkScreen):
    """Drill-down of one Job; esc goes back to the list."""

    MUTATIONS = frozenset({"stop_start", "delete", "shell", "edit", "restart", "resume"})
    JOB_VERBS = {**RlarkScreen.JOB_VERBS, "resume": "resume"}
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("l", "logs", "Logs"),
        Binding("d", "tab('overview')", "Describe"),
        Binding("w", "tab('workers')", "Workers"),
        Binding("e", "tab('events')", "Events"),
        Binding("y", "tab('yaml')", "YAML"),
        Binding("r", "tab('ray')", "Ray"),
        Binding("m", "tab('metrics')", "Metrics"),
        Binding("p", "tab('checkpoints')", "Checkpoints"),
        Binding("u", "resume", "Resume from checkpoint"),
        Binding("Y", "copy_yaml", "Copy YAML", show=False),
        Binding("s", "stop_start", "Stop/Start"),
        Binding("ctrl+d", "delete", "Delete"),
        Binding("c", "check", "Run check"),
        Binding("x", "shell", "Shell"),
        Binding("F", "tunnels", "Tunnels"),
        Binding("S", "stacks", "Stacks of the Ray workers", show=False),
        Binding("J", "copy_ssh", "Copy ssh -J", show=False),
        Binding("C", "clone", "Clone", show=False),
        Binding("E", "edit", "Edit & restart", show=False),
        Binding("R", "restart", "Restart", show=False),
    ]

    def __init__(self, job_name: str, tab: str = "workers") -> None:
        super().__init__()
        self.job_name = job_name
        self.initial_tab = tab if tab in TABS else "workers"
        self.crumb = f"Jobs › {job_name}"
        self.yaml_text = ""
        self.ssh_line = ""
        self._ssh_config: object = None
        """The gateway's system config while the Job has an SSH key (None: no ssh -J line for its Pods)."""
        """The console's `ssh -J ...` line for the Header Pod ("" without an SSH key or jump host)."""
        self._yaml_version: str | None = None
        self._rendered: tuple[tuple, tuple] | None = None
        """What was last rendered (objects, by identity, and values); an unrelated snapshot change skips the work."""
        self._metrics_watched = False
        self._reading_checkpoints = False
        self._placement: object = None
        """RLinf's component placement from the last checkpoints read (the Workers tab's imbalance note)."""
        self._placement_asked = False
        self._task_values: dict[int, tuple[object, frozenset[str]]] = {}
        """Each Task's secret env values by the identity of its mapping (kept with it: an unchanged Task is the
        Snapshot's very mapping, so a change of the Job walks only the Tasks that changed)."""

    def compose_body(self) -> ComposeResult:
        yield Static("", id="job-summary", markup=False)
        with TabbedContent(initial=self.initial_tab, id="job-tabs"):
            with TabPane("Overview", id="overview"):
                with VerticalScroll():
                    yield Section("", id="diagnosis-card", markup=False)
                    yield Section("", id="overview-text", markup=False)
            with TabPane("Workers", id="workers"):
                yield WorkersTree(id="workers-tree")
                yield RoleGpuUse("", id="workers-gpu", markup=False)
            with TabPane("Events", id="events"):
                with VerticalScroll():
                    yield Section("", id="events-text", markup=False)
            with TabPane("YAML", id="yaml"):
                with VerticalScroll(id="yaml-scroll"):
                    yield Static("", id="yaml-text", markup=False)
            with TabPane("Ray", id="ray"):
                with VerticalScroll():
                    yield Section("", id="ray-text", markup=False)
            with TabPane("Metrics", id="metrics"):
                yield MetricsView(id="job-metrics")
            with TabPane("Checkpoints", id="checkpoints"):
                yield CheckpointsView(id="job-checkpoints")

    def on_mount(self) -> None:
        super().on_mount()
        for topic in (RAY, PROGRESS, DIAGNOSIS):
            self.intents.subscribe(topic, self.job_name)
        self.intents.subscribe(HEALTH, self.job_name, detail=True)
        self._watch_metrics(self.initial_tab == "metrics")
        if self.initial_tab == "checkpoints":
            self._read_checkpoints()
        self.intents.subscribe(LOOKUPS, GATEWAY_KEY)
        self.focus_body()

    def on_unmount(self) -> None:
        super().on_unmount()
        for topic in (RAY, PROGRESS, DIAGNOSIS):
            self.intents.unsubscribe(topic, self.job_name)
        self.intents.unsubscribe(HEALTH, self.job_name, detail=True)
        self._watch_metrics(False)
        self.intents.unsubscribe(LOOKUPS, GATEWAY_KEY)

    def focus_body(self) -> None:
        active = self.query_one(TabbedContent).active
        if active == "workers":
            self.query_one(WorkersTree).focus()
        elif active == "metrics":
            self.query_one("#metrics-tags").focus()
        elif active == "checkpoints":
            self.query_one("#checkpoints-table").focus()

    @on(TabbedContent.TabActivated, "#job-tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._watch_metrics(event.pane.id == "metrics")
        if event.pane.id == "checkpoints":
            self._read_checkpoints()
        if self.state.index is not None:
            self._render_metrics(self.state.index)

    # ---- checkpoints -----------------------------------------------------------------------
    def _read_checkpoints(self) -> None:
        """Ask the app's worker for the read `rlark checkpoints` makes (one at a time)."""
        if self._reading_checkpoints:
            return
        self._reading_checkpoints = True
        self.query_one(CheckpointsView).show_reading()
        self.post_message(LoadCheckpoints(self, self.job_name))

    @on(CheckpointsView.Reload)
    def _reload_checkpoints(self) -> None:
        self._read_checkpoints()

    def on_checkpoints_loaded(self, message: CheckpointsLoaded) -> None:
        if message.job != self.job_name:
            return
        self._reading_checkpoints = False
        view = self.query_one(CheckpointsView)
        if message.read is None:
            view.show_error(message.error)
            return
        view.show_read(message.read)
        if message.read.placement != self._placement:
            self._placement = message.read.placement
            self._rendered = None
            if self.state.index is not None:
                self.show_snapshot(self.state.index)

    def _watch_metrics(self, shown: bool) -> None:
        """The Metrics tab reads (every 5 s) only while it is shown."""
        if shown and not self._metrics_watched:
            self.intents.subscribe(METRICS, self.job_name)
        elif not shown and self._metrics_watched:
            self.intents.unsubscribe(METRICS, self.job_name)
        self._metrics_watched = shown

    def _render_metrics(self, index: SnapshotIndex) -> None:
        if self._metrics_watched:
            state = index.metrics_of(self.job_name)
            self.query_one(MetricsView).show([Run(self.job_name, state)], time.time())

    # ---- rendering -------------------------------------------------------------------------
    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        job = index.job(self.job_name)
        summary = self.query_one("#job-summary", Static)
        if job is None:
            summary.update(f"Job {one_line(self.job_name)} no longer exists (deleted?). esc goes back to the list.")
            summary.add_class("-gone")
            return
        summary.remove_class("-gone")
        self._render_metrics(index)
        lookups = index.listed("lookups", GATEWAY_KEY)
        header = first_pod(index, job.head_task_name)
        self._ssh_config = getattr(lookups, "system_config", None) if job.ssh_public_key else None
        self.ssh_line = ssh_jump_command(self._ssh_config, (header.pod_name or header.name) if header else "") \
            if job.ssh_public_key else ""
        progress = index.progress_of(job.name) if job.phase == "Running" else None
        usage = index.usage_of(ALL_KEY)
        diagnosis = index.diagnosis_of(job.name)
        metrics = index.metrics_of(job.name)
        step_time = metrics.step_time if metrics is not None and metrics.step_time is not None \
            and metrics.step_time.steps else None
        row = index.rows.get(job.name) or job_row(index, job)
        ray = index.ray_of(job.name) or {}
        restarts = index.health_of(job.name)
        # The Job's row is derived again whenever the Job, its Tasks or Pods change: the objects are compared by
        # identity (one Job's thousands of Tasks and Pods are not walked to find that nothing changed).
        objects = (row, restarts, progress, usage, diagnosis, step_time, self._placement)
        values = (job.resource_version, ray.get("polled_at"), self.ssh_line)
        if self._rendered is not None and self._rendered[1] == values \
                and all(new is old for new, old in zip(objects, self._rendered[0])):
            return
        self._rendered = (objects, values)
        title = cut(job.name) + (f" ({cut(job.display_name)})" if job.display_name else "")
        shown_progress = progress.render(time.time()) if progress is not None else ""
        summary.update(one_line(f"{title} · {row.job_type} · {row.phase} · Pods {row.pods_running} running / "
                       f"{row.pods_expected} expected · created {job.creation_timestamp or '—'}"
                       + (f" · step {shown_progress}" if shown_progress and shown_progress != "?" else "")
                       + (" · progress not read (the Overview says why)" if progress is not None and progress.error
                          else "")
                       + (f" · {step_time_cell(step_time)}" if step_time is not None else "")))
        tree = self.query_one(WorkersTree)
        ref = tree.selected_ref
        roles = role_rows(index, job, MAX_ROLES_SHOWN, MAX_PODS_SHOWN, ref.task_name if ref is not None else "",
                          ref.pod_key if ref is not None else "")
        shown_pods = [pod.key for role in roles.rows for pod in role.pods]
        tree.sync(roles.rows, restarts, pod_usage(usage, shown_pods),
                  f"… {roles.more:,} more roles (the first {MAX_ROLES_SHOWN} shown; "
                  f"{shell_line(['rlark', 'describe', 'job'], [job.name])} shows every one)" if roles.more > 0 else "")
        gpu = gpu_by_role(index, job, self._placement)
        self.query_one(RoleGpuUse).show(gpu, MAX_ROLES_SHOWN)
        if gpu.note and self._placement is None and not self._placement_asked:
            self._placement_asked = True  # the note names the placement once the resolved config is read
            self._read_checkpoints()
        related = self._tasks_values(index, job)
        known = KnownSecrets(secret_values(job.raw) | related)
        for section in self.query(Section):
            section.known = known
        self._render_diagnosis(job, diagnosis)
        self._render_overview(index, job, row, progress)
        self._render_events(index, job)
        self._render_yaml(job, related)
        self._render_ray(index, job, row)

    def _render_diagnosis(self, job: Job, diagnosis: Diagnosis | None) -> None:
        """The Diagnosis card: the run's first failure in one line (kept evidence included), or that none was
        found."""
        widget = self.query_one("#diagnosis-card", Section)
        failure = diagnosis.first_failure if diagnosis is not None else None
        widget.set_class(failure is not None, "-failed")
        text = Text()
        widget.heading(text, "Diagnosis")
        if diagnosis is None:
            widget.muted(text, "reading the Pods, Ray and the Header log…")
        elif failure is None:
            widget.muted(text, "no failure found")
        else:
            widget.field(text, "First failure", failure.summary)
            widget.muted(text, f"{shell_line(['rlark', 'diagnose'], [job.name])} shows its evidence and the timeline")
        widget.update(text)

    def _render_overview(self, index: SnapshotIndex, job: Job, row: JobRow, progress: ProgressState | None) -> None:
        widget = self.query_one("#overview-text", Section)
        text = Text()
        widget.heading(text, f"Job {job.name}")
        widget.field(text, "Created", job.creation_timestamp)
        widget.field(text, "Phase", row.phase)
        widget.field(text, "Type", row.job_type)
        widget.field(text, "Display name", job.display_name)
        specs = job.tasks
        head = next((spec for spec in specs if spec.head), None)
        widget.field(text, "Header role", head.name if head else "")
        widget.field(text, "Network domain", job.domain)
        widget.field(text, "SSH key", ssh_fingerprint(job.ssh_public_key))
        if job.ssh_public_key:
            widget.field(text, "SSH", self.ssh_line + "  (J copies it)" if self.ssh_line else
                         "no SSH jump host in the gateway's system config (yet)")
        widget.field(text, "Start time", job.start_time)
        if job.end_time:
            widget.field(text, "End time", job.end_time)
        widget.field(text, "Running time", running_time(job.start_time, job.end_time, datetime.now(UTC)))
        if progress is not None and progress.error:  # the job list's PROGRESS says only `?`
            widget.field(text, "Progress", f"not read: {progress.error}")
        for spec in specs[:MAX_ROLES_SHOWN]:
            task = index.task_for(job, spec)
            text.append("\n")
            widget.heading(text, f"Role {spec.role_display_name} — Task {job.task_name(spec)}"
                                 + ("  [Header]" if spec.head else ""))
            widget.field(text, "Platform role", spec.role, 2)
            widget.field(text, "Image", spec.image, 2)
            selector = list(spec.node_selector.items())
            widget.field(text, "Node selector", _some([f"{k}={v}" for k, v in selector[:MAX_ITEMS]], len(selector)),
                         2)
            widget.field(text, "Replicas", str(task.replicas if task else spec.replicas), 2)
            widget.field(text, "GPU per worker", _amount(spec.gpu), 2)
            widget.field(text, "CPU / memory", cpu_memory(spec.requests, spec.limits), 2)
            devices = list(spec.devices.items())
            widget.field(text, "Devices per worker", _some([f"{name}={_amount(amount)}"
                                                            for name, amount in devices[:MAX_ITEMS]], len(devices)), 2)
            mounts = spec.mounts
            widget.field(text, "Mounts", _some([f"{m['target']} ← {m['type']} {m['source']}".rstrip()
                                                for m in mounts[:MAX_ITEMS]], len(mounts), "; "), 2)
            env = spec.env
            widget.field(text, "Env", _some([f"{e.get('name')}={e.get('value', '(from ' + str(e.get('valueFrom')) + ')')}"
                                             for e in redact_env(env[:MAX_ITEMS])], len(env)), 2)
            widget.script(text, "Prepare script", redact_text(spec.prepare_script), 2)
            if spec.head:
                widget.script(text, "Run script", redact_text(spec.run_script), 2)
            if spec.tensorboard_dir:
                widget.field(text, "TensorBoard dir", spec.tensorboard_dir, 2)
                widget.field(text, "TensorBoard", tensorboard_url(self.state.gateway, job.task_name(spec),
                                                                  task.tensorboard_proxy if task else ""), 2)
        if len(specs) > MAX_ROLES_SHOWN:
            text.append("\n")
            widget.muted(text, f"… {len(specs) - MAX_ROLES_SHOWN:,} more roles (the first {MAX_ROLES_SHOWN} "
                               "shown; rlark describe job shows every one)")
        widget.update(text)

    def _render_events(self, index: SnapshotIndex, job: Job) -> None:
        """The first MAX_ROLES_SHOWN Tasks' image pulls and events, EVENT_LINES of them in all, each message cut at
        EVENT_CHARS; the rest counted in one line per Task and one for the Tasks."""
        widget = self.query_one("#events-text", Section)
        text = Text()
        tasks, left_out = tasks_with_events(index, job, MAX_ROLES_SHOWN)
        budget = EVENT_LINES
        for number, task in enumerate(tasks):
            if budget <= 0:
                left_out += len(tasks) - number
                tasks = tasks[:number]
                break
            widget.heading(text, f"Task {task.name} ({task.phase or 'no phase yet'})")
            pulls = task.pull_progress
            for pull in pulls[:budget]:
                widget.field(text, "Pulling " + _cut(str(pull.get("image", ""))),
                             _cut(redact_text(" ".join(str(pull.get(k)) for k in ("status", "downloaded", "total",
                                                                                  "speed", "message") if pull.get(k)))), 2)
            if len(pulls) > budget:
                widget.muted(text, f"  … {len(pulls) - budget:,} more image pulls (the first {budget} shown)")
            budget -= min(len(pulls), budget)
            events = task.events[:budget]
            for event in events:
                count = f" ×{event.get('count')}" if event.get("count") else ""
                widget.field(text, _cut(f"{event.get('type', '')} {event.get('reason', '')}{count}"),
                             _cut(f"{redact_text(str(event.get('message', '')))}  ({event.get('objectKind', '')} "
                                  f"{event.get('objectName', '')}, {event.get('lastTime', '')})"), 2)
            budget -= len(events)
            if task.event_count > len(events):
                widget.muted(text, f"  … {task.event_count - len(events):,} more events (the first {len(events)} shown)")
        if left_out:
            widget.muted(text, f"… {left_out:,} more Tasks with events or image pulls (the first {len(tasks)} "
                               f"shown; {shell_line(['rlark', 'describe', 'job'], [job.name])} shows every one)")
        if not tasks:
            widget.muted(text, "No events. The platform reports Task events and image pull progress only "
                               "while a Task is Pending.")
        widget.update(text)

    def _tasks_values(self, index: SnapshotIndex, job: Job) -> frozenset[str]:
        """The secret env values of the Job's Tasks, which every text of the detail masks too: a control plane
        that renamed the Job's WANDB_API_KEY entry `0`, its value as it was, had it shown in the Overview and the
        YAML tab, where the Task the Pods run from still names it (text.redact.redact_related)."""
        kept: dict[int, tuple[object, frozenset[str]]] = {}
        for spec in job.tasks:
            task = index.task_for(job, spec)
            if task is None:
                continue
            seen = self._task_values.get(id(task.raw))
            kept[id(task.raw)] = seen if seen is not None and seen[0] is task.raw else (task.raw,
                                                                                        secret_values(task.raw))
        self._task_values = kept
        return frozenset().union(*(values for _raw, values in kept.values()))

    def _render_yaml(self, job: Job, related: frozenset[str]) -> None:
        """Ask the app for the YAML tab of this version of the Job and of what its Tasks name secret (made on its
        worker: view/yamltab)."""
        version = f"{job.resource_version}/{hash(related)}"
        if version == self._yaml_version:
            return
        self._yaml_version = version
        self.post_message(RenderYaml(self, job.name, version, job.raw, related))

    @on(YamlRendered)
    def _yaml_rendered(self, message: YamlRendered) -> None:
        if message.job != self.job_name or message.version != self._yaml_version:
            return
        self.yaml_text = message.text
        self.query_one("#yaml-text", Static).update(message.shown)

    def _render_ray(self, index: SnapshotIndex, job: Job, row: JobRow) -> None:
        widget = self.query_one("#ray-text", Section)
        text = Text()
        status = index.ray_of(job.name)
        expected = row.pods_expected
        widget.heading(text, "Ray cluster")
        if status is None:
            widget.muted(text, "Waiting for the first poll of the Ray dashboard…")
        else:
            alive = status.get("alive_nodes")
            widget.field(text, "Alive nodes", f"{alive} of {expected} expected" if alive is not None else "unknown")
            if status.get("source"):
                widget.field(text, "Source", str(status["source"]))
            if status.get("error"):
                widget.field(text, "Unavailable", redact_text(str(status["error"])))
            if status.get("status_text"):
                text.append("\n")
                widget.heading(text, "ray status")
                lines = str(status["status_text"]).splitlines()
                held = "\n".join(line[:4 * RAY_JOB_CHARS] for line in lines[:RAY_STATUS_LINES])  # masked, then cut
                masked = widget.known.mask_lines(redact_text(held)).split("\n")
                cut = [line if len(line) <= RAY_JOB_CHARS else line[:RAY_JOB_CHARS] + "…" for line in masked]
                text.append(clean("\n".join(cut)).rstrip() + "\n")
                if len(lines) > RAY_STATUS_LINES:
                    widget.muted(text, f"… {len(lines) - RAY_STATUS_LINES:,} more lines (the first {RAY_STATUS_LINES} "
                                       "shown)")
            for ray_job in status.get("jobs") or []:
                shown = f"{ray_job.get('status')} {ray_job.get('entrypoint') or ''}".strip()[:4 * RAY_JOB_CHARS]
                shown = widget.known.mask_lines(redact_text(shown))  # masked, then cut
                shown = shown if len(shown) <= RAY_JOB_CHARS else shown[:RAY_JOB_CHARS] + "…"
                name = widget.known.mask_lines(str(ray_job.get("submission_id") or ray_job.get("job_id"))[
                    :4 * RAY_JOB_CHARS])[:RAY_JOB_CHARS]
                widget.field(text, f"Ray job {name}", shown, 2)
        widget.update(text)

    # ---- keys ------------------------------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.focus_body()

    def _selected_scope(self) -> Scope:
        """The Workers tab's selection as a scope: its Pod, its role, else the Header role (on the line counting the
        roles not shown, too)."""
        ref = self.query_one(WorkersTree).selected_ref
        if self.query_one(TabbedContent).active != "workers" or ref is None or not ref.task_name:
            return Scope.HEADER
        return Scope.pod(ref.pod_key) if ref.kind == "pod" else Scope.role(ref.task_name)

    def action_logs(self) -> None:
        self.post_message(OpenLogs(self.job_name, self._selected_scope()))

    def action_shell(self) -> None:
        self.post_message(OpenShell(self.job_name, self._selected_scope()))

    def action_tunnels(self) -> None:
        self.post_message(OpenTunnels(self.job_name))

    def action_stacks(self) -> None:
        self.post_message(OpenStacks(self.job_name))

    @on(Tree.NodeSelected, "#workers-tree")
    def _pod_selected(self, event: Tree.NodeSelected) -> None:
        """Enter on a Pod row drills down to that Pod's log (on a role row it folds the Pods)."""
        ref = event.node.data
        if ref is not None and ref.kind == "pod":
            self.post_message(OpenLogs(self.job_name, Scope.pod(ref.pod_key)))

    def _selected_ssh_line(self) -> str:
        """`J`: the ssh -J line of the Pod selected in the Workers tab, else the Header Pod's."""
        ref = self.query_one(WorkersTree).selected_ref
        index = self.state.index
        if (self.query_one(TabbedContent).active == "workers" and ref is not None and ref.kind == "pod"
                and index is not None and self._ssh_config is not None):
            pod = index.pod(ref.pod_key)
            if pod is not None:
                return ssh_jump_command(self._ssh_config, pod.pod_name or pod.name)
        return self.ssh_line

    def action_copy_ssh(self) -> None:
        line = self._selected_ssh_line()
        if line:
            self.app.copy_to_clipboard(line)
            self.notify(f"copied: {line}", timeout=4)
        else:
            self.notify("no ssh -J line: the Job has no SSH key, or the gateway names no jump host", timeout=4)

    def action_copy_yaml(self) -> None:
        self.app.copy_to_clipboard(self.yaml_text)
        self.notify("YAML (secrets redacted) copied to the clipboard")

    def action_stop_start(self) -> None:
        self.post_message(StopStartJob(self.job_name))

    def action_delete(self) -> None:
        self.post_message(DeleteJob(self.job_name))

    def action_clone(self) -> None:
        self.post_message(CloneJob(self.job_name))

    def action_edit(self) -> None:
        self.post_message(EditJob(self.job_name))

    def action_restart(self) -> None:
        self.post_message(RestartJob(self.job_name))

    def action_check(self) -> None:
        self.post_message(OpenCheck(self.job_name))

    def action_resume(self) -> None:
        """`u`: resume from the checkpoint selected in the Checkpoints tab (opened first, when another tab shows)."""
        if self.query_one(TabbedContent).active != "checkpoints":
            self.action_tab("checkpoints")
            self.notify("select the checkpoint to resume from, then press u again", timeout=4)
            return
        view = self.query_one(CheckpointsView)
        chosen = view.selected
        if view.read is None or chosen is None:
            self.notify("no checkpoint selected: none listed yet (ctrl+r reads them again)", severity="warning",
                        timeout=4)
            return
        self.post_message(ResumeJob(self.job_name, chosen, view.read.where.path))


def _some(parts: list[str], total: int, separator: str = ", ") -> str:
    """`parts` joined, then how many of `total` are not among them."""
    more = f"{separator}… {total - len(parts):,} more (Y copies the YAML)" if total > len(parts) else ""
    return separator.join(parts) + more


def _cut(value: str) -> str:
    return value if len(value) <= EVENT_CHARS else value[:EVENT_CHARS] + "…"


def _amount(value: float) -> str:
    return "0" if not value else (str(int(value)) if float(value).is_integer() else str(value))
