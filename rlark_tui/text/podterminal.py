"""What a Pod's output may do to the operator's terminal (`rlark exec`, the TUI's shell, `rlark logs --raw`):
`PodOutput` passes the bytes on as they come, escape sequences and all, so a full-screen program (vim, htop, less)
draws, queries the terminal (DA, DECRQSS, XTGETTCAP, its colours) and is answered as it would be over kubectl, but
for the writes that reach past the terminal's screen into the operator's desktop, which no program in a Pod needs
and a hostile Pod uses: an OSC that sets or reads the clipboard (52: set it, or `?`, read it back into the Pod's
input; kitty's 5522), sets the window or icon title (0, 1, 2), raises a desktop notification (9, 777: rlark's own
alerts' channel; kitty's 99), sets a font (50) or hands over a file (iTerm2's 1337, kitty's 5113); kitty's graphics
(`APC G`), which can have the terminal read the operator's files; and a tmux passthrough (`DCS tmux;`), which would
carry them past a tmux the operator runs rlark in. Each such sequence is dropped whole, its introducer and
terminator too; and the modes a Pod set are put back when the session ends (`MODES_RESET`). Pure: bytes in, bytes out, a state across calls, at most a few bytes held between them.
"""

from __future__ import annotations

import re

DROPPED_OSC = frozenset({0, 1, 2, 9, 50, 52, 99, 777, 1337, 5113, 5522})
"""The OSC numbers a Pod's output never passes (see the module's doc)."""
MAX_OSC_DIGITS = 8
"""The digits of an OSC number looked at: a longer number (no terminal's) is dropped as one of the above."""
_PASSTHROUGH = b"tmux;"
_GRAPHICS = b"G"
"""kitty's graphics command (`APC G`): `t=f`, `t=t` and `t=s` have the terminal read a file or shared memory of
the operator's (its answer into the Pod's input says whether `~/.ssh/id_rsa` exists), so none passes."""
_INTRO = re.compile(rb"\x1b[\]P_]|\xc2[\x9d\x90\x9f]")
"""An OSC's, a DCS's or an APC's introducer: ESC ], ESC P and ESC _, or the C1 forms in UTF-8."""
_ENDS = re.compile(rb"[\x07\x18\x1a\x1b\xc2]")
"""What may end a string sequence (OSC, DCS): BEL (an OSC), CAN, SUB, ESC (ESC \\ is ST; any other ESC aborts it)
and the first byte of C1 ST in UTF-8 (C2 9C)."""

