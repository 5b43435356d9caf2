"""LogReads: the Pods' logs that periodic topics read (the Header logs, for the alert rules and the PROGRESS column;
the other Running Pods' logs, for run-oom), read incrementally and shared by every topic of one context (one per
ClusterAccess, so two alert scopes and the PROGRESS topic never read one log twice within `max_age`).

The first read of a Pod's `main` log asks for its newest FIRST_TAIL_LINES of the last FIRST_SINCE_SECONDS; each later
read only for what came after the newest line seen (`sinceTime` of that line's second; the lines older than it are
dropped, and so are those of its very timestamp unless they grew: the last line of a read may have been
unterminated, like a tqdm bar that redraws itself), at most NEXT_TAIL_LINES of it. The new lines are folded at once into the Pod's
`Seen` (alerting.rules.scan_log facts, the newest progress row) and dropped: a read of a quiet log is one small
answer and no parsing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rlark_tui.alerting.rules import LogFacts, scan_log
from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.cluster.http import tail_bytes, tail_left_out
from rlark_tui.cluster.logmerge import since_time, split_raw
from rlark_tui.cluster.metrics import PROGRESS_SINCE_SECONDS as FIRST_SINCE_SECONDS
from rlark_tui.cluster.metrics import PROGRESS_TAIL_BYTES as FIRST_TAIL_BYTES
from rlark_tui.cluster.metrics import PROGRESS_TAIL_LINES as FIRST_TAIL_LINES
from rlark_tui.telemetry.progress import Line, Progress, latest_progress

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

NEXT_TAIL_LINES = 2000
"""A later read takes at most this many of the new lines (a Pod printing faster loses the middle, never the end)."""
NEXT_TAIL_BYTES = tail_bytes(NEXT_TAIL_LINES)
"""...and holds at most this much of them (126 MiB, the newest; `Seen.left_out` says what it left out): a line may be
16 MiB (http.MAX_LINE_BYTES), and 2,000 of them were 32 GiB held by an alert round, where a kubelet's 2,000 are at
most 2,000 entries of 16 KiB."""
CARRY_LINES = 40
"""Lines from the newest `Global Step` line on are kept for the next read (a table a read cut in two)."""
CARRY_CHARS = 64 * 1024
"""...unless they hold more than this many characters (an RLinf table is a few KB): a Pod whose log had a `Global
Step` line and then three lines of 16 MiB had 48 MiB kept per Pod read, at every read, for as long as it ran."""
FORGET_SECONDS = 3600.0
"""A Pod's log not read for this long is forgotten (out of every scope); one whose Pod left the Snapshot is forgotten
at the next alert round (`forget_gone`)."""


@dataclass(frozen=True)
class Seen:
    """What one Pod's log has said so far, as of its latest read."""

    read_at: float = float("-inf")
    """Monotonic time of the latest read (-inf: never read)."""
    wall_at: float | None = None
    """Epoch time of the latest read that answered."""
    facts: LogFacts = field(default_factory=LogFacts)
    progress: Progress | None = None
    """The newest progress row read (kept when later reads find none)."""
    carry: tuple[Line, ...] = ()
    error: str = ""
    """Why the latest read failed ("" when it answered)."""
    left_out: str = ""
    """What the latest read left out to hold no more than its bound, in one line ("" when nothing)."""


