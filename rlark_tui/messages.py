"""Navigation and intent messages: screens post these and the app acts on them (opens a screen, asks before a
mutation), so no screen reaches into the app's internals or into another screen.

Posted from a screen or a widget they bubble up to the app; the app broadcasts ContextChanged to its screens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message
from textual.message_pump import MessagePump

from rlark_tui.model.logtarget import Scope

if TYPE_CHECKING:
    from rlark_tui.model.view_model import SnapshotIndex
    from rlark_tui.snapshot import Snapshot


class SnapshotChanged(Message):
    """A new Snapshot and the reconciler's index of it (None: the app indexes it; a Snapshot posted by a test or
    a replay). `snapshot.changes` names the objects that differ from the previous one."""

    def __init__(self, snapshot: Snapshot, index: SnapshotIndex | None = None) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.index = index

    def can_replace(self, message: Message) -> bool:
        """A newer SnapshotChanged waiting in the queue supersedes this one (it holds everything): the app
        applies one Snapshot per turn however many arrived."""
        return isinstance(message, SnapshotChanged)


class JobMessage(Message):
    """An intent about one Job."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class OpenJob(JobMessage):
    """Open the Job's detail screen on `tab` (workers, overview, events, yaml, ray)."""

    def __init__(self, name: str, tab: str = "workers") -> None:
        super().__init__(name)
        self.tab = tab


class OpenLogs(JobMessage):
    """Open the Job's logs of `scope` (model.logtarget.Scope; the Header role unless told)."""

    def __init__(self, name: str, scope: Scope = Scope.HEADER, previous: bool = False) -> None:
        super().__init__(name)
        self.scope = scope
        self.previous = previous
        """Open at the previous container instance (an OOMKilled Pod's evidence)."""


class AcknowledgeAlert(Message):
    """Acknowledge alerts (`a` in :alerts) by their `ack_key`s: they stay quiet, also after a restart."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__()
        self.keys = keys


class OpenCheck(JobMessage):
    """Open the Job's run-check report."""


class StopStartJob(JobMessage):
    """Ask to stop (or start) the Job: a confirm dialog, then rlark_tui.actions."""


class DeleteJob(JobMessage):
    """Ask to delete the Job: a confirm dialog, then rlark_tui.actions."""


class BulkAction(Message):
    """Ask to run `verb` (model.lifecycle.BULK_VERBS: stop_start, restart, delete) on every marked Job: one confirm
    dialog listing each Job and what happens to it, then rlark_tui.actions per Job."""

    def __init__(self, verb: str, names: list[str]) -> None:
        super().__init__()
        self.verb = verb
        self.names = names


class JobSubmitted(JobMessage):
    """A new Job was created: back on the job list it is selected as soon as it is listed."""


class OpenWizard(Message):
    """Open the create-job wizard."""


class ContextChanged(Message):
    """The app now shows another kubeconfig context: screens forget what they showed of the previous one."""

    def __init__(self, context: str) -> None:
        super().__init__()
        self.context = context


class OpenShell(JobMessage):
    """Open a shell in `main` of the Pod `scope` names (model.logtarget.Scope: a Pod, a role's first Pod, else the
    Header Pod): the app hands the terminal over and takes it back when the shell exits."""

    def __init__(self, name: str, scope: Scope = Scope.HEADER) -> None:
        super().__init__(name)
        self.scope = scope


class OpenTunnels(JobMessage):
    """Open local tunnels to the Job's Ray dashboard and TensorBoard and show their URLs."""


