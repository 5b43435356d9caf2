"""Navigation, intent and result messages, as dataclasses (with `can_replace` where a newer one supersedes a
waiting one): screens post these and the app acts on them (opens a screen, asks before a mutation, runs a
screen's I/O on its workers), so no screen reaches into the app's internals or into another screen.

Posted from a screen or a widget they bubble up to the app; the app broadcasts ContextChanged to its screens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, dataclass_transform

from textual.message import Message
from textual.message_pump import MessagePump

from rlark_tui.model.logtarget import Scope

if TYPE_CHECKING:
    from collections.abc import Mapping

    from textual.content import Content

    from rlark_tui.checks.records import SavedRecord
    from rlark_tui.checks.report import CheckReport, HandOver, HandOverKey
    from rlark_tui.flow.actions import SubmitResult
    from rlark_tui.flow.snapshot import Snapshot
    from rlark_tui.jobspec.draft import JobDraft
    from rlark_tui.jobspec.findings import Finding
    from rlark_tui.local.draft_files import SavedDraft
    from rlark_tui.model.views import TableView
    from rlark_tui.telemetry.checkpoints import Checkpoint, CheckpointRead
    from rlark_tui.telemetry.stacks import Stacks
    from rlark_tui.view.index import SnapshotIndex

_M = TypeVar("_M", bound=Message)


@dataclass_transform(eq_default=False)
def message(cls: type[_M]) -> type[_M]:
    """The messages' dataclass decorator: fields and __init__ only. Nothing compares messages (a message is one
    event, compared by identity), Textual's own repr names them, and the generated __eq__ and __repr__ would add to
    the TUI's start-up import (bench/startup.py). `dataclass_transform` tells type checkers the fields make __init__."""
    return dataclass(repr=False, eq=False)(cls)


@message
class SnapshotChanged(Message):
    """A new Snapshot and the reconciler's index of it (None: the app indexes it; a Snapshot posted by a test or
    a replay). `snapshot.changes` names the objects that differ from the previous one."""

    snapshot: Snapshot
    index: SnapshotIndex | None = None

    def can_replace(self, message: Message) -> bool:
        """A newer SnapshotChanged waiting in the queue supersedes this one (it holds everything): the app
        applies one Snapshot per turn however many arrived."""
        return isinstance(message, SnapshotChanged)


@message
class JobMessage(Message):
    """An intent about one Job."""

    name: str


@message
class OpenJob(JobMessage):
    """Open the Job's detail screen on `tab` (workers, overview, events, yaml, ray)."""

    tab: str = "workers"


@message
class OpenLogs(JobMessage):
    """Open the Job's logs of `scope` (model.logtarget.Scope; the Header role unless told)."""

    scope: Scope = Scope.HEADER
    previous: bool = False


@message
class AcknowledgeAlert(Message):
    """Acknowledge alerts (`a` in :alerts) by their `ack_key`s: they stay quiet, also after a restart."""

    keys: list[str]


@message
class AlertsAcknowledged(Message):
    """The app's worker kept the acknowledgements (or could not: `error`)."""

    error: str = ""


@message
class OpenCheck(JobMessage):
    """Open the Job's run-check report."""


@message
class OpenStacks(JobMessage):
    """Open the Job's Stacks screen: its live Ray workers grouped by main-thread frames, the odd ranks named."""


@message
class StopStartJob(JobMessage):
    """Ask to stop (or start) the Job: a confirm dialog, then rlark_tui.flow.actions."""


@message
class DeleteJob(JobMessage):
    """Ask to delete the Job: a confirm dialog, then rlark_tui.flow.actions."""


@message
class BulkAction(Message):
    """Ask to run `verb` (model.lifecycle.BULK_VERBS: stop_start, restart, delete) on every marked Job: one confirm
    dialog listing each Job and what happens to it, then rlark_tui.flow.actions per Job."""

    verb: str
    names: list[str]


@message
class JobSubmitted(JobMessage):
    """A new Job was created: back on the job list it is selected as soon as it is listed."""


@message
class OpenWizard(Message):
    """Open the create-job wizard."""


@message
class ContextSnapshot(Message):
    """Several contexts: a new Snapshot and index of one of them (the focused one's is shown as SnapshotChanged's
    is; the others' feed the merged job list and the header)."""

    context: str
    snapshot: Snapshot
    index: SnapshotIndex

    def can_replace(self, message: Message) -> bool:
        """A newer Snapshot of the same context waiting in the queue supersedes this one."""
        return isinstance(message, ContextSnapshot) and message.context == self.context


