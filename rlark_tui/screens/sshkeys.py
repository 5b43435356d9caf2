"""SSHKeysScreen (`:sshkeys`): the SSH public keys the console registers (`ssh-user-keys`, SSHKeys.tsx), with
their fingerprints; `a` adds the key of a `.pub` file (checked before it is sent), `ctrl+d` deletes the selected
one after a confirmation. Both through the app and rlark_tui.flow.actions: in read-only mode both keys are hidden
(pressed, actions.py says the refusal) and the keys stay listed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.flow.messages import AddSshKey, DeleteSshKey
from rlark_tui.flow.polls import ALL_KEY, SSH_KEYS, Listed
from rlark_tui.model.sshkey import KeyRow, key_rows
from rlark_tui.screens.base import TableScreen, read_message
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.widgets.live_table import Column, LiveTable, Row

COLUMNS = (Column("user", "USER"), Column("index", "INDEX"), Column("type", "TYPE"),
           Column("fingerprint", "FINGERPRINT"), Column("comment", "COMMENT"), Column("added", "ADDED"))


class SSHKeysScreen(TableScreen):
    crumb = "SSH keys"
    MUTATIONS = frozenset({"add_key", "delete_key"})
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("a", "add_key", "Add key (.pub)"),
        Binding("ctrl+d", "delete_key", "Delete key"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, KeyRow] = {}

    def compose_body(self) -> ComposeResult:
        yield LiveTable(COLUMNS, id="sshkey-table")
        yield Static("", id="sshkey-message", markup=False)

    def on_mount(self) -> None:
        self.intents.subscribe(SSH_KEYS, ALL_KEY)
        super().on_mount()

    def on_unmount(self) -> None:
        self.intents.unsubscribe(SSH_KEYS, ALL_KEY)
        super().on_unmount()

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        found = index.listed("sshkeys", ALL_KEY)
        listed = found if isinstance(found, Listed) else None
        rows = key_rows(list(listed.items)) if listed is not None else []
        self._rows = {f"{r.raw_user}\x1f{r.index}": r for r in rows}
        self.query_one(LiveTable).sync(
            Row(key, (r.user, str(r.index), r.type, r.fingerprint, r.comment or "-", r.added_at or "-"),
                (r.user, r.index, r.type, r.fingerprint, r.comment, r.added_at)) for key, r in self._rows.items())
        self.say("#sshkey-message", read_message(listed, bool(rows), waiting="Listing SSH keys…", failed="ssh keys",
                                                 empty="No SSH keys registered: `a` adds one from a .pub file."))

    def refusal(self, key: str) -> str | None:
        action = self.mutation_of(key)
        if action == "add_key":
            return "add an SSH key"
        row = self._selected()
        if action == "delete_key" and row is not None:
            return f"delete {_label(row)}"  # the refusal is a toast, never markup (RlarkApp.notify)
        return None

    def _selected(self) -> KeyRow | None:
        return self._rows.get(self.query_one(LiveTable).selected_key or "")

    def action_add_key(self) -> None:
        self.post_message(AddSshKey())

    def action_delete_key(self) -> None:
        row = self._selected()
        if row is None:
            self.notify("no key selected", severity="warning")
            return
        self.post_message(DeleteSshKey(row.raw_user, row.index, _label(row)))

    def action_back(self) -> None:
        self.rlark.run_command("jobs")


def _label(row: KeyRow) -> str:
    return f"{row.user}'s key {row.index} ({row.type} {row.fingerprint})"