MODES_RESET = (b"\x1b[0m\x1b(B\x1b[4l\x1b[?7h\x1b[?25h\x1b[?1l\x1b>"
               b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l")
"""What a session that wrote to the terminal leaves it in at its end (`PodOutput.end`): the Pod's last colours and
attributes reset (its `CSI 8 m` hid what the operator types next), the ASCII character set (its `ESC ( 0` drew
the shell in line-drawing glyphs), insert mode off, line wrap on, the cursor shown, cursor keys and the keypad as a
shell has them, and no mouse report (clicks typed escape sequences into the operator's shell). A full-screen
program that ended by itself has put all of these back already."""

_GROUND, _ESC, _C1, _OSC_NUMBER, _DCS_HEAD, _STRING, _STRING_ESC, _STRING_C1 = range(8)


class PodOutput:
    """A filter over one session's output stream (`feed` each chunk, in order)."""

    def __init__(self) -> None:
        self._state = _GROUND
        self._held = bytearray()
        """The start of a sequence not yet judged (ESC ] and digits, ESC P and a few bytes, a C2)."""
        self._passing = True
        """Within a string sequence: whether its bytes go on."""
        self._osc = True
        """Within a string sequence: an OSC (BEL ends it too) or a DCS or APC (only ST)."""
        self._dropped_head = _PASSTHROUGH
        """What a DCS's or APC's text begins with when it is dropped."""
        self._fed = False

    def end(self) -> bytes:
        """What to write once the session ends: MODES_RESET after any output (nothing held is passed)."""
        return MODES_RESET if self._fed else b""

    def feed(self, data: bytes) -> bytes:
        self._fed = self._fed or bool(data)
        out = bytearray()
        at, size = 0, len(data)
        while at < size:
            state = self._state
            if state == _GROUND:
                found = _INTRO.search(data, at)
                if found is None:  # an ESC or C2 last may start one in the next chunk
                    last = data[-1:] if data[-1:] in (b"\x1b", b"\xc2") else b""
                    out += data[at:size - len(last)]
                    if last:
                        self._held = bytearray(last)
                        self._state = _ESC if last == b"\x1b" else _C1
                    break
                out += data[at:found.start()]
                at = found.end()
                self._held = bytearray(found.group())
                self._state = _OSC_NUMBER if found.group()[-1] in (0x5D, 0x9D) else _DCS_HEAD
                self._dropped_head = _GRAPHICS if found.group()[-1] in (0x5F, 0x9F) else _PASSTHROUGH
                continue
            if state in (_STRING, _STRING_ESC, _STRING_C1):
                at = self._string(data, at, out)
                continue
            byte = data[at]
            at += 1
            if state in (_ESC, _C1):
                if not self._introduced(byte, out):
                    at -= 1  # taken again from the ground state: it may start a sequence itself
            elif state == _OSC_NUMBER:
                self._osc_number(byte, out)
            else:
                self._dcs_head(byte, out)
        return bytes(out)

    def _introduced(self, byte: int, out: bytearray) -> bool:
        """After ESC (or C2, UTF-8's first byte of a C1): `byte` makes an OSC (`]`, C1 9D), a DCS (`P`, C1 90) or an
        APC (`_`, C1 9F), or else what was held goes on and `byte` is not taken (False)."""
        osc, dcs, apc = (0x5D, 0x50, 0x5F) if self._state == _ESC else (0x9D, 0x90, 0x9F)
        if byte in (osc, dcs, apc):
            self._held.append(byte)
            self._state = _OSC_NUMBER if byte == osc else _DCS_HEAD
            self._dropped_head = _GRAPHICS if byte == apc else _PASSTHROUGH
            return True
        out += self._held
        self._held.clear()
        self._state = _GROUND
        return False

    def _osc_number(self, byte: int, out: bytearray) -> None:
        digits = self._held[2:]
        if 0x30 <= byte <= 0x39 and len(digits) < MAX_OSC_DIGITS:
            self._held.append(byte)
            return
        number = int(digits) if digits else 0  # no number: xterm's 0, the title
        dropped = number in DROPPED_OSC or len(digits) >= MAX_OSC_DIGITS
        self._open_string(not dropped, out, osc=True)
        self._string(bytes([byte]), 0, out)

    def _dcs_head(self, byte: int, out: bytearray) -> None:
        """The start of a DCS (a tmux passthrough is dropped) or an APC (kitty's graphics are)."""
        head = bytes(self._held[2:]) + bytes([byte])
        if self._dropped_head.startswith(head) and head != self._dropped_head:
            self._held.append(byte)
            return
        if head == self._dropped_head:
            self._open_string(False, out, osc=False)
            return
        self._open_string(True, out, osc=False)
        self._string(bytes([byte]), 0, out)  # the DCS's own byte, or what ends it (ESC \, CAN)

    def _open_string(self, passing: bool, out: bytearray, *, osc: bool) -> None:
        self._passing, self._osc = passing, osc
        if passing:
            out += self._held
        self._held.clear()
        self._state = _STRING

    def _string(self, data: bytes, at: int, out: bytearray) -> int:
        """Take the string sequence's bytes from `at` to its end (or the chunk's); where the next byte is."""
        if self._state == _STRING:
            found = _ENDS.search(data, at)
            end = found.start() if found else len(data)
            if self._passing:
                out += data[at:end]
            if found is None:
                return end
            at = found.end()
            byte = data[end]
            if byte == 0x07 and not self._osc:  # a DCS's text
                if self._passing:
                    out.append(byte)
            elif byte in (0x07, 0x18, 0x1A):  # BEL ends an OSC, CAN and SUB abort it
                self._close(bytes([byte]), out)
            else:
                self._state = _STRING_ESC if byte == 0x1B else _STRING_C1
            return at
        byte = data[at]
        if self._state == _STRING_ESC and byte == 0x5C:  # ESC \: ST
            self._close(b"\x1b\\", out)
            return at + 1
        if self._state == _STRING_C1 and byte == 0x9C:  # C1 ST
            self._close(b"\xc2\x9c", out)
            return at + 1
        if self._state == _STRING_ESC and byte == 0x1B and not self._passing:
            self._state = _STRING  # a doubled ESC: a tmux passthrough's own text (dropped with it)
            return at + 1
        if self._state == _STRING_C1 and byte in (0x9D, 0x90, 0x9F):  # a C1 OSC, DCS or APC: as ESC ], P, _ would
            self._held = bytearray((0xC2, byte))
            self._state = _OSC_NUMBER if byte == 0x9D else _DCS_HEAD
            self._dropped_head = _GRAPHICS if byte == 0x9F else _PASSTHROUGH
            self._passing = True
            return at + 1
        if self._state == _STRING_C1:  # a character of the string
            if self._passing:
                out += b"\xc2"
            self._state = _STRING
            return at
        self._held = bytearray(b"\x1b")  # any other ESC aborts the string and starts a sequence of its own
        self._state = _ESC
        self._passing = True
        return at

    def _close(self, terminator: bytes, out: bytearray) -> None:
        if self._passing:
            out += terminator
        self._state = _GROUND
        self._passing = True


def line_for_terminal(text: str) -> str:
    """One line a Pod wrote (a log line: `rlark logs --raw` on a terminal) as PodOutput passes it: a sequence
    begun and not ended on the line is dropped with the line's end (held bytes are not passed)."""
    return PodOutput().feed(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