class LogReads:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[Hashable, Seen] = {}
        self._last: dict[Hashable, tuple[int, frozenset[str]]] = {}
        """Pod -> the timestamp (epoch ns) of the newest lines read, and their texts."""
        self._reading: dict[Hashable, threading.Lock] = {}
        self._wanted: dict[str, float] = {}
        self._scheduled: dict[str, tuple[frozenset[str] | None, float]] = {}
        self._pods: object = None
        """The Snapshot's Pod CRs as `forget_gone` last looked at them."""

    def seen(self, cluster: str, pod: str) -> Seen | None:
        with self._lock:
            return self._seen.get((cluster, pod))

    def read(self, access: ClusterAccess, cluster: str, pod: str, *, max_age: float, instance: str | None = None) -> Seen:
        """The Pod's log read on from where the last read ended, unless it was read less than `max_age` seconds
        ago (then what that read saw). One read per Pod at a time: a second asker meanwhile waits and gets the
        first's answer. `instance`: the container instance the facts belong to (new facts when it differs; None:
        the same as before). A failed read keeps what was seen, with the error."""
        key = (cluster, pod)
        with self._lock:
            reading = self._reading.setdefault(key, threading.Lock())
        with reading:
            with self._lock:
                seen = self._seen.get(key) or Seen()
                last = self._last.get(key)
            if time.monotonic() - seen.read_at < max_age:
                return seen
            try:
                lines, last, left_out = self._new_lines(access, cluster, pod, last)
            except (ApiError, Unreachable) as exc:
                seen = replace(seen, read_at=time.monotonic(), error=str(exc), left_out="")
            else:
                seen = replace(_fold(seen, lines, instance), left_out=left_out)
            with self._lock:
                self._seen[key] = seen
                if last is not None:
                    self._last[key] = last
                self._forget_old(seen.read_at)
            return seen

    @staticmethod
    def _new_lines(access: ClusterAccess, cluster: str, pod: str, last: tuple[int, frozenset[str]] | None
                   ) -> tuple[list[Line], tuple[int, frozenset[str]] | None, str]:
        """The lines after the newest ones read (all of the first read), the newest ones now, and what the read
        left out to hold no more than its bound ('' or one line)."""
        if last is None:
            stream = access.pod_log(cluster, pod, tail=FIRST_TAIL_LINES, since_seconds=FIRST_SINCE_SECONDS,
                                    timestamps=True, read_timeout=30, tail_bytes=FIRST_TAIL_BYTES)
        else:
            stream = access.pod_log(cluster, pod, tail=NEXT_TAIL_LINES, since_time=since_time(last[0]),
                                    timestamps=True, read_timeout=30, tail_bytes=NEXT_TAIL_BYTES)
        lines = []
        newest, texts = last if last is not None else (None, frozenset())
        for raw in stream:
            _stamp, ns, text = split_raw(raw)
            if ns is not None and newest is not None and (ns < newest or ns == newest and text in texts):
                continue  # read before
            lines.append((ns / 1e9 if ns is not None else None, text))
            if ns is not None and (newest is None or ns > newest):
                newest, texts = ns, frozenset({text})
            elif ns is not None and ns == newest:
                texts = texts | {text}
        return lines, (newest, texts) if newest is not None else None, tail_left_out(stream)

    def _forget_old(self, now: float) -> None:
        self._forget([k for k, seen in self._seen.items() if now - seen.read_at > FORGET_SECONDS])

    def _forget(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            del self._seen[key]
            self._last.pop(key, None)
            self._reading.pop(key, None)

    def forget_gone(self, pods: object, present: Callable[[], Collection[Hashable]]) -> None:
        """Forget what was read of the Pods that left the Snapshot: `pods` is its Pod CRs (looked at again only when
        it is a new mapping), `present()` their (member cluster, pod) keys. A gone Pod's read (its facts, up to
        CARRY_CHARS of lines) was kept FORGET_SECONDS, so a control plane whose Pods come and go under new names
        held an hour of them; now no more than the Pods listed."""
        with self._lock:
            if pods is self._pods:
                return
            self._pods = pods
            if not self._seen:
                return
        kept = set(present())
        with self._lock:
            self._forget([key for key in self._seen if key not in kept])

    # -- who reads which Header logs ---------------------------------------------------------------------------

    def want(self, job: str) -> None:
        """A screen shows this Job's progress (the job list's PROGRESS): the alert rounds read its log first."""
        with self._lock:
            self._wanted[job] = time.monotonic()

    def wanted(self, within: float) -> set[str]:
        """The Jobs a screen asked for within the last `within` seconds."""
        now = time.monotonic()
        with self._lock:
            for job in [j for j, at in self._wanted.items() if now - at > within]:
                del self._wanted[job]
            return set(self._wanted)

    def schedule(self, scope: str, jobs: frozenset[str] | None, until: float) -> None:
        """An alert round reads the Header logs of `jobs` (None: every Job) and will read them again before the
        monotonic time `until`."""
        with self._lock:
            self._scheduled[scope] = (jobs, until)

    def scheduled(self, job: str) -> bool:
        """Whether a live alert round reads this Job's Header log (the PROGRESS topic then reads nothing itself)."""
        now = time.monotonic()
        with self._lock:
            return any(until > now and (jobs is None or job in jobs) for jobs, until in self._scheduled.values())


def _fold(seen: Seen, lines: list[Line], instance: str | None) -> Seen:
    """What a read's new lines add to what was seen."""
    facts = scan_log(lines, seen.facts, instance) if lines or instance not in (None, seen.facts.instance) \
        else seen.facts
    progress, carry = seen.progress, seen.carry
    if lines:
        window = [*carry, *lines]
        progress = latest_progress(window) or progress
        start = max((i for i, (_, text) in enumerate(window) if "Global Step" in text), default=len(window))
        carry = tuple(window[start:][-CARRY_LINES:])
        if sum(len(text) for _, text in carry) > CARRY_CHARS:
            carry = ()  # no table: nothing to join to the next read's lines
    return Seen(time.monotonic(), time.time(), facts, progress, carry)