@message
class FocusContext(Message):
    """Several contexts: what comes next (open a Job, its logs, an action) goes to this context's Job, through
    that context's own ClusterAccess."""

    context: str


@message
class KeepView(Message):
    """A table's view changed (sort, wide columns, filter): the app keeps it in the context's view settings."""

    table: str
    view: TableView


@message
class ContextChanged(Message):
    """The app now shows another kubeconfig context: screens forget what they showed of the previous one."""

    context: str

    def can_replace(self, message: Message) -> bool:
        """A newer switch supersedes one not yet handled (the screens forget the previous context either way)."""
        return isinstance(message, ContextChanged)


@message
class OpenShell(JobMessage):
    """Open a shell in `main` of the Pod `scope` names (model.logtarget.Scope: a Pod, a role's first Pod, else the
    Header Pod): the app hands the terminal over and takes it back when the shell exits."""

    scope: Scope = Scope.HEADER


@message
class OpenTunnels(JobMessage):
    """Open local tunnels to the Job's Ray dashboard and TensorBoard and show their URLs."""


@message
class OpenCompare(Message):
    """Open the curves of these Jobs overlaid (the job list's marked Jobs)."""

    names: list[str]


@message
class CloneJob(JobMessage):
    """Open the wizard on a copy of the Job: `<name>-copy` (or the next free name), a new run id and prefix."""


@message
class EditJob(JobMessage):
    """Open the wizard on the Job's draft, its name locked; Submit is the console's Edit-and-restart."""


@message
class RestartJob(JobMessage):
    """Ask to restart the Job (the console's Restart: it only un-stops): a confirm dialog, then actions."""


@message
class ResumeJob(JobMessage):
    """Ask to resume the Job from `checkpoint` (in folder `location`): the diff in a confirm dialog (a forced resume's
    when the checkpoint is incomplete), then Actions.resume (an Edit & Restart; a finished Job's delete and re-create)."""

    checkpoint: Checkpoint
    location: str


@message
class OpenDiff(Message):
    """Show what changed between two Jobs (the job list's two marked Jobs, or the marked one and the cursor)."""

    first: str
    second: str


@message
class OpenNode(Message):
    """Open the detail of Node CR `key` (`<cluster namespace>/<name>`)."""

    key: str


@message
class OpenNodes(Message):
    """Open `:nodes`, filtered to one cluster namespace (empty: all)."""

    cluster: str = ""


@message
class DownloadObject(Message):
    """Ask where to download a storage object (or a whole folder, `key` ending in `/`) and download it there."""

    storage_class: str
    cluster: str
    key: str
    size: int | None = None


@message
class AddSshKey(Message):
    """Ask for a `.pub` file and register its key (rlark_tui.flow.actions)."""


@message
class DeleteSshKey(Message):
    """Ask to delete registered SSH key `index` of `user` (a confirm dialog, then rlark_tui.flow.actions)."""

    user: str
    index: int
    label: str


# ---- work the app does for a screen (rlark_tui.tui.work): an intent, then its result posted to `requester` ----
@message
class Work(Message):
    """An intent the app carries out on its own worker; the result message goes to `requester` (a screen)."""

    requester: MessagePump


@message
class SendManifest(Work):
    """Submit (or dry-run) a Job manifest; `edit`: the console's Edit-and-restart of the Job of that name."""

    manifest: dict
    dry_run: bool = False
    edit: bool = False


@message
class ManifestSent(Message):
    """What the platform answered to a SendManifest: `result` (actions.SubmitResult), or why it refused."""

    manifest: dict
    dry_run: bool
    edit: bool
    result: SubmitResult | None = None
    error: str = ""


@message
class LoadAutosave(Work):
    """Read the wizard's autosaved draft."""


@message
class AutosaveLoaded(Message):
    saved: SavedDraft | None = None
    """A `drafts.SavedDraft`, None when there is none (or it could not be read: `error`)."""
    error: str = ""


@message
class AutosaveDraft(Work):
    """Keep the wizard's draft in the autosave file; a newer one waiting supersedes this one."""

    draft: JobDraft
    step: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, AutosaveDraft)


@message
class AutosaveFailed(Message):
    error: str


@message
class ImportDraft(Work):
    path: str


