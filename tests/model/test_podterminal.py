"""text.podterminal: what of a Pod's output reaches the operator's terminal (`rlark exec -t`, the TUI's shell):
every escape sequence a full-screen program draws or queries with, but no clipboard, title (tmux's pane title and
window name too), notification, font or file write and no tmux passthrough, whole, however the stream is cut into
chunks."""

from __future__ import annotations

import pytest

from rlark_tui.text.podterminal import MODES_RESET, PodOutput

CASES = [
    (b"a\x1b]52;c;aGk=\x07b", b"ab"),
    (b"a\x1b]52;c;?\x1b\\b", b"ab"),  # a read of the clipboard, answered into the Pod's input
    (b"a\x1b]0;t\x1b\\b\x1b]1;t\x07\x1b]2;t\x07\x1b];t\x07c", b"abc"),
    (b"\x1b]9;rlark: job failed\x07\x1b]777;notify;x;y\x07\x1b]1337;File=name=eA==:eA==\x07\x1b]50;f\x07z", b"z"),
    (b"\x1b]052;c;x\x07\x1b]000000052;c;x\x07z", b"z"),
    (b"\x1b]99;;hi\x1b\\\x1b]5522;type=write\x07z", b"z"),  # kitty's notification and clipboard
    (b"x\xc2\x9d52;c;aGk=\xc2\x9cy", b"xy"),  # the C1 forms in UTF-8
    (b"a\xc2\x90tmux;\x1b\x1b]52;c;x\x07\x1b\\b\xc2\x9d2;t\x07c", b"abc"),  # U+0090 DCS, U+009D OSC characters
    (b"a\x9d52;c;x\x07\x90tmux;\xe2\x9d\x9d\xc2\x9b1m", b"a\x9d52;c;x\x07\x90tmux;\xe2\x9d\x9d\xc2\x9b1m"),  # stray
    # bytes of a UTF-8 stream (continuation bytes: U+FFFD on a UTF-8 terminal, no control), a `❝`, and U+009B CSI,
    # which passes as ESC [ does
    (b"\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\after", b"after"),
    (b"\x1bPtmu\x1b\\\x1b]52;c;x\x07z", b"\x1bPtmu\x1b\\z"),
    (b"a\x1b_Ga=q,t=f;L2hvbWUvdS8uc3NoL2lkX3JzYQ==\x1b\\b\xc2\x9fGt=s;x\xc2\x9cc", b"abc"),  # kitty reads a file
    # tmux and screen take any APC as the pane's title and `ESC k` as the window's name, both on tmux's status line
    (b"a\x1b_#[fg=red]forged\x1b\\b\xc2\x9fforged\xc2\x9cc\x1bk#(touch x)\x1b\\d", b"abcd"),
    (b"\x1b_X\x07y\x1b\\\x1b_\x1b]52;c;x\x07z\x1bkname\x07\x1bx\x1b\\q", b"z\x1bx\x1b\\q"),
    (b"\x1b]8;;http://x\x1b]52;c;x\x07", b"\x1b]8;;http://x\x1b\\"),  # an ESC ends the link (closed by ST here)
    (b"\x1b]8;;\xc2\x9d52;c;x\x07z", b"\x1b]8;;\x1b\\z"),
    # what comes after a dropped sequence finds the terminal where it was before it: no ESC, C2 or OSC number left
    # pending or open for it to complete
    (b"x\x1b\x1b]52;c;x\x07]52;c;evil\x07", b"x]52;c;evil\x07"),
    (b"\x1b]5\x1b]52;c;x\x07" + b"2;c;evil\x07", b"\x1b]5\x1b\\2;c;evil\x07"),
    (b"a\xc2\x1b]52;c;x\x07\x9d52;c;evil\x07", b"a\x9d52;c;evil\x07"),
    (b"x\x1b\n\x1b]52;c;x\x07]2;t\x07", b"x\n]2;t\x07"),
    (b"\x1b]52;c;xx\x1b[31mred", b"\x1b[31mred"),
    (b"x\x1b\n]52;c;x\x07z", b"x\nz"),  # a control between ESC and ] is done by the terminal, the ESC pending
    (b"x\x1b\x01\x7f]52;c;x\x07z", b"x\x01\x7fz"),
    (b"\x1b]5\n2;c;x\x07z", b"z"),  # and ignored within an OSC's number: OSC 52
    (b"\x1bPt\nmux;\x1b\x1b]52;c;x\x07\x1b\\z", b"z"),
    # a C2 no character follows, within a string that passes, is passed (the terminal shows U+FFFD): dropped, it made
    # `ESC ] 5 C2 2 ;` an OSC 52 that set the clipboard, and `ESC P C2 tmux;` a passthrough (issue 33, round H33)
    (b"\x1b]5\xc22;c;Y3VybCBldmlsfHNo\x07z", b"\x1b]5\xc22;c;Y3VybCBldmlsfHNo\x07z"),
    (b"\xc2\x9d5\xc22;c;eA==\x07z", b"\xc2\x9d5\xc22;c;eA==\x07z"),
    (b"\x1bP\xc2tmux;X\x1b\\z\x1bPt\xc2mux;Y\x1b\\", b"\x1bP\xc2tmux;X\x1b\\z\x1bPt\xc2mux;Y\x1b\\"),
    (b"\x1b]8;;u\xc2\x1b]52;c;x\x07\x9d52;c;evil\x07", b"\x1b]8;;u\xc2\x1b\\\x9d52;c;evil\x07"),
    (b"\x1b[?1049h\x1b[1;1H\x1b[c\x1bP$qm\x1b\\\x1bP+q544e\x1b\\\x1b]11;?\x07\x1b]8;;u\x07l\x1b]8;;\x07",
     b"\x1b[?1049h\x1b[1;1H\x1b[c\x1bP$qm\x1b\\\x1bP+q544e\x1b\\\x1b]11;?\x07\x1b]8;;u\x07l\x1b]8;;\x07"),
    ("café ünï \u2500\n".encode(), "café ünï \u2500\n".encode()),
]


@pytest.mark.parametrize("stream, shown", CASES)
def test_a_pods_desktop_writes_are_dropped_and_its_drawing_passes(stream, shown):
    assert PodOutput().feed(stream) == shown
    one_by_one = PodOutput()
    assert b"".join(one_by_one.feed(stream[at:at + 1]) for at in range(len(stream))) == shown


def test_a_hostile_stream_is_taken_in_linear_time():
    import time

    started = time.process_time()
    for stream in (b"\x1b[" * 100_000, b"\x1b]8;;x\x07" * 20_000, b"\x1b]52;" + b"\x1b\x1b" * 40_000):
        PodOutput().feed(stream)
    assert time.process_time() - started < 2


def test_the_modes_a_pod_set_are_put_back_once_it_wrote():
    assert PodOutput().end() == b""
    output = PodOutput()
    output.feed(b"\x1b[8m\x1b(0\x1b[?1000h")
    assert output.end() == MODES_RESET and b"\x1b[0m" in MODES_RESET and b"\x1b[?1000l" in MODES_RESET


def test_log_lines_are_one_stream_to_the_terminal():
    """`rlark logs --raw --pod P` prints a line, a line break, the next: filtered a line at a time, 'x ESC ESC' ended
    one line with a lone ESC, which the line break leaves pending, and the next line's ']52;c;...' made an OSC 52."""
    output = PodOutput()
    shown = output.feed_text("x\x1b\x1b\n") + output.feed_text("]52;c;eA==\x07 y\n")
    assert shown == "x\n y\n"
