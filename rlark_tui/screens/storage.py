"""StorageScreen (`:storage`): the storage classes of each member cluster, then their folders and objects, through
the gateway's storage file API as the console's Storage page browses them (storage_handler.go). Enter opens a
class or a folder, or downloads an object to a path asked for; `w` downloads the selected folder (every object
below it, keys kept as paths below the chosen directory, refused where a key would leave it); backspace goes up.

Listings are the reconciler's STORAGE reads (subscribed for what is shown); the download is the app's worker.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from rlark_tui.flow.messages import DownloadObject
from rlark_tui.flow.polls import ALL_KEY, STORAGE, Folder, Listed, storage_key
from rlark_tui.model.storage import Entry, human_size
from rlark_tui.screens.base import RlarkScreen, read_message
from rlark_tui.text.sinks import one_line
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.widgets.live_table import Column, LiveTable, Row

CLASS_COLUMNS = (Column("name", "STORAGE CLASS"), Column("cluster", "CLUSTER"))
FOLDER_COLUMNS = (Column("name", "NAME"), Column("size", "SIZE"), Column("modified", "MODIFIED"),
                  Column("etag", "ETAG"))


class StorageScreen(RlarkScreen):
    crumb = "Storage"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("backspace", "up", "Up a folder"),
        Binding("w", "download_folder", "Download folder"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.location: tuple[str, str, str] | None = None
        """(storage class, cluster agent ID, prefix) of the folder shown; None: the class list."""
        self._subscribed = ALL_KEY
        self._entries: dict[str, Entry] = {}

    def compose_body(self) -> ComposeResult:
        yield Static("", id="storage-title", markup=False)
        yield LiveTable(CLASS_COLUMNS, id="storage-class-table")
        yield LiveTable(FOLDER_COLUMNS, id="storage-folder-table")
        yield Static("", id="storage-message", markup=False)

    def on_mount(self) -> None:
        self.intents.subscribe(STORAGE, ALL_KEY)
        super().on_mount()
        self._show_tables()

    def on_unmount(self) -> None:
        self.intents.unsubscribe(STORAGE, self._subscribed)
        super().on_unmount()

    def focus_body(self) -> None:
        self._table().focus()

    def _table(self) -> LiveTable:
        return self.query_one("#storage-folder-table" if self.location else "#storage-class-table", LiveTable)

    def _show_tables(self) -> None:
        self.query_one("#storage-class-table").display = self.location is None
        self.query_one("#storage-folder-table").display = self.location is not None
        self.focus_body()

    def _go(self, location: tuple[str, str, str] | None) -> None:
        key = storage_key(*location) if location else ALL_KEY
        if key != self._subscribed:
            self.intents.subscribe(STORAGE, key)
            self.intents.unsubscribe(STORAGE, self._subscribed)
            self._subscribed = key
        self.location = location
        self.query_one("#storage-folder-table", LiveTable).sync([])
        self._show_tables()
        if self.state.index is not None:
            self.show_snapshot(self.state.index)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        result = index.listed("storage", self._subscribed)
        title = self.query_one("#storage-title", Static)
        message = ""
        if self.location is None:
            title.update("Storage classes (enter opens one)")
            listed = result if isinstance(result, Listed) else None
            self.query_one("#storage-class-table", LiveTable).sync(
                Row(f"{item['storageClass']}|{item['cluster']}", (item["storageClass"], item["cluster"]),
                    (item["storageClass"], item["cluster"])) for item in (listed.items if listed else ()))
            message = read_message(listed, bool(listed and listed.items), waiting="Listing storage classes…",
                                   failed="storage classes",
                                   empty="The gateway lists no storage classes (only rclone CSI classes are shown).")
        else:
            storage_class, cluster, prefix = self.location
            title.update(f"{one_line(storage_class)} on {one_line(cluster)}: /{one_line(prefix)}   (enter: open / download, w: download folder, "
                         "backspace: up)")
            folder = result if isinstance(result, Folder) else None
            self._entries = {e.key: e for e in (folder.entries if folder else ())}
            self.query_one("#storage-folder-table", LiveTable).sync(
                Row(e.key, (e.name, "-" if e.folder else human_size(e.size), e.modified or "-", e.etag or "-"),
                    (not e.folder, e.name, e.size or 0, e.modified, e.etag)) for e in self._entries.values())
            message = read_message(folder, bool(folder and folder.entries), waiting="Listing…", failed="list",
                                   empty="Empty folder.")
            if not message and folder is not None and folder.truncated:
                message = f"Showing the first {len(folder.entries)} entries."
        self.say("#storage-message", message)

    def on_live_table_row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        if self.location is None:
            storage_class, cluster = event.row_key.split("|", 1)
            self._go((storage_class, cluster, ""))
            return
        entry = self._entries.get(event.row_key)
        if entry is None:
            return
        storage_class, cluster, _ = self.location
        if entry.folder:
            self._go((storage_class, cluster, entry.key))
        else:
            self.post_message(DownloadObject(storage_class, cluster, entry.key, entry.size))

    def action_download_folder(self) -> None:
        if self.location is None:
            return
        storage_class, cluster, prefix = self.location
        entry = self._entries.get(self._table().selected_key or "")
        key = entry.key if entry is not None and entry.folder else prefix
        if not key:
            self.notify("select a folder to download (the class's root is not downloaded whole)",
                        severity="warning")
            return
        self.post_message(DownloadObject(storage_class, cluster, key))

    def action_up(self) -> None:
        if self.location is None:
            return
        storage_class, cluster, prefix = self.location
        if not prefix:
            self._go(None)
            return
        parent = prefix.rstrip("/").rpartition("/")[0]
        self._go((storage_class, cluster, parent + "/" if parent else ""))

    def action_back(self) -> None:
        if self.location is not None:
            self.action_up()
        else:
            self.rlark.run_command("jobs")
