"""WizardScreen: the four-step create-job wizard (`n` on the job list) over a JobDraft, autosaved on every change.

Owns the draft, the step and the keyboard flow: every widget change goes through the field table's one handler
(rlark_tui.jobspec.wizard_fields.apply); findings come from rlark_tui.jobspec.validate (via build_job, as `rlark
draft render`) over the Snapshot and the gateway lookups it subscribes to; dry run and Submit go through the
app (messages.SendManifest, then rlark_tui.flow.actions as `rlark submit`), then JobSubmitted selects the new Job on
the list.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from rich.syntax import Syntax
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Button, ContentSwitcher, Input, OptionList, Select, Static, TextArea

from rlark_tui.flow.messages import (
    AutosaveDraft,
    AutosaveFailed,
    AutosaveLoaded,
    DraftExported,
    DraftImported,
    EditText,
    ExportDraft,
    ImportDraft,
    JobSubmitted,
    LoadAutosave,
    ManifestSent,
    SendManifest,
    TextEdited,
)
from rlark_tui.flow.polls import GATEWAY_KEY, LOOKUPS, GatewayLookups
from rlark_tui.jobspec import wizard_fields as wf
from rlark_tui.jobspec import wizard_view as wv
from rlark_tui.jobspec.build import DraftResult, build_job
from rlark_tui.jobspec.draft import JobDraft, RoleDraft, dump_yaml, too_many_roles
from rlark_tui.jobspec.findings import Finding, error, ordered
from rlark_tui.local.resources import stylesheet
from rlark_tui.screens.base import CommandBar, RlarkScreen
from rlark_tui.screens.confirm import ConfirmScreen
from rlark_tui.screens.wizard_dialogs import PathScreen
from rlark_tui.screens.wizard_steps import (
    CommonStep,
    FormStep,
    JobStep,
    PreviewStep,
    WorkerStep,
    select_value,
    set_text,
)
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.redact import redact_object
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.view.yamltab import shown_part
from rlark_tui.widgets.status_header import StatusHeader

if TYPE_CHECKING:
    from rlark_tui.local.draft_files import SavedDraft

RUNNING_HINT = ("`Running` only means the Pods were scheduled, not that training works: press `c` on it for the "
                "run check.")
FIRST_FIELD = MappingProxyType({1: "#w-name", 2: "#w-cluster", 3: "#w-header3", 4: "#w-findings"})
LATER_STEPS = MappingProxyType({2: WorkerStep, 3: CommonStep, 4: PreviewStep})
"""The steps mounted the first time they are shown: 231 of the wizard's 293 widgets, which every open (`n`, clone,
edit) composed, styled and styled again when the screen became active, 0.7 s of CPU, most of it for steps a user
may never open. The draft holds what they show until then."""
LOADING = "gateway: loading…"


class WizardScreen(RlarkScreen):
    """Create a Job in four steps. `draft` prefills the form (clone, edit); without one the autosave is offered.
    `lock_name` keeps the Job name as given (edit): its field is read-only, imports keep it, and the Job of that
    name is not counted as taken."""

    CSS_PATH = stylesheet("wizard.tcss")
    AUTO_FOCUS = ""
    """Nothing focused once composed: load focuses the step's first field. Textual's auto focus gave step 1 the focus
    first (its first focusable widget), which the field then took, each change of focus restyling step 1's widgets:
    40 ms of each open."""
    help_notes = (wf.DEBUGGABLE_HELP,)
    """What `?` explains besides the keys."""
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

    def __init__(self, draft: JobDraft | None = None, *, lock_name: bool = False) -> None:
        super().__init__()
        self.offer_saved = draft is None
        self.draft = draft or JobDraft(type="rl", roles=tuple(RoleDraft(name=n) for n in wf.PRESET_ROLES["rl"]))
        self.locked_name = self.draft.name if lock_name else None
        self.step = 1
        self.role_index = 0
        self.local_errors: dict[str, str] = {}
        self.findings: list[Finding] = []
        self.result: DraftResult | None = None
        self.preview_yaml = ""
        self.last_path = "job-draft.yaml"
        self._shown: dict[str, object] = {}
        self.steps: dict[int, FormStep | PreviewStep] = {}
        """The steps mounted so far, by number (step 1 from compose, the others when first shown: LATER_STEPS); kept,
        as a query of the wizard's widgets per change took a tenth of its time."""
        self._mounting = asyncio.Lock()

    @property
    def form_steps(self) -> tuple[FormStep, ...]:
        """The form steps mounted so far: every check shows its messages in each."""
        return tuple(step for step in self.steps.values() if isinstance(step, FormStep))

    @property
    def job_step(self) -> JobStep:
        """Step 1, kept from compose (a query walks the wizard's widgets, one row per role)."""
        step = self.steps[1]
        assert isinstance(step, JobStep)
        return step

    @property
    def crumb(self) -> str:  # type: ignore[override]
        title = f"Edit Job {self.locked_name}" if self.locked_name is not None else "New Job"
        return f"{title} · Step {self.step}/4 {wf.STEP_NAMES[self.step - 1]}"

    @property
    def gateway_note(self) -> str:
        return self.facts.gateway_note

    @property
    def facts(self) -> wf.WizardFacts:
        """What the checks and choices use: the latest Snapshot and the gateway lookups in it."""
        index = self.state.index
        if index is None:
            return wf.WizardFacts(gateway_note=LOADING)
        snapshot = index.snapshot
        lookups = index.listed("lookups", GATEWAY_KEY)
        if not isinstance(lookups, GatewayLookups):
            lookups = GatewayLookups(notes=(LOADING,))
        jobs = tuple(name for name in snapshot.jobs if name != self.locked_name)
        return wf.WizardFacts(index.nodes, jobs, tuple(snapshot.domains),
                              lookups.storage_classes, tuple(wf.ssh_key_choices(list(lookups.ssh_keys))),
                              "; ".join(lookups.notes))

    # ---- layout ---------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """The shared shell and step 1 (the others are mounted when first shown: _mounted), with a key bar per step
        instead of the Footer (which re-renders on every focus move, too slow for a form of ~200 widgets)."""
        yield StatusHeader(id="status-header")
        yield Static("", id="wizard-title", markup=False)
        self.steps = {1: JobStep(id="step-1")}
        with ContentSwitcher(initial="step-1", id="wizard-steps"):
            yield self.steps[1]
        yield Static("", id="wizard-status", markup=False)
        yield CommandBar(placeholder=":jobs  :nodes  :ns NAME  :ctx NAME  :q", id="command-bar")
        yield Static("", id="wizard-keys", markup=False)

    async def on_mount(self) -> None:  # type: ignore[override]  # Textual awaits a handler that is async
        super().on_mount()
        if self.locked_name is not None:
            self.query_one("#w-name", Input).disabled = True
        if not await self.load(self.draft) or self.locked_name is not None:
            self.job_step.focus()  # no field took the focus: step 1 has it, as Textual's auto focus gave it
        self.intents.subscribe(LOOKUPS, GATEWAY_KEY)
        if self.offer_saved:
            self.post_message(LoadAutosave(self))

    def on_unmount(self) -> None:
        super().on_unmount()
        self.intents.unsubscribe(LOOKUPS, GATEWAY_KEY)

    def on_autosave_loaded(self, message: AutosaveLoaded) -> None:
        """The autosaved draft (the app read it): offer to resume it, unless the form changed first. Its first
        change wrote this process's autosave, which a read answered after it is (a user typing at once on a loaded
        machine was offered their own first keys, and the offer took the keys after them)."""
        if message.error:
            self.notify(f"{message.error}; starting a new draft", severity="warning", timeout=8)
            return
        saved = message.saved
        if saved is None or not self.offer_saved:
            return
        body = (f"{saved.summary()}\n\nResume it, or start a new draft (the saved one is overwritten at the "
                "first change; export it with ctrl+s first to keep it).")

        def resume(answer: bool | None) -> None:
            if answer:
                self._resume(saved)

        self.app.push_screen(ConfirmScreen("Resume the autosaved draft?", body, "Resume"), resume)

    @work(exclusive=True, group="wizard-resume")
    async def _resume(self, saved: SavedDraft) -> None:
        if not await self.load(saved.draft, saved.step, "the autosaved draft"):
            return
        if saved.findings:
            self.notify(f"the saved draft has {len(saved.findings)} problem(s): {saved.findings[0]}",
                        severity="warning", timeout=8)

    async def load(self, draft: JobDraft, step: int = 1, what: str = "the draft") -> bool:
        """Prefill the whole form from `draft` (resume, import, clone, edit) and show `step`; not autosaved
        until the next change. A locked name stays. A draft of more than jobspec.draft.MAX_ROLES roles is refused
        in one line, naming it as `what`, and the form keeps what it held (False): a row and a form per role, and
        an autosave of 400 roles, which another rlark or a hand edit left, held the UI thread 25 s. A field longer
        than its widget holds (wizard_fields.held) is left out, said in one line: a Job's 1 MB fields held it 28 s."""
        why = too_many_roles(draft, what)
        if why:
            self.notify(why, severity="error", timeout=8)
            return False
        draft, left_out = wf.held(draft, what)
        if left_out:
            self.notify(left_out, severity="warning", timeout=12)
        if self.locked_name is not None:
            draft = replace(draft, name=self.locked_name)
        self.draft, self.step, self.role_index = draft, step, 0
        self.local_errors.clear()
        for step_widget in self.form_steps:
            if not isinstance(step_widget, WorkerStep):
                step_widget.fill(draft, 0, role_fields=False)
        await self.job_step.show_roles(draft)
        self._show_role()
        await self._show_step()
        self._status("")
        self._focus_first()
        return True

    # ---- live data ------------------------------------------------------------------------------------
    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        if self.is_mounted:
            self._recheck(save=False)

    # ---- the one handler ------------------------------------------------------------------------------
    @on(Input.Changed)
    @on(TextArea.Changed)
    @on(Select.Changed)
    async def _changed(self, event: Input.Changed | TextArea.Changed | Select.Changed) -> None:
        widget = event.control
        key = (widget.id or "").removeprefix("w-")
        value: wf.Value
        if isinstance(widget, TextArea):
            value = widget.text
        elif isinstance(widget, Select):
            value = select_value(widget)
        else:
            value = widget.value
        if key.startswith("role-name-"):
            index = int(key.removeprefix("role-name-"))
            self._commit(wf.Change(wf.rename_role(self.draft, index, value)))
            self.job_step.show_tasks(self.draft, only=index)
            return
        field = wf.BY_KEY.get(key)
        if field is None:
            return
        if key == "role-pick":
            if value is not None and value != self.role_index:
                self.role_index = value
                self._show_role()
                self._recheck(save=False)
            return
        roles_before = (self.draft.type, len(self.draft.roles))
        change = wf.apply(field, self.draft, self.role_index, value, self.facts)
        if change.fill or change.left_out:
            if change.fill:
                set_text(self.query_one(f"#w-{change.fill}"), change.text)
            else:
                self.notify(change.left_out, severity="warning", timeout=12)
            widget.clear()
            return
        self._commit(change)
        if key in wf.REFILLS and isinstance(worker_step := self.steps.get(2), WorkerStep):
            worker_step.refill(self.draft, self.role_index, wf.REFILLS[key])
        if (self.draft.type, len(self.draft.roles)) != roles_before:
            await self._roles_changed()
            if key == "type":
                label = dict((value, name) for name, value in wf.JOB_TYPES)[self.draft.type]
                self._status(f"Job type {label}: roles set to its presets "
                             f"({', '.join(r.name for r in self.draft.roles) or 'none: add roles with Add role'})")
        else:
            self.job_step.show_tasks(self.draft)

    def _commit(self, change: wf.Change) -> None:
        """Take the new draft (and the parse problem of `change.path`); re-check and autosave on a change."""
        changed = change.draft != self.draft
        if change.path:
            before = self.local_errors.pop(change.path, "")
            if change.problem:
                self.local_errors[change.path] = change.problem
            changed = changed or before != change.problem
        if changed:
            self.draft = change.draft
            self._recheck()

    async def _roles_changed(self) -> None:
        await self.job_step.show_roles(self.draft)
        self.role_index = min(self.role_index, max(len(self.draft.roles) - 1, 0))
        self._show_role()
        self._recheck(save=False)

    @on(Button.Pressed)
    async def _button(self, event: Button.Pressed) -> None:
        button = event.button.id or ""
        if button == "add-role":
            self._commit(wf.Change(wf.add_role(self.draft)))
            await self._roles_changed()
            self.query_one(f"#w-role-name-{len(self.draft.roles) - 1}", Input).focus()
        elif button.startswith("remove-role-"):
            self._commit(wf.Change(wf.remove_role(self.draft, int(button.removeprefix("remove-role-")))))
            await self._roles_changed()
        elif button == "dry-run":
            self.action_dry_run()
        elif button == "submit":
            self.action_submit()

    def _show_role(self) -> None:
        """Step 2's widgets from the role it shows (once mounted: _mounted fills them then)."""
        prefix = f"roles[{self.role_index}]."
        self.local_errors = {k: v for k, v in self.local_errors.items() if not k.startswith(prefix)}
        if isinstance(worker_step := self.steps.get(2), WorkerStep):
            worker_step.fill(self.draft, self.role_index, role_fields=True)

    # ---- checking and showing -------------------------------------------------------------------------
    def _recheck(self, save: bool = True) -> DraftResult:
        """Validate (same rules as `rlark draft render`), show every message, autosave; returns the result."""
        facts = self.facts
        result = self.result = build_job(self.draft, facts.nodes, list(facts.jobs) if facts.jobs is not None else None,
                                storage_classes=facts.storage_classes,
                                domains=list(facts.domains) if facts.domains is not None else None)
        local = [error(path, message) for path, message in self.local_errors.items()]
        self.findings = ordered(local + result.findings)
        messages = wv.field_messages(self.findings, self.draft, self.role_index, facts)
        for step in self.form_steps:
            step.show(self.draft, self.role_index, facts, messages)
        title = wv.title(self.step, self.draft, self.role_index, self.state.index is not None)
        if self._shown.get("title") != title:
            self._shown["title"] = title
            self.query_one("#wizard-title", Static).update(title)
        if self.step == 4:
            self._show_preview(result)
        if save:
            self.offer_saved = False  # the autosave is this draft from now on
            self.post_message(AutosaveDraft(self, self.draft, self.step))
        return result

    def on_autosave_failed(self, message: AutosaveFailed) -> None:
        self._status(message.error)

    def _show_preview(self, result: DraftResult) -> None:
        manifest = redact_object(result.manifest)
        state = (dump_yaml(manifest), tuple(self.findings))
        if self._shown.get("preview") == state:
            return
        self._shown["preview"] = state
        self.preview_yaml = state[0]
        shown, more = shown_part(self.preview_yaml, "`rlark draft render` of the exported draft prints it all")
        self.preview_step.show(Syntax(shown, "yaml", theme="ansi_dark", word_wrap=True),
                               manifest != result.manifest, self.findings, more)

    def _status(self, text: str) -> None:
        self.query_one("#wizard-status", Static).update(text)

    @property
    def preview_step(self) -> PreviewStep:
        """Step 4, mounted before anything shows or sends its manifest (only step 4's keys and buttons do)."""
        step = self.steps[4]
        assert isinstance(step, PreviewStep)
        return step

    # ---- navigation -----------------------------------------------------------------------------------
    async def _mounted(self, step: int) -> None:
        """Mount step `step` unless it is, showing the draft in it. One at a time: a load (a worker) and a key may
        both ask for the same step."""
        async with self._mounting:
            if step in self.steps:
                return
            widget = LATER_STEPS[step](id=f"step-{step}")
            await self.query_one("#wizard-steps", ContentSwitcher).add_content(widget)
            self.steps[step] = widget
            if isinstance(widget, FormStep):
                widget.fill(self.draft, self.role_index, role_fields=isinstance(widget, WorkerStep))

    async def _show_step(self) -> None:
        await self._mounted(self.step)
        self.query_one("#wizard-steps", ContentSwitcher).current = f"step-{self.step}"
        self.query_one("#wizard-keys", Static).update(wv.key_bar(self.step, self.state.readonly))
        self.update_header()
        self.refresh_bindings()
        self._recheck(save=False)
        if self.step == 4:
            self.preview_step.show_submit(self.state.readonly)

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

    async def action_next(self) -> None:
        if self.step >= 4:
            return
        blocking = self.blocking(self.step)
        if blocking:
            first = blocking[0]
            self._status(f"Next is blocked by {len(blocking)} error(s); first: {first.field}: {first.message}")
            await self.jump_to(first.field)
            return
        await self._go(self.step + 1)

    async def action_back(self) -> None:
        if self.step > 1:
            await self._go(self.step - 1)

    async def _go(self, step: int) -> None:
        self.step = step
        self._status("")
        await self._show_step()
        self._recheck()
        self._focus_first()

    def _focus_first(self) -> None:
        self.query_one(FIRST_FIELD[self.step]).focus()

    def focus_body(self) -> None:
        self._focus_first()

    async def jump_to(self, field: str) -> None:
        """Show the step and role of a finding's field and focus its widget."""
        place = wf.place_of(field)
        if place.step != self.step:
            self.step = place.step
            await self._show_step()
        if place.step == 2 and place.role is not None and place.role != self.role_index \
                and place.role < len(self.draft.roles):
            self.role_index = place.role
            self._show_role()
        self._recheck(save=False)
        key = f"role-name-{place.role}" if place.key == "role-name" else place.key
        targets = self.query("#add-role" if key == "roles" else f"#w-{key}")
        if targets:
            targets.first().focus()

    @on(OptionList.OptionSelected, "#w-findings")
    async def _finding_chosen(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ""
        chosen = ascii_int(option_id)
        if chosen is not None and chosen < len(self.findings):
            await self.jump_to(self.findings[chosen].field)

    def action_close(self) -> None:
        self.notify("Wizard closed; the draft is autosaved and offered when you press n again.", timeout=4)
        self.dismiss()

    # ---- dry run and submit ---------------------------------------------------------------------------
    def _manifest_to_send(self, what: str) -> dict | None:
        """The manifest Dry run or Submit sends, when it may go ahead: no error finding and a connected control
        plane (else None, and says why)."""
        result = self._recheck(save=False)
        errors = [f for f in self.findings if f.level == "error"]
        if errors:
            self._result(f"{what} blocked by {len(errors)} error(s); first: {errors[0].field}: {errors[0].message}",
                         error=True)
            return None
        source = self.state.index.snapshot.sources.get("control plane") if self.state.index else None
        if source is None or source.status != "connected":
            self._result(f"{what}: the control plane is not connected", error=True)
            return None
        return result.manifest

    def _result(self, text: str, error: bool = False) -> None:
        self.preview_step.show_result(text, error)
        self._status(text)

    def action_dry_run(self) -> None:
        if self.step != 4:
            return
        manifest = self._manifest_to_send("Dry run")
        if manifest is not None:
            self._result("Dry run: asking the server…")
            self.post_message(SendManifest(self, manifest, True, self.locked_name is not None))

    def action_submit(self) -> None:
        if self.step != 4:
            return
        if self.state.readonly:
            self._result("read-only mode: Submit refused (dry run is allowed)", error=True)
            self.notify("read-only mode: Submit refused", severity="error")
            return
        manifest = self._manifest_to_send("Submit")
        if manifest is not None:
            self._result("Submitting…")
            self.post_message(SendManifest(self, manifest, False, self.locked_name is not None))

    def on_manifest_sent(self, message: ManifestSent) -> None:
        """The platform's answer to Dry run or Submit (the app sent it through rlark_tui.flow.actions)."""
        dry_run, editing, result, manifest = message.dry_run, message.edit, message.result, message.manifest
        if message.error or result is None:
            self._result(f"{'Dry run' if dry_run else 'Submit'} refused: {message.error}", True)
            return
        name, sha, saved = manifest["metadata"]["name"], result.sha256, str(result.saved) if result.saved else ""
        if dry_run:
            changed = "nothing was changed" if editing else "nothing was created"
            self._result(f"Dry run: the server accepts Job {name} ({changed}).")
            return
        self.app.post_message(JobSubmitted(name))
        note = f" Submitted YAML saved to {saved}." if saved else ""
        done = "replaced and restarted" if editing else "created"
        self.app.notify(f"Job {name} {done} (spec sha256 {sha[:12]}…).{note} {RUNNING_HINT}", timeout=20)
        self.dismiss()

    # ---- scripts, import, export ----------------------------------------------------------------------
    def action_editor(self) -> None:
        area = self.focused
        if not isinstance(area, TextArea) or (area.id or "").removeprefix("w-") not in wf.SCRIPT_KEYS:
            self._status("f4 opens $EDITOR on the focused script, env or mounts box")
            return
        self.post_message(EditText(self, area.id or "", area.text, ".sh"))

    def on_text_edited(self, message: TextEdited) -> None:
        """What $EDITOR saved (the app handed it the terminal), back into its box."""
        if message.error or message.text is None:
            self._status(message.error)
            return
        text = message.text
        self.query_one(f"#{message.target}", TextArea).text = text[:-1] if text.endswith("\n") else text

    def action_import_draft(self) -> None:
        def import_from(path: str | None) -> None:
            if path:
                self.post_message(ImportDraft(self, path))

        self.app.push_screen(PathScreen("Import a draft (ctrl+o)", "A draft file in the `rlark draft render` "
                                        "format; it replaces the current draft.", self.last_path), import_from)

    @work(exclusive=True, group="wizard-import")
    async def on_draft_imported(self, message: DraftImported) -> None:
        """The draft file the app read: it replaces the current draft."""
        path, draft, findings = message.path, message.draft, message.findings
        if message.error or draft is None:
            self.notify(message.error, severity="error", timeout=8)
            return
        if not await self.load(draft, what=f"draft {path}"):
            return
        self.last_path = path
        self._recheck()
        problems = f"; {len(findings)} problem(s), first: {findings[0]}" if findings else ""
        self.notify(f"imported {path}{problems}", severity="warning" if findings else "information", timeout=8)

    def action_export_draft(self) -> None:
        def export_to(path: str | None) -> None:
            if path:
                self.post_message(ExportDraft(self, path, self.draft))

        self.app.push_screen(PathScreen("Export the draft (ctrl+s)", "Written with mode 0600; render it with "
                                        "`rlark draft render FILE --nodes NODES.yaml`.", self.last_path), export_to)

    def on_draft_exported(self, message: DraftExported) -> None:
        if message.error:
            self.notify(message.error, severity="error", timeout=8)
            return
        self.last_path = message.path
        self.notify(f"draft exported to {message.path}", timeout=4)
