"""WizardScreen: the four-step create-job wizard (`n` on the job list) over a JobDraft, autosaved on every change.

Owns the form and keyboard flow only: findings come from rlark_tui.model.validate, the YAML from render_job
(via build_job, as `rlark draft render`), dry-run and Submit from rlark_tui.actions.Actions (as `rlark submit`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from rich.syntax import Syntax
from textual import on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, ContentSwitcher, DataTable, Input, Label, OptionList, Select, Static, TextArea
from textual.widgets.option_list import Option

from rlark_tui.actions import Actions
from rlark_tui.cluster.errors import Request
from rlark_tui.drafts import DraftStore, SavedDraft, export_draft, import_draft
from rlark_tui.errors import RlarkError
from rlark_tui.model.build import build_job
from rlark_tui.model.draft import PLATFORM_ROLES, JobDraft, RoleDraft, dump_yaml
from rlark_tui.model.findings import Finding, error, ordered
from rlark_tui.model.redact import redact_object
from rlark_tui.model.render import role_matches
from rlark_tui.model.views import Node
from rlark_tui.resources import stylesheet
from rlark_tui.screens import wizard_fields as wf
from rlark_tui.screens.base import CommandBar, RlarkScreen
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.view_model import SnapshotIndex
from rlark_tui.widgets.status_header import StatusHeader
from rlark_tui.widgets.wizard_dialogs import PathScreen

SCRIPT_AREAS = ("prepareScript", "runScript", "env", "mounts")
MATCH_COLUMNS = ("NODE", "CLUSTER", "STATE", "GPU", "DEVICES")
RUNNING_HINT = ("`Running` only means the Pods were scheduled, not that training works: press `c` on it for the "
                "run check.")


def edit_externally(text: str, command: str) -> str:
    """Open `text` in the editor `command` (e.g. `$EDITOR`) on a private temp file and return what was saved."""
    fd, path = tempfile.mkstemp(prefix="rlark-script-", suffix=".sh")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        finished = subprocess.run([*shlex.split(command), path], check=False)
        if finished.returncode != 0:
            raise RlarkError(f"editor `{command}` exited with code {finished.returncode}; the script is unchanged")
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise RlarkError(f"editor `{command}` not found; set $EDITOR") from None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _field(label: str, key: str, widget: Widget) -> Horizontal:
    """One form row: label, the input, and the message area beside it (`#m-<key>`)."""
    return Horizontal(Label(label, classes="wizard-label"), widget,
                      Static("", id=f"m-{key}", classes="wizard-msg", markup=False), classes="wizard-field")


def _option_value(select: Select):
    value = select.value
    return None if value is Select.NULL or value is Select.BLANK else value


class WizardScreen(RlarkScreen):
    """Create a Job in four steps. `draft` starts from that draft; otherwise an autosave is offered."""

    CSS_PATH = stylesheet("wizard.tcss")
    BINDINGS = [
        Binding("ctrl+n", "next", "Next"),
        Binding("ctrl+b", "back", "Back"),
        Binding("ctrl+t", "dry_run", "Dry run"),
        Binding("ctrl+g", "submit", "Submit"),
        Binding("f4", "editor", "$EDITOR"),
        Binding("ctrl+o", "import_draft", "Import"),
        Binding("ctrl+s", "export_draft", "Export"),
        Binding("escape", "close", "Close"),
    ]

    def __init__(self, draft: JobDraft | None = None, *, store: DraftStore | None = None) -> None:
        super().__init__()
        self.store = store or DraftStore()
        self.offer_saved = draft is None
        self.draft = draft or JobDraft(type="rl", roles=tuple(RoleDraft(name=n) for n in wf.PRESET_ROLES["rl"]))
        self.step = 1
        self.role_index = 0
        self.local_errors: dict[str, str] = {}
        self.findings: list[Finding] = []
        self.result = None
        self.preview_yaml = ""
        self.storage_classes: dict[str, list[str]] | None = None
        self.ssh_keys: list[tuple[str, str]] = []
        self.gateway_note = "gateway: loading…"
        self.last_path = "job-draft.yaml"
        self._roles_shown = -1
        self._options: dict[str, list] = {}
        self._shown: dict[str, object] = {}

    @property
    def crumb(self) -> str:  # type: ignore[override]
        return f"New Job · Step {self.step}/4 {wf.STEP_NAMES[self.step - 1]}"

    # ---- layout ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """The shared shell, with a key bar per step instead of the Footer (which re-renders on every focus move,
        too slow for a form of ~200 widgets)."""
        yield StatusHeader(id="status-header")
        yield from self.compose_body()
        yield CommandBar(placeholder=":jobs  :nodes  :ns NAME  :ctx NAME  :q", id="command-bar")
        yield Static("", id="wizard-keys", markup=False)

    def _key_bar(self) -> str:
        keys = [("ctrl+b", "Back")] if self.step > 1 else []
        if self.step < 4:
            keys.append(("ctrl+n", "Next"))
        else:
            keys += [("ctrl+t", "Dry run"), ("ctrl+g", "Submit (refused: read-only)" if self.rlark.readonly
                                               else "Submit")]
        if self.step in (2, 3):
            keys.append(("f4", "$EDITOR on a script"))
        keys += [("ctrl+o", "Import"), ("ctrl+s", "Export"), ("esc", "Close (draft kept)"), ("?", "Help")]
        return "  ".join(f"{key} {label}" for key, label in keys)

    def compose_body(self) -> ComposeResult:
        yield Static("", id="wizard-title", markup=False)
        with ContentSwitcher(initial="step-1", id="wizard-steps"):
            with VerticalScroll(id="step-1"):
                yield _field("Job name", "name", Input(placeholder="lowercase letters, digits, '-'", id="w-name"))
                yield _field("Display name", "displayName", Input(placeholder="optional", id="w-displayName"))
                yield _field("Job type", "type", Select(wf.JOB_TYPES, allow_blank=False, value="rl", id="w-type"))
                yield Static("Roles (one role = one task; the task name is derived from the role name)",
                             classes="wizard-heading")
                yield Vertical(id="w-roles")
                yield Horizontal(Button("Add role", id="add-role"),
                                 Static("", id="m-roles", classes="wizard-msg", markup=False),
                                 classes="wizard-field")
                yield _field("Header role", "header", Select([], prompt="choose the Header role", id="w-header"))
            with VerticalScroll(id="step-2"):
                yield _field("Role", "role-pick", Select([], prompt="no roles yet", id="w-role-pick"))
                yield _field("Platform role", "role", Select([(r, r) for r in PLATFORM_ROLES],
                                                               prompt="from the role name", id="w-role"))
                yield _field("Cluster", "cluster", Select([], prompt="choose the cluster", id="w-cluster"))
                yield _field("Node selector", "selector",
                             Input(placeholder="key=value key2=value2 (one value per key)", id="w-selector"))
                yield _field("Add a label", "label-pick",
                             Select([], prompt="pick a label of this cluster's Nodes", id="w-label-pick"))
                yield Static("", id="w-match-summary", markup=False)
                yield DataTable(id="w-matches", cursor_type="row", zebra_stripes=True)
                yield _field("GPU per worker", "gpu", Input("0", type="integer", id="w-gpu"))
                yield _field("Devices", "devices", Input(placeholder="rlinf.io/<device>=<count>", id="w-devices"))
                yield _field("Image", "image", Input(placeholder="registry/name@sha256:<digest>", id="w-image"))
                yield _field("Prepare script", "prepareScript",
                             TextArea(id="w-prepareScript", classes="wizard-script", soft_wrap=False,
                                      placeholder="runs on every worker before Ray starts (f4: $EDITOR)"))
                yield _field("Env", "env", TextArea(id="w-env", classes="wizard-lines", soft_wrap=False,
                                                    placeholder="NAME=value, one per line"))
                yield _field("Mounts", "mounts",
                             TextArea(id="w-mounts", classes="wizard-lines", soft_wrap=False,
                                      placeholder="host <host dir> <target>  |  storage <class> <target>"))
                yield _field("CPU request", "cpu", Input(placeholder="optional, e.g. 16 or 500m", id="w-cpu"))
                yield _field("Memory request", "memory", Input(placeholder="optional, e.g. 64Gi", id="w-memory"))
            with VerticalScroll(id="step-3"):
                yield _field("Header role", "header3", Select([], prompt="choose the Header role", id="w-header3"))
                yield _field("Network domain", "domain", Select([], prompt="(no domain)", id="w-domain"))
                yield _field("SSH key (gateway)", "ssh-pick", Select([], prompt="pick a registered key",
                                                                    id="w-ssh-pick"))
                yield _field("SSH public key", "sshPublicKey",
                             Input(placeholder="optional: ssh-ed25519 AAAA... user@host", id="w-sshPublicKey"))
                yield _field("Run script", "runScript",
                             TextArea(id="w-runScript", classes="wizard-script", soft_wrap=False,
                                      placeholder="required: runs on the Header role after the Ray check (f4)"))
                yield _field("TensorBoard dir", "tensorboardDir",
                             Input(placeholder="optional, inside a mount", id="w-tensorboardDir"))
                yield Static("Launch record (optional; kept on the Job for the run check)", classes="wizard-heading")
                for name, label in wf.RECORD_INPUTS:
                    yield _field(label, f"record-{name}",
                                 Input(type="integer" if name in wf.RECORD_INTS else "text", id=f"w-record-{name}"))
            with Vertical(id="step-4"):
                yield Static("", id="w-yaml-title", markup=False)
                with VerticalScroll(id="w-yaml-scroll"):
                    yield Static("", id="w-yaml")
                yield OptionList(id="w-findings")
                yield Horizontal(Button("Dry run (ctrl+t)", id="dry-run"),
                                 Button("Submit (ctrl+g)", id="submit", variant="success"),
                                 Static("", id="w-result", markup=False), id="w-actions")
        yield Static("", id="wizard-status", markup=False)

    async def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#w-matches", DataTable).add_columns(*MATCH_COLUMNS)
        await self._fill_all()
        self._focus_first()
        self._load_gateway()
        if self.offer_saved:
            self._offer_saved()

    def _offer_saved(self) -> None:
        try:
            saved = self.store.load()
        except RlarkError as exc:
            self.notify(f"{exc}; starting a new draft", severity="warning", timeout=8)
            return
        if saved is None:
            return
        body = (f"{saved.summary()}\n\nResume it, or start a new draft (the saved one is overwritten at the "
                "first change; export it with ctrl+s first to keep it).")
        self.app.push_screen(ConfirmScreen("Resume the autosaved draft?", body, "Resume"),
                             lambda answer: self._resume(saved) if answer else None)

    @work(exclusive=True, group="wizard-resume")
    async def _resume(self, saved: SavedDraft) -> None:
        await self.load(saved.draft, saved.step)
        if saved.findings:
            self.notify(f"the saved draft has {len(saved.findings)} problem(s): {saved.findings[0]}",
                        severity="warning", timeout=8)

    async def load(self, draft: JobDraft, step: int = 1) -> None:
        """Replace the whole draft (resume, import) and show `step`; not autosaved until the next change."""
        self.draft = draft
        self.step = step
        self.role_index = 0
        await self._fill_all()
        self._status("")
        self._focus_first()

    # ---- live data ------------------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        index = self.rlark.index
        return index.nodes if index is not None else []

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        if not self.is_mounted:
            return
        self._fill_choices()
        self._recheck(save=False)

    @work(thread=True, exclusive=True, group="wizard-gateway", exit_on_error=False)
    def _load_gateway(self) -> None:
        access = self.rlark.access
        gateway = access.gateway_http() if access is not None else None
        if gateway is None:
            self.app.call_from_thread(self._gateway_loaded, None, [], "no gateway configured: storage classes "
                                      "and registered SSH keys are not offered")
            return
        try:
            classes = gateway.json("GET", "/api/v1/storage/storageclass", Request("list", "storageclasses",
                                   source="gateway"), timeout=10)
            keys = gateway.json("GET", "/api/v1/ssh-user-keys", Request("list", "ssh-user-keys", source="gateway"),
                                timeout=10)
        except RlarkError as exc:
            self.app.call_from_thread(self._gateway_loaded, None, [], f"gateway: {exc}")
            return
        self.app.call_from_thread(self._gateway_loaded, wf.storage_class_map(classes), wf.ssh_key_choices(keys), "")

    def _gateway_loaded(self, classes: dict[str, list[str]] | None, keys: list[tuple[str, str]], note: str) -> None:
        self.storage_classes, self.ssh_keys, self.gateway_note = classes, keys, note
        if self.is_mounted:
            self.query_one("#w-ssh-pick", Select).set_options(keys)
            self._recheck(save=False)

    # ---- filling widgets from the draft ---------------------------------------------------------------
    async def _fill_all(self) -> None:
        draft = self.draft
        self.local_errors.clear()
        self._set_input("#w-name", draft.name)
        self._set_input("#w-displayName", draft.display_name)
        if draft.type in dict(wf.JOB_TYPES).values():
            self.query_one("#w-type", Select).value = draft.type
        await self._rebuild_roles()
        self._set_input("#w-sshPublicKey", draft.ssh_public_key)
        self._set_text("#w-runScript", draft.run_script)
        self._set_input("#w-tensorboardDir", draft.tensorboard_dir)
        for name, _ in wf.RECORD_INPUTS:
            value = draft.record.get(name)
            self._set_input(f"#w-record-{name}", "" if value is None else str(value))
        self._fill_choices()
        self._fill_role()
        self._show_step()
        self._recheck(save=False)

    def _set_input(self, selector: str, value: str) -> None:
        widget = self.query_one(selector, Input)
        if widget.value != value:
            widget.value = value

    def _set_text(self, selector: str, value: str) -> None:
        widget = self.query_one(selector, TextArea)
        if widget.text != value:
            widget.text = value

    async def _rebuild_roles(self) -> None:
        """The role rows of step 1: rebuilt when the number of roles changes, otherwise refilled in place."""
        container = self.query_one("#w-roles", Vertical)
        if self._roles_shown != len(self.draft.roles):
            await container.remove_children()
            rows = []
            for index in range(len(self.draft.roles)):
                rows.append(Horizontal(
                    Input(placeholder="role name", id=f"w-role-name-{index}", classes="wizard-role-name"),
                    Static("", id=f"task-{index}", classes="wizard-task", markup=False),
                    Button("Remove", id=f"remove-role-{index}", classes="wizard-remove"),
                    Static("", id=f"m-role-name-{index}", classes="wizard-msg", markup=False),
                    classes="wizard-field wizard-role-row"))
            await container.mount_all(rows)
            self._roles_shown = len(self.draft.roles)
            self._shown = {k: v for k, v in self._shown.items() if not str(k).startswith("m-role-name-")}
        for index, role in enumerate(self.draft.roles):
            self._set_input(f"#w-role-name-{index}", role.name)
            self.query_one(f"#task-{index}", Static).update(self._task_label(role))
        self.role_index = min(self.role_index, max(len(self.draft.roles) - 1, 0))
        self._fill_role_choices()

    @staticmethod
    def _task_label(role: RoleDraft) -> str:
        return f"task: {role.task_name or '?'} · {role.platform_role}"

    def _fill_role_choices(self) -> None:
        options = [(role.name or f"(role {i + 1})", i) for i, role in enumerate(self.draft.roles)]
        header = self.draft.header_index()
        for selector in ("#w-header", "#w-header3"):
            select = self.query_one(selector, Select)
            select.set_options(options)
            if header is not None:
                select.value = header
        pick = self.query_one("#w-role-pick", Select)
        pick.set_options(options)
        if options:
            pick.value = self.role_index

    def _fill_choices(self) -> None:
        """Options that come from live data: clusters, labels of the role's cluster, domains."""
        nodes = self.nodes
        clusters = wf.clusters_of(nodes)
        cluster_select = self.query_one("#w-cluster", Select)
        role = self._role()
        wanted = [(c, c) for c in clusters]
        if role is not None and role.cluster and role.cluster not in clusters:
            wanted.append((f"{role.cluster} (no Nodes)", role.cluster))
        if self._options.get("cluster") != wanted:
            self._options["cluster"] = wanted
            cluster_select.set_options(wanted)
            if role is not None and role.cluster:
                cluster_select.value = role.cluster
        self._fill_labels()
        index = self.rlark.index
        domains = sorted(index.snapshot.domains) if index is not None else []
        domain_select = self.query_one("#w-domain", Select)
        options = [(d, d) for d in domains]
        if self.draft.domain and self.draft.domain not in domains:
            options.append((f"{self.draft.domain} (unknown)", self.draft.domain))
        if self._options.get("domain") != options:
            self._options["domain"] = options
            domain_select.set_options(options)
            if self.draft.domain:
                domain_select.value = self.draft.domain

    def _fill_labels(self) -> None:
        role = self._role()
        choices = wf.label_choices(self.nodes, role.cluster) if role is not None else []
        options = [(f"{k}={v}  ({n} Node{'s' if n != 1 else ''})", f"{k}={v}") for k, v, n in choices]
        if self._options.get("labels") != options:
            self._options["labels"] = options
            self.query_one("#w-label-pick", Select).set_options(options)

    def _fill_role(self) -> None:
        """Step 2's widgets from the current role."""
        role = self._role()
        for key in ("gpu", "devices", "env", "mounts", "selector"):
            self.local_errors.pop(f"roles[{self.role_index}].{key}", None)
        self.query_one("#step-2").set_class(role is None, "-no-roles")
        if role is None:
            return
        pick = self.query_one("#w-role-pick", Select)
        if _option_value(pick) != self.role_index and self.draft.roles:
            pick.value = self.role_index
        platform = self.query_one("#w-role", Select)
        if role.role in PLATFORM_ROLES:
            platform.value = role.role
        else:
            platform.clear()
        cluster = self.query_one("#w-cluster", Select)
        if role.cluster and role.cluster in [v for _, v in self._options.get("cluster", [])]:
            cluster.value = role.cluster
        else:
            cluster.clear()
        self._set_input("#w-selector", wf.format_selector(role.selector))
        self._set_input("#w-gpu", str(role.gpu))
        self._set_input("#w-devices", wf.format_devices(role.devices))
        self._set_input("#w-image", role.image)
        self._set_text("#w-prepareScript", role.prepare_script)
        self._set_text("#w-env", wf.format_env(role.env))
        self._set_text("#w-mounts", wf.format_mounts(role.mounts))
        self._set_input("#w-cpu", role.cpu)
        self._set_input("#w-memory", role.memory)
        self._fill_labels()

    def _role(self) -> RoleDraft | None:
        roles = self.draft.roles
        return roles[self.role_index] if 0 <= self.role_index < len(roles) else None

    # ---- edits ----------------------------------------------------------------------------------------
    def _commit(self, draft: JobDraft, path: str | None = None, problem: str | None = None) -> None:
        """Take a new draft (and the parse problem of `path`, if any); re-check and autosave on a change."""
        changed = draft != self.draft
        if path is not None:
            before = self.local_errors.get(path)
            if problem:
                self.local_errors[path] = problem
            else:
                self.local_errors.pop(path, None)
            changed = changed or before != problem
        if not changed:
            return
        self.draft = draft
        self._recheck()

    def _edit_role(self, index: int, **changes) -> JobDraft:
        roles = list(self.draft.roles)
        roles[index] = replace(roles[index], **changes)
        return replace(self.draft, roles=tuple(roles))

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        key = (event.input.id or "").removeprefix("w-")
        value = event.value
        draft, i = self.draft, self.role_index
        if key in ("name", "displayName", "sshPublicKey", "tensorboardDir"):
            attr = {"name": "name", "displayName": "display_name", "sshPublicKey": "ssh_public_key",
                    "tensorboardDir": "tensorboard_dir"}[key]
            self._commit(replace(draft, **{attr: value}))
        elif key.startswith("role-name-"):
            self._rename_role(int(key.removeprefix("role-name-")), value)
        elif key.startswith("record-"):
            self._edit_record(key.removeprefix("record-"), value)
        elif self._role() is None:
            return
        elif key in ("image", "cpu", "memory"):
            self._commit(self._edit_role(i, **{key: value.strip() if key != "image" else value}))
        elif key == "selector":
            self._parsed(f"roles[{i}].selector", lambda: self._edit_role(i, selector=wf.parse_selector(value)))
        elif key == "gpu":
            self._parsed(f"roles[{i}].gpu", lambda: self._edit_role(i, gpu=wf.parse_count(value, "GPU")))
        elif key == "devices":
            self._parsed(f"roles[{i}].devices", lambda: self._edit_role(i, devices=wf.parse_devices(value)))

    def _parsed(self, path: str, build) -> None:
        try:
            draft = build()
        except wf.FormError as exc:
            self._commit(self.draft, path, str(exc))
            return
        self._commit(draft, path, None)

    def _rename_role(self, index: int, name: str) -> None:
        if index >= len(self.draft.roles):
            return
        was_header = self.draft.header_index() == index
        draft = self._edit_role(index, name=name)
        if was_header:
            draft = replace(draft, header=name)
        self._commit(draft)
        self.query_one(f"#task-{index}", Static).update(self._task_label(self.draft.roles[index]))
        self._fill_role_choices()

    def _edit_record(self, name: str, value: str) -> None:
        record = dict(self.draft.record)
        path = f"record.{name}"
        problem = None
        text = value.strip()
        if not text:
            record.pop(name, None)
        elif name in wf.RECORD_INTS:
            if wf.is_count(text) and int(text) >= 1:
                record[name] = int(text)
            else:
                problem = "must be a whole number ≥ 1"
        else:
            record[name] = text
        self._commit(replace(self.draft, record=record), path, problem)

    @on(TextArea.Changed)
    def _text_changed(self, event: TextArea.Changed) -> None:
        key = (event.text_area.id or "").removeprefix("w-")
        text = event.text_area.text
        if key == "runScript":
            self._commit(replace(self.draft, run_script=text))
            return
        if self._role() is None:
            return
        i = self.role_index
        if key == "prepareScript":
            self._commit(self._edit_role(i, prepare_script=text))
        elif key == "env":
            self._parsed(f"roles[{i}].env", lambda: self._edit_role(i, env=wf.parse_env(text)))
        elif key == "mounts":
            self._parsed(f"roles[{i}].mounts", lambda: self._edit_role(i, mounts=wf.parse_mounts(text)))

    @on(Select.Changed)
    async def _select_changed(self, event: Select.Changed) -> None:
        key = (event.select.id or "").removeprefix("w-")
        value = _option_value(event.select)
        if key == "type" and value is not None and value != self.draft.type:
            await self._apply_type(value)
        elif key in ("header", "header3") and value is not None and value < len(self.draft.roles):
            self._commit(replace(self.draft, header=self.draft.roles[value].name))
            other = self.query_one("#w-header3" if key == "header" else "#w-header", Select)
            if _option_value(other) != value:
                other.value = value
        elif key == "role-pick" and value is not None and value != self.role_index:
            self.role_index = value
            self._fill_role()
            self._recheck(save=False)
        elif key == "domain":
            index = self.rlark.index
            if value is None and self.draft.domain and index is not None and self.draft.domain in \
                    index.snapshot.domains:
                self._commit(replace(self.draft, domain=""))
            elif value is not None:
                self._commit(replace(self.draft, domain=value))
        elif key == "ssh-pick" and value is not None:
            self.query_one("#w-sshPublicKey", Input).value = value
        elif self._role() is None:
            return
        elif key == "role":
            current = self._role().role
            if (value or "") != current and (value is not None or current in PLATFORM_ROLES):
                self._commit(self._edit_role(self.role_index, role=value or ""))
                self.query_one(f"#task-{self.role_index}", Static).update(self._task_label(self._role()))
        elif key == "cluster" and value is not None and value != self._role().cluster:
            self._commit(self._edit_role(self.role_index, cluster=value))
            self._fill_labels()
        elif key == "label-pick" and value is not None:
            label_key, _, label_value = value.partition("=")
            selector = dict(self._role().selector)
            selector[label_key] = label_value
            self.query_one("#w-selector", Input).value = wf.format_selector(selector)
            event.select.clear()

    async def _apply_type(self, draft_type: str) -> None:
        """W4: a type replaces the roles by its presets (a role of the same name keeps its settings)."""
        existing = {role.task_name: role for role in self.draft.roles}
        roles = tuple(existing.get(RoleDraft(name=n).task_name, RoleDraft(name=n))
                      for n in wf.PRESET_ROLES[draft_type])
        header = self.draft.header if any(r.task_name == RoleDraft(name=self.draft.header).task_name
                                           for r in roles) else ""
        self.draft = replace(self.draft, type=draft_type, roles=roles, header=header)
        label = dict((value, name) for name, value in wf.JOB_TYPES)[draft_type]
        self._status(f"Job type {label}: roles set to its presets "
                     f"({', '.join(r.name for r in roles) or 'none: add roles with Add role'})")
        await self._rebuild_roles()
        self._fill_role()
        self._recheck()

    @on(Button.Pressed)
    async def _button(self, event: Button.Pressed) -> None:
        button = event.button.id or ""
        if button == "add-role":
            await self.add_role()
        elif button.startswith("remove-role-"):
            await self.remove_role(int(button.removeprefix("remove-role-")))
        elif button == "dry-run":
            self.action_dry_run()
        elif button == "submit":
            self.action_submit()

    async def add_role(self) -> None:
        taken = {role.task_name for role in self.draft.roles}
        number, name = 1, "New role"
        while RoleDraft(name=name).task_name in taken:
            number += 1
            name = f"New role {number}"
        self.draft = replace(self.draft, roles=self.draft.roles + (RoleDraft(name=name),))
        await self._rebuild_roles()
        self._recheck()
        self.query_one(f"#w-role-name-{len(self.draft.roles) - 1}", Input).focus()

    async def remove_role(self, index: int) -> None:
        roles = list(self.draft.roles)
        if not 0 <= index < len(roles):
            return
        header = "" if self.draft.header_index() == index else self.draft.header
        del roles[index]
        self.draft = replace(self.draft, roles=tuple(roles), header=header)
        await self._rebuild_roles()
        self._fill_role()
        self._recheck()

    # ---- checking and showing -------------------------------------------------------------------------
    def _validation_inputs(self) -> dict:
        index = self.rlark.index
        return {"existing_jobs": list(index.snapshot.jobs) if index is not None else None,
                "storage_classes": self.storage_classes,
                "domains": list(index.snapshot.domains) if index is not None else None}

    def _recheck(self, save: bool = True) -> None:
        """Validate (same rules as `rlark draft render`), show every message, autosave."""
        inputs = self._validation_inputs()
        self.result = build_job(self.draft, list(self.rlark.index.snapshot.nodes.values())
                                if self.rlark.index is not None else [], inputs["existing_jobs"],
                                storage_classes=inputs["storage_classes"], domains=inputs["domains"])
        local = [error(path, message) for path, message in self.local_errors.items()]
        self.findings = ordered(local + self.result.findings)
        self._show_messages()
        self._show_matches()
        self._show_title()
        if self.step == 4:
            self._show_preview()
        if save:
            try:
                self.store.save(self.draft, self.step)
            except OSError as exc:
                self._status(f"autosave failed: {exc.strerror or exc}")

    def _show_title(self) -> None:
        title = f"Step {self.step}/4 · {wf.STEP_NAMES[self.step - 1]}"
        role = self._role()
        if self.step == 2 and role is not None:
            title += f" — role {self.role_index + 1}/{len(self.draft.roles)}: {role.name}"
        if self.rlark.index is None:
            title += "   (waiting for the control plane: Nodes and Jobs not loaded yet)"
        if self._shown.get("#title") != title:
            self._shown["#title"] = title
            self.query_one("#wizard-title", Static).update(title)

    def _messages_by_key(self) -> dict[str, list[tuple[str, str]]]:
        """Widget key → [(level, text)] for the current view (step 2 shows the current role only)."""
        shown: dict[str, list[tuple[str, str]]] = {}
        header = self.draft.header_index()
        for finding in self.findings:
            place = wf.place_of(finding.field)
            line = (finding.level, wf.finding_line(finding, place))
            if place.step == 1 and place.role is not None:
                shown.setdefault(f"role-name-{place.role}", []).append(line)
                continue
            if place.role is not None and place.role != self.role_index:
                if place.role == header and place.key == "selector":
                    shown.setdefault("header3", []).append(line)
                continue
            shown.setdefault(place.key, []).append(line)
            if place.role is not None and place.role == header and place.key == "selector":
                shown.setdefault("header3", []).append(line)
            if place.key == "header":
                shown.setdefault("header3", []).append(line)
        return shown

    def _hints(self) -> dict[str, str]:
        """Facts shown beside fields even without a finding: GPU maximum, devices, mount scope, header matches."""
        hints: dict[str, str] = {}
        nodes = self.nodes
        role = self._role()
        if role is not None:
            matched = role_matches(role, nodes)
            maximum = wf.gpu_maximum(matched)
            hints["gpu"] = (f"max {maximum} (smallest allocatable among the matched Nodes)" if maximum is not None
                            else "no maximum known: keep 0 unless an admin confirmed the GPUs")
            devices = wf.device_summary(nodes, role.cluster) if role.cluster else ""
            hints["devices"] = f"reported: {devices}" if devices else "the cluster reports no rlinf.io/* devices"
            mount_notes = []
            for number, mount in enumerate(role.mounts, start=1):
                if mount.type == "host" and mount.source:
                    where = ", ".join(n.name for n in matched) or "no matched Node yet"
                    mount_notes.append(f"line {number}: {mount.source} must exist on {where}")
            if self.storage_classes is not None:
                classes = ", ".join(self.storage_classes.get(role.cluster, [])) or "none"
                mount_notes.append(f"storage classes in {role.cluster or '?'}: {classes}")
            elif self.gateway_note:
                mount_notes.append(self.gateway_note)
            hints["mounts"] = "\n".join(mount_notes)
        header = self.draft.header_index()
        if header is not None:
            head = self.draft.roles[header]
            matched = role_matches(head, nodes)
            where = ", ".join(f"{n.name} ({n.cluster})" for n in matched) or "none"
            hints["header3"] = (f"{head.name}: selector {wf.format_selector(head.selector) or '(empty)'} matches "
                                f"{len(matched)} Node(s) globally: {where}")
        clusters = sorted({n.cluster for r in self.draft.roles for n in role_matches(r, nodes)})
        if len(clusters) > 1:
            hints["domain"] = (f"roles span {len(clusters)} clusters ({', '.join(clusters)}): a domain is required, "
                               f"workers reach the head's Service only inside its own cluster")
        if self.gateway_note and not self.ssh_keys:
            hints["ssh-pick"] = self.gateway_note
        return hints

    def _show_messages(self) -> None:
        messages = self._messages_by_key()
        hints = self._hints()
        for widget in self.query(".wizard-msg"):
            key = (widget.id or "").removeprefix("m-")
            lines = messages.get(key, [])
            text = "\n".join(("✗ " if level == "error" else "! ") + message for level, message in lines)
            shown = "\n".join(part for part in (text, hints.get(key, "")) if part)
            levels = {level for level, _ in lines}
            state = (shown, "error" if "error" in levels else "warning" if levels else "")
            if self._shown.get(widget.id) != state:
                self._shown[widget.id] = state
                widget.update(shown)
                widget.set_classes(f"wizard-msg -{state[1]}" if state[1] else "wizard-msg")

    def _show_matches(self) -> None:
        role = self._role()
        matched = role_matches(role, self.nodes) if role is not None else []
        rows = [(node.name, node.cluster, "Online" if node.online else node.phase or "Offline",
                 "-" if node.allocatable("nvidia.com/gpu") is None else f"{node.allocatable('nvidia.com/gpu'):g}",
                 wf.node_devices(node) or "-") for node in matched]
        if role is None:
            summary = "No roles yet: add them in step 1."
        else:
            clusters = sorted({n.cluster for n in matched})
            summary = (f"Replicas (read-only) = matched Nodes: {len(matched)} — the full selector matched across "
                       f"all clusters ({', '.join(clusters) or 'none'})")
        if (summary, rows) == self._shown.get("#matches"):
            return
        self._shown["#matches"] = (summary, rows)
        self.query_one("#w-match-summary", Static).update(summary)
        table = self.query_one("#w-matches", DataTable)
        table.clear(columns=True)
        table.add_columns(*MATCH_COLUMNS)
        table.add_rows(rows)

    def _show_preview(self) -> None:
        manifest = redact_object(self.result.manifest)
        masked = manifest != self.result.manifest
        state = (dump_yaml(manifest), tuple(self.findings))
        if self._shown.get("#preview") == state:
            return
        self._shown["#preview"] = state
        self.preview_yaml = state[0]
        self.query_one("#w-yaml", Static).update(Syntax(self.preview_yaml, "yaml", theme="ansi_dark", word_wrap=True))
        errors = sum(f.level == "error" for f in self.findings)
        note = " Secret-looking values are masked here." if masked else ""
        self.query_one("#w-yaml-title", Static).update(
            f"The Job YAML to submit (submitted-spec annotations are added at submit).{note} "
            f"{errors} error(s), {len(self.findings) - errors} warning(s); Enter on a finding jumps to its field.")
        options = self.query_one("#w-findings", OptionList)
        options.clear_options()
        options.add_options([Option(f"{'✗ error' if f.level == 'error' else '! warning'}  {f.field}: {f.message}",
                                    id=str(i)) for i, f in enumerate(self.findings)]
                            or [Option("no findings: ready to submit", id="none", disabled=True)])

    def _status(self, text: str) -> None:
        self.query_one("#wizard-status", Static).update(text)

    # ---- navigation -----------------------------------------------------------------------------------
    def _show_step(self) -> None:
        self.query_one("#wizard-steps", ContentSwitcher).current = f"step-{self.step}"
        self.query_one("#wizard-keys", Static).update(self._key_bar())
        self._show_title()
        self.update_header()
        self.refresh_bindings()
        if self.step == 4:
            self._show_preview()
            readonly = self.rlark.readonly
            self.query_one("#submit", Button).label = "Submit refused: read-only" if readonly else "Submit (ctrl+g)"
            self.query_one("#submit", Button).disabled = readonly

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next":
            return self.step < 4
        if action == "back":
            return self.step > 1
        if action in ("dry_run", "submit"):
            return self.step == 4
        return super().check_action(action, parameters)

    def blocking(self, up_to_step: int) -> list[Finding]:
        return [f for f in self.findings if f.level == "error" and wf.place_of(f.field).step <= up_to_step]

    def action_next(self) -> None:
        if self.step >= 4:
            return
        blocking = self.blocking(self.step)
        if blocking:
            first = blocking[0]
            self._status(f"Next is blocked by {len(blocking)} error(s); first: {first.field}: {first.message}")
            self.jump_to(first.field)
            return
        self.step += 1
        self._status("")
        self._show_step()
        self._recheck()
        self._focus_first()

    def action_back(self) -> None:
        if self.step > 1:
            self.step -= 1
            self._status("")
            self._show_step()
            self._recheck()
            self._focus_first()

    def _focus_first(self) -> None:
        first = {1: "#w-name", 2: "#w-cluster", 3: "#w-header3", 4: "#w-findings"}[self.step]
        self.query_one(first).focus()

    def focus_body(self) -> None:
        self._focus_first()

    def jump_to(self, field: str) -> None:
        """Show the step and role of a finding's field and focus its widget."""
        place = wf.place_of(field)
        if place.step != self.step:
            self.step = place.step
            self._show_step()
        if place.step == 2 and place.role is not None and place.role != self.role_index \
                and place.role < len(self.draft.roles):
            self.role_index = place.role
            self._fill_role()
        self._recheck(save=False)
        if place.key == "roles":
            targets = self.query("#add-role")
        else:
            key = f"role-name-{place.role}" if place.key == "role-name" else place.key
            targets = self.query(f"#w-{key}")
        if targets:
            widget = targets.first()
            widget.focus()
            self.call_after_refresh(widget.scroll_visible)

    @on(OptionList.OptionSelected, "#w-findings")
    def _finding_chosen(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ""
        if option_id.isdigit() and int(option_id) < len(self.findings):
            self.jump_to(self.findings[int(option_id)].field)

    def action_close(self) -> None:
        self.notify("Wizard closed; the draft is autosaved and offered when you press n again.", timeout=4)
        self.dismiss()

    # ---- dry run and submit ---------------------------------------------------------------------------
    def _ready(self, what: str) -> bool:
        self._recheck(save=False)
        errors = [f for f in self.findings if f.level == "error"]
        if errors:
            self._result(f"{what} blocked by {len(errors)} error(s); first: {errors[0].field}: {errors[0].message}",
                         error=True)
            self._show_preview()
            return False
        if self.rlark.access is None:
            self._result(f"{what}: not connected to a control plane", error=True)
            return False
        return True

    def _result(self, text: str, error: bool = False) -> None:
        widget = self.query_one("#w-result", Static)
        widget.update(text)
        widget.set_class(error, "-error")
        self._status(text)

    def action_dry_run(self) -> None:
        if self.step == 4 and self._ready("Dry run"):
            self._result("Dry run: asking the server…")
            self._send(self.result.manifest, True)

    def action_submit(self) -> None:
        if self.step != 4:
            return
        if self.rlark.readonly:
            self._result("read-only mode: Submit refused (dry run is allowed)", error=True)
            self.notify("read-only mode: Submit refused", severity="error")
            return
        if self._ready("Submit"):
            self._result("Submitting…")
            self._send(self.result.manifest, False)

    @work(thread=True, exclusive=True, group="wizard-submit", exit_on_error=False)
    def _send(self, manifest: dict, dry_run: bool) -> None:
        actions = Actions(self.rlark.access, readonly=self.rlark.readonly)
        try:
            result = actions.submit(manifest, dry_run=dry_run)
        except RlarkError as exc:
            self.app.call_from_thread(self._result, f"{'Dry run' if dry_run else 'Submit'} refused: {exc}", True)
            return
        self.app.call_from_thread(self._sent, manifest["metadata"]["name"], dry_run, result.sha256,
                                  str(result.saved) if result.saved else "")

    def _sent(self, name: str, dry_run: bool, sha: str, saved: str) -> None:
        if dry_run:
            self._result(f"Dry run: the server accepts Job {name} (nothing was created).")
            return
        self.store.clear()
        app = self.rlark
        self.dismiss()
        note = f" Submitted YAML saved to {saved}." if saved else ""
        app.notify(f"Job {name} created (spec sha256 {sha[:12]}…).{note} {RUNNING_HINT}", timeout=20)
        select_when_listed(app, name)

    # ---- scripts, import, export ----------------------------------------------------------------------
    def action_editor(self) -> None:
        area = self.focused
        key = (area.id or "").removeprefix("w-") if isinstance(area, TextArea) else ""
        if key not in SCRIPT_AREAS:
            self._status("f4 opens $EDITOR on the focused script, env or mounts box")
            return
        command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            with self.app.suspend():
                text = edit_externally(area.text, command)
        except SuspendNotSupported:
            self._status("this terminal cannot hand over to $EDITOR; edit the script inline")
            return
        except RlarkError as exc:
            self._status(str(exc))
            return
        area.text = text[:-1] if text.endswith("\n") else text

    def action_import_draft(self) -> None:
        self.app.push_screen(PathScreen("Import a draft (ctrl+o)", "A draft file in the `rlark draft render` "
                                        "format; it replaces the current draft.", self.last_path),
                             self._import_from)

    @work(exclusive=True, group="wizard-import")
    async def _import_from(self, path: str | None) -> None:
        if not path:
            return
        try:
            draft, findings = import_draft(Path(path).expanduser())
        except RlarkError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        self.last_path = path
        await self.load(draft)
        self._recheck()
        problems = f"; {len(findings)} problem(s), first: {findings[0]}" if findings else ""
        self.notify(f"imported {path}{problems}", severity="warning" if findings else "information", timeout=8)

    def action_export_draft(self) -> None:
        self.app.push_screen(PathScreen("Export the draft (ctrl+s)", "Written with mode 0600; render it with "
                                        "`rlark draft render FILE --nodes NODES.yaml`.", self.last_path),
                             self._export_to)

    def _export_to(self, path: str | None) -> None:
        if not path:
            return
        try:
            export_draft(Path(path).expanduser(), self.draft)
        except RlarkError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        self.last_path = path
        self.notify(f"draft exported to {path}", timeout=4)


def select_when_listed(app, name: str, tries: int = 40) -> None:
    """Select Job `name` on the job list once the watch has delivered it (up to ~10 s)."""
    from rlark_tui.screens.job_list import JobListScreen

    def attempt(left: int) -> None:
        screen = app.screen
        if isinstance(screen, JobListScreen) and screen.table.select_key(name):
            return
        if left > 0:
            app.set_timer(0.25, lambda: attempt(left - 1))

    attempt(tries)
