"""Cluster text reaches a terminal without escape sequences or control characters (issue 26 item 6)."""

import json

import pytest

from rlark_tui.text.sanitize import clean, clean_log, has_control, json_dumps

OSC52 = "\x1b]52;c;aGVsbG8=\x07"
OSC0_ST = "\x1b]0;pwned\x1b\\"

HOSTILE = [
    ("OSC 52 clipboard (BEL)", f"a{OSC52}b", "ab"),
    ("OSC 0 title (ST)", f"a{OSC0_ST}b", "ab"),
    ("OSC 8 hyperlink", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
    ("8-bit OSC", "a\x9d0;t\x9cb", "ab"),
    ("DCS", "a\x1bP+q544e\x1b\\b", "ab"),
    ("8-bit DCS", "a\x90qx\x9cb", "ab"),
    ("APC / PM / SOS", "a\x1b_x\x1b\\\x1b^y\x1b\\\x1bXz\x1b\\b", "ab"),
    ("CSI cursor up and erase", "a\x1b[2A\x1b[2Kb", "ab"),
    ("CSI private mode", "a\x1b[?1049hb", "ab"),
    ("8-bit CSI", "a\x9b2Jb", "ab"),
    ("SGR", "\x1b[1;31mred\x1b[0m", "red"),
    ("two-character escapes", "a\x1bc\x1b7\x1b8\x1b(Bb", "ab"),
    ("C0 and DEL", "a\x07\x08\x00\x7fb", "ab"),
    ("carriage return", "shown\rhidden\r\n", "shownhidden\n"),
    ("C1 controls", "a\x85\x8d\x8e\x9fb", "ab"),
    ("unterminated OSC keeps its text", "a\x1b]52;c;Zm9v", "a52;c;Zm9v"),
    ("truncated CSI", "a\x1b[", "a"),
    ("lone ESC", "a\x1b", "a"),
]


@pytest.mark.parametrize("what, text, expected", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_clean_removes_every_sequence_and_control(what, text, expected):
    out = clean(text)
    assert out == expected
    assert not has_control(out)


def test_clean_keeps_newline_tab_and_unicode():
    text = "step\t1\nügé 中文 ✓ [red]x[/red]"
    assert clean(text) is text


def test_clean_log_keeps_only_sgr_when_asked():
    line = f"\x1b[32mINFO\x1b[0m ok{OSC52}\x1b[2J\x9b1m\x1b[38;5;208mx"
    assert clean_log(line, keep_sgr=True) == "\x1b[32mINFO\x1b[0m ok\x1b[38;5;208mx"
    assert clean_log(line, keep_sgr=False) == "INFO okx"
    assert clean_log("plain", True) == "plain"


def test_json_dumps_escapes_c1_and_round_trips():
    value = {"name": f"x{OSC52}\x9b2J\x85"}
    text = json_dumps(value, ensure_ascii=False)
    assert not has_control(text) and json.loads(text) == value


def test_hostile_megabyte_lines_are_cleaned():
    """Linear time: string bodies stop at the next introducer, so no character is rescanned more than a few times."""
    for line in ("\x1b]" * 500_000, "\x1b[" + "1;" * 500_000, "\x90" + "a" * 1_000_000, "\x1b" * 1_000_000):
        assert not has_control(clean(line)) and "\x1b" not in clean_log(line, True)


def test_clean_shows_bidi_controls_as_their_escapes():
    """Every terminal and widget sink (clean, clean_log, the toasts) shows U+202E and its kin as text."""
    assert clean("a\u202eb\u2066c\u2069\nd\u200f") == "a\\u202eb\\u2066c\\u2069\nd\\u200f"
    assert clean_log("x\u202ey\x1b[31mz", keep_sgr=True) == "x\\u202ey\x1b[31mz"