class OpenCompare(Message):
    """Open the curves of these Jobs overlaid (the job list's marked Jobs)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = list(names)


class CloneJob(JobMessage):
    """Open the wizard on a copy of the Job: `<name>-copy` (or the next free name), a new run id and prefix."""


class EditJob(JobMessage):
    """Open the wizard on the Job's draft, its name locked; Submit is the console's Edit-and-restart."""


class RestartJob(JobMessage):
    """Ask to restart the Job (the console's Restart: it only un-stops): a confirm dialog, then actions."""


class OpenDiff(Message):
    """Show what changed between two Jobs (the job list's two marked Jobs, or the marked one and the cursor)."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__()
        self.first = first
        self.second = second


class OpenNode(Message):
    """Open the detail of Node CR `key` (`<cluster namespace>/<name>`)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key


class OpenNodes(Message):
    """Open `:nodes`, filtered to one cluster namespace (empty: all)."""

    def __init__(self, cluster: str = "") -> None:
        super().__init__()
        self.cluster = cluster


class DownloadObject(Message):
    """Ask where to download a storage object (or a whole folder, `key` ending in `/`) and download it there."""

    def __init__(self, storage_class: str, cluster: str, key: str, size: int | None = None) -> None:
        super().__init__()
        self.storage_class, self.cluster, self.key, self.size = storage_class, cluster, key, size


class AddSshKey(Message):
    """Ask for a `.pub` file and register its key (rlark_tui.actions)."""


class DeleteSshKey(Message):
    """Ask to delete registered SSH key `index` of `user` (a confirm dialog, then rlark_tui.actions)."""

    def __init__(self, user: str, index: int, label: str) -> None:
        super().__init__()
        self.user, self.index, self.label = user, index, label


# ---- work the app does for a screen (rlark_tui.app_work): an intent, then its result posted to `requester` ----
@dataclass
class Work(Message):
    """An intent the app carries out on its own worker; the result message goes to `requester` (a screen)."""

    requester: MessagePump


@dataclass
class SendManifest(Work):
    """Submit (or dry-run) a Job manifest; `edit`: the console's Edit-and-restart of the Job of that name."""

    manifest: dict
    dry_run: bool = False
    edit: bool = False


@dataclass
class ManifestSent(Message):
    """What the platform answered to a SendManifest: `result` (actions.SubmitResult), or why it refused."""

    manifest: dict
    dry_run: bool
    edit: bool
    result: object | None = None
    error: str = ""


@dataclass
class LoadAutosave(Work):
    """Read the wizard's autosaved draft."""


@dataclass
class AutosaveLoaded(Message):
    saved: object | None = None
    """A `drafts.SavedDraft`, None when there is none (or it could not be read: `error`)."""
    error: str = ""


@dataclass
class AutosaveDraft(Work):
    """Keep the wizard's draft in the autosave file; a newer one waiting supersedes this one."""

    draft: object
    step: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, AutosaveDraft)


@dataclass
class AutosaveFailed(Message):
    error: str


@dataclass
class ImportDraft(Work):
    path: str


@dataclass
class DraftImported(Message):
    path: str
    draft: object | None = None
    findings: tuple = ()
    error: str = ""


@dataclass
class ExportDraft(Work):
    path: str
    draft: object


@dataclass
class DraftExported(Message):
    path: str
    error: str = ""


@dataclass
class EditText(Work):
    """Hand the terminal to $EDITOR on `text` (a temporary file with `suffix`); `target` names the field."""

    target: str
    text: str
    suffix: str = ".sh"


@dataclass
class TextEdited(Message):
    target: str
    text: str | None = None
    error: str = ""


@dataclass
class SaveLog(Work):
    """Write log lines (secrets redacted here) to `path`, mode 0600."""

    path: str
    lines: tuple[str, ...]


@dataclass
class LogSaved(Message):
    path: str
    lines: int
    error: str = ""


@dataclass
class LoadHandOver(Work):
    root: str
    """The records folder ("": the state dir); the same for SaveHandOver and SaveRecord."""
    job: str


@dataclass
class HandOverLoaded(Message):
    hand_over: object


@dataclass
class SaveHandOver(Work):
    """Keep a run check's hand-over fields until its record is saved; a newer one waiting supersedes this one."""

    root: str
    job: str
    hand_over: object

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SaveHandOver) and (message.root, message.job) == (self.root, self.job)


@dataclass
class HandOverSaveFailed(Message):
    error: str


@dataclass
class SaveRecord(Work):
    """Save a run-check record (and drop the kept hand-over fields)."""

    root: str
    job: str
    report: object


@dataclass
class RecordSaved(Message):
    path: str = ""
    error: str = ""
