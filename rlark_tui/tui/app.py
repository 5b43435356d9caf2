"""RlarkApp, the Textual TUI, and `run_tui(args)`, which `rlark` (no sub-command) and `rlark demo` call.

Owns the screen stack, the reconciler worker (messages.SnapshotChanged → every screen), what screens read and what
they do (rlark_tui.flow.services: AppState, Intents), the navigation messages (rlark_tui.flow.messages), `:` commands, the
command palette, and the one path from a key to a mutation: confirm dialog → rlark_tui.flow.actions (read-only aware).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from functools import partial
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.filter import LineFilter
from textual.fuzzy import FuzzySearch, Matcher
from textual.markup import escape
from textual.worker import Worker, WorkerState

from rlark_tui.alerting import rules as alert_rules
from rlark_tui.alerting.thresholds import Thresholds
from rlark_tui.errors import RlarkError
from rlark_tui.flow import messages
from rlark_tui.flow.actions import Actions
from rlark_tui.flow.polls import ALERTS, ALL_KEY, BUNDLE_TOPICS, TOPICS, USAGE, Topic
from rlark_tui.flow.reconciler import BLURRED_PACE, Reconciler
from rlark_tui.flow.services import AppState, Intents
from rlark_tui.flow.snapshot import Snapshot
from rlark_tui.local import acks
from rlark_tui.local.crash import Teller
from rlark_tui.local.resources import stylesheet
from rlark_tui.local.startup import freeze_long_lived, give_back_large_blocks, resume_collector
from rlark_tui.model.lifecycle import TERMINAL_PHASES, consequences
from rlark_tui.model.logtarget import Scope
from rlark_tui.screens.base import RlarkScreen
from rlark_tui.screens.job_list import JobListScreen
from rlark_tui.text.sanitize import clean, drawable
from rlark_tui.text.sinks import NAME_CHARS, cut, notification, one_line
from rlark_tui.tui.console import ConsoleViews
from rlark_tui.tui.keyorder import KeyOrder
from rlark_tui.tui.work import AppWork
from rlark_tui.view.index import SnapshotIndex, can_stop_or_start

if TYPE_CHECKING:
    from rich.segment import Segment
    from textual.color import Color
    from textual.style import Style
    from textual.theme import Theme
    from textual.timer import Timer

    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.model.objects import Job
    from rlark_tui.model.views import ViewSettings
    from rlark_tui.telemetry.checkpoints import Checkpoint

# The other screens (and the run check they pull in) are imported when first opened: the job list paints
# without them (startup_first_list_s, bench/startup.py).

class TerminalText(LineFilter):
    """The TUI's last guard at the terminal (`RlarkApp.get_line_filters`): every line a widget draws, Textual's own
    widgets and toasts included, leaves without an escape sequence's introducer, another control or a bidi control
    (`sanitize.drawable`) and without a hyperlink (rlark draws none). A widget's text is cleaned where it is taken
    in (`clean`, `sinks.one_line`); one that was not (a Static given a Job's name as the control plane answered it)
    wrote its OSC 52 or OSC 8 to the terminal as it came, and plotext's legend, read back as ANSI, made a Job
    name's OSC 8 a link. Strips keep the filtered line (Strip.apply_filter), so a line is filtered once.

    It applies `first` (Textual's last filter, its ANSI colours made truecolor) before it, in one filter: each
    filter makes a Strip of every line drawn, and the guard's own Strip was half of its cost (a filter keystroke
    over 5,000 Jobs redraws ~140 lines: the guard took 1.7 ms of the UI thread, now under 0.5 ms). A line whose
    text is printable and holds no link, nearly every line, is checked in one pass and returned as it is."""

    def __init__(self, first: LineFilter | None = None) -> None:
        super().__init__()
        self.first = first

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if self.first is not None:
            segments = self.first.apply(segments, background)
        texts = []
        for text, style, control in segments:
            if control:
                continue
            if style is not None and style.link:
                break
            texts.append(text)
        else:
            line = "".join(texts)
            if line.isprintable() and (line.isascii() or _unsteady()[0].search(line) is None):
                return segments
        drawn = iter(steady_width([drawable(segment.text) for segment in segments if not segment.control]))
        return [segment if segment.control else segment._replace(
            text=next(drawn),
            style=segment.style.update_link(None) if segment.style is not None and segment.style.link else
            segment.style) for segment in segments]


@functools.cache
def _unsteady() -> tuple[re.Pattern[str], frozenset[str]]:
    """The code points whose width a terminal may not give as Rich did when it laid the line out (steady_width):
    the zero-width joiner and VS16, and every code point Rich's table gives no width that is no nonspacing mark
    (Hangul fillers, a lone skin tone, spacing marks, unassigned ones). The set holds them; the pattern finds those
    in the BMP and any code point past it (a class of ranges there is searched slowly: 114 µs a screen line, 2 µs
    as it is). Built when first needed."""
    from rich.cells import load_cell_table

    found = {"\u200d", "\ufe0f"}
    for start, end, width in load_cell_table("auto").widths:
        if not width:
            found.update(point for point in map(chr, range(max(start, 0x20), end + 1))
                         if unicodedata.category(point) not in ("Mn", "Me"))
    bmp = "".join(re.escape(point) for point in sorted(found) if point <= "\uffff")
    return re.compile(f"[{bmp}\U00010000-\U0010ffff]"), frozenset(found)


def steady_width(texts: list[str]) -> list[str]:
    """`texts` (the segments of one line Rich laid out) as a terminal draws them in the columns Rich gave them,
    whatever its own width tables (issue 33, wide and zero-width characters that break columns: measured in tmux
    3.3). Rich gives no width to a Hangul filler (U+3164, tmux 2 columns), a lone skin tone (2), a spacing mark
    (Devanagari's vowel signs, 1) or the code point after a zero-width joiner (`a ZWJ b`: tmux 2), and 2 to a
    narrow symbol before VS16 (`☺ VS16`: tmux 1), so a Job's display name of 10 fillers then `Succeeded` pushed its
    row 20 columns right, `Succeeded` under the job list's PHASE and the real phase to its right. A spacing mark
    takes the column of the first space after it on the line that no mark before took (a table cell's padding:
    'हिन्दी-job' shows whole and what follows stays in its column); one with no such space, and the others Rich
    gives no width, are left out (with the code point a ZWJ joins), and a VS16 that widened its symbol is a space.
    The line keeps Rich's width, and what is left is each code point at its own width, as every terminal takes
    it."""
    line = "".join(texts)
    if line.isascii() or _unsteady()[0].search(line) is None:
        return texts
    from rich.cells import get_character_cell_size, load_cell_table

    narrow_to_wide = load_cell_table("auto").narrow_to_wide
    unsteady = _unsteady()[1]
    kept: list[list[str]] = []
    marks: list[tuple[int, int]] = []  # where each spacing mark was kept
    made: set[tuple[int, int]] = set()  # the spaces a VS16 left, which hold its symbol's second column
    for text in texts:
        kept.append([])
        measured = ""  # the last code point Rich gave a width, which a VS16 may widen
        at, end = 0, len(text)
        while at < end:
            point = text[at]
            if point == "\u200d":
                at += 2
                continue
            at += 1
            if point == "\ufe0f":
                if measured in narrow_to_wide:
                    made.add((len(kept) - 1, len(kept[-1])))
                    kept[-1].append(" ")
                measured = ""
            elif point not in unsteady:
                kept[-1].append(point)
                if get_character_cell_size(point):
                    measured = point
            elif unicodedata.category(point) == "Mc":
                marks.append((len(kept) - 1, len(kept[-1])))
                kept[-1].append(point)
    _spaces_for(kept, marks, made)
    return ["".join(points) for points in kept]


def _spaces_for(kept: list[list[str]], marks: list[tuple[int, int]], made: set[tuple[int, int]]) -> None:
    """Each spacing mark at `marks` given the first space after it that no mark before it took (but those `made`),
    that space made '' (the mark takes its column); a mark with none left made '' itself."""
    if not marks:
        return
    free: list[tuple[int, int]] = []  # spaces after the mark being paired, nearest last
    pending = list(marks)
    for segment in range(len(kept) - 1, -1, -1):
        points = kept[segment]
        for index in range(len(points) - 1, -1, -1):
            if pending and pending[-1] == (segment, index):
                pending.pop()
                if free:
                    space = free.pop()
                    kept[space[0]][space[1]] = ""
                else:
                    points[index] = ""
            elif points[index] == " " and (segment, index) not in made:
                free.append((segment, index))


FREEZE_AFTER_JOBS = 500
GC_PAUSE_MAX_SECONDS = 10.0
"""The cycle collector `rlark` paused for the start (cli._open_tui) runs again once the first list is shown
(first_list_shown), and at the latest this long after the app mounted: a control plane that does not answer
(with a long --request-timeout) keeps it paused no longer."""
ALERT_TOAST_SECONDS = 8.0
"""How long the one alert toast stays; alerts that come meanwhile wait for the next one (alert_toasts)."""
SUMMARY_SECONDS = 30.0
"""The alert counts for `rlark status` are written when they change, and at least this often."""
VIEWS_WRITE_SECONDS = 1.0
"""A view's change (sort, wide columns, filter, theme) is written once the view has not changed for this long (up to
twice it), and when the app ends: a filter typed key by key started a thread and wrote the file at each key."""
NOISE_ACTIONS = frozenset({"scroll_left", "scroll_right", "page_left", "page_right", "screen.copy_text",
                           "copy", "command_palette"})


TOAST_LINES = 12
"""The most lines a toast shows (RlarkApp.notify): the first, then how many more."""
PALETTE_HITS = 200
"""The most entries the command palette offers for one query (the first found, in the list's order)."""


class LinearSearch(FuzzySearch):
    """The palette's fuzzy search in time linear in an entry: the query as a substring, else each of its letters at
    its first place after the previous one's. Textual's own lists every way the letters fall in the entry and
    scores each: a Job name of 40 o's, p's, e's and n's each was 2.5 million ways of 'open', seconds of the UI
    thread and hundreds of MB per entry. Letters are compared lower-cased one at a time, so an offset stays its
    character's ('İ' lower-cased is two characters and moved every later offset past the entry's end)."""

    def match(self, query: str, candidate: str) -> tuple[float, list[int]]:
        text, wanted = (candidate, query) if self.case_sensitive else (_folded(candidate), _folded(query))
        if not wanted:
            return 0.0, []
        if (at := text.find(wanted)) >= 0:
            offsets = list(range(at, at + len(wanted)))
            return self.score(text, offsets) * (2.0 if text == wanted else 1.5), offsets
        offsets, place = [], 0
        for letter in wanted:
            if (place := text.find(letter, place)) < 0:
                return 0.0, []
            offsets.append(place)
            place += 1
        return self.score(text, offsets), offsets


def _folded(text: str) -> str:
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def _highlighted(text: str, offsets: Sequence[int], style: Style) -> Content:
    """A palette hit: `text` as plain Content, the letters at `offsets` in `style`. Textual's Matcher.highlight reads
    the entry as markup, which textual.markup.escape (Rich's rule) does not make plain: a Job named
    `[ @click=app.quit]` by the control plane was a click action on its hit, `[B]` styled it, and `["x"]` raised
    MarkupError out of the palette's search."""
    content = Content(text)
    for offset in offsets:
        if not text[offset].isspace():
            content = content.stylize(style, offset, offset + 1)
    return content


class RlarkCommands(Provider):
    """Command palette entries: views, and per Job open / logs / stop-start / delete (not when read-only)."""

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.app
        assert isinstance(app, RlarkApp)
        commands: list[tuple[str, Callable[[], object], str]] = [
            ("Jobs", partial(app.run_command, "jobs"), "the job list"),
            ("Nodes", partial(app.run_command, "nodes"), "the Node list"),
            ("Overview", partial(app.run_command, "overview"), "what needs attention (:overview)"),
            ("Workflows", partial(app.run_command, "workflows"), "each template's Job, or why it waits"),
            ("Namespace", partial(app.run_command, "ns"), "choose a namespace"),
            ("Context", partial(app.run_command, "ctx"), "choose a kubeconfig context"),
            ("Help", lambda: app.show_help(app.screen), "keys of this screen"),
            ("New job", app.open_wizard, "the create-job wizard"),
        ]
        for name in sorted(app.index.jobs) if app.index is not None else []:
            # the control plane's text: a line break or bidi control forged an entry, and 13 entries of a 100 KB name
            # took the palette 4.7 s of the UI thread to open (1.6 s a key typed): one line, to NAME_CHARS
            shown = one_line(cut(name, NAME_CHARS))
            commands.append((f"Open {shown}", partial(app.open_job, name, "workers"), "job detail"))
            commands.append((f"Logs of {shown}", partial(app.open_logs, name, Scope.HEADER),
                             "the Header role; a merges all Pods"))
            commands.append((f"Run check {shown}", partial(app.open_check, name), "run check report"))
            commands.append((f"Stacks of {shown}", partial(app.open_stacks, name),
                             "every live Ray worker's stack, the odd ranks named (S)"))
            commands.append((f"Clone {shown}", partial(app.open_clone, name), "the wizard on a copy (C)"))
            commands.append((f"Tunnels of {shown}", partial(app.open_tunnels, name),
                             "local URLs of the Ray dashboard and TensorBoard (F)"))
            if not app.actions.readonly:
                commands.append((f"Shell in {shown}", partial(app.open_shell, name, Scope.HEADER),
                                 "a shell in the Header Pod (x)"))
            if not app.actions.readonly:
                commands.append((f"Stop/Start {shown}", partial(app.request_stop_start, name), "asks first"))
                commands.append((f"Delete {shown}", partial(app.request_delete, name), "asks first"))
                commands.append((f"Edit and restart {shown}", partial(app.open_edit, name), "the wizard, name locked (E)"))
                commands.append((f"Restart {shown}", partial(app.request_restart, name), "only un-stops; asks first (R)"))
        return commands

    # An entry names a Job, text from the control plane: shown as plain text (a str display, and the matcher's
    # highlight, are Textual markup, where `[@click=...]` is an action), the markup escaped for the highlight.
    # At most PALETTE_HITS entries are offered: Textual's palette sorts and lays out every hit gathered so far at
    # each of its refreshes, so 13 entries for each of 20,000 Jobs answered 'open' in no 400 s; typing more narrows.
    async def discover(self) -> Hits:
        for text, command, help_text in self._commands()[:PALETTE_HITS]:
            yield DiscoveryHit(Content(text), command, text=text, help=escape(help_text))

    def matcher(self, user_input: str, case_sensitive: bool = False) -> Matcher:
        matcher = super().matcher(user_input, case_sensitive)
        matcher.fuzzy_search = LinearSearch(case_sensitive)
        return matcher

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        offered = 0
        for text, command, help_text in self._commands():
            score, offsets = matcher.fuzzy_search.match(matcher.query, text)
            if score > 0:
                yield Hit(score, _highlighted(text, offsets, matcher.match_style), command, text=text,
                          help=escape(help_text))
                offered += 1
                if offered >= PALETTE_HITS:
                    return


class RlarkApp(KeyOrder, AppWork, ConsoleViews, App[int]):
    """The TUI. `access` is a ClusterAccess (None: render only the snapshots posted to the app). `contexts`:
    several control planes at once, each context's own ClusterAccess (or why it could not be opened), in the
    list's order; `access` is the one focused first. One reconciler per context feeds the merged job list; the
    focused context's index is what the Job screens show, and its access, Actions and subscriptions are what
    they use: opening or acting on a Job of another context focuses that context first (FocusContext)."""

    CSS_PATH = [stylesheet("app.tcss"), stylesheet("screens.tcss"), stylesheet("metrics.tcss")]
    TITLE = "rlark"
    COMMANDS = App.COMMANDS | {RlarkCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("s", "refused('s')", show=False),
        Binding("ctrl+d", "refused('ctrl+d')", show=False),
        Binding("x", "refused('x')", show=False),
        Binding("E", "refused('E')", show=False),
        Binding("R", "refused('R')", show=False),
        Binding("u", "refused('u')", show=False),
        Binding("a", "refused('a')", show=False),
    ]

    def __init__(self, access: ClusterAccess | None = None, readonly: bool = False, no_color: bool = False,
                 theme: str = "", contexts: Mapping[str, ClusterAccess | str] | None = None,
                 theme_fixed: bool = False, topics: Mapping[str, Topic] | None = None) -> None:
        # no colour: Textual drops every colour (its NoColor filter) when NO_COLOR is set and ANSI colours are
        # native; states still read by their words and symbols, and the selection by its reverse video (app.tcss)
        super().__init__(ansi_color=True if no_color else None)
        if theme:
            self.theme = f"textual-{theme}"
        self.theme_fixed = theme_fixed
        """`--theme` was given: it wins over the theme saved in the context's view settings."""
        self._init_work()
        self._init_keys()
        self.access = access
        self.readonly = readonly
        """`--readonly` (every context); a context its kubeconfig makes read-only is so in its own Actions."""
        self.topics = topics if topics is not None else TOPICS
        """The periodic reads (flow/polls.py): a bundle session's are what the bundle captured (BUNDLE_TOPICS)."""
        self.reconciler: Reconciler | None = None
        self.actions = Actions(access, readonly=readonly)
        """The one mutation path (screens never see it: they post a message, the app asks, then mutates)."""
        self.state = AppState(self.actions.readonly, access)
        self.state.readonly_everywhere = readonly
        """What screens read (rlark_tui.flow.services)."""
        self.members: dict[str, tuple[ClusterAccess, Reconciler | None]] = {}
        """With several contexts: each opened context's access and reconciler (the focused one's is `reconciler`)."""
        for name, opened in (contexts or {}).items():
            if isinstance(opened, str):
                self.state.context_errors[name] = opened
            else:
                self.members[name] = (opened, None)
                self.state.contexts[name] = None
        self.intents = Intents()
        """What screens do besides posting messages: subscriptions, reads now, the log follower."""
        self.tunnels: dict = {}
        """(job, target) -> cluster.tunnel.Tunnel opened by `F`, open until the app exits."""
        self._alerts_seen: dict[str, object] = {}
        self._alert_seq: dict[str, int] = {}
        self._alert_counts: dict[str, dict[str, int]] = {}
        self._alert_firing: dict[str, list[alert_rules.Alert]] = {}
        """Per context ("" with one): the last alert book seen, its last event, its firing counts and alerts."""
        self._unshown_alerts: list[alert_rules.Alert] = []
        self._alert_toast_until = float("-inf")
        self._alert_toast_due = False
        self._summary: tuple[tuple | None, float] = (None, float("-inf"))
        self.ack_file = acks.AckFile()
        """The acknowledgements file the app writes (on its worker, tui/work.py)."""
        self._crashed: BaseException | None = None
        """The unhandled exception that ends the app (_handle_exception), for its report."""
        self.crash_line = ""
        """What run_tui prints once the terminal is back: one line that names a crash's report, or says the view
        settings could not be kept at the end."""
        self._views_unwritten: dict[str, ViewSettings] = {}
        """View settings changed but not written yet, by context (_keep_views)."""
        self._views_timer: Timer | None = None
        self._terminal_text = TerminalText()
        self._teller = Teller(self._say_background, self._known_secrets)
        """Tells a bug off the app's own path: a poll's task, a thread, a worker (on_mount hooks it)."""
        self._thread_hook = threading.excepthook
        """Python's hook for a thread's exception, put back when the app ends."""

    def get_line_filters(self) -> list[LineFilter]:
        """Textual's filters (truecolor, no colour, dimming), then the terminal's guard (TerminalText) on every line
        drawn, which applies the last of them itself (one Strip a line, not two). The guard is kept while that
        filter is: a Strip caches what each filter made of it."""
        filters = list(super().get_line_filters())
        first = filters.pop() if filters else None
        if self._terminal_text.first is not first:
            self._terminal_text = TerminalText(first)
        return [*filters, self._terminal_text]

    def notify(self, message: str | list[str], *, title: str = "", severity="information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A toast, never parsed as markup (messages quote Job names, log lines and API errors, where
        `[@click=...]` would be an action), without control characters, and one line (a line break in a quoted Job
        name forged a line of its own: 'x<LF>all green'); a list is a toast of those lines, each one line. Each
        line is cut at sinks.FIELD_CHARS, the rest counted: a Job's 100 KB name made a toast 1,800 rows high over
        the whole screen. A list of more than TOAST_LINES shows its first lines and counts the rest (a bulk stop of
        5,000 marked Jobs was a toast of 5,001 lines). `markup` is taken and not used: a screen's or widget's
        `notify` (Textual's Widget.notify) asks for markup by default."""
        lines = message if isinstance(message, list) else [message]
        if len(lines) > TOAST_LINES:
            lines = [*lines[:TOAST_LINES - 1], f"… and {len(lines) - TOAST_LINES + 1:,} more lines"]
        text = "\n".join(one_line(cut(str(line))) for line in lines)
        super().notify(text, title=one_line(cut(title)), severity=severity, timeout=timeout, markup=False)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The command palette's Screenshot, written through the one writer (local/fsutil: only in a directory of
        the user's own, never through a link, 0600) to the working directory, as a saved log is, instead of
        Textual's plain open() in the downloads directory, which follows a link and writes wherever it is."""
        from rlark_tui.local.fsutil import in_working_dir, write_private
        from rlark_tui.text.sinks import file_name
        stamp = time.strftime(time_format or "%Y%m%d-%H%M%S")
        target = in_working_dir(path or "") / (filename or f"{file_name(self.title)}-screenshot-{stamp}.svg")
        try:
            write_private(target, self.export_screenshot())
        except (OSError, RlarkError) as exc:
            self.notify(f"Cannot save the screenshot: {getattr(exc, 'strerror', None) or exc}", severity="error")
            return None
        self.notify(f"Screenshot saved to {target}")
        return None

    # ---- a crash ----------------------------------------------------------------------------------
    # Textual has no public hook for an unhandled exception: every path of one (a handler, a timer, a worker with
    # exit_on_error) calls App._handle_exception, which ends in App._fatal_error, and that prints rich's traceback
    # with show_locals=True, where a local may hold a token or a Job's env. These two overrides, of this app
    # only, keep Textual's bookkeeping (exit code 1, the Pilot's re-raise) and replace what is shown: one line
    # (printed by run_tui: rich would wrap or crop it to the terminal's width), and the report (local/crash.py: no
    # locals, masked, 0600).
    def _handle_exception(self, error: Exception) -> None:
        self._crashed = error
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        from textual.worker import WorkerFailed

        from rlark_tui.local.crash import write_report

        error = self._crashed
        if isinstance(error, WorkerFailed):
            error = error.error
        self.bell()
        line = write_report(error, self._known_secrets()) if error is not None else "rlark: crashed"
        self.crash_line = line
        self._close_messages_no_wait()

    @property
    def index(self) -> SnapshotIndex | None:
        return self.state.index

    def on_mount(self) -> None:
        # a bug off the app's own path (a poll's task, a thread, a worker) is one toast naming a masked report
        asyncio.get_running_loop().set_exception_handler(self._teller.loop_handler)
        self._thread_hook, threading.excepthook = threading.excepthook, self._teller.thread_hook
        self.set_timer(GC_PAUSE_MAX_SECONDS, resume_collector)
        self.push_screen(JobListScreen())
        self.theme_changed_signal.subscribe(self, self._keep_theme)
        if self.access is not None:  # (without a cluster the app only renders what is posted to it)
            self._read_views(self.views_key())
        self.intents.subscribe(ALERTS, ALL_KEY)
        self.intents.subscribe(USAGE, ALL_KEY)
        if self.members:
            for name in self.members:
                self._start_member(name)
        elif self.access is not None:
            self._start_reconciler(self.access)

    # ---- snapshots -------------------------------------------------------------------------------
    def _start_reconciler(self, access: ClusterAccess, start: SnapshotIndex | None = None) -> None:
        # held: the rest of the reads start once the first list (or why there is none) is on screen
        self.reconciler = Reconciler(access, start=start, hold=True, topics=self.topics)
        self.reconciler.set_pace(1.0 if self.app_focus else BLURRED_PACE)
        self.intents.attach(self.reconciler)
        self.run_worker(self.reconciler.run(self._published), name="reconciler", group="reconciler",
                        exit_on_error=False)

    def _start_member(self, name: str, start: SnapshotIndex | None = None) -> None:
        """One context's reconciler, among several; the focused one's serves the screens' subscriptions. Each
        evaluates the alert rules of its own Jobs (:alerts and the toasts cover every context)."""
        access, _old = self.members[name]
        reconciler = Reconciler(access, start=start)
        reconciler.set_pace(1.0 if self.app_focus else BLURRED_PACE)
        self.members[name] = (access, reconciler)
        if access is self.access:
            self.reconciler = reconciler
            self.intents.attach(reconciler)
        reconciler.subscribe(ALERTS, ALL_KEY)
        self.run_worker(reconciler.run(partial(self._published_in, name)), name=f"reconciler {name}",
                        group="reconciler", exit_on_error=False)

    def _published_in(self, context: str, published) -> None:
        self.post_message(messages.ContextSnapshot(context, published.snapshot, published.index))

    def on_context_snapshot(self, message: messages.ContextSnapshot) -> None:
        """A new index of one of several contexts: the merged list and the header follow; the focused context's
        is shown on every screen."""
        self.state.context_index(message.context, message.index)
        if message.context == self.state.context:
            self.apply_snapshot(message.snapshot, message.index)
            resume_collector()
            give_back_large_blocks()
        else:
            self._new_alerts(message.snapshot, message.context)
            self._show_merged()

    def _show_merged(self) -> None:
        """The job list and every header after another context changed (the focused index is the same)."""
        if not self.is_running:
            return
        for screen in self.screen_stack:
            if not (isinstance(screen, RlarkScreen) and screen.ready):
                continue
            if screen.shows_every_context and self.state.index is not None:
                screen.show_snapshot(self.state.index)
            else:
                screen.update_header()

    def on_focus_context(self, message: messages.FocusContext) -> None:
        self._focus(message.context)

    def _focus(self, name: str) -> None:
        """Several contexts: the Job screens, actions, logs, execs and checks go to `name`'s own ClusterAccess from
        now on (its credentials, the read-only setting with its own Actions); the marks of the previous one go."""
        member = self.members.get(name)
        if member is None:
            why = self.state.context_errors.get(name, "not one of the contexts shown")
            self.notify(f"context {name}: {why}", severity="error")
            return
        access, reconciler = member
        if access is self.access:
            return
        self.access, self.reconciler = access, reconciler
        self.actions = Actions(access, readonly=self.readonly)
        self.state.focus(access)
        self.state.readonly = self.actions.readonly
        self.state.marked.clear()
        self.intents.attach(reconciler)
        for _access, other in self.members.values():  # attach took the shared reads off the previous one
            if other is not None:
                other.subscribe(ALERTS, ALL_KEY)
        for screen in self.screen_stack:
            if isinstance(screen, JobListScreen) and screen.ready:
                screen.repaint()
        if self.state.index is not None:
            self.apply_snapshot(self.state.index.snapshot, self.state.index)
        self._show_merged()

    def watch_app_focus(self, focused: bool) -> None:
        """The terminal lost focus (it reports focus changes; tmux does with `focus-events on`): every context's
        periodic reads slow to a fifth; watches still bring every change. Focus back (reported, or a key or click):
        the reads overdue at their own pace run at once."""
        for reconciler in {self.reconciler, *(member for _access, member in self.members.values())}:
            if reconciler is not None:
                reconciler.set_pace(1.0 if focused else BLURRED_PACE)

    def _published(self, published) -> None:
        """The reconciler's new Snapshot and index, as a message (a newer one waiting supersedes it)."""
        self.post_message(messages.SnapshotChanged(published.snapshot, published.index))

    def on_snapshot_changed(self, message: messages.SnapshotChanged) -> None:
        """Every SnapshotChanged (from the reconciler) re-renders every screen."""
        self.apply_snapshot(message.snapshot, message.index)
        reconciler = self.reconciler
        if reconciler is not None and reconciler.held:
            self.call_after_refresh(self.first_list_shown, message.snapshot.version)

    def first_list_shown(self, version: int) -> None:
        """The Snapshot of `version` is painted: once it holds the first Jobs answer, the reconciler starts its
        other reads, and the cycle collector `rlark` paused for the start (cli._open_tui) runs again. Large blocks
        are given back from then on (local/startup.py), before the other kinds' lists come."""
        reconciler = self.reconciler
        if reconciler is not None:
            give_back_large_blocks()
            reconciler.release(version)
            if not reconciler.held:
                resume_collector()

    def apply_snapshot(self, snapshot: Snapshot, index: SnapshotIndex | None = None) -> None:
        """Show `snapshot` on every screen, with its index (built here, from the previous one, when not given)."""
        if not self.is_running:
            return
        old = self.index
        if old is None or old.snapshot is not snapshot:
            fresh, current = True, index if index is not None else SnapshotIndex(snapshot, old)
            self.state.index = current
        else:
            fresh, current = False, old
        for screen in self.screen_stack:
            if isinstance(screen, RlarkScreen) and screen.ready:
                screen.show_snapshot(current)
        self._new_alerts(snapshot)
        changed = current.rows_changed_since(old.serial) if old is not None else None
        if fresh and (changed is None or len(changed) >= FREEZE_AFTER_JOBS):
            # a (re)list just loaded many long-lived objects (local/startup.py)
            freeze_long_lived()

    @property
    def alert_thresholds(self) -> Thresholds:
        config = getattr(self.access, "config", None)
        return getattr(config, "alerts", None) or Thresholds()

    def _new_alerts(self, snapshot: Snapshot, context: str | None = None) -> None:
        """A new warning or critical alert raises a toast and rings the bell (`alerts.bell`), optionally with an
        OSC 9 / OSC 777 desktop notification (`alerts.notify`); the counts go to the state dir for `rlark status`
        (summed over the contexts when there are several). `context`: whose Snapshot (the focused one's)."""
        context = self.state.context if context is None and self.members else context or ""
        state = snapshot.alerts.get(ALL_KEY)
        if not isinstance(state, alert_rules.AlertsState) or state is self._alerts_seen.get(context):
            return
        self._alerts_seen[context] = state
        book = state.book
        new = [event for event in book.events_after(self._alert_seq.get(context, 0))
               if event.state == alert_rules.FIRING
               and event.alert.severity in (alert_rules.CRITICAL, alert_rules.WARNING)]
        self._alert_seq[context] = book.seq
        if new:
            self._unshown_alerts += [event.alert for event in new]
            self._toast_alerts()
        thresholds = self.alert_thresholds
        if new and thresholds.bell:
            self.bell()
        if new and thresholds.notify:
            self._desktop_notify(f"rlark: {new[0].alert.job or new[0].alert.object} {new[0].alert.rule}"
                                 + (f" (+{len(new) - 1})" if len(new) > 1 else ""))
        self._alert_counts[context] = book.counts()
        self._alert_firing[context] = book.firing()
        summed: dict[str, int] = {}
        for counts in self._alert_counts.values():
            for key, value in counts.items():
                summed[key] = summed.get(key, 0) + value
        firing = sorted(((name, alert) for name, found in self._alert_firing.items() for alert in found),
                        key=lambda pair: (alert_rules.SEVERITIES.index(pair[1].severity), pair[1].fired_at))
        self._write_summary(summed, firing)

    def _toast_alerts(self) -> None:
        """At most one alert toast on screen, so that alerts never crowd out the user's own messages: the new alerts
        (warning and critical; info never toasts) in one toast, or, while the last alert toast is still up, in the
        next one once it is gone."""
        wait = self._alert_toast_until - time.monotonic()
        if wait > 0:
            if not self._alert_toast_due:
                self._alert_toast_due = True
                self.set_timer(wait, self._toast_alerts_due)
            return
        alerts, self._unshown_alerts = self._unshown_alerts, []
        if not alerts:
            return
        title, text, critical = alert_rules.toast(alerts)
        self.notify(text, title=title, severity="error" if critical else "warning", timeout=ALERT_TOAST_SECONDS)
        self._alert_toast_until = time.monotonic() + ALERT_TOAST_SECONDS

    def _toast_alerts_due(self) -> None:
        self._alert_toast_due = False
        self._toast_alerts()

    def _desktop_notify(self, text: str) -> None:
        """OSC 9 (iTerm2, Windows Terminal, kitty…) and OSC 777 (VTE, rxvt) notifications, the text (a Job name from
        the control plane) through sinks.notification."""
        driver = getattr(self, "_driver", None)
        if driver is not None:
            safe = notification(text)
            driver.write(f"\x1b]9;{safe}\x07\x1b]777;notify;rlark;{safe}\x07")

    def _write_summary(self, counts: dict[str, int], firing: list[tuple[str, alert_rules.Alert]]) -> None:
        """`firing`: each firing alert with its context ('' with one context)."""
        last, at = self._summary
        now = time.monotonic()
        seen = (counts, [(context, alert.key) for context, alert in firing])
        if seen == last and now - at < SUMMARY_SECONDS:
            return
        self._summary = (seen, now)
        self.write_alert_summary(counts, firing)

    # ---- view settings per context (model/views.py, local/config.py) --------------------------------
    def views_key(self) -> str:
        """Whose view settings are shown: the context's, or with several contexts those of the set (`a+b`)."""
        return "+".join(self.state.contexts) if self.state.contexts else self.state.context

    @work(thread=True, exclusive=True, group="views-read", exit_on_error=False)
    def _read_views(self, key: str) -> None:
        from rlark_tui.local.config import load_views
        settings, warning = load_views(key)
        self.call_from_thread(self._views_read, key, settings, warning)

    def _views_read(self, key: str, settings: ViewSettings, warning: str) -> None:
        """The context's saved view: the theme (unless `--theme` chose one) and each shown table's view."""
        if key != self.views_key():
            return
        self.state.views = settings
        if warning:
            self.notify(warning, severity="warning", timeout=8, markup=False)
        if settings.theme and not self.theme_fixed and settings.theme in self.available_themes:
            self.theme = settings.theme
        for screen in self.screen_stack:
            if isinstance(screen, RlarkScreen) and screen.ready:
                screen.restore_view()

    def on_keep_view(self, message: messages.KeepView) -> None:
        if self.state.views is not None:
            self._keep_views(self.state.views.with_table(message.table, message.view))

    def _keep_theme(self, theme: Theme) -> None:
        if self.state.views is not None:
            self._keep_views(self.state.views.with_theme(theme.name))

    def _keep_views(self, settings: ViewSettings) -> None:
        """Keep `settings` as the context's view; written on a worker, the newest only, VIEWS_WRITE_SECONDS after
        the last change."""
        if settings == self.state.views:
            return
        self.state.views = settings
        key = self.views_key()
        self._asked(("views", key), settings)
        self._views_unwritten[key] = settings
        if self._views_timer is None:
            self._views_timer = self.set_timer(VIEWS_WRITE_SECONDS, self._views_settled)
        else:
            self._views_timer.reset()  # counts from the end of the wait it is in: 1-2 s after the last change

    def _views_settled(self) -> None:
        self._views_timer = None
        unwritten, self._views_unwritten = self._views_unwritten, {}
        self._write_views(unwritten)

    @work(thread=True, exclusive=True, group="views-write", exit_on_error=False)
    def _write_views(self, unwritten: dict[str, ViewSettings]) -> None:
        failed = self._written_views(unwritten)
        if failed:
            self.call_from_thread(self.notify, failed, severity="warning", markup=False)

    def _written_views(self, unwritten: dict[str, ViewSettings]) -> str:
        """Write each context's view (the newest asked for only), every one even when another could not be; why
        the first that could not be was not, "" when all were."""
        from rlark_tui.local.config import save_views
        failed = ""
        for key, settings in unwritten.items():
            try:
                self._write_newest(("views", key), settings, functools.partial(save_views, key))
            except (OSError, RlarkError) as exc:
                failed = failed or f"view settings not kept: {clean(str(exc))}"
        return failed

    def on_alerts_acknowledged(self, message: messages.AlertsAcknowledged) -> None:
        if message.error:
            self.notify(f"could not keep the acknowledgement: {message.error}", severity="error")
            return
        self.intents.poll_now(ALERTS, ALL_KEY)
        self.notify("acknowledged: it stays quiet, also after a restart", timeout=3)

    def refresh_now(self) -> None:
        """Refresh by hand (ctrl+r): restart the reconciler, which lists every kind again."""
        if self.access is None:
            self.notify("not connected to a cluster: nothing to refresh", severity="warning")
            return
        self.workers.cancel_group(self, "reconciler")
        if self.members:
            for name, (_access, reconciler) in list(self.members.items()):
                self._start_member(name, start=reconciler.index if reconciler is not None else None)
            self.notify("Listing everything again from every context…", timeout=2)
            return
        self._start_reconciler(self.access, start=self.reconciler.index if self.reconciler is not None else None)
        self.notify("Listing everything again from the control plane…", timeout=2)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A background job that failed unexpectedly becomes one line on screen naming its masked report, never a
        traceback nor the exception's message (it may quote cluster text or a secret)."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self._teller(event.worker.error)

    def _say_background(self, line: str) -> None:
        """The Teller's line, as a toast, from any thread (call_later posts a message: thread-safe); said nowhere once
        the app has closed."""
        with contextlib.suppress(RuntimeError):
            self.call_later(self.notify, line, severity="error", timeout=10)

    def _known_secrets(self) -> set[str]:
        """The Jobs' secret env values, which a report masks wherever they show."""
        from rlark_tui.text.redact import secret_values

        known: set[str] = set()
        for job in self.index.jobs.values() if self.index is not None else ():
            known |= secret_values(job.raw)
        return known

    # ---- navigation ------------------------------------------------------------------------------
    def on_open_job(self, message: messages.OpenJob) -> None:
        self.open_job(message.name, message.tab)

    def on_open_logs(self, message: messages.OpenLogs) -> None:
        self.open_logs(message.name, message.scope, message.previous)

    def on_open_check(self, message: messages.OpenCheck) -> None:
        self.open_check(message.name)

    def on_open_stacks(self, message: messages.OpenStacks) -> None:
        self.open_stacks(message.name)

    def on_open_compare(self, message: messages.OpenCompare) -> None:
        from rlark_tui.screens.compare import CompareScreen

        self.push_screen(CompareScreen(message.names))

    def on_open_wizard(self, _message: messages.OpenWizard) -> None:
        self.open_wizard()

    def on_stop_start_job(self, message: messages.StopStartJob) -> None:
        self.request_stop_start(message.name)

    def on_delete_job(self, message: messages.DeleteJob) -> None:
        self.request_delete(message.name)

    def on_bulk_action(self, message: messages.BulkAction) -> None:
        self.request_bulk(message.verb, message.names)

    def on_clone_job(self, message: messages.CloneJob) -> None:
        self.open_clone(message.name)

    def on_edit_job(self, message: messages.EditJob) -> None:
        self.open_edit(message.name)

    def on_restart_job(self, message: messages.RestartJob) -> None:
        self.request_restart(message.name)

    def on_resume_job(self, message: messages.ResumeJob) -> None:
        self.request_resume(message.name, message.checkpoint, message.location)

    def on_open_diff(self, message: messages.OpenDiff) -> None:
        from rlark_tui.screens.diff import DiffScreen

        self.push_screen(DiffScreen(message.first, message.second))

    def on_open_shell(self, message: messages.OpenShell) -> None:
        self.open_shell(message.name, message.scope)

    def on_open_tunnels(self, message: messages.OpenTunnels) -> None:
        self.open_tunnels(message.name)

    def on_job_submitted(self, message: messages.JobSubmitted) -> None:
        """Back on the job list, the new Job is selected as soon as a Snapshot lists it."""
        self.state.wanted_job = message.name
        if self.index is not None:
            self.apply_snapshot(self.index.snapshot)

    def _base_screen(self) -> None:
        while len(self.screen_stack) > 2:
            self.pop_screen()

    def open_job(self, name: str, tab: str = "workers") -> None:
        from rlark_tui.screens.job_detail import JobDetailScreen

        self.push_screen(JobDetailScreen(name, tab))

    def open_logs(self, name: str, scope: Scope, previous: bool = False) -> None:
        """Logs of `scope`; the Header role is its task's Pods (all Pods without one; `a` in the pane merges all)."""
        from rlark_tui.screens.logs import LogScreen

        if scope.kind == "header":
            job = self.index.job(name) if self.index is not None else None
            scope = Scope.role(job.head_task_name) if job is not None and job.head_task_name else Scope.ALL

        self.push_screen(LogScreen(name, scope, previous))

    def open_wizard(self) -> None:
        from rlark_tui.screens.wizard import WizardScreen

        self.push_screen(WizardScreen())

    def open_clone(self, name: str) -> None:
        """The wizard on a copy of the Job (jobspec/clone.py: a free `<name>-copy`, a new run id and prefix)."""
        from datetime import datetime

        from rlark_tui.jobspec.clone import clone_of
        from rlark_tui.screens.wizard import WizardScreen

        index, job = self.index, self._job(name)
        if index is None or job is None:
            return
        recovered = clone_of(job.raw, index.snapshot.jobs, datetime.now(UTC))
        if self._too_many_roles(name, recovered.draft):
            return
        self.push_screen(WizardScreen(recovered.draft))
        self._say_notes(f"Clone of {name} as {recovered.draft.name}", recovered.notes)

    def open_edit(self, name: str) -> None:
        """The wizard on the Job's own draft, its name locked: Submit is the console's Edit-and-restart."""
        from rlark_tui.jobspec.clone import draft_of
        from rlark_tui.screens.wizard import WizardScreen

        job = self._job(name)
        if job is None:
            return
        if self._refuse_readonly(f"edit job {name}"):
            return
        why_not = can_stop_or_start(job, "an edit")
        if why_not:
            self.notify(why_not, severity="warning", timeout=8)
            return
        recovered = draft_of(job.raw)
        if self._too_many_roles(name, recovered.draft):
            return
        self.push_screen(WizardScreen(recovered.draft, lock_name=True))
        self._say_notes(f"Edit of {name}: Submit replaces its spec and restarts it", recovered.notes)

    def _too_many_roles(self, name: str, draft) -> bool:
        """A Job of more tasks than a draft may have roles (jobspec.draft.MAX_ROLES: its author sets how many) is
        not opened in the wizard, one line: its rows held the UI thread for minutes."""
        from rlark_tui.jobspec.draft import too_many_roles

        why = too_many_roles(draft, f"Job {one_line(name)}")
        if why:
            self.notify(why, severity="warning", timeout=8)
        return bool(why)

    def _say_notes(self, what: str, notes: tuple[str, ...]) -> None:
        self.notify(what + ("" if not notes else ". Not recovered: " + "; ".join(notes)),
                    severity="warning" if notes else "information", timeout=12 if notes else 4)

    def open_check(self, name: str) -> None:
        from rlark_tui.screens.check import CheckScreen

        self.push_screen(CheckScreen(name))

    def open_stacks(self, name: str) -> None:
        from rlark_tui.screens.stacks import StacksScreen

        self.push_screen(StacksScreen(name))

    def show_help(self, screen) -> None:
        """`?`: the keys live on `screen` (its own first, then the focused widget's), one line per action."""
        grouped: dict[tuple[int, str], list[str]] = {}
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.description or not active.enabled or binding.system:
                continue
            if binding.action in NOISE_ACTIONS or binding.action.startswith("app.focus"):
                continue
            if isinstance(screen, RlarkScreen) and not screen.check_action(binding.action, ()):
                continue
            rank = 0 if active.node is screen else (2 if active.node is self else 1)
            label = binding.key_display or self.get_key_display(binding)
            labels = grouped.setdefault((rank, binding.description), [])
            if label not in labels:
                labels.append(label)
        keys = [(" ".join(labels), description) for (_, description), labels in sorted(
            grouped.items(), key=lambda item: item[0][0])]
        from rlark_tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(getattr(screen, "crumb", "") or "rlark", keys, getattr(screen, "help_notes", ())))

    def run_command(self, text: str) -> None:
        """`:` command mode: jobs, nodes, clusters, workflows, storage, sshkeys, ns [NAME|all], ctx [NAME], q."""
        words = text.strip().lstrip(":").split()
        if not words:
            return
        command, args = words[0].lower(), words[1:]
        if command in ("jobs", "job", "rljob", "j"):
            self._base_screen()
        elif command in ("nodes", "node", "no", "rlnode"):
            from rlark_tui.screens.nodes import NodeListScreen

            self._base_screen()
            self.push_screen(NodeListScreen())
        elif command in ("workflows", "workflow", "wf", "rlwf"):
            from rlark_tui.screens.workflows import WorkflowsScreen

            self._base_screen()
            self.push_screen(WorkflowsScreen())
        elif command in ("alerts", "alert", "al"):
            from rlark_tui.screens.alerts import AlertsScreen

            self._base_screen()
            self.push_screen(AlertsScreen())
        elif command in ("ns", "namespace", "namespaces"):
            self._command_ns(args)
        elif command in ("ctx", "context", "contexts"):
            self._command_ctx(args)
        elif command in ("q", "quit", "exit"):
            self.exit(0)
        elif not self.console_command(command):
            self.notify(f"unknown command :{command} — try :jobs, :nodes, :clusters, :workflows, :storage, "
                        ":sshkeys, :records, :pods, :events, :alerts, :overview, :ns, :ctx or :q", severity="warning")

    def _command_ns(self, args: list[str]) -> None:
        if args:
            self._set_namespace(args[0])
            return
        from rlark_tui.screens.nodes import PickerScreen
        from rlark_tui.view.nodes import namespaces

        choices = ["all"] + (namespaces(self.index) if self.index is not None else [])
        self.push_screen(PickerScreen("Namespace (cluster)", choices, self.state.namespace or "all"),
                         self._set_namespace)

    def _set_namespace(self, name: str | None) -> None:
        if name is None:
            return
        self.state.namespace = "" if name == "all" else name
        self.notify(f"namespace: {name}", timeout=2)
        if self.index is not None:
            self.apply_snapshot(self.index.snapshot)
        for screen in self.screen_stack:
            if isinstance(screen, RlarkScreen) and screen.ready:
                screen.update_header()

    def _command_ctx(self, args: list[str]) -> None:
        contexts = list(self.members) or sorted(getattr(getattr(self.access, "kubeconfig", None), "contexts", {})
                                                or [])
        if not contexts:
            self.notify("no kubeconfig contexts known", severity="warning")
        elif args:
            self._switch_context(args[0])
        else:
            from rlark_tui.screens.nodes import PickerScreen

            self.push_screen(PickerScreen("Kubeconfig context", contexts, self.state.context),
                             self._switch_context)

    def _switch_context(self, name: str | None) -> None:
        if name is None or name == self.state.context:
            return
        if self.members:
            self._focus(name)
            return
        access = self.access
        if access is None or access.kubeconfig is None or name not in access.kubeconfig.contexts:
            self.notify(f"no context {name!r} in the kubeconfig", severity="error")
            return
        self._open_context(access, name)

    @work(thread=True, exclusive=True, group="context", exit_on_error=False)
    def _open_context(self, access: ClusterAccess, name: str) -> None:
        try:
            new_access = type(access)(access.kubeconfig, name, access.config, access.request_timeout,
                                      access.server_options)
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"context {name}: {exc}", severity="error")
            return
        self.call_from_thread(self._use_access, new_access)

    def _use_access(self, access: ClusterAccess) -> None:
        self.workers.cancel_group(self, "reconciler")
        old, self.access = self.access, access
        self.actions = Actions(access, readonly=self.readonly)
        self.state.connect(access)
        self.state.readonly = self.actions.readonly
        self._base_screen()
        self._start_reconciler(access)
        for screen in self.screen_stack:
            screen.post_message(messages.ContextChanged(access.context))
        self.state.views = None
        self._read_views(self.views_key())
        self.notify(f"context: {access.context}")
        if old is not None:
            old.close()

    # ---- into the Pod ----------------------------------------------------------------------------
    def open_shell(self, name: str, scope: Scope) -> None:
        """`x`: a shell in the scope's Pod (podshell); Textual is suspended until it exits."""
        from textual.app import SuspendNotSupported

        from rlark_tui.local.podshell import run_shell, shell_pod

        if self._refuse_readonly(f"open a shell in a Pod of job {name}"):
            return
        pod = shell_pod(self.index, name, scope) if self.index is not None else None
        if pod is None or self.access is None:
            self.notify(f"job {name} has no Pod to open a shell in yet", severity="warning")
            return
        try:
            self.notify(run_shell(self, pod), timeout=4)
        except SuspendNotSupported:
            self.notify("this terminal cannot hand itself over to a shell; use `rlark exec` instead",
                        severity="error")
        except RlarkError as exc:
            self.notify(f"shell: {exc}", severity="error", timeout=10)

    @work(thread=True, group="tunnels", exit_on_error=False)
    def open_tunnels(self, name: str) -> None:
        """`F`: tunnels to the Job's Ray dashboard and TensorBoard (kept until the app exits), then their URLs."""
        from rlark_tui.local.podshell import open_tunnels

        if self.access is None:
            self.call_from_thread(self.notify, "not connected to a cluster: no tunnel to open", severity="warning")
            return
        try:
            shown = open_tunnels(self.access, self.actions, name, self.tunnels, self._teller.loop_handler)
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"tunnels of {name}: {exc}", severity="error", timeout=8)
            return
        self.call_from_thread(self._show_tunnels, name, shown)

    def _show_tunnels(self, name: str, shown: list) -> None:
        from rlark_tui.screens.tunnels import TunnelsScreen

        self.push_screen(TunnelsScreen(name, shown, self.actions.readonly))

    def on_unmount(self) -> None:
        if threading.excepthook == self._teller.thread_hook:
            threading.excepthook = self._thread_hook
        failed = self._written_views(self._views_unwritten)
        self._views_unwritten = {}
        if failed and not self.crash_line:
            self.crash_line = failed
        for tunnel in self.tunnels.values():
            tunnel.stop()
        self.tunnels.clear()

    # ---- mutations -------------------------------------------------------------------------------
    def action_refused(self, key: str) -> None:
        """A mutation key reaches the app only when the screen hides it (read-only mode): actions.py says why, in
        the screen's words for what the key would have changed."""
        refusal = getattr(self.screen, "refusal", None)
        what = refusal(key) if self.actions.readonly and refusal is not None else None
        if what:
            self._refuse_readonly(what)

    def _refuse_readonly(self, what: str) -> bool:
        """Ask the actions module (the one place read-only is enforced) before showing any dialog."""
        try:
            self.actions.guard(what)
        except RlarkError as exc:
            self.notify(str(exc), severity="error")
            return True
        return False

    def _job(self, name: str) -> Job | None:
        job = self.index.job(name) if self.index is not None else None
        if job is None:
            self.notify(f"Job {name} is not in the current snapshot", severity="warning")
        return job

    def _pod_count(self, job: Job) -> int:
        """How many Pods of `job` the current snapshot holds (what a dialog says a mutation touches)."""
        return len(self.index.job_pods(job)) if self.index is not None else 0

    # Read-only is checked once on the way to a mutation: the screens hide the keys (RlarkScreen.MUTATIONS, the
    # palette leaves them out) and actions.py refuses; the app's `refused` binding says so when a hidden key is
    # pressed.
    def request_stop_start(self, name: str) -> None:
        job = self._job(name)
        if job is None:
            return
        action = "start" if job.stopped else "stop"
        if self._refuse_readonly(f"{action} job {name}"):  # a context its kubeconfig makes read-only
            return
        why_not = can_stop_or_start(job)
        if why_not:
            self.notify(why_not, severity="warning", timeout=8)
            return
        from rlark_tui.screens.confirm import ConfirmScreen

        title, body = consequences(action, name, self._pod_count(job))
        self.push_screen(ConfirmScreen(title, body, action.capitalize(), dangerous=action == "stop"),
                         partial(self._confirmed, action, name))

    def request_restart(self, name: str) -> None:
        """The console's Restart after a confirm dialog that says it only un-stops."""
        job = self._job(name)
        if job is None:
            return
        if self._refuse_readonly(f"restart job {name}"):
            return
        why_not = can_stop_or_start(job, "restart")
        if why_not:
            self.notify(why_not, severity="warning", timeout=8)
            return
        from rlark_tui.screens.confirm import ConfirmScreen

        title, body = consequences("restart", name, self._pod_count(job))
        self.push_screen(ConfirmScreen(title, body, "Restart"), partial(self._confirmed, "restart", name))

    def request_resume(self, name: str, checkpoint: Checkpoint, location: str) -> None:
        """`u` on the Checkpoints tab: what `rlark resume --from` does, the diff in the dialog; an incomplete
        checkpoint only as a forced resume (a dialog that says what is missing); a finished Job's dialog says it is
        deleted and created again."""
        from rlark_tui.jobspec.jobdiff import diff_jobs, render_unified
        from rlark_tui.jobspec.resume import FORCE_NOTE, OVERRIDE, consequence, resumed, unchanged
        from rlark_tui.screens.confirm import ConfirmScreen
        from rlark_tui.text.redact import redact_text

        if self._refuse_readonly(f"resume job {name}"):
            return
        job = self._job(name)
        if job is None:
            return
        resume_dir = f"{location.rstrip('/')}/{checkpoint.name}"
        try:
            manifest = resumed(job.raw, resume_dir)
        except RlarkError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        diff = redact_text(render_unified(diff_jobs(job.raw, manifest), name, f"{name} (resumed)")).rstrip()
        forced = not checkpoint.complete
        title = (f"Force resume {name} from incomplete {checkpoint.name}?" if forced
                 else f"Resume {name} from {checkpoint.name} (step {checkpoint.step})?")
        same = unchanged(job.raw, manifest)
        body = ((f"Missing: {', '.join(checkpoint.missing)}. {FORCE_NOTE}\n" if forced else "")
                + f"{consequence(job.phase, same)}\n{OVERRIDE}={resume_dir}")
        self.push_screen(ConfirmScreen(clean(title), clean(body), "Force resume" if forced else "Resume",
                                       dangerous=forced,
                                       detail=clean(diff) or "(the run command already resumes from there: no change)"),
                         partial(self._resume_confirmed, manifest, name, checkpoint.name,
                                 "deleted and created again" if job.phase in TERMINAL_PHASES
                                 else "stopped and started again" if same else "replaced and restarted"))

    def _resume_confirmed(self, manifest: dict, name: str, checkpoint: str, done: str, answer: bool | None) -> None:
        if answer:
            self._resume(manifest, name, checkpoint, done)
        else:
            self.notify(f"resume of {name} cancelled: the job was not changed", timeout=2)

    @work(thread=True, group="mutations", exit_on_error=False)
    def _resume(self, manifest: dict, name: str, checkpoint: str, done: str) -> None:
        """The confirmed resume through rlark_tui.flow.actions (read-only refused there): an Edit & Restart, or
        for a finished Job the delete and re-create."""
        try:
            sent = self.actions.resume(manifest)
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"resume {name}: {exc}", severity="error", timeout=8)
            return
        self.call_from_thread(self.notify, f"job {name} {done} from {checkpoint} "
                                           f"(spec sha256 {sent.sha256[:16]}…)")

    def request_delete(self, name: str) -> None:
        job = self._job(name)
        if job is None or self._refuse_readonly(f"delete job {name}"):
            return
        from rlark_tui.screens.confirm import ConfirmScreen

        title, body = consequences("delete", name, self._pod_count(job))
        self.push_screen(ConfirmScreen(title, body, "Delete", dangerous=True),
                         partial(self._confirmed, "delete", name))

    def request_bulk(self, verb: str, names: list[str]) -> None:
        """`s` / `R` / `ctrl+d` with Jobs marked: one dialog listing each Job and what happens to it."""
        from rlark_tui.model.lifecycle import BULK_VERBS, bulk_consequences, bulk_plan
        from rlark_tui.screens.confirm import ConfirmScreen

        if self._refuse_readonly(f"{BULK_VERBS[verb].lower()} {len(names)} jobs"):
            return
        jobs = []
        for name in names:
            job = self.index.job(name) if self.index is not None else None
            jobs.append((name, job.stopped, job.phase, self._pod_count(job)) if job is not None
                        else (name, False, None, 0))
        plan = bulk_plan(verb, jobs)
        if not any(action for _, action, _ in plan):
            self.notify([f"{name}: {effect}" for name, _, effect in plan], severity="warning", timeout=8)
            return
        title, body = bulk_consequences(verb, plan)
        self.push_screen(ConfirmScreen(title, body, BULK_VERBS[verb], dangerous=verb != "restart"),
                         partial(self._bulk_confirmed, plan))

    def _bulk_confirmed(self, plan: list, answer: bool | None) -> None:
        if answer:
            self._mutate_bulk([(name, action) for name, action, _ in plan if action])
        else:
            self.notify(f"nothing done to the {len(plan)} marked Jobs", timeout=2)

    @work(thread=True, group="mutations", exit_on_error=False)
    def _mutate_bulk(self, steps: list[tuple[str, str]]) -> None:
        """Each marked Job through rlark_tui.flow.actions in turn; one failure does not stop the others, and the
        result says per Job what happened (a Job that succeeded is unmarked, a failed one stays marked)."""
        results, failed = [], []
        for name, action in steps:
            try:
                results.append((name, getattr(self.actions, action)(name)))
            except RlarkError as exc:
                failed.append(name)
                results.append((name, f"FAILED {action} {name}: {exc}"))
        self.call_from_thread(self._bulk_done, results, failed)

    def _bulk_done(self, results: list[tuple[str, str]], failed: list[str]) -> None:
        """`results`: each Job acted on and what came of it, in order; `failed`: the Jobs whose action failed."""
        marked, failing = self.state.marked, set(failed)
        done = [name for name, _ in results if name not in failing]
        for name in done:
            if name in marked:
                marked.remove(name)
        head = f"{len(done)} done, {len(failed)} failed" if failed else f"all {len(done)} done"
        lines = [line for name, line in results if name in failing]  # first: a long toast shows its first lines
        lines += [line for name, line in results if name not in failing]
        self.notify([head, *lines], severity="error" if failed else "information",
                    timeout=15 if failed else 8)
        for screen in self.screen_stack:
            if isinstance(screen, JobListScreen) and screen.ready:
                screen.show_marks(done)

    def _confirmed(self, action: str, name: str, answer: bool | None) -> None:
        if answer:
            self._mutate(action, name)
        else:
            self.notify(f"{action} of {name} cancelled", timeout=2)

    @work(thread=True, group="mutations", exit_on_error=False)
    def _mutate(self, action: str, name: str) -> None:
        """Run the confirmed action through rlark_tui.flow.actions; the result arrives by watch, not by polling."""
        try:
            message = getattr(self.actions, action)(name)
        except RlarkError as exc:
            self.call_from_thread(self.notify, f"{action} {name}: {exc}", severity="error", timeout=8)
            return
        self.call_from_thread(self.notify, message)


