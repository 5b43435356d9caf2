"""Cluster-supplied text made safe for a terminal: no escape sequence, no control character (issue 26 item 6).

A Job's display name, image, env values, scripts, log lines, event messages and error bodies are written by
whoever runs Pods on the cluster. Printed raw, `ESC ] 52 ; c ; <base64> BEL` writes the user's clipboard (tmux
`set-clipboard on` forwards it), `ESC ] 0 ;` sets the window title, CSI sequences move the cursor over earlier
output and DCS strings talk to the terminal itself. Every such string goes through `clean` (or `clean_log`) on
its way to a terminal. The TUI gives Textual such text as Text or Content, never as markup, where `[red]` or
`[@click=...]` in a name would otherwise be styling or an action (no escaping makes it plain: see tui/app._highlighted).

Pure functions, linear in the length of the text: a string without any control character is returned as is
after one search. The patterns are compiled when first needed: every headless command's output passes `clean`
(local/terminal.py), and `rlark status --tmux`, which tmux runs every few seconds, prints one printable line
(bench alerts' status_tmux_s).
"""

from __future__ import annotations

import functools
import json
import re

_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
"""Every character a sequence starts with, every other control but `\\n` and `\\t`, the bidi controls and the
lone surrogates."""

_BIDI = r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
"""The bidi marks, embeddings, overrides and isolates: U+202E shows what follows it reversed, so a name or log line
could show text other than it holds (Trojan Source); and a lone surrogate (JSON's `\\ud800`, which a hostile
control plane may answer in a Job's name), which no terminal's UTF-8 holds: printed, it ended `rlark get jobs` in a
crash report (UnicodeEncodeError). Shown as their escapes (`\\u202e`, `\\ud800`)."""


def _bidi_escape(match: re.Match) -> str:
    return f"\\u{ord(match.group(0)):04x}"

_STRING_END = r"[^\x07\x1b\x9c\x90\x98\x9d\x9e\x9f\n]*(?:\x07|\x1b\\|\x9c)"
_SEQUENCE = (
    r"(?P<csi>(?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~]))"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])" + _STRING_END +
    r"|\x1b[ -/]*[0-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
"""CSI (7- and 8-bit), terminated OSC / DCS / SOS / PM / APC strings (an unterminated one loses only its
introducer, so its text stays visible: a terminal never sees a sequence start), two-character and nF escapes,
and any stray control character. String bodies stop at a newline and at any other string introducer, so each
character is scanned a bounded number of times."""

_SEQUENCE_START = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
"""Every character a `_SEQUENCE` match starts with: text before the first of them is left as it is. The engine
tries `_SEQUENCE`'s alternatives at every character (some 0.1 us each), where it finds a class as this one by a
scan: a 1 MB field whose only controls are bidi marks took some 50 ms of CPU to clean, now 14 ms."""

_SGR_PARAMS = r"[0-9;:]*"


@functools.cache
def compiled(pattern: str) -> re.Pattern[str]:
    """A pattern of rlark's own text modules (this one, sinks, redact's cut marks), compiled once, when first
    needed: a plain `rlark get` or `rlark status --tmux` prints printable lines and compiles none (the sinks'
    patterns of wide characters took 2 % of a `get jobs` over 5,000 Jobs to compile, bench/cli_get.py)."""
    return re.compile(pattern)


def _plain(text: str) -> bool:
    """Whether `text` is printable (or print's line end) and so holds nothing `_CONTROL` finds: every character
    it finds is a control (Cc), a format character (Cf) or a surrogate (Cs), none printable."""
    return text.isprintable() or text == "\n"


def clean(text: str) -> str:
    """`text` without escape sequences or control characters; `\\n` and `\\t` stay, `\\r\\n` becomes `\\n`, and
    a bidi control or a lone surrogate is shown as its escape (`\\u202e`)."""
    if not isinstance(text, str):
        text = str(text)
    if _plain(text) or compiled(_CONTROL).search(text) is None:
        return text
    text = text.replace("\r\n", "\n")
    start = compiled(_SEQUENCE_START).search(text)
    if start is not None:
        text = text[:start.start()] + compiled(_SEQUENCE).sub("", text[start.start():])
    return compiled(_BIDI).sub(_bidi_escape, text)


