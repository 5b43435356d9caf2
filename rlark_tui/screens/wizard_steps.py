"""The create-job wizard's four step widgets, built from the field table (rlark_tui.jobspec.wizard_fields):
one compact row per field (a label that truncates, the widget, the message below it), plus each step's own
parts: the role rows (step 1), the matched Nodes (step 2), the YAML preview and findings (step 4).

Widgets only: they show what the screen hands them and post the widgets' own Changed and Pressed messages.
"""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Label, OptionList, Select, Static, TextArea
from textual.widgets.option_list import Option

from rlark_tui.jobspec import wizard_fields as wf
from rlark_tui.jobspec.draft import JobDraft
from rlark_tui.jobspec.findings import Finding
from rlark_tui.jobspec.wizard_view import MATCH_COLUMNS, finding_option, match_view
from rlark_tui.text.sinks import cut, one_line


def field_widget(field: wf.Field) -> Widget:
    """The compact one-line (or short text box) widget of a field row, `#w-<key>`."""
    wid = f"w-{field.key}"
    if field.kind in ("script", "lines"):
        return TextArea(id=wid, classes=f"wizard-{field.kind}", soft_wrap=False, compact=True,
                        placeholder=field.placeholder)
    if field.kind == "select":
        static = field.choices(wf.WizardFacts(), JobDraft(), None) if not field.placeholder and field.choices else []
        if not field.placeholder:
            return Select([(Text(one_line(label)), choice) for label, choice in static], allow_blank=False,
                          value=static[0][1], id=wid, compact=True)
        return Select([], prompt=field.placeholder, id=wid, compact=True)
    return Input(placeholder=field.placeholder, type="integer" if field.kind == "count" else "text", id=wid,
                 compact=True)


def message_area(key: str) -> Static:
    """The messages and hints of field `key` (`#m-<key>`), shown below it when there are any."""
    return Static("", id=f"m-{key}", classes="wizard-msg", markup=False)


class FieldRow(Horizontal):
    """Label, then the field and its message area below it."""

    def __init__(self, label: str, *children: Widget, **kwargs) -> None:
        super().__init__(Label(label, classes="wizard-label", markup=False), Vertical(*children, classes="wizard-cell"),
                         classes="wizard-field", **kwargs)


class FormStep(VerticalScroll):
    """One step of the form: a row per field of the table with `STEP`, and the step's own blocks `before` or
    `after` named rows. Shows only what changed since it last showed it."""

    STEP = 0

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._shown: dict[str, object] = {}

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Keep the focused field's whole row in view, the messages below its widget included."""
        row = next((n for n in event.widget.ancestors_with_self if isinstance(n, FieldRow)), None)
        if row is not None:
            self.scroll_to_widget(row, animate=False)

    def show_once(self, key: str, state, show) -> None:
        """Call `show(state)` unless `state` is what was shown under `key` last time."""
        if self._shown.get(key) != state:
            self._shown[key] = state
            show(state)

    def show(self, draft: JobDraft, role_index: int, facts: wf.WizardFacts,
             messages: dict[str, tuple[str, str]]) -> None:
        """The options and choice of every select, and the messages beside every field ((text, level) by key)."""
        role = wf.role_at(draft, role_index)
        for field in wf.step_fields(self.STEP):
            if field.kind == "select":
                select = self.query_one(f"#w-{field.key}", Select)
                value = role_index if field.key == "role-pick" else field.read(draft, role)
                self.show_once(field.key, (wf.choices_of(field, facts, draft, role_index), value),
                               lambda state, select=select, field=field: set_choices(
                                   select, state[0], state[1], prompt=field.placeholder))
        for widget in self.query(".wizard-msg"):
            key = (widget.id or "").removeprefix("m-")
            self.show_once(widget.id or "", messages.get(key, ("", "")), lambda state, widget=widget: show_message(widget, *state))

    def compose(self) -> ComposeResult:
        for field in wf.step_fields(self.STEP):
            yield from self.before(field.key)
            if field.heading:
                yield Static(field.heading, classes="wizard-heading", markup=False)
            yield FieldRow(field.label, field_widget(field), message_area(field.key))
            yield from self.after(field.key)

    def before(self, key: str) -> ComposeResult:
        yield from ()

    def after(self, key: str) -> ComposeResult:
        yield from ()

    def fill(self, draft: JobDraft, role_index: int, *, role_fields: bool) -> None:
        """Show the draft's values (the role fields from role `role_index` only when `role_fields`)."""
        role = wf.role_at(draft, role_index)
        for field in wf.step_fields(self.STEP):
            if field.into or field.kind == "select" or field.role != role_fields:
                continue
            if not field.role or role is not None:
                set_text(self.query_one(f"#w-{field.key}"), field.read(draft, role))


    def refill(self, draft: JobDraft, role_index: int, names: tuple[str, ...]) -> None:
        """Show the draft's values again in the widgets of fields `names` (a change rewrote them)."""
        role = wf.role_at(draft, role_index)
        for name in names:
            set_text(self.query_one(f"#w-{name}"), wf.BY_KEY[name].read(draft, role) or "")


