"""The app's part of the console views (issue 25): opening the node detail, `:clusters`, `:storage`, `:sshkeys`,
`:records` and `:overview`, asking where a download goes and running it on a worker thread, and adding / deleting SSH keys and
deleting Workflows after the dialogs, through rlark_tui.flow.actions. RlarkApp mixes it in."""

from __future__ import annotations

import getpass
import os
import time
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from textual import work

from rlark_tui.errors import RlarkError
from rlark_tui.flow import messages
from rlark_tui.local.fsutil import in_working_dir
from rlark_tui.model.storage import human_size
from rlark_tui.text.sinks import one_line
from rlark_tui.tui.host import AppHost

if TYPE_CHECKING:
    from rlark_tui.screens.base import RlarkScreen

COMMANDS = MappingProxyType({"clusters": ("clusters", "cluster", "cl"), "storage": ("storage", "sc", "files"),
            "sshkeys": ("sshkeys", "sshkey", "keys", "ssh"), "records": ("records", "record", "rec"),
            "pods": ("pods", "pod", "po"), "events": ("events", "event", "ev"),
            "overview": ("overview", "ov", "attention")})
DEFAULT_PUB = "~/.ssh/id_ed25519.pub"
PROGRESS_SECONDS = 3.0
"""A running download says how far it got at most this often."""


