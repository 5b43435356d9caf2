"""What a Pod's output may do to the operator's terminal (`rlark exec`, the TUI's shell, `rlark logs --raw`):
`PodOutput` passes the bytes on as they come, escape sequences and all, so a full-screen program (vim, htop, less)
draws, queries the terminal (DA, DECRQSS, XTGETTCAP, its colours) and is answered as it would be over kubectl, but
for the writes that reach past the terminal's screen into the operator's desktop, which no program in a Pod needs
and a hostile Pod uses: an OSC that sets or reads the clipboard (52: set it, or `?`, read it back into the Pod's
input; kitty's 5522), sets the window or icon title (0, 1, 2), raises a desktop notification (9, 777: rlark's own
alerts' channel; kitty's 99), sets a font (50) or hands over a file (iTerm2's 1337, kitty's 5113); every APC: tmux
and screen take one as the pane's title, which tmux's default status-right shows, and kitty's graphics (`APC G`) can
have the terminal read the operator's files; screen's `ESC k`, the window's name in tmux (`allow-rename on`) and
screen, shown in their status lines; and a tmux passthrough (`DCS tmux;`), which would carry them past a tmux the
operator runs rlark in. Each such sequence is dropped whole, its introducer and
terminator too; and the modes a Pod set are put back when the session ends (`MODES_RESET`). Pure: bytes in, bytes out, a state across calls, at most a few bytes held between them.
"""

from __future__ import annotations

import re

DROPPED_OSC = frozenset({0, 1, 2, 9, 50, 52, 99, 777, 1337, 5113, 5522})
"""The OSC numbers a Pod's output never passes (see the module's doc)."""
MAX_OSC_DIGITS = 8
"""The digits of an OSC number looked at: a longer number (no terminal's) is dropped as one of the above."""
_PASSTHROUGH = b"tmux;"
_APC = (0x5F, 0x9F)
"""An APC (`ESC _`, C1 9F): a pane title to tmux and screen (a Pod's own text on the operator's tmux status line),
and kitty's graphics (`APC G`: `t=f`, `t=t` and `t=s` have the terminal read a file or shared memory of the
operator's, its answer into the Pod's input saying whether `~/.ssh/id_rsa` exists). None passes."""
_NAME = 0x6B
"""`ESC k`: screen's window name, which tmux takes too (with `allow-rename on`), its text ended as an APC's."""
_EXECUTED = frozenset({*range(0x18), 0x19, *range(0x1C, 0x20), 0x7F})
"""What a terminal does (or ignores) between an ESC and the byte after it, keeping the ESC pending (the VT500 parser
xterm and its heirs follow): a C0 control but CAN, SUB and ESC, and DEL. `ESC LF ]` is an OSC."""
_IGNORED = frozenset({*range(0x07), *range(0x08, 0x18), 0x19, *range(0x1C, 0x20)})
"""What a terminal ignores within an OSC's number or a DCS's or APC's start (its parser's `osc_string` and
`dcs_entry` states): a C0 control but BEL, CAN, SUB and ESC. `ESC ] 5 LF 2 ;` is an OSC 52."""
_STOP = re.compile(rb"\x1b(?![\x20-\x4f\x51-\x5c\x5e\x60-\x6a\x6c-\x7e])|\xc2(?![\x80-\x8f\x91-\x9c\x9e\xa0-\xbf])")
"""Where the ground state looks closer: an ESC not followed by a printable ASCII byte that makes no OSC, DCS, APC
or window name (`ESC [` passes at once), and a C2 not followed by a continuation byte that makes none (`C2 A0`
passes)."""
_ENDS = re.compile(rb"[\x07\x18\x1a\x1b\xc2]")
"""What may end a string sequence (OSC, DCS, APC): BEL (an OSC), CAN, SUB, ESC (ESC \\ is ST; any other ESC ends it
too) and the first byte of C1 ST in UTF-8 (C2 9C)."""
_ST = b"\x1b\\"

MODES_RESET = (b"\x1b[?1047l"
               b"\x1b[0m\x1b(B\x1b[4l\x1b[?7h\x1b[?25h\x1b[?1l\x1b>"
               b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l"
               b"\x1b[?1004l\x1b[?2004l\x1b[>4m\x1b[<99u")