def _keep_sgr(match: re.Match) -> str:
    if match.group("csi") and match.group(0)[0] == "\x1b" and match.group("final") == "m" \
            and compiled(_SGR_PARAMS).fullmatch(match.group("params")):
        return match.group(0)
    return ""


def clean_log(line: str, keep_sgr: bool) -> str:
    """A log line for a terminal: `clean` (bidi controls escaped), but with `keep_sgr` SGR colour sequences (`ESC [ 1;31 m`) stay, as
    kubectl prints them to a terminal. Cursor movement, OSC (clipboard, title, hyperlinks), DCS and C1 controls
    are removed either way."""
    if compiled(_CONTROL).search(line) is None:
        return line
    sequences, bidi = compiled(_SEQUENCE), compiled(_BIDI)
    if not keep_sgr:
        return bidi.sub(_bidi_escape, sequences.sub("", line.replace("\r\n", "\n")))
    return bidi.sub(_bidi_escape, sequences.sub(_keep_sgr, line.replace("\r\n", "\n")))


_UNDRAWABLE = r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
"""What `clean` finds, and `\n` and `\t`: within one drawn line each is a control of its own."""
_SURROGATE = r"[\ud800-\udfff]"


def drawable(text: str) -> str:
    """Text of one line a widget drew, for the terminal (`tui/app.TerminalText`, every line of every widget):
    without any character `clean` finds (escape sequences' introducers, other controls, bidi controls) and without
    a line break or tab (a widget's line holds none: an Input given a Job's display name with a line break wrote
    the LF, and the terminal went on a row down); each takes no column, so the line keeps its width. A lone
    surrogate (one column) is U+FFFD. The last guard: a widget's text should have passed `clean` or
    `sinks.one_line` where it was taken in, which also shows a bidi control or a break as its escape."""
    if text.isprintable():
        return text
    return compiled(_UNDRAWABLE).sub("", compiled(_SURROGATE).sub("\ufffd", text))


_ASCII_CONTROLS = bytes([*range(0x09), *range(0x0b, 0x20), 0x7f])
"""The characters _CONTROL finds that are ASCII (its C1 range is not)."""


def clean_lines(lines: list[str], keep_sgr: bool) -> list[str]:
    """`[clean_log(line, keep_sgr) for line in lines]`, with one test of the whole batch: a log's lines mostly have
    no control character at all."""
    if not has_control("\n".join(lines)):
        return list(lines)
    return [clean_log(line, keep_sgr) for line in lines]


def has_control(text: str) -> bool:
    """Whether `text` holds any character `clean` would remove (or change). ASCII text is tested as bytes
    (deleting its control bytes changes its length exactly when it has one): cheaper than the regex on a
    screen row or a batch of log lines (bench/logs.py)."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data.translate(None, _ASCII_CONTROLS)) != len(data)
    return compiled(_CONTROL).search(text) is not None


def control_at(text: str, at: int = 0) -> int:
    """The index of the first character at or after `at` that `clean` removes or changes, -1 for none."""
    found = compiled(_CONTROL).search(text, at)
    return found.start() if found is not None else -1


_C1_IN_JSON = r"[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
"""DEL, C1 controls, line and paragraph separators and bidi controls: what `json.dumps(ensure_ascii=False)` leaves
raw in a string."""


def json_dumps(value, **kwargs) -> str:
    """`json.dumps` whose output is safe on a terminal even with `ensure_ascii=False`: C0 controls are escaped by
    json itself, DEL and C1 controls (`\\x9b` is CSI on some terminals), U+2028/U+2029 and bidi controls (U+202E
    reorders what follows it on the line) are escaped here. The text still parses to the same value."""
    text = json.dumps(value, **kwargs)
    return compiled(_C1_IN_JSON).sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)