def set_text(widget: Widget, text: str) -> None:
    """Put `text` into an input or text box unless it already holds it (a change is posted as if typed)."""
    if isinstance(widget, TextArea):
        if widget.text != text:
            widget.text = text
    elif isinstance(widget, Input) and widget.value != text:
        widget.value = text


def show_message(widget: Static, text: str, level: str) -> None:
    widget.update(text)
    widget.set_classes(f"wizard-msg -{level}" if level else "wizard-msg")
    widget.display = bool(text)


CHOICES_SHOWN = 200
"""The most options a select lists (the first ones, and the one chosen): the cluster names the choices (a GPU model
per Node's annotation, a Node per `Pick a Node`, a label per Node), and 10,000 of them were laid out at each change
of the role. The select's blank line (`prompt`) then says how many there are."""


def set_choices(select: Select, options: list, value, prompt: str = "") -> None:
    """New options for a select, the first CHOICES_SHOWN and `value`'s, keeping `value` chosen when it is one of
    them; with more, the blank line says how many (`prompt`, the field's placeholder, then the count). A label
    quotes the draft, the gateway (an SSH key's comment) or the cluster: plain text on its one line (a str prompt is
    markup)."""
    shown = options[:CHOICES_SHOWN]
    chosen = value is not None and value in [v for _, v in options]
    if chosen and value not in [v for _, v in shown]:
        shown.append(next(option for option in options if option[1] == value))
    select.set_options([(Text(one_line(cut(label))), choice) for label, choice in shown])
    if prompt:
        select.prompt = prompt if len(options) <= CHOICES_SHOWN else \
            f"{prompt} · the first {CHOICES_SHOWN} of {len(options):,} shown"
    if chosen:
        select.value = value


def select_value(select: Select):
    value = select.value
    return None if value is Select.NULL or value is Select.BLANK else value


class JobStep(FormStep):
    """Step 1: name, type, the roles (one row each: name, derived task, Remove) and the Header role."""

    STEP = 1

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._rows_lock = asyncio.Lock()

    def before(self, key: str) -> ComposeResult:
        if key == "header":
            yield Static("Roles (one role = one task; the task name is derived from the role name)",
                         classes="wizard-heading", markup=False)
            yield Vertical(id="w-roles")
            yield FieldRow("", Button("Add role", id="add-role", compact=True), message_area("roles"))

    async def show_roles(self, draft: JobDraft) -> None:
        """The role rows: one per role, the missing ones added at the end and the extra ones removed there (the
        rows before stay, so a change handled while rows mount finds them), then refilled in place. One rebuild
        at a time: an import (a worker) and a change of type may both ask."""
        async with self._rows_lock:
            container = self.query_one("#w-roles", Vertical)
            rows = list(container.children)
            if len(rows) > len(draft.roles):
                gone = {f"m-role-name-{index}" for index in range(len(draft.roles), len(rows))}
                self._shown = {k: v for k, v in self._shown.items() if k not in gone}
                await container.remove_children(rows[len(draft.roles):])
            elif len(rows) < len(draft.roles):
                await container.mount_all([role_row(index) for index in range(len(rows), len(draft.roles))])
            for row, role in zip(container.children, draft.roles, strict=False):
                set_text(row.query_one(Input), role.name)
            self.show_tasks(draft)

    def show_tasks(self, draft: JobDraft, only: int | None = None) -> None:
        """Each role's derived task name (`only`: that role's, the one renamed), in the rows mounted so far
        (`show_roles` ends with this call, so rows still mounting get theirs then). Each row is found by its place,
        never by a query of the step: a query per role, at each role's rename, made a draft of 120 roles four
        minutes of the UI thread to open."""
        rows = self.query_one("#w-roles", Vertical).children
        for index, (row, role) in enumerate(zip(rows, draft.roles, strict=False)):
            if only is None or index == only:
                for label in row.query(f"#task-{index}").results(Static):
                    label.update(wf.task_label(role))