"""What a session that wrote to the terminal leaves it in at its end (`PodOutput.end`): the operator's own screen,
not the Pod's alternate one (first: the other modes are the screen's; `?1047l` leaves it without moving the cursor
and does nothing on the normal screen), the Pod's last colours and attributes reset (its `CSI 8 m` hid what the
operator types next), the ASCII character set (its `ESC ( 0` drew the shell in line-drawing glyphs), insert mode
off, line wrap on, the cursor shown, cursor keys and the keypad as a shell has them, no mouse report (clicks typed
escape sequences into the operator's shell), no focus report (`CSI I` typed at each change of window), no
bracketed paste (a shell that does not ask for it got the markers), and keys as a shell reads them: xterm's
modifyOtherKeys reset and every entry of kitty's keyboard protocol popped (Ctrl-C typed `CSI 99;5u`). What
Textual writes when it stops, and a full-screen program that ended by itself has put all of these back already."""

_GROUND, _ESC, _C1, _OSC_NUMBER, _DCS_HEAD, _STRING, _STRING_ESC, _STRING_C1 = range(8)


class PodOutput:
    """A filter over one session's output stream (`feed` each chunk, in order).

    What it drops never reaches the terminal, so the terminal must be, where a dropped sequence begins, where it
    would have been had the sequence's first byte ended what came before: an ESC is passed only with the byte that
    completes it (a lone ESC left pending made the bytes after a dropped sequence an OSC: `ESC ESC ]52;...BEL
    ]52;...`), a C2 only with its continuation byte (the same with `C2` and `9D`), and a string sequence that passes
    is closed with ST where an ESC ends it (`ESC ] 5` left open made the bytes after `ESC ]52;...BEL` its number)."""

    def __init__(self) -> None:
        self._state = _GROUND
        self._held = bytearray()
        """The start of a sequence not yet judged (ESC ] and digits, ESC P and a few bytes, an ESC, a C2)."""
        self._passing = True
        """Within a string sequence: whether its bytes go on (then the terminal is within it too)."""
        self._osc = True
        """Within a string sequence: an OSC (BEL ends it too) or a DCS, APC or window name (only ST)."""
        self._fed = False

    def end(self) -> bytes:
        """What to write once the session ends: after any output, ST for a string sequence left open (the
        operator's next lines would be its text) and MODES_RESET; nothing held is passed."""
        if not self._fed:
            return b""
        open_string = self._state in (_STRING, _STRING_ESC, _STRING_C1) and self._passing
        return (_ST if open_string else b"") + MODES_RESET

    def feed_text(self, text: str) -> str:
        """`feed` of text decoded from a Pod's bytes (a log line: `rlark logs --raw` on a terminal), undecodable
        bytes as surrogateescape keeps them."""
        return self.feed(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")

    def feed(self, data: bytes) -> bytes:
        self._fed = self._fed or bool(data)
        out = bytearray()
        at, size = 0, len(data)
        while at < size:
            state = self._state
            if state == _GROUND:
                found = _STOP.search(data, at)
                if found is None:
                    out += data[at:]
                    break
                out += data[at:found.start()]
                self._held = bytearray(found.group())
                self._state = _ESC if found.group() == b"\x1b" else _C1
                at = found.end()
            elif state in (_STRING, _STRING_ESC, _STRING_C1):
                at = self._string(data, at, out)
            else:
                byte = data[at]
                step = {_ESC: self._after_esc, _C1: self._after_c2, _OSC_NUMBER: self._osc_number}.get(
                    state, self._dcs_head)
                at += 1 if step(byte, out) else 0
        return bytes(out)

    def _after_esc(self, byte: int, out: bytearray) -> bool:
        """After an ESC held: whether `byte` was taken (False: it is taken again in the state now)."""
        if byte in _EXECUTED:
            out.append(byte)  # done by the terminal, the ESC still pending
        elif byte == 0x1B:
            pass  # the held ESC ends here, a no-op: this one is held instead
        elif byte in (0x18, 0x1A):
            out.append(byte)  # cancels the ESC
            self._state = _GROUND
        elif byte in (0x5D, 0x50, 0x5F, _NAME):
            self._introduce(byte)
        elif byte == 0xC2:
            self._held = bytearray(b"\xc2")  # a C1 after an ESC is the C1's own
            self._state = _C1
        else:
            out += b"\x1b" + bytes([byte])
            self._state = _GROUND
        return True

    def _after_c2(self, byte: int, out: bytearray) -> bool:
        if byte in (0x9D, 0x90, 0x9F):
            self._introduce(byte)
            return True
        self._state = _GROUND
        if 0x80 <= byte <= 0xBF:
            out += b"\xc2" + bytes([byte])
            return True
        return False  # a C2 no character follows: not passed, so no byte after a dropped sequence completes it

    def _introduce(self, byte: int) -> None:
        """An OSC (`]`, C1 9D) or DCS (`P`, C1 90) begins: held until judged; an APC (`_`, C1 9F) or a window name
        (`k`) is dropped."""
        self._held = bytearray((self._held[0], byte))
        if byte in (*_APC, _NAME):
            self._open_string(False, bytearray(), osc=False)
        else:
            self._state = _OSC_NUMBER if byte in (0x5D, 0x9D) else _DCS_HEAD

    def _osc_number(self, byte: int, out: bytearray) -> bool:
        digits = self._held[2:]
        if 0x30 <= byte <= 0x39 and len(digits) < MAX_OSC_DIGITS:
            self._held.append(byte)
            return True
        if byte in _IGNORED:
            return True  # not part of the number, which goes on after it
        number = int(digits) if digits else 0  # no number: xterm's 0, the title
        self._open_string(number not in DROPPED_OSC and len(digits) < MAX_OSC_DIGITS, out, osc=True)
        return False

    def _dcs_head(self, byte: int, out: bytearray) -> bool:
        """The start of a DCS (a tmux passthrough is dropped)."""
        if byte in _IGNORED or byte in (0x07, 0x7F):
            return True
        head = bytes(self._held[2:]) + bytes([byte])
        if head == _PASSTHROUGH:
            self._open_string(False, out, osc=False)
            return True
        if _PASSTHROUGH.startswith(head):
            self._held.append(byte)
            return True
        self._open_string(True, out, osc=False)
        return False

    def _open_string(self, passing: bool, out: bytearray, *, osc: bool) -> None:
        self._passing, self._osc = passing, osc
        if passing:
            out += self._held
        self._held.clear()
        self._state = _STRING

    def _string(self, data: bytes, at: int, out: bytearray) -> int:
        """Take the string sequence's bytes from `at` to its end (or the chunk's); where the next byte is."""
        state, passing = self._state, self._passing
        if state == _STRING:
            found = _ENDS.search(data, at)
            end = found.start() if found else len(data)
            if passing:
                out += data[at:end]
            if found is None:
                return end
            byte = data[end]
            if byte == 0x07 and not self._osc:  # a DCS's or APC's text
                if passing:
                    out.append(byte)
            elif byte in (0x07, 0x18, 0x1A):  # BEL ends an OSC, CAN and SUB abort it
                if passing:
                    out.append(byte)
                self._state = _GROUND
            else:
                self._state = _STRING_ESC if byte == 0x1B else _STRING_C1
            return end + 1
        byte = data[at]
        if state == _STRING_ESC:
            if byte == 0x5C:  # ESC \: ST
                out += _ST if passing else b""
                self._state = _GROUND
                return at + 1
            if byte == 0x1B and not passing:
                self._state = _STRING  # a doubled ESC: a tmux passthrough's own text (dropped with it)
                return at + 1
            out += _ST if passing else b""  # any other ESC ends the string: closed here, then judged anew
            self._held = bytearray(b"\x1b")
            self._state = _ESC
            return at
        if byte == 0x9C:  # C1 ST
            out += b"\xc2\x9c" if passing else b""
            self._state = _GROUND
            return at + 1
        if byte in (0x9D, 0x90, 0x9F):  # a C1 OSC, DCS or APC ends it and begins
            out += _ST if passing else b""
            self._held = bytearray(b"\xc2")
            self._introduce(byte)
            return at + 1
        self._state = _STRING
        if 0x80 <= byte <= 0xBF:  # a character of the string
            out += b"\xc2" + bytes([byte]) if passing else b""
            return at + 1
        # a C2 no character follows: the terminal shows it (U+FFFD) and goes on with the byte after it, which passes
        # too, or the ST this string is closed with; dropped, `ESC ] 5 C2 2 ;` was an OSC 52 and `ESC P C2 tmux;` a
        # passthrough on the terminal
        out += b"\xc2" if passing else b""
        return at
