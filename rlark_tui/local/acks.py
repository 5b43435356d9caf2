"""Local alert state in the state dir: the alert counts every evaluator leaves for `rlark status` (SUMMARY), and
acknowledged alerts, kept (`alert-acks.json`, 0600) so that a restart of rlark (the TUI or
`rlark watch`) does not fire again what the user acknowledged. Every rlark process reads the same file.

An entry is the alert's `ack_key` (`<job uid>/<rule>/<object>`: a new Job of the same name is a new run) with when
it was acknowledged; entries older than KEEP_SECONDS are dropped on the next write.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rlark_tui.local.fsutil import read_own, updating, write_private
from rlark_tui.model.clock import written_at
from rlark_tui.text.parse import load_json

if TYPE_CHECKING:
    from rlark_tui.view.overview import FiringAlert

FILE_NAME = "alert-acks.json"
SUMMARY = "alerts-summary.json"
KEEP_SECONDS = 30 * 24 * 3600.0
MAX_ENTRIES = 5000
MAX_FILE_BYTES = 4 * 1024 * 1024
"""The acknowledgements file read back (MAX_ENTRIES entries are far less)."""

def _path(state_dir: Path) -> Path:
    return Path(state_dir) / FILE_NAME


def _read(path: Path) -> dict[str, float]:
    try:
        data = load_json(read_own(path, MAX_FILE_BYTES).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    entries = data.get("acks") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {str(key): float(at) for key, at in entries.items() if isinstance(at, (int, float))}


class AckFile:
    """The acknowledgements file as one reader or writer sees it: the keys last read, read again only when the
    file changed (another write replaces it: a new inode). Each alert scope of a Reconciler has one, and so has
    the app for its writes; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[Path, tuple[int, int, int], frozenset[str]] | None = None

    def load(self, state_dir: Path) -> frozenset[str]:
        """The acknowledged keys; a missing or broken file is none."""
        path = _path(state_dir)
        try:
            found = path.stat()
        except OSError:
            return frozenset()
        stamp = (found.st_ino, found.st_mtime_ns, found.st_size)
        with self._lock:
            last = self._last
        if last is not None and last[0] == path and last[1] == stamp:
            return last[2]
        keys = frozenset(_read(path))
        with self._lock:
            self._last = (path, stamp, keys)
        return keys

    def acknowledge(self, state_dir: Path, *keys: str, now: float | None = None) -> None:
        """Add acknowledgements (atomic write, 0600; one write at a time, in this process and across processes:
        fsutil.updating)."""
        now = time.time() if now is None else now
        path = _path(state_dir)
        with self._lock, updating(path):
            entries = {key: at for key, at in _read(path).items()
                       if written_at(at, now) is not None and now - at < KEEP_SECONDS}
            entries.update(dict.fromkeys(keys, now))
            newest = dict(sorted(entries.items(), key=lambda item: item[1])[-MAX_ENTRIES:])
            write_private(path, json.dumps({"acks": newest}, indent=1, sort_keys=True) + "\n")


LAST_TIME = 253402300800.0
"""The first second past what a datetime holds (year 10000): a firing time at or past it, in a summary another
version or a hand edit wrote, is an unknown time (fromtimestamp raised OverflowError: `rlark status --long`)."""
FIRING_LISTED = 50
"""The summary lists at most this many firing alerts (`rlark status --long`), most severe first."""


@dataclass(frozen=True)
class Firing:
    """A firing alert read back from the summary."""

    severity: str
    rule: str
    job: str
    object: str
    message: str
    fired_at: float
    context: str = ""
    """Whose alert, when the evaluator followed several contexts ('' for one)."""


def write_summary(state_dir: Path, counts: dict[str, int], firing: Sequence[tuple[str, FiringAlert]] = (),
                  now: float | None = None) -> None:
    """Firing alerts per severity and the warning+critical total (`rlark status`'s ⚠), and the firing alerts
    themselves (`rlark status --long`), each with its context when the evaluator followed several ('' for
    one), 0600."""
    alerts = counts.get("critical", 0) + counts.get("warning", 0)
    listed = [{"severity": a.severity, "rule": a.rule, "job": a.job, "object": a.object, "message": a.message,
               "fired_at": a.fired_at, **({"context": context} if context else {})}
              for context, a in firing[:FIRING_LISTED]]
    write_private(Path(state_dir) / SUMMARY, json.dumps({"time": time.time() if now is None else now,
                                                         "alerts": alerts, "counts": counts, "firing": listed}),
                  durable=False)


def firing_of(summary: dict, now: float, within: float) -> list[Firing] | None:
    """The firing alerts of a summary written within `within` seconds; None when no evaluator reported lately
    (the file may be hand-edited: an entry not in its shape is left out, a firing time no datetime holds is
    unknown (0); the text is cleaned where shown)."""
    at = written_at(summary.get("time"), now)
    listed = summary.get("firing")
    if at is None or now - at > within or not isinstance(listed, list):
        return None
    found = []
    for entry in listed[:FIRING_LISTED]:
        if not isinstance(entry, dict):
            continue
        severity, rule, job, obj, message = (entry.get(key) for key in ("severity", "rule", "job", "object",
                                                                        "message"))
        fired = entry.get("fired_at")
        context = entry.get("context", "")
        if isinstance(severity, str) and isinstance(rule, str) and isinstance(job, str) and isinstance(obj, str) \
                and isinstance(message, str) and isinstance(fired, int | float) and not isinstance(fired, bool) \
                and isinstance(context, str):
            found.append(Firing(severity, rule, job, obj, message, float(fired) if 0 < fired < LAST_TIME else 0.0,
                                context))
    return found
