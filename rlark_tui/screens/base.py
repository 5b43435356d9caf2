"""RlarkScreen: the shell every full screen shares — status header, body, `:` command bar, key bar.

Screens render the app's latest SnapshotIndex in `show_snapshot` and never call the API to render.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from rlark_tui.flow.messages import KeepView
from rlark_tui.flow.polls import ALL_KEY, Folder, Listed
from rlark_tui.flow.services import AppState, Intents
from rlark_tui.model.views import TableView
from rlark_tui.view.index import SnapshotIndex
from rlark_tui.widgets.filter_bar import FilterBar, Matcher
from rlark_tui.widgets.key_bar import KeyBar
from rlark_tui.widgets.live_table import Column, LiveTable, Row
from rlark_tui.widgets.status_header import StatusHeader

if TYPE_CHECKING:
    from rlark_tui.tui.app import RlarkApp


def alert_counts(index: SnapshotIndex | None) -> dict[str, int] | None:
    """Firing alerts per severity of the app's book; None before the first evaluation."""
    state = index.alerts_of(ALL_KEY) if index is not None else None
    return state.book.counts() if state is not None else None


class CommandBar(Input):
    """The k9s-style `:` prompt; Enter runs the command, esc closes it."""

    BINDINGS = [Binding("escape", "close", "Close", show=True)]

    def open(self) -> None:
        self.value = ""
        self.add_class("-open")
        self.focus()

    def action_close(self) -> None:
        self.value = ""
        self.remove_class("-open")
        if isinstance(self.screen, RlarkScreen):
            self.screen.focus_body()


class RlarkScreen(Screen):
    """Base of the job list, job detail, log and node screens. Textual calls the `on_mount` (and `on_unmount`) of
    every class along the MRO, this one's last: a subclass's handler that also calls `super().on_mount()` runs
    this one (the first render) twice."""

    shows_every_context: bool = False
    """With several contexts, whether the screen shows all of them (shown again when any changes), not only the
    focused one."""
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("colon", "command_mode", "Command", key_display=":"),
    ]
    MUTATIONS: frozenset[str] = frozenset()
    """Actions that change the cluster: hidden (and refused) in read-only mode."""
    JOB_VERBS = {"stop_start": "stop or start", "delete": "delete", "shell": "open a shell in a Pod of",
                 "edit": "edit and restart", "restart": "restart"}
    """What the Job mutations do, for the read-only refusal."""
    crumb = ""
    ready = False
    """True once mounted with all widgets, False again once unmounted: only a ready screen is given snapshots (the
    one meaning of `ready` in the UI)."""

    @property
    def rlark(self) -> RlarkApp:
        return cast("RlarkApp", self.app)

    @property
    def state(self) -> AppState:
        """What this screen reads: the latest index, context, namespace, readonly, marked Jobs (services.AppState)."""
        return self.rlark.state

    @property
    def intents(self) -> Intents:
        """What this screen does besides posting messages: subscriptions, a read now, the log follower
        (services.Intents)."""
        return self.rlark.intents

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="status-header")
        yield from self.compose_body()
        yield CommandBar(placeholder=":jobs  :nodes  :clusters  :workflows  :storage  :sshkeys  :records  :pods  "
                                     ":events  :alerts  :overview  :ns NAME  :ctx NAME  :q",
                         id="command-bar")
        yield KeyBar(id="key-bar")

    def compose_body(self) -> ComposeResult:
        yield from ()

    def focus_body(self) -> None:
        """Give focus back to the screen's main widget after a bar closes."""

    def on_mount(self) -> None:
        self.ready = True
        self.update_header()
        if self.state.index is not None:
            self.show_snapshot(self.state.index)

    def on_unmount(self) -> None:
        self.ready = False

    def on_screen_resume(self) -> None:
        if not self.ready:
            return
        self.update_header()
        if self.state.index is not None:
            self.show_snapshot(self.state.index)

    def show_snapshot(self, index: SnapshotIndex) -> None:
        """Render the latest snapshot (called on every SnapshotChanged while this screen exists)."""

    def restore_view(self) -> None:
        """Show the context's saved view of this screen's table (`state.views`), once the app has read them."""

    def say(self, selector: str, message: str) -> None:
        """Put `message` on the screen's message line `selector` (a Static), shown (class `-shown`) only while
        there is a message."""
        widget = self.query_one(selector, Static)
        widget.update(message)
        widget.set_class(bool(message), "-shown")

    def update_header(self) -> None:
        state = self.state
        snapshot = state.index.snapshot if state.index is not None else None
        self.query_one(StatusHeader).update_state(
            context=state.context, namespace=state.namespace,
            sources=dict(snapshot.sources) if snapshot is not None else {},
            readonly=state.readonly, waiting=snapshot is None, crumb=self.crumb,
            alerts=alert_counts(state.index), contexts=tuple(state.context_states()))

    def mutation_of(self, key: str) -> str | None:
        """The MUTATIONS action this screen binds to `key` (None: the key changes nothing here)."""
        return next((binding.action for binding in self._bindings.key_to_bindings.get(key, ())
                     if binding.action in self.MUTATIONS), None)

    def refusal(self, key: str) -> str | None:
        """What `key` would have changed, for the read-only refusal (the key is hidden then); None: nothing."""
        verb = self.JOB_VERBS.get(self.mutation_of(key) or "")
        if verb is None:
            return None
        name = getattr(self, "job_name", None) or getattr(getattr(self, "table", None), "selected_key", None)
        return f"{verb} job {name}" if name else f"{verb} jobs"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.MUTATIONS and self.state.readonly:
            return False
        return True

    def action_help(self) -> None:
        self.rlark.show_help(self)

    def action_command_mode(self) -> None:
        self.query_one(CommandBar).open()

    @on(Input.Submitted, "#command-bar")
    def _run_command(self, event: Input.Submitted) -> None:
        event.stop()
        bar = self.query_one(CommandBar)
        text = event.value
        bar.action_close()
        self.rlark.run_command(text)