def role_row(index: int) -> Vertical:
    """Role `index`'s row: its name, the task derived from it, Remove and the row's message area."""
    return Vertical(
        Horizontal(Input(placeholder="role name", id=f"w-role-name-{index}", classes="wizard-role-name", compact=True),
                   Static("", id=f"task-{index}", classes="wizard-task", markup=False),
                   Button("Remove", id=f"remove-role-{index}", classes="wizard-remove", compact=True),
                   classes="wizard-role-line"),
        message_area(f"role-name-{index}"), classes="wizard-role-row")


class WorkerStep(FormStep):
    """Step 2: the fields of one role (picked at the top) and the Nodes its selector matches."""

    STEP = 2

    def after(self, key: str) -> ComposeResult:
        if key == "label-pick":
            yield Static("", id="w-match-summary", markup=False)
            yield DataTable(id="w-matches", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#w-matches", DataTable).add_columns(*MATCH_COLUMNS)

    def show(self, draft: JobDraft, role_index: int, facts: wf.WizardFacts,
             messages: dict[str, tuple[str, str]]) -> None:
        super().show(draft, role_index, facts, messages)
        role = wf.role_at(draft, role_index)
        self.set_class(role is None, "-no-roles")
        self.show_once("placed", role is not None and role.placed, self.show_placement_rows)
        self.show_once("matches", match_view(draft, role_index, facts), lambda view: self.show_matches(*view))

    def show_placement_rows(self, placed: bool) -> None:
        """The worker count and the picked Nodes only once the role is placed by hardware."""
        for key in wf.PLACEMENT_ROWS:
            for row in self.query_one(f"#w-{key}").ancestors:
                if isinstance(row, FieldRow):
                    row.display = placed
                    break

    def show_matches(self, summary: str, rows: list[tuple[str, ...]]) -> None:
        self.query_one("#w-match-summary", Static).update(summary)
        table = self.query_one("#w-matches", DataTable)
        table.clear()
        table.add_rows([tuple(Text(one_line(cut(cell))) for cell in row) for row in rows])  # names from the cluster
        table.display = bool(rows)


class CommonStep(FormStep):
    """Step 3: the Header role again, network domain, SSH key, run script, TensorBoard and the launch record."""

    STEP = 3


class PreviewStep(Vertical):
    """Step 4: the YAML to submit, the findings (Enter jumps to a field), Dry run and Submit."""

    def compose(self) -> ComposeResult:
        yield Static("", id="w-yaml-title", markup=False)
        with VerticalScroll(id="w-yaml-scroll"):
            yield Static("", id="w-yaml", markup=False)
        yield OptionList(id="w-findings", compact=True)
        yield Horizontal(Button("Dry run (ctrl+t)", id="dry-run", compact=True),
                         Button("Submit (ctrl+g)", id="submit", variant="success", compact=True),
                         Static("", id="w-result", markup=False), id="w-actions")

    def show(self, yaml_view, masked: bool, findings: list[Finding], more: str = "") -> None:
        self.query_one("#w-yaml", Static).update(yaml_view)
        errors = sum(f.level == "error" for f in findings)
        note = " Secret-looking values are masked here." if masked else ""
        self.query_one("#w-yaml-title", Static).update(
            f"The Job YAML to submit (submitted-spec annotations are added at submit).{note} "
            f"{errors} error(s), {len(findings) - errors} warning(s); Enter on a finding jumps to its field."
            + (f" {more}" if more else ""))
        options = self.query_one("#w-findings", OptionList)
        options.clear_options()
        options.add_options([Option(Text(one_line(finding_option(f))), id=str(i)) for i, f in enumerate(findings)]
                            or [Option("no findings: ready to submit", id="none", disabled=True)])

    def show_submit(self, readonly: bool) -> None:
        button = self.query_one("#submit", Button)
        button.label = "Submit refused: read-only" if readonly else "Submit (ctrl+g)"
        button.disabled = readonly

    def show_result(self, text: str, error: bool) -> None:
        widget = self.query_one("#w-result", Static)
        widget.update(text)
        widget.set_class(error, "-error")
