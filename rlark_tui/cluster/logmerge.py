"""Pure log-line logic: timestamps, `[role/pod]` prefixes, merging pods by time, and resuming a dropped stream.

A stream resumes by timestamp plus the count of lines already seen at that timestamp, never by content.
"""

from __future__ import annotations

import heapq
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from types import MappingProxyType

from rlark_tui.errors import UsageError
from rlark_tui.text.parse import ascii_digits

_TS = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")
_BASE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
_DURATION = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNITS = MappingProxyType({"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001})
MAX_SINCE_SECONDS = 2**31 - 1


@dataclass(frozen=True)
class LogLine:
    """One line of one Pod's `main` container; `ts` is epoch nanoseconds (None when the source gave none)."""

    source: str
    text: str
    ts: int | None = None
    stamp: str = ""

    def render(self, prefix: bool = True, timestamps: bool = False) -> str:
        parts = []
        if prefix:
            parts.append(f"[{self.source}]")
        if timestamps and self.stamp:
            parts.append(self.stamp)
        parts.append(self.text)
        return " ".join(parts)


FIRST_SECOND, LAST_SECOND = -62135596800, 253402300799
"""The first and last second of the years 1-9999 in UTC, what a datetime holds: `9999-12-31T23:59:59-23:59` is in
year 10000 once in UTC, and the reconnect of a follow after such a line (since_time) raised ValueError."""


def parse_timestamp(stamp: str) -> int | None:
    """RFC 3339 (nanosecond fraction allowed) -> epoch nanoseconds; None if it is not one, or its moment is not in
    the years 1-9999 in UTC."""
    if len(stamp) == 30 and stamp[19] == "." and stamp[29] == "Z" and ascii_digits(stamp[20:29]):
        seconds = _epoch_seconds(stamp[:19], "+00:00")
        return None if seconds is None else seconds * 1_000_000_000 + int(stamp[20:29])
    match = _TS.match(stamp)
    if not match:
        return None
    base, fraction, zone = match.groups()
    seconds = _epoch_seconds(base, "+00:00" if zone == "Z" else zone)
    if seconds is None:
        return None
    return seconds * 1_000_000_000 + (int(fraction.ljust(9, "0")) if fraction else 0)


@lru_cache(maxsize=256)
def _epoch_seconds(base: str, zone: str) -> int | None:
    """Consecutive lines mostly share their second: a follow at thousands of lines/s parses each second once.
    The fast path of parse_timestamp (kubelet's own shape, nanoseconds and Z) checks `base` only here."""
    if not _BASE.fullmatch(base):
        return None
    try:
        seconds = int(datetime.fromisoformat(base + zone).timestamp())
    except ValueError:
        return None
    return seconds if FIRST_SECOND <= seconds <= LAST_SECOND else None


def split_raw(raw: str) -> tuple[str, int | None, str]:
    """A line read with `timestamps=true` -> (stamp, epoch ns, text); ("", None, raw) without a leading timestamp.
    The per-line step of a live follow (no LogLine built)."""
    stamp, sep, rest = raw.partition(" ")
    ts = parse_timestamp(stamp) if sep or stamp else None
    if ts is None:
        return "", None, raw
    return stamp, ts, rest


def split_line(raw: str, source: str) -> LogLine:
    """A line read with `timestamps=true` -> LogLine; a line without a leading timestamp keeps ts None."""
    stamp, ts, text = split_raw(raw)
    return LogLine(source, text, ts, stamp)


def since_time(ts: int) -> str:
    """`sinceTime` for a reconnect: the whole second holding `ts` (the API's precision), in UTC."""
    moment = datetime.fromtimestamp(ts // 1_000_000_000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Resume:
    """Where one Pod's stream is: the newest timestamp emitted and how many lines carried it.

    Call `restart()` before reading a reconnected stream (requested from `since_time(last)`), then `admit()`
    each line: replayed lines are dropped by timestamp and per-timestamp count, so identical texts survive.
    """

    def __init__(self) -> None:
        self.last: int | None = None
        self.count_at_last = 0
        self._replayed_at_last = 0

    def restart(self) -> None:
        self._replayed_at_last = 0

    def admit(self, line: LogLine) -> bool:
        return self.admit_ts(line.ts)

    def admit_ts(self, ts: int | None) -> bool:
        """`admit` for a line known by its timestamp only."""
        if ts is None:
            return True
        if self.last is None or ts > self.last:
            self.last = ts
            self.count_at_last = 1
            self._replayed_at_last = 1
            return True
        if ts < self.last:
            return False
        self._replayed_at_last += 1
        if self._replayed_at_last <= self.count_at_last:
            return False
        self.count_at_last += 1
        return True

    def since(self) -> str | None:
        return since_time(self.last) if self.last is not None else None

    def all_seen_at_last(self) -> None:
        """Every line at the newest timestamp counts as shown: a tail read that began among them (its lines all of
        that one time) does not know how many came before it, which a replay from that second shows again."""
        self.count_at_last = sys.maxsize


def merge_by_time(streams: list[list[LogLine]]) -> list[LogLine]:
    """Several Pods' lines (each already in order) merged by timestamp; ties keep stream order."""
    keyed = [[((line.ts or 0), index, pos, line) for pos, line in enumerate(lines)]
             for index, lines in enumerate(streams)]
    return [item[3] for item in heapq.merge(*keyed)]


def parse_since(value: str) -> int:
    """`--since 90s|5m|1h30m` (Go duration, as kubectl) -> whole seconds (at least 1, at most MAX_SINCE_SECONDS:
    anything longer means every line)."""
    return max(1, int(parse_duration(value) + 0.999))


def parse_duration(value: str) -> float:
    """A Go duration (`90s`, `5m`, `1h30m`, `0s`) -> seconds, at most MAX_SINCE_SECONDS."""
    text = value.strip()
    pos = 0
    total = 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not text or pos != len(text):
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise UsageError(f"--since {shown!r}: expected a duration like 30s, 5m or 1h30m")
    return min(total, MAX_SINCE_SECONDS)
