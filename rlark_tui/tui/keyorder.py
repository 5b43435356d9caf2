"""KeyOrder: the keys of one read go where the keys before them left the focus.

A terminal hands Textual every key of one read at once (a paste typed as keys, a slow tmux or SSH link, a loaded
machine), and Textual's App.on_event sends each key to the widget focused as it takes the key from its queue:
that is before the key ahead of it has reached its binding, and a focus change (Widget.focus) is a callback run
after the keys already queued. So when `/` opened the filter bar, the keys read with it (`^loadgen$`) had been
sent to the Job list, whose bindings then ran them: `n` opened the create wizard, `l` the logs.

RlarkApp takes the keys one at a time, as if each had been read alone: each goes to the focused widget (or the
screen) followed by a KeyHandled message, which bubbles up the same widgets behind the key, so it reaches the app
after the key and after the binding the key ran. The next key is sent once the app, the screen and the widgets
the key reached have handled what that left queued, twice over (SETTLE_ROUNDS): the focus change the binding
asked for (`/` opens the filter bar), and the one a message it posted asked for (enter submits the bar, which
gives the focus back to the list), are made by then. A key read while another is on its way waits in order. If
the key is lost on the way (its widget removed), the next goes after KEY_WAIT seconds.

Settling costs the UI thread each pump's wake-up twice over, so it is done only for a key that needs it: when the
KeyHandled of a key comes with no key waiting, the key after it (read later, alone) goes at once if nothing is queued
in the app, the screen, the focused widget, or the widget the key went to and the ones it bubbles through; if
anything is, that key settles first as a waiting one would. A key typed by hand cost its widgets seven more wake-ups
(a filter keystroke over 5,000 Jobs about 1.5 ms of the UI thread). A paste (bracketed, one
Paste event) takes its turn among the keys: `/` and a paste read together put the text in the filter bar.
"""

from __future__ import annotations

import time
from collections import deque

from textual import events
from textual.app import ScreenStackError
from textual.dom import DOMNode
from textual.message import Message
from textual.message_pump import MessagePump
from textual.timer import Timer

from rlark_tui.tui.host import AppHost

SETTLE_ROUNDS = 2
"""How many times over the widgets a key reached handle what they had queued before the next key is sent."""
KEY_WAIT = 0.5
"""Seconds a key waits for the one before it to be handled before it is sent anyway."""
SHORTEST_TIMER = 0.001
"""Seconds: the wait for a key whose KEY_WAIT has already run out."""


class KeyHandled(Message):
    """Sent behind key number `seq` to the widget it went to; bubbles to the app after it."""

    def __init__(self, seq: int) -> None:
        super().__init__()
        self.seq = seq


class KeyOrder(AppHost):
    """Methods of RlarkApp (self is the app)."""

    def _init_keys(self) -> None:
        self._keys_waiting: deque[events.Key | events.Paste] = deque()
        """Keys (and pastes) read while another was on its way, in the order read."""
        self._key_seq = 0
        """The number of the last key sent."""
        self._key_on_way = 0
        """The number of the key whose KeyHandled is awaited (0: none)."""
        self._key_sent_at = 0.0
        self._key_timer: Timer | None = None
        self._key_target: MessagePump | None = None
        """The widget (or screen) the key on its way went to."""
        self._key_unsettled = 0
        """The number of the last key handled whose settling was left to the key after it (0: none)."""

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            if self._key_on_way:
                self._keys_waiting.append(event)
                self._watch_key()
                return
            seq, self._key_unsettled = self._key_unsettled, 0
            if seq and self._busy():
                self._key_on_way = seq
                self._key_sent_at = time.monotonic()
                self._keys_waiting.append(event)
                self._watch_key()
                self._settle(seq, SETTLE_ROUNDS)
                return
            await self._send_key(event)
            return
        await super().on_event(event)

    async def _send_key(self, event: events.Key | events.Paste) -> None:
        try:
            target = self.focused or self.screen
        except ScreenStackError:
            target = None
        self._key_seq += 1
        seq = self._key_on_way = self._key_seq
        self._key_sent_at = time.monotonic()
        self._key_target = target
        await super().on_event(event)
        if target is None or not target.post_message(KeyHandled(seq)):
            self._handled(seq)

    def on_key_handled(self, message: KeyHandled) -> None:
        message.stop()
        self._handled(message.seq)

    def _handled(self, seq: int) -> None:
        """Key `seq` reached its binding: settle now for a key waiting, or leave it to the next key to come."""
        if seq != self._key_on_way:
            return
        if self._keys_waiting:
            self._settle(seq, SETTLE_ROUNDS)
        else:
            self._key_on_way = 0
            self._key_unsettled = seq

    def _busy(self) -> bool:
        """Whether the app, its screen, the focused widget, or the widget the last key went to or one it bubbles
        through has a message queued (a focus change, a message the key's binding posted)."""
        pumps: list[MessagePump] = [self, *self._reached()]
        if isinstance(self._key_target, DOMNode):
            pumps.extend(self._key_target.ancestors_with_self)
        return any(pump.message_queue_size for pump in pumps)

    def _reached(self) -> tuple[MessagePump, ...]:
        """The screen, the focused widget and the widget the last key went to."""
        try:
            reached = (self.screen, self.focused, self._key_target)
        except ScreenStackError:
            return ()
        return tuple(pump for pump in reached if pump is not None)

    def _settle(self, seq: int, rounds: int) -> None:
        """Send the key after `seq` once the app, its screen, the focused widget and the one the key went to have
        handled what they had queued, `rounds` times over (a message the key's binding posted is handled in
        the first, and the focus change its handler asked for is queued before the second ends)."""
        if seq != self._key_on_way:
            return
        if not rounds:
            self.call_later(self._next_key, seq)
            return
        pumps = {self, *self._reached()}
        left = len(pumps)

        def handled() -> None:
            nonlocal left
            left -= 1
            if not left:
                self._settle(seq, rounds - 1)

        for pump in pumps:
            if not pump.call_later(handled):
                handled()

    async def _next_key(self, seq: int) -> None:
        if seq != self._key_on_way:
            return
        if self._keys_waiting:
            await self._send_key(self._keys_waiting.popleft())
        else:
            self._key_on_way = 0

    def _watch_key(self) -> None:
        if self._key_timer is None:
            # never 0: a Textual timer that ticks late divides by its interval (the timer dies, and with it the key)
            wait = max(SHORTEST_TIMER, self._key_sent_at + KEY_WAIT - time.monotonic())
            self._key_timer = self.set_timer(wait, self._key_lost)

    async def _key_lost(self) -> None:
        self._key_timer = None
        if not self._key_on_way:
            return
        if time.monotonic() - self._key_sent_at >= KEY_WAIT:
            await self._next_key(self._key_on_way)
        if self._keys_waiting:
            self._watch_key()