def run_tui(args, first_list=None, on_app: Callable[[RlarkApp], object] | None = None) -> int:
    """Open the TUI on the context the global flags name (`--kubeconfig`, `--context`, `--readonly`);
    `first_list`: its first Jobs list, read meanwhile (cluster.lean.FirstList); `on_app` is given the app before
    it runs (`rlark demo` ends it on a signal)."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.local.terminal import ends_with_terminal, no_color

    # Textual sizes itself with shutil.get_terminal_size, which takes COLUMNS and LINES over the terminal's size,
    # also after a resize: exported by a parent (a Python REPL's readline, pytest's xdist workers), they would pin
    # the TUI, $EDITOR and the Pod shell to that size. The terminal's own size is the one to follow.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
    plain = no_color(args)
    if plain:  # Textual reads it; so do the Pod shell and $EDITOR the TUI hands the terminal to
        os.environ["NO_COLOR"] = "1"
    if getattr(args, "bundle", None):
        return _run_bundle(args, plain)
    contexts = open_contexts(args)
    if contexts is None:
        access = ClusterAccess.from_args(args)
        access.first_list = first_list
    else:
        access = next(opened for opened in contexts.values() if not isinstance(opened, str))
    theme = getattr(args, "theme", None) or access.config.theme
    app = RlarkApp(access, readonly=bool(getattr(args, "readonly", False)), no_color=plain, theme=theme,
                   contexts=contexts, theme_fixed=bool(getattr(args, "theme", None)))
    if on_app is not None:
        on_app(app)
    try:
        with ends_with_terminal():
            app.run(mouse=not getattr(args, "no_mouse", False))
    finally:
        for opened in (contexts or {access.context: access}).values():
            if not isinstance(opened, str):
                opened.close()
        if app.crash_line:
            print(app.crash_line, file=sys.stderr)
    return app.return_code or 0


def _run_bundle(args, plain: bool) -> int:
    """`rlark --bundle FILE`: the TUI offline on a bundle (cluster/bundle_source.py), read-only."""
    from rlark_tui.cluster.bundle_source import BundleAccess
    from rlark_tui.local.terminal import ends_with_terminal

    access = BundleAccess(args.bundle)
    app = RlarkApp(access, readonly=True, no_color=plain, theme=getattr(args, "theme", None) or access.config.theme,  # type: ignore[arg-type]
                   topics=BUNDLE_TOPICS)
    try:
        with ends_with_terminal():
            app.run(mouse=not getattr(args, "no_mouse", False))
    finally:
        access.close()
        if app.crash_line:
            print(app.crash_line, file=sys.stderr)
    return app.return_code or 0


def open_contexts(args) -> dict[str, ClusterAccess | str] | None:
    """With several contexts (`--context A --context B`, `--all-contexts`): each one's ClusterAccess, opened in
    parallel (cluster/contexts.py), or why it could not be; None for one context. None of them opening is an
    error of its own, naming each."""
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.contexts import chosen, deadline, fan_out, narrowed

    names = chosen(args)
    if names is None:
        return None
    outcomes = fan_out(names, lambda name: ClusterAccess.from_args(narrowed(args, name)), deadline(args))
    opened: dict[str, ClusterAccess | str] = {o.context: o.value if o.value is not None else o.error
                                             for o in outcomes}
    if all(isinstance(value, str) for value in opened.values()):
        raise RlarkError("no context could be opened: " + "; ".join(f"context {name}: {why}"
                                                                     for name, why in opened.items()))
    return opened
