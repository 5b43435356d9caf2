"""CheckScreen: the live run-check report of one Job — six rows, their evidence, and the hand-over fields.

Evidence and its report come from the reconciler (a subscription to the Job's run-check evidence, re-gathered and
judged in the topic's worker every few seconds): the screen only adds the hand-over fields typed here and renders;
Enter on an evidence item jumps to its log or Pod.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.coordinate import Coordinate
from textual.widgets import Checkbox, DataTable, Input, OptionList, Select, Static
from textual.widgets.option_list import Option

from rlark_tui.checks import CheckReport, EvidenceItem, HandOver, RunEvidence, with_hand_over
from rlark_tui.checks.render import RESULT_WORDS
from rlark_tui.checks.report import Decision, HandOverKey
from rlark_tui.flow.messages import (
    HandOverLoaded,
    HandOverSaveFailed,
    LoadHandOver,
    OpenJob,
    OpenLogs,
    RecordSaved,
    SaveHandOver,
    SaveRecord,
)
from rlark_tui.flow.polls import EVIDENCE, Gathered
from rlark_tui.local.resources import stylesheet
from rlark_tui.model.logtarget import Scope
from rlark_tui.model.objects import Job, Pod
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.text.sanitize import clean
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import SnapshotIndex

DECISIONS: tuple[tuple[str, Decision], ...] = (
    ("continue running", "continue"), ("stop (after outputs persist)", "stop"), ("keep for debugging", "keep"))


def row_cells(report: CheckReport) -> list[tuple[str, ...]]:
    """The table: id, title, result, checked at, where the evidence is, first reason or note."""
    cells: list[tuple[str, ...]] = []
    for row in report.rows:
        where = row.evidence[0].location() if row.evidence else ""
        if len(row.evidence) > 1:
            where += f" (+{len(row.evidence) - 1})"
        notes = row.all_notes()
        cells.append((str(row.id), row.title, RESULT_WORDS["en"][row.result].upper(),
                      row.checked_at.strftime("%H:%M:%S"), where, notes[0] if notes else ""))
    return cells


def summary_line(job: str, report: CheckReport | None, error: str = "") -> str:
    job, error = one_line(job), one_line(error)  # the control plane's name and an error quoting cluster text
    if report is None:
        return f"Run check of {job}: gathering evidence…" + (f"  ({error})" if error else "")
    counts = {word: sum(1 for row in report.rows if row.result == word) for word in ("pass", "fail", "pending")}
    stage = report.earliest_failing_stage
    text = (f"Run check of {job} at {report.checked_at:%H:%M:%S} — {counts['pass']} pass, {counts['fail']} fail, "
            f"{counts['pending']} pending" + (f" · earliest failing stage: {stage}" if stage else ""))
    return text + (f"  (last refresh failed: {error})" if error else "")


def _cell(text: str) -> Text:
    """A table cell or evidence option: evidence quotes log lines and Job fields, so never markup, no escapes."""
    return Text(clean(text))


class CheckScreen(RlarkScreen):
    """`c` on a Job: the six checks, re-evaluated live; ctrl+s saves the record under the state dir and writes its
    summary to the Job (annotation rlark.io/check-summary, refused in read-only mode)."""

    CSS_PATH = stylesheet("check.tcss")
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("ctrl+r", "recheck", "Re-check"),
        Binding("ctrl+s", "save", "Save record"),
    ]

    def __init__(self, job_name: str, records_dir: Path | None = None) -> None:
        super().__init__()
        self.job_name = job_name
        self.crumb = f"Jobs › {job_name} › run check"
        self.records_dir = records_dir
        self.evidence: RunEvidence | None = None
        self.gathered: Gathered | None = None
        self.report: CheckReport | None = None
        self.hand_over = HandOver()
        self.kept_for: HandOverKey | None = None
        """The Job whose hand-over fields are kept (known from the first evidence that holds the Job)."""
        self.error = ""
        self._keep_failed = False

    def compose_body(self) -> ComposeResult:
        yield Static(summary_line(self.job_name, None), id="check-summary", markup=False)
        table: DataTable[Text] = DataTable(id="check-rows", cursor_type="row", zebra_stripes=True)
        table.add_columns("#", "Check", "Result", "Checked", "Evidence", "Why / notes")
        yield table
        yield Static("", id="check-detail", markup=False)
        yield OptionList(id="check-evidence")
        with Horizontal(id="check-hand-over"):
            yield Input(placeholder="recorder", id="check-recorder")
            yield Input(placeholder="contacts (comma-separated)", id="check-contacts")
            yield Select(DECISIONS, prompt="decision", id="check-decision")
            yield Input(placeholder="notes", id="check-notes")
        with Horizontal(id="check-hand-over-2"):
            yield Input(placeholder="retention (where outputs/logs are kept, how long)", id="check-retention")
            yield Input(placeholder="links (comma-separated)", id="check-links")
            yield Checkbox("temporary access and secrets cleaned up", id="check-cleaned-up")

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#check-rows", DataTable)

    def focus_body(self) -> None:
        self.table.focus()

    def on_mount(self) -> None:
        super().on_mount()
        self.table.focus()
        self.intents.subscribe(EVIDENCE, self.job_name)
        if not self.state.connected:
            self.error = "not connected to a cluster: nothing to check"
            self.query_one("#check-summary", Static).update(summary_line(self.job_name, None, self.error))

    def on_unmount(self) -> None:
        super().on_unmount()
        self.intents.unsubscribe(EVIDENCE, self.job_name)

    # ---- evidence ---------------------------------------------------------------------------------
    def show_snapshot(self, index: SnapshotIndex) -> None:
        """The report the evidence topic evaluated (in its worker), with the hand-over fields typed here."""
        self.update_header()
        gathered = index.evidence_of(self.job_name)
        if gathered is self.gathered or not isinstance(gathered, Gathered):
            return
        previous, self.gathered = self.gathered, gathered
        self.error = gathered.error
        self.evidence = gathered.evidence
        self._keep_for(gathered.evidence)
        if gathered.report is not None and (previous is None or gathered.report is not previous.report):
            report = gathered.report
            recorder = self.hand_over.recorder or report.hand_over.recorder  # the launch record's, unless typed
            self.report = with_hand_over(report, replace(self.hand_over, recorder=recorder))
            self._show_report()
        self.query_one("#check-summary", Static).update(summary_line(self.job_name, self.report, self.error))

    def _keep_for(self, evidence: RunEvidence | None) -> None:
        """The evidence's Job names whose hand-over fields these are (its context, name and uid): at the first,
        those kept for that Job are loaded, or what was typed before is kept for it. A Job deleted and made again
        under this name while the screen is open, or the Job of this name another context focused since, is another
        Job: what was typed stays kept for the one before, and the new one's fields are shown."""
        if evidence is None or evidence.job is None:
            return
        key = HandOverKey(self.state.context, self.job_name, Job(evidence.job).uid)
        if key == self.kept_for:
            return
        if self.kept_for is not None:
            self._clear_hand_over()
            self.notify(f"{self.job_name} is another Job now (made again, or another context's): the hand-over "
                        "fields shown are its own", severity="warning", timeout=10)
        self.kept_for = key
        if self.hand_over == HandOver():
            self.post_message(LoadHandOver(self, self._records_root(), self.kept_for))
        else:
            self.post_message(SaveHandOver(self, self._records_root(), self.kept_for, self.hand_over))

    def _records_root(self) -> str:
        """Where records and kept hand-over fields go ("": the state dir, which the app resolves)."""
        return str(self.records_dir) if self.records_dir else ""

    def action_recheck(self) -> None:
        self.intents.poll_now(EVIDENCE, self.job_name)

    def _show_report(self) -> None:
        if self.report is None:
            return
        self.query_one("#check-summary", Static).update(clean(summary_line(self.job_name, self.report)))
        table = self.table
        for index, cells in enumerate(row_cells(self.report)):
            if index >= table.row_count:
                table.add_row(*map(_cell, cells), key=cells[0])
                continue
            for column, value in enumerate(cells):
                if str(table.get_cell_at(Coordinate(index, column))) != value:
                    table.update_cell_at(Coordinate(index, column), _cell(value))
        self._show_row(table.cursor_row)

    # ---- rows and evidence ------------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#check-rows")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_row(event.cursor_row)

    @on(DataTable.RowSelected, "#check-rows")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self._show_row(event.cursor_row)
        evidence = self.query_one("#check-evidence", OptionList)
        if evidence.option_count:
            evidence.highlighted = 0
            evidence.focus()

    def _show_row(self, index: int) -> None:
        if self.report is None or not 0 <= index < 6:
            return
        row = self.report.rows[index]
        self.query_one("#check-detail", Static).update(clean(
            f"{row.id}. {row.title}: {row.result.upper()}\n" + "\n".join(f"• {n}" for n in row.all_notes())))
        options = self.query_one("#check-evidence", OptionList)
        labels = [one_line(_item_label(item)) for item in row.evidence]
        if labels == [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]:
            return
        highlighted = options.highlighted
        options.clear_options()
        options.add_options([Option(Text(label), id=str(i)) for i, label in enumerate(labels)])
        if highlighted is not None and labels:
            options.highlighted = min(highlighted, len(labels) - 1)

    @on(OptionList.OptionSelected, "#check-evidence")
    def _jump(self, event: OptionList.OptionSelected) -> None:
        if self.report is None or event.option.id is None:
            return
        row = self.report.rows[self.table.cursor_row]
        self.jump_to(row.evidence[int(event.option.id)])

    def jump_to(self, item: EvidenceItem) -> None:
        """Open what an evidence item points at: a Pod's log, the Job's Workers / YAML / Ray tab, a row."""
        app = self.app
        if item.kind == "log":
            self.post_message(OpenLogs(self.job_name, self._pod_scope(item.ref)))
            app.notify(f"{item.ref} line {item.line}: {item.value}", timeout=8)
        elif item.kind in ("object", "event"):
            tab = "yaml" if item.ref.startswith("Job/") else "workers"
            self.post_message(OpenJob(self.job_name, tab))
        elif item.kind == "ray":
            self.post_message(OpenJob(self.job_name, "ray"))
        elif item.kind == "check":
            self.table.move_cursor(row=int(item.ref.split("/")[1]) - 1)
            self.table.focus()
        else:
            app.notify(_item_label(item), timeout=8)

    def _pod_scope(self, pod_name: str) -> Scope:
        for pod in (Pod(raw) for raw in (self.evidence.pods if self.evidence else ())):
            if pod_name in (pod.pod_name, pod.name):
                return Scope.pod(f"{pod.namespace}/{pod.name}")
        return Scope.HEADER

    # ---- hand-over fields -------------------------------------------------------------------------
    def _clear_hand_over(self) -> None:
        """Empty fields, without keeping them (they are no Job's typing)."""
        with self.prevent(Input.Changed, Select.Changed, Checkbox.Changed):
            for name in ("recorder", "contacts", "notes", "retention", "links"):
                self.query_one(f"#check-{name}", Input).value = ""
            self.query_one("#check-cleaned-up", Checkbox).value = False
            self.query_one("#check-decision", Select).clear()
        self.hand_over = HandOver()

    def on_hand_over_loaded(self, message: HandOverLoaded) -> None:
        """What was typed last time for this Job (kept at every keystroke until a record is saved); not over what
        was typed since the screen opened, nor for a Job made again since it was asked for."""
        kept = message.hand_over
        if message.key != self.kept_for or self.hand_over != HandOver() or kept == HandOver():
            return
        self.query_one("#check-recorder", Input).value = kept.recorder or ""
        self.query_one("#check-contacts", Input).value = ", ".join(kept.contacts)
        self.query_one("#check-notes", Input).value = kept.notes or ""
        self.query_one("#check-retention", Input).value = kept.retention or ""
        self.query_one("#check-links", Input).value = ", ".join(kept.links)
        self.query_one("#check-cleaned-up", Checkbox).value = kept.cleaned_up
        if kept.decision:
            self.query_one("#check-decision", Select).value = kept.decision
        self.hand_over = kept
        if message.name_only:
            self.notify(f"hand-over fields an earlier rlark kept under the name {self.job_name} alone are shown here: "
                        "check they are this Job's", severity="warning", timeout=10)

    @on(Input.Changed, "#check-recorder, #check-contacts, #check-notes, #check-retention, #check-links")
    @on(Select.Changed, "#check-decision")
    @on(Checkbox.Changed, "#check-cleaned-up")
    def _hand_over_changed(self) -> None:
        def field(name: str) -> str | None:
            return self.query_one(f"#check-{name}", Input).value.strip() or None

        def items(name: str) -> tuple[str, ...]:
            return tuple(c.strip() for c in (field(name) or "").split(",") if c.strip())

        chosen = self.query_one("#check-decision", Select).value
        self.hand_over = HandOver(
            recorder=field("recorder"), contacts=items("contacts"),
            decision=next((decision for _, decision in DECISIONS if decision == chosen), None), notes=field("notes"),
            retention=field("retention"), links=items("links"),
            cleaned_up=self.query_one("#check-cleaned-up", Checkbox).value)
        if self.report is not None:
            self.report = with_hand_over(self.report, self.hand_over)
            self._show_report()
        if self.kept_for is not None:
            self.post_message(SaveHandOver(self, self._records_root(), self.kept_for, self.hand_over))

    def on_hand_over_save_failed(self, message: HandOverSaveFailed) -> None:
        if not self._keep_failed:
            self.notify(message.error, severity="warning")
        self._keep_failed = True

    def action_save(self) -> None:
        if self.report is None:
            self.notify("nothing to save yet: no evidence gathered", severity="warning")
            return
        self.post_message(SaveRecord(self, self._records_root(), self.job_name, self.report, self.kept_for))

    def on_record_saved(self, message: RecordSaved) -> None:
        if message.error:
            self.notify(message.error, severity="error")
            return
        self.notify(f"record saved: {message.path}")
        if message.annotated:
            self.notify(message.annotated, severity="warning" if message.annotate_error else "information")

    def action_back(self) -> None:
        self.app.pop_screen()


def _item_label(item: EvidenceItem) -> str:
    if item.kind == "file":
        return f"file {item.ref} ({item.size} bytes, sha256 {(item.sha256 or '?')[:12]}…)"
    text = f"{item.location()} = {item.value}"
    return text + (f"  (expected {item.expected})" if item.expected is not None else "")