class ConsoleViews(AppHost):
    """Methods of RlarkApp (self is the app)."""

    def console_command(self, command: str) -> bool:
        """`:clusters`, `:storage`, `:sshkeys`, `:records`, `:pods`, `:events`, `:overview`; False when `command` is none of them."""
        screen: RlarkScreen
        if command in COMMANDS["clusters"]:
            from rlark_tui.screens.clusters import ClustersScreen
            screen = ClustersScreen()
        elif command in COMMANDS["storage"]:
            from rlark_tui.screens.storage import StorageScreen
            screen = StorageScreen()
        elif command in COMMANDS["sshkeys"]:
            from rlark_tui.screens.sshkeys import SSHKeysScreen
            screen = SSHKeysScreen()
        elif command in COMMANDS["pods"]:
            from rlark_tui.screens.pods import PodsScreen
            screen = PodsScreen()
        elif command in COMMANDS["events"]:
            from rlark_tui.screens.pods import EventsScreen
            screen = EventsScreen()
        elif command in COMMANDS["overview"]:
            from rlark_tui.screens.overview import OverviewScreen
            screen = OverviewScreen()
        elif command in COMMANDS["records"]:
            from rlark_tui.screens.records import RecordsScreen
            screen = RecordsScreen()
        else:
            return False
        self._base_screen()
        self.push_screen(screen)
        return True

    def on_open_node(self, message: messages.OpenNode) -> None:
        from rlark_tui.screens.node_detail import NodeDetailScreen

        self.push_screen(NodeDetailScreen(message.key))

    def on_open_nodes(self, message: messages.OpenNodes) -> None:
        from rlark_tui.screens.nodes import NodeListScreen

        self.push_screen(NodeListScreen(message.cluster))

    # ---- storage downloads ----------------------------------------------------------------------------
    def on_download_object(self, message: messages.DownloadObject) -> None:
        from rlark_tui.screens.wizard_dialogs import PathScreen

        folder = message.key.endswith("/")
        shown = one_line(message.key)
        name = one_line(message.key.rstrip("/").rsplit("/", 1)[-1])
        if name in ("", ".", "..") or "\\" in name:
            name = "download"
        hint = (f"Every object below {shown} goes to this directory, keys kept as paths below it"
                if folder else shown + (f" ({message.size} bytes)" if message.size is not None else "")
                + ": a file path, or a directory that gets the file's name")
        self.push_screen(PathScreen(f"Download {message.storage_class}:{shown} to", hint,
                                    str(in_working_dir(name)) if folder else str(in_working_dir()) + "/", "a local path"),
                         partial(self._download_to, message))

    def _download_to(self, message: messages.DownloadObject, answer: str | None) -> None:
        if not answer:
            return
        self.notify(f"downloading {message.storage_class}:{one_line(message.key)} …", timeout=3, markup=False)
        self._download(message.storage_class, message.cluster, message.key, os.path.expanduser(answer))

    @work(thread=True, group="downloads", exit_on_error=False)
    def _download(self, storage_class: str, cluster: str, key: str, dest: str) -> None:
        from rlark_tui.cluster import objects

        said = [time.monotonic()]

        def progress(done: int, total: int | None) -> None:
            if time.monotonic() - said[0] >= PROGRESS_SECONDS:
                said[0] = time.monotonic()
                of = f" of {human_size(total)}" if total is not None else ""
                self.call_from_thread(self.notify, f"downloading {one_line(key)}: {human_size(done)}{of}", timeout=3,
                                      markup=False)

        try:
            lines = objects.download_to(self.access, storage_class, cluster, key, dest, progress)
        except (RlarkError, OSError) as exc:
            self.call_from_thread(self.notify, f"download {storage_class}:{one_line(key)}: {exc}", severity="error",
                                  timeout=10, markup=False)
            return
        failed = any(line.startswith(("failed", "skipped")) or "DOES NOT" in line for line in lines)
        text = "\n".join(lines[:8]) + (f"\n… {len(lines) - 8} more" if len(lines) > 8 else "")
        self.call_from_thread(self.notify, text or "nothing to download", severity="warning" if failed else
                              "information", timeout=10, markup=False)

    # ---- SSH keys ---------------------------------------------------------------------------------------
    def on_add_ssh_key(self, _message: messages.AddSshKey) -> None:
        from rlark_tui.screens.wizard_dialogs import PathScreen

        self.push_screen(PathScreen(f"Add an SSH public key for {getpass.getuser()}",
                                    "The .pub file (it is checked before anything is sent)", DEFAULT_PUB,
                                    "~/.ssh/id_ed25519.pub"),
                         self._add_key_from)

    def _add_key_from(self, answer: str | None) -> None:
        if answer:
            self._add_key(Path(answer).expanduser())

    @work(thread=True, group="mutations", exit_on_error=False)
    def _add_key(self, path: Path) -> None:
        from rlark_tui.commands.sshkeys import read_public_key

        try:
            key = read_public_key(path)
            message = self.actions.add_ssh_key(getpass.getuser(), key.line) + f": {key.type} {key.fingerprint}"
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"add SSH key: {exc}", severity="error", timeout=8, markup=False)
            return
        self.call_from_thread(self.notify, message, markup=False)
        self.call_from_thread(self.intents.poll_now, "sshkeys", "all")

    def on_delete_ssh_key(self, message: messages.DeleteSshKey) -> None:
        from rlark_tui.screens.confirm import ConfirmScreen

        self.push_screen(ConfirmScreen(f"Delete {message.label}?",
                                       "It is removed from the console's SSH keys; Jobs that already carry it keep "
                                       "it until they are re-created.", "Delete", dangerous=True),
                         partial(self._delete_key_confirmed, message))

    def _delete_key_confirmed(self, message: messages.DeleteSshKey, answer: bool | None) -> None:
        if answer:
            self._delete_key(message.user, message.index)
        else:
            self.notify("delete of the SSH key cancelled", timeout=2)

    @work(thread=True, group="mutations", exit_on_error=False)
    def _delete_key(self, user: str, index: int) -> None:
        try:
            message = self.actions.delete_ssh_key(user, index)
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"delete SSH key: {exc}", severity="error", timeout=8, markup=False)
            return
        self.call_from_thread(self.notify, message, markup=False)
        self.call_from_thread(self.intents.poll_now, "sshkeys", "all")

    # ---- Workflows --------------------------------------------------------------------------------------
    def on_delete_workflow(self, message: messages.DeleteWorkflow) -> None:
        if self._refuse_readonly(f"delete workflow {message.name}"):
            return
        from rlark_tui.jobspec.workflow import WORKFLOW_LABEL, delete_consequences
        from rlark_tui.model.objects import Job
        from rlark_tui.screens.confirm import ConfirmScreen

        jobs = sorted(Job(job).name for job in (self.index.snapshot.jobs.values() if self.index is not None else ())
                      if ((job.get("metadata") or {}).get("labels") or {}).get(WORKFLOW_LABEL) == message.name)
        title, body = delete_consequences(message.name, jobs)
        self.push_screen(ConfirmScreen(title, body, "Delete", dangerous=True),
                         partial(self._delete_workflow_confirmed, message.name))

    def _delete_workflow_confirmed(self, name: str, answer: bool | None) -> None:
        if answer:
            self._delete_workflow(name)
        else:
            self.notify(f"delete of workflow {name} cancelled", timeout=2)

    @work(thread=True, group="mutations", exit_on_error=False)
    def _delete_workflow(self, name: str) -> None:
        try:
            message = self.actions.delete_workflow(name)
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"delete workflow {name}: {exc}", severity="error", timeout=8)
            return
        self.call_from_thread(self.notify, message)
