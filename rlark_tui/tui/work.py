"""The app's workers for what screens ask of the platform, the disk and $EDITOR: submit and dry run (through
rlark_tui.flow.actions), the wizard's autosave, draft import and export, run-check records and hand-over fields (and a
saved check's summary on the Job, through rlark_tui.flow.actions), log saves, the alert counts and acknowledgements,
a Job's stacks and its checkpoints, and handing the terminal to $EDITOR. A screen posts the intent (a `messages.Work`)
and handles the result message the app posts back to it; no screen writes a file, runs a process or submits
(docs/architecture.md). Blocking work runs in `@work(thread=True, exclusive=True, group=...)` workers, as
harlequin's app does. RlarkApp mixes it in."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from textual import work

from rlark_tui.errors import RlarkError
from rlark_tui.flow import messages
from rlark_tui.tui.host import AppHost

if TYPE_CHECKING:
    from rlark_tui.alerting.rules import Alert

_Kept = TypeVar("_Kept")


def _records(root: str) -> Path:
    """A run check's records folder: `root`, or the state dir."""
    if root:
        return Path(root)
    from rlark_tui.local.config import state_dir
    return state_dir()


class AppWork(AppHost):
    """Methods of RlarkApp (self is the app)."""

    def _init_work(self) -> None:
        self._kept_lock = threading.Lock()
        """One kept-file write at a time (autosave, hand-over fields, a record that clears them)."""
        self._kept_latest: dict[Hashable, object] = {}
        """The newest value asked for under each key (`_asked`)."""

    def _asked(self, key: Hashable, value: object) -> None:
        """Note the newest value asked for under `key` (on the app's thread, in message order)."""
        self._kept_latest[key] = value

    def _write_newest(self, key: Hashable, value: _Kept, write: Callable[[_Kept], None]) -> None:
        """For files rewritten at every keystroke (autosave, hand-over fields): `write` the value only while it is
        still the newest asked for, one write at a time, so a worker that started late never puts back an older
        value."""
        with self._kept_lock:
            if self._kept_latest.get(key) is value:
                write(value)

    # ---- submit ------------------------------------------------------------------------------------
    def on_send_manifest(self, message: messages.SendManifest) -> None:
        self._send_manifest(message)

    @work(thread=True, exclusive=True, group="submit", exit_on_error=False)
    def _send_manifest(self, message: messages.SendManifest) -> None:
        send = self.actions.edit_restart if message.edit else self.actions.submit
        try:
            result = send(message.manifest, message.dry_run)
        except RlarkError as exc:
            reply = messages.ManifestSent(message.manifest, message.dry_run, message.edit, error=str(exc))
        else:
            if not message.dry_run:
                from rlark_tui.local.draft_files import DraftStore
                DraftStore().clear()  # a submitted draft is no longer offered
            reply = messages.ManifestSent(message.manifest, message.dry_run, message.edit, result)
        message.requester.post_message(reply)

    # ---- drafts ------------------------------------------------------------------------------------
    def on_load_autosave(self, message: messages.LoadAutosave) -> None:
        self._load_autosave(message)

    @work(thread=True, exclusive=True, group="autosave-load", exit_on_error=False)
    def _load_autosave(self, message: messages.LoadAutosave) -> None:
        from rlark_tui.local.draft_files import DraftStore
        try:
            reply = messages.AutosaveLoaded(DraftStore().load())
        except RlarkError as exc:
            reply = messages.AutosaveLoaded(error=str(exc))
        message.requester.post_message(reply)

    def on_autosave_draft(self, message: messages.AutosaveDraft) -> None:
        self._asked("autosave", message)
        self._autosave(message)

    @work(thread=True, exclusive=True, group="autosave", exit_on_error=False)
    def _autosave(self, message: messages.AutosaveDraft) -> None:
        from rlark_tui.local.draft_files import DraftStore
        try:
            self._write_newest("autosave", message, lambda kept: DraftStore().save(kept.draft, kept.step))
        except OSError as exc:
            message.requester.post_message(messages.AutosaveFailed(f"autosave failed: {exc.strerror or exc}"))

    def on_import_draft(self, message: messages.ImportDraft) -> None:
        self._import_draft(message)

    @work(thread=True, exclusive=True, group="draft-file", exit_on_error=False)
    def _import_draft(self, message: messages.ImportDraft) -> None:
        from rlark_tui.local.draft_files import import_draft
        try:
            draft, findings = import_draft(Path(message.path).expanduser())
        except RlarkError as exc:
            reply = messages.DraftImported(message.path, error=str(exc))
        else:
            reply = messages.DraftImported(message.path, draft, tuple(findings))
        message.requester.post_message(reply)

    def on_export_draft(self, message: messages.ExportDraft) -> None:
        self._export_draft(message)

    @work(thread=True, exclusive=True, group="draft-file", exit_on_error=False)
    def _export_draft(self, message: messages.ExportDraft) -> None:
        from rlark_tui.local.draft_files import export_draft
        try:
            export_draft(Path(message.path).expanduser(), message.draft)
        except RlarkError as exc:
            message.requester.post_message(messages.DraftExported(message.path, str(exc)))
            return
        message.requester.post_message(messages.DraftExported(message.path))

    # ---- $EDITOR -----------------------------------------------------------------------------------
    def on_edit_text(self, message: messages.EditText) -> None:
        """The terminal goes to $EDITOR until it exits (the app is suspended meanwhile, so this runs on the app's
        own thread, not a worker's)."""
        from textual.app import SuspendNotSupported

        from rlark_tui.local.editor import edit_text, editor_command
        try:
            with self.suspend():
                reply = messages.TextEdited(message.target, edit_text(message.text, editor_command(),
                                                                      suffix=message.suffix))
        except SuspendNotSupported:
            reply = messages.TextEdited(message.target,
                                        error="this terminal cannot hand over to $EDITOR; edit the script inline")
        except RlarkError as exc:
            reply = messages.TextEdited(message.target, error=str(exc))
        message.requester.post_message(reply)

    # ---- alert state ------------------------------------------------------------------------------
    def write_alert_summary(self, counts: dict[str, int], firing: Sequence[tuple[str, Alert]]) -> None:
        """The firing alerts and their counts for `rlark status` (local/acks.py), written on a worker: newest
        first."""
        asked = (counts, firing)
        self._asked("alert-summary", asked)
        self._write_alert_summary(asked)

    @work(thread=True, exclusive=True, group="alert-summary", exit_on_error=False)
    def _write_alert_summary(self, asked: tuple[dict[str, int], Sequence[tuple[str, Alert]]]) -> None:
        from rlark_tui.local.acks import write_summary
        from rlark_tui.local.config import state_dir
        try:
            self._write_newest("alert-summary", asked, lambda kept: write_summary(state_dir(), *kept))
        except OSError:
            pass  # `rlark status` then shows the last counts written; the next change writes again

    def on_acknowledge_alert(self, message: messages.AcknowledgeAlert) -> None:
        self._acknowledge(message)

    @work(thread=True, group="acks", exit_on_error=False)
    def _acknowledge(self, message: messages.AcknowledgeAlert) -> None:
        from rlark_tui.local.config import state_dir
        try:
            self.ack_file.acknowledge(state_dir(), *message.keys)
        except OSError as exc:
            self.post_message(messages.AlertsAcknowledged(str(exc)))
            return
        self.post_message(messages.AlertsAcknowledged())

    # ---- logs --------------------------------------------------------------------------------------
    def on_save_log(self, message: messages.SaveLog) -> None:
        self._save_log(message)

    @work(thread=True, exclusive=True, group="log-save", exit_on_error=False)
    def _save_log(self, message: messages.SaveLog) -> None:
        from rlark_tui.errors import RlarkError
        from rlark_tui.local.fsutil import in_working_dir, write_named
        from rlark_tui.text.redact import redact_text
        lines = message.lines
        path = in_working_dir(message.path)
        try:
            write_named(path, redact_text("\n".join(lines)) + "\n" if lines else "")
        except (OSError, RlarkError) as exc:
            message.requester.post_message(messages.LogSaved(str(path), len(lines),
                                                             f"Cannot save the log: {getattr(exc, 'strerror', None) or exc}"))
            return
        message.requester.post_message(messages.LogSaved(str(path), len(lines)))

    # ---- stacks ------------------------------------------------------------------------------------
    def on_take_stacks(self, message: messages.TakeStacks) -> None:
        self._take_stacks(message)

    @work(thread=True, exclusive=True, group="stacks", exit_on_error=False)
    def _take_stacks(self, message: messages.TakeStacks) -> None:
        """The Job's stacks (raydash.stacks.take: each dump under its own time bound), or why not in one line; a take
        that a newer one replaced (`r` again) answers nothing."""
        from textual.worker import get_current_worker

        from rlark_tui.raydash.stacks import take
        from rlark_tui.text.redact import redact_text
        from rlark_tui.text.sanitize import clean

        access = self.access
        if access is None:
            reply = messages.StacksTaken(message.job, error="stacks: not connected to a cluster")
        else:
            try:
                reply = messages.StacksTaken(message.job, take(access, access.job(message.job)))
            except RlarkError as exc:
                line = " ".join(clean(redact_text(str(exc))).split()) or type(exc).__name__
                reply = messages.StacksTaken(message.job, error=line if line.startswith("stacks: ")
                                             else f"stacks: {line}")
        if not get_current_worker().is_cancelled:
            message.requester.post_message(reply)

    # ---- the Job detail's YAML tab ------------------------------------------------------------------
    def on_render_yaml(self, message: messages.RenderYaml) -> None:
        self._render_yaml(message)

    @work(thread=True, exclusive=True, group="yaml", exit_on_error=False)
    def _render_yaml(self, message: messages.RenderYaml) -> None:
        """The Job's YAML (view/yamltab) and its shown part highlighted: a Job's author sets how long it is, so
        neither is made on the UI thread; a version a newer one replaced answers nothing."""
        from textual.content import Content
        from textual.highlight import highlight
        from textual.worker import get_current_worker

        from rlark_tui.view.yamltab import job_yaml, shown_part

        text = job_yaml(message.raw, message.related)
        head, rest = shown_part(text)
        shown = highlight(head, language="yaml")
        if rest:
            shown = shown + Content("\n" + rest)
        if not get_current_worker().is_cancelled:
            message.requester.post_message(messages.YamlRendered(message.job, message.version, text, shown))

    # ---- run-check records -------------------------------------------------------------------------
    def on_load_hand_over(self, message: messages.LoadHandOver) -> None:
        self._load_hand_over(message)

    @work(thread=True, exclusive=True, group="hand-over-load", exit_on_error=False)
    def _load_hand_over(self, message: messages.LoadHandOver) -> None:
        from rlark_tui.checks.records import load_hand_over
        with self._kept_lock:  # a load may move fields kept under the name alone: never over a newer save
            kept, name_only = load_hand_over(_records(message.root), message.key)
        message.requester.post_message(messages.HandOverLoaded(message.key, kept, name_only))

    def on_save_hand_over(self, message: messages.SaveHandOver) -> None:
        self._asked(("hand-over", message.root, message.key), message)
        self._save_hand_over(message)

    @work(thread=True, exclusive=True, group="hand-over", exit_on_error=False)
    def _save_hand_over(self, message: messages.SaveHandOver) -> None:
        from rlark_tui.checks.records import save_hand_over
        try:
            self._write_newest(("hand-over", message.root, message.key), message,
                               lambda kept: save_hand_over(_records(kept.root), kept.key, kept.hand_over))
        except RlarkError as exc:
            message.requester.post_message(messages.HandOverSaveFailed(str(exc)))

    def on_save_record(self, message: messages.SaveRecord) -> None:
        if message.kept is not None:
            self._asked(("hand-over", message.root, message.kept), message)  # no kept-fields write after this
        self._save_record(message)

    @work(thread=True, exclusive=True, group="record", exit_on_error=False)
    def _save_record(self, message: messages.SaveRecord) -> None:
        from rlark_tui.checks.records import clear_hand_over, save_record
        root = _records(message.root)
        with self._kept_lock:
            try:
                path = save_record(root, message.report)
            except RlarkError as exc:
                message.requester.post_message(messages.RecordSaved(error=str(exc)))
                return
            if message.kept is not None:
                clear_hand_over(root, message.kept)
        from rlark_tui.model.check_summary import summary_of
        try:
            if self.access is None:
                raise RlarkError("not connected to a cluster")
            annotated, failed = self.actions.annotate_check(message.job, summary_of(message.report)), False
        except RlarkError as exc:
            annotated, failed = f"the summary was not written to the Job: {exc}", True
        message.requester.post_message(messages.RecordSaved(str(path), annotated=annotated, annotate_error=failed))

    def on_load_records(self, message: messages.LoadRecords) -> None:
        self._load_records(message)

    @work(thread=True, exclusive=True, group="records", exit_on_error=False)
    def _load_records(self, message: messages.LoadRecords) -> None:
        from rlark_tui.checks.records import list_records
        message.requester.post_message(messages.RecordsLoaded(list_records(_records(message.root))))

    def on_load_record_text(self, message: messages.LoadRecordText) -> None:
        self._load_record_text(message)

    @work(thread=True, exclusive=True, group="record-text", exit_on_error=False)
    def _load_record_text(self, message: messages.LoadRecordText) -> None:
        from rlark_tui.checks.records import read_record
        try:
            reply = messages.RecordTextLoaded(message.path, read_record(Path(message.path)))
        except RlarkError as exc:
            reply = messages.RecordTextLoaded(message.path, error=str(exc))
        message.requester.post_message(reply)

    # ---- checkpoints -------------------------------------------------------------------------------
    def on_load_checkpoints(self, message: messages.LoadCheckpoints) -> None:
        self._load_checkpoints(message)

    @work(thread=True, group="checkpoints", exit_on_error=False)
    def _load_checkpoints(self, message: messages.LoadCheckpoints) -> None:
        """The read `rlark checkpoints` makes (the Header log's resolved config, then list-files in its Pod)."""
        from rlark_tui.cluster.checkpoints import read_checkpoints
        try:
            if self.access is None:
                raise RlarkError("not connected to a cluster")
            reply = messages.CheckpointsLoaded(message.job, read_checkpoints(self.access, message.job))
        except RlarkError as exc:
            reply = messages.CheckpointsLoaded(message.job, error=str(exc))
        message.requester.post_message(reply)

    # ---- Workflows ---------------------------------------------------------------------------------
    def on_submit_workflow_text(self, message: messages.SubmitWorkflowText) -> None:
        self._submit_workflow_text(message)

    @work(thread=True, exclusive=True, group="submit", exit_on_error=False)
    def _submit_workflow_text(self, message: messages.SubmitWorkflowText) -> None:
        """What `rlark submit -f` does with a Workflow: refuse a masked secret, check every template, then create."""
        from rlark_tui.cluster.kinds import API_VERSION, JOBS
        from rlark_tui.jobspec.draft import read_yaml
        from rlark_tui.jobspec.findings import has_errors
        from rlark_tui.jobspec.workflow import workflow_findings
        from rlark_tui.text.redact import PLACEHOLDER, placeholder_fields, redact_text

        def refuse(*problems: str) -> None:
            message.requester.post_message(messages.WorkflowSubmitted(problems=tuple(problems)))

        try:
            data, twice = read_yaml(message.text.encode("utf-8"), what="the Workflow")
            if not isinstance(data, dict) or data.get("kind") != "Workflow" or data.get("apiVersion") != API_VERSION:
                return refuse(f"not a Workflow manifest: expected apiVersion {API_VERSION} and kind Workflow")
            masked = placeholder_fields(data)
            if masked:
                return refuse(*(f"{path}: holds {PLACEHOLDER!r}, a masked secret" for path in masked))
            if self.access is None:
                return refuse("not connected to a cluster")
            findings = twice + workflow_findings(data, self.access.nodes(), self.access.list(JOBS).items)
            if has_errors(findings):
                return refuse(*(redact_text(str(finding)) for finding in findings))
            self.actions.submit_workflow(data)
        except RlarkError as exc:
            return refuse(str(exc))
        message.requester.post_message(messages.WorkflowSubmitted(str(data["metadata"]["name"])))
