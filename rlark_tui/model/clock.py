"""The times rlark's own state files say (a cache's or a summary's write, an acknowledgement), read against this
machine's clock. Pure, and without `datetime`: `rlark status --tmux`, which tmux runs every few seconds, reads two
such times and imports nothing it need not (bench alerts' status_tmux_s).
"""

from __future__ import annotations

CLOCK_SKEW_SECONDS = 60.0
"""A time this far past now is still now (two processes' clocks); later is no time of this machine's."""


def written_at(value: object, now: float) -> float | None:
    """A time a state file says (a write, an acknowledgement): None unless it is a number from 0 to now (give or
    take CLOCK_SKEW_SECONDS). A later one was written by another version, a hand edit or before the clock was set
    back, and would read fresh forever: a status never refreshed, an acknowledgement that outranks every new one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= now + CLOCK_SKEW_SECONDS:
        return None
    return float(value)