@message
class DraftImported(Message):
    path: str
    draft: JobDraft | None = None
    findings: tuple[Finding, ...] = ()
    error: str = ""


@message
class ExportDraft(Work):
    path: str
    draft: JobDraft


@message
class DraftExported(Message):
    path: str
    error: str = ""


@message
class EditText(Work):
    """Hand the terminal to $EDITOR on `text` (a temporary file with `suffix`); `target` names the field."""

    target: str
    text: str
    suffix: str = ".sh"


@message
class TextEdited(Message):
    target: str
    text: str | None = None
    error: str = ""


@message
class SaveLog(Work):
    """Write log lines (secrets redacted here) to `path`, mode 0600."""

    path: str
    lines: tuple[str, ...]


@message
class LogSaved(Message):
    path: str
    lines: int
    error: str = ""


@message
class LoadHandOver(Work):
    root: str
    """The records folder ("": the state dir); the same for SaveHandOver and SaveRecord."""
    key: HandOverKey
    """The Job whose fields these are (its context, name and uid); the same for SaveHandOver."""


@message
class HandOverLoaded(Message):
    key: HandOverKey
    """The Job they were asked for (LoadHandOver's)."""
    hand_over: HandOver
    name_only: bool = False
    """They were kept by an earlier rlark under the Job's name alone (records.load_hand_over)."""


@message
class SaveHandOver(Work):
    """Keep a run check's hand-over fields until its record is saved; a newer one waiting supersedes this one."""

    root: str
    key: HandOverKey
    hand_over: HandOver

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SaveHandOver) and (message.root, message.key) == (self.root, self.key)


@message
class HandOverSaveFailed(Message):
    error: str


@message
class SaveRecord(Work):
    """Save a run-check record (and drop the kept hand-over fields of `kept`, if any)."""

    root: str
    job: str
    report: CheckReport
    kept: HandOverKey | None = None


@message
class RecordSaved(Message):
    path: str = ""
    error: str = ""
    annotated: str = ""
    """What became of the summary on the Job (rlark.io/check-summary): written, or why not."""
    annotate_error: bool = False


@message
class LoadRecords(Work):
    """List the saved run-check records (`:records`)."""

    root: str = ""


@message
class RecordsLoaded(Message):
    records: list[SavedRecord]
    """Newest first."""


@message
class LoadRecordText(Work):
    """Read one saved record's markdown."""

    path: str


@message
class RecordTextLoaded(Message):
    path: str
    text: str = ""
    error: str = ""


@message
class RenderYaml(Work):
    """Make the Job detail's YAML tab of this version of the Job (view/yamltab: dumped and highlighted off the UI
    thread, as a Job's author sets how long it is), masking also `related`, the secret env values its Tasks name."""

    job: str
    version: str
    raw: Mapping
    related: frozenset[str] = frozenset()


@message
class YamlRendered(Message):
    job: str
    version: str
    text: str
    """The whole YAML, secrets redacted (what `Y` copies)."""
    shown: Content
    """The highlighted first yamltab.YAML_LINES lines, and a line counting the rest."""


@message
class TakeStacks(Work):
    """Take the stacks of the Job's live Ray workers (raydash.stacks.take: Ray's dashboard or py-spy in the Pods)."""

    job: str


@message
class StacksTaken(Message):
    job: str
    stacks: Stacks | None = None
    """Cleaned and masked (telemetry.stacks.masked); None when none could be taken (`error`: one line, `stacks: ...`)."""
    error: str = ""


@message
class SubmitWorkflowText(Work):
    """Check a Workflow manifest edited in $EDITOR as `rlark submit -f` does, and create it only when it passes."""

    text: str


@message
class WorkflowSubmitted(Message):
    name: str = ""
    problems: tuple[str, ...] = ()
    """Why nothing was sent (one line each): a parse error, a masked secret, findings with errors, an API error."""


@message
class DeleteWorkflow(Message):
    """Ask to delete a Workflow: a confirm dialog saying which of its Jobs go with it, then rlark_tui.flow.actions."""

    name: str


@message
class LoadCheckpoints(Work):
    """List the Job's RLinf checkpoints as `rlark checkpoints` does (cluster/checkpoints.py)."""

    job: str


@message
class CheckpointsLoaded(Message):
    """What a LoadCheckpoints read found (`read`), or why it could not (`error`, one line)."""

    job: str
    read: CheckpointRead | None = None
    error: str = ""