def list_message(table: LiveTable, matcher: Matcher, empty: str, noun: str) -> str:
    """What a filterable list says under its table: `empty` when it holds nothing, that the filter hides every row,
    and the filter's own error."""
    message = ""
    if not table.total_count:
        message = empty
    elif not table.row_count:
        message = f"No {noun} match the filter {matcher.text!r}."
    if matcher.error:
        message = (message + "\n" if message else "") + f"filter: {matcher.error}"
    return message


def read_message(result: Listed | Folder | None, found: bool, *, waiting: str, failed: str, empty: str) -> str:
    """What a screen says of a topic's listing (polls.Listed, polls.Folder): `waiting` before its first read,
    `<failed>: <error>` when the read failed, `empty` when it read well and `found` nothing; else nothing."""
    if result is None:
        return waiting
    if result.error:
        return f"{failed}: {result.error}"
    return "" if found else empty


class TableScreen(RlarkScreen):
    """A screen whose body is one LiveTable: focused on mount and whenever a bar closes."""

    def on_mount(self) -> None:
        # No super(): Textual calls every class's on_mount along the MRO, RlarkScreen's (the first render) next.
        self.focus_body()

    def focus_body(self) -> None:
        self.query_one(LiveTable).focus()


def restore_table_view(table: LiveTable, bar: FilterBar, view: TableView, columns: tuple[Column, ...],
                       default_sort: str | None = None) -> None:
    """Show `table` as a saved view says: its sort (a column the table has; else `default_sort`), wide columns and
    filter."""
    keys = {column.key for column in columns}
    table.sort_as(view.sort if view.sort in keys else default_sort, view.reverse if view.sort in keys else False)
    table.set_wide(view.wide)
    bar.restore(view.filter)


def table_view(table: LiveTable, bar: FilterBar) -> TableView:
    """How `table` is shown now, to keep in the view settings."""
    return TableView(table.sort_column or "", table.sort_reverse, table.wide, bar.value)


class ListScreen(TableScreen):
    """A filterable list of the snapshot: a `/` filter bar over one LiveTable and the message under it (what
    `list_message` says); esc goes back to the job list; `w` shows every column at its full width. A list gives its
    `columns`, its `noun`, the prefix of its widgets' ids (`<prefix>-filter`, `-table`, `-message`), its
    `rows(index)` and its `view_name` (its sort, wide columns and filter are kept per context under it)."""

    BINDINGS = [Binding("escape", "back", "Back"), Binding("slash", "filter", "Filter", key_display="/"),
                Binding("w", "wide", "Wide columns", show=False)]
    columns: tuple[Column, ...] = ()
    noun = ""
    id_prefix = "list"
    view_name = ""
    default_sort: str | None = None
    """The column sorted by until the user sorts (None: the rows' own order)."""
    _restoring = False

    def compose_body(self) -> ComposeResult:
        yield FilterBar(f"filter {self.noun}: text or regex (esc clears)", id=f"{self.id_prefix}-filter")
        yield LiveTable(self.columns, id=f"{self.id_prefix}-table")
        yield Static("", id=f"{self.id_prefix}-message", classes="list-message", markup=False)

    def on_mount(self) -> None:
        # No super(): Textual calls TableScreen's and RlarkScreen's on_mount next (every class's, along the MRO).
        bar = self.query_one(FilterBar)
        bar.on_close = self.focus_body
        bar.on_change = self._filter_changed
        self.restore_view()

    def restore_view(self) -> None:
        views = self.state.views
        self._restoring = True
        try:
            restore_table_view(self.query_one(LiveTable), self.query_one(FilterBar),
                               views.table(self.view_name) if views is not None else TableView(), self.columns,
                               self.default_sort)
        finally:
            self._restoring = False

    def keep_view(self) -> None:
        """The table's sort, wide columns or filter changed: the app keeps them for the context."""
        if not self._restoring and self.view_name:
            self.post_message(KeepView(self.view_name, table_view(self.query_one(LiveTable),
                                                                  self.query_one(FilterBar))))

    def action_wide(self) -> None:
        table = self.query_one(LiveTable)
        table.set_wide(not table.wide)
        self.notify("wide columns" if table.wide else "columns fit the terminal", timeout=2)
        self.keep_view()

    def rows(self, index: SnapshotIndex) -> list[Row]:
        """The list's LiveTable rows of `index`."""
        raise NotImplementedError

    def empty_text(self) -> str:
        """What the list says when it holds nothing."""
        return f"No {self.noun} in {self.state.namespace or 'any namespace'}."

    def show_snapshot(self, index: SnapshotIndex) -> None:
        self.update_header()
        self.query_one(LiveTable).sync(self.rows(index))
        self._update_message()

    def _filter_changed(self, matcher: Matcher) -> None:
        self.query_one(LiveTable).set_filter(matcher)
        self._update_message()
        self.keep_view()

    def _update_message(self) -> None:
        message = list_message(self.query_one(LiveTable), self.query_one(FilterBar).matcher, self.empty_text(),
                               self.noun)
        self.say(f"#{self.id_prefix}-message", message)

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_back(self) -> None:
        self.rlark.run_command("jobs")
