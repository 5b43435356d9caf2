"""Alert hooks of `rlark watch`: a command run per event (`--exec`) and a webhook (`--webhook`, formats json, slack,
feishu, dingtalk).

Each hook has its own thread and a bounded queue: posting an event never blocks the reads (the oldest event is
dropped when the queue is full, and counted). Events go out in order, each on a thread of its own: one without an
answer after STALL_SECONDS is said on stderr then, and left to finish (or time out, REQUEST_TIMEOUT) while the next
events go out, at most IN_FLIGHT at a time, so a receiver stuck on one alert holds no later one back. A delivery
that fails or times out is said on stderr at once, the first time of a run of failures, and is tried again later:
behind the events that came meanwhile. What still failed is counted and reported at most once per REPORT_SECONDS,
not per event. Payloads hold only the event's fields: its message masked and cleaned by alerting/rules.py, its
names (and a phase) as the control plane gave them, JSON-escaped in a webhook's body and one-line fields in a
command's environment. The webhook URL (often a secret itself) is never printed, only its host. The command is split once with shlex (the user's own text); cluster data reaches it only as RLARK_ALERT_*
environment variables, never through a shell.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable

from rlark_tui.errors import UsageError
from rlark_tui.text import sinks

FORMATS = ("json", "slack", "feishu", "dingtalk")
QUEUE_SIZE = 1000
ATTEMPTS = 4
BACKOFF_SECONDS = (1.0, 2.0, 4.0)
REQUEST_TIMEOUT = 10.0
STALL_SECONDS = 2.0
"""A delivery without an answer this long is said on stderr, and the next event goes out beside it."""
IN_FLIGHT = 4
"""Deliveries of one hook open at a time (stalled ones included); the next event waits for one to end."""
EXEC_TIMEOUT = 60.0
REPORT_SECONDS = 60.0


def payload(record: dict, line: str, fmt: str) -> dict:
    """The body for a webhook: the JSON record, or the chat bot's text message shape, its text through
    `text.sinks.chat` (no mention and no link from cluster text)."""
    if fmt == "json":
        return record
    if fmt == "slack":
        return {"text": sinks.chat(line, fmt)}
    if fmt == "feishu":
        return {"msg_type": "text", "content": {"text": sinks.chat(line, fmt)}}
    if fmt == "dingtalk":
        return {"msgtype": "text", "text": {"content": sinks.chat(line, fmt)}}
    raise UsageError(f"--webhook-format {fmt!r}: one of {', '.join(FORMATS)}")


ENV_CHARS = 4096
"""Each RLARK_ALERT_* variable is cut here: the kernel refuses to start a program with one environment string past
128 KiB (E2BIG), and an object's name is the cluster's text (a Pod CR's podName, up to an object's 1.5 MB)."""


def environment(record: dict) -> dict[str, str]:
    """RLARK_ALERT_TIME, _SEVERITY, _RULE, _JOB, _NAMESPACE, _OBJECT, _MESSAGE, _STATE (and _CONTEXT), each a
    one-line field (sinks.one_line) of at most ENV_CHARS, a lone surrogate as its escape (sinks.encodable: no
    environment holds one): names and a phase come from the control plane as they are."""
    return {f"RLARK_ALERT_{key.upper()}": _cut(sinks.encodable(sinks.one_line(value))) for key, value in record.items()}


def _cut(value: str) -> str:
    return value if len(value) <= ENV_CHARS else value[:ENV_CHARS - 1] + "…"


class Hook:
    """One destination with its queue and dispatching thread; `post(record, line)` returns at once."""

    def __init__(self, name: str, deliver: Callable[[dict, str], None], report: Callable[[str], None],
                 backoff: tuple[float, ...] = BACKOFF_SECONDS, stall: float = STALL_SECONDS) -> None:
        self.name = name
        self._deliver = deliver
        self._report = report
        self._backoff = backoff
        self._stall = stall
        self._queue: queue.Queue = queue.Queue(QUEUE_SIZE)
        self._slots = threading.Semaphore(IN_FLIGHT)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._open = 0
        self._failed = 0
        self._dropped = 0
        self._last_error = ""
        self._reported_at = float("-inf")
        self._down = False
        self._stalled = False
        self.delivered = 0
        self._thread = threading.Thread(target=self._run, name=f"hook-{name}", daemon=True)
        self._thread.start()

    def post(self, record: dict, line: str) -> None:
        while True:
            try:
                self._queue.put_nowait((record, line, 0))
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    with self._lock:
                        self._dropped += 1
                except queue.Empty:
                    pass

    def close(self, wait: float = 5.0) -> None:
        """Deliver what is queued for up to `wait` seconds, then stop."""
        deadline = time.monotonic() + wait
        while (not self._queue.empty() or self._open) and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        with self._lock:
            self._failed += self._queue.qsize() + self._open
        with contextlib.suppress(queue.Full):  # it wakes a dispatcher waiting on an empty queue; a full one has none
            self._queue.put_nowait((None, "", 0))
        self._thread.join(max(0.0, deadline - time.monotonic()) + 0.1)
        self._say()

    def _run(self) -> None:
        while not self._stop.is_set():
            record, line, tried = self._queue.get()
            if record is None:
                return
            while not self._slots.acquire(timeout=0.1):
                if self._stop.is_set():
                    return
            done = threading.Event()
            with self._lock:
                self._open += 1
            threading.Thread(target=self._attempt, args=(record, line, tried, done), name=f"hook-{self.name}-post",
                             daemon=True).start()
            answered = done.wait(self._stall)
            with self._lock:
                said, self._stalled = self._stalled, not answered
            if not (answered or said or self._stop.is_set()):
                self._report(f"{self.name}: no answer within {self._stall:g}s; later alerts go out meanwhile")
            if time.monotonic() - self._reported_at >= REPORT_SECONDS:
                self._say()

    def _attempt(self, record: dict, line: str, tried: int, done: threading.Event) -> None:
        try:
            self._deliver(record, line)
            with self._lock:
                self.delivered += 1
                was_down, self._down = self._down, False
            if was_down:
                self._report(f"{self.name}: delivering again")
        except Exception as exc:  # noqa: BLE001 - any failure of a hook is reported, never raised
            self._failed_once(record, line, tried, _one_line(exc))
        finally:
            with self._lock:
                self._open -= 1
            self._slots.release()
            done.set()

    def _failed_once(self, record: dict, line: str, tried: int, error: str) -> None:
        with self._lock:
            self._last_error = error
            said, self._down = self._down, True
        if not said:
            self._report(f"{self.name}: not delivered ({error}); tried again behind newer alerts")
        if tried + 1 < ATTEMPTS:
            # newer events go first; a lone event waits its back-off before it is tried again
            if self._queue.empty() and self._stop.wait(self._backoff[min(tried, len(self._backoff) - 1)]):
                return
            try:
                self._queue.put_nowait((record, line, tried + 1))
                return
            except queue.Full:
                pass
        with self._lock:
            self._failed += 1

    def _say(self) -> None:
        with self._lock:
            failed, dropped, error = self._failed, self._dropped, self._last_error
            self._failed = self._dropped = 0
        if not (failed or dropped):
            return
        parts = []
        if failed:
            parts.append(f"{failed} event(s) not delivered ({error})")
        if dropped:
            parts.append(f"{dropped} dropped (queue full)")
        self._report(f"{self.name}: " + "; ".join(parts))
        self._reported_at = time.monotonic()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def webhook(url: str, fmt: str, report: Callable[[str], None], timeout: float = REQUEST_TIMEOUT,
            stall: float = STALL_SECONDS) -> Hook:
    from rlark_tui.cluster.errors import ApiError, Request, Unreachable
    from rlark_tui.cluster.http import outside
    from rlark_tui.cluster.transport import MAX_ERROR_BYTES

    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UsageError("--webhook: expected an http:// or https:// URL")
    payload({}, "", fmt)  # an unknown format is a usage error now, not at the first event
    where = f"webhook {parsed.scheme}://{parsed.hostname}" + (f":{parsed.port}" if parsed.port else "")
    receiver, target = outside(url, "receiver", {"User-Agent": "rlark-watch"})

    def deliver(record: dict, line: str) -> None:
        try:
            receiver.json("POST", target, Request("post", "alert", source="receiver"), body=payload(record, line, fmt), timeout=timeout,
                          max_bytes=MAX_ERROR_BYTES)
        except ApiError as exc:
            raise RuntimeError(f"HTTP {exc.status}") from None
        except Unreachable as exc:
            raise RuntimeError(str(exc).replace(url, where)) from None

    return Hook(where, deliver, report, stall=stall)


def command(text: str, report: Callable[[str], None]) -> Hook:
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"--exec: {exc}") from None
    if not argv:
        raise UsageError("--exec: empty command")

    def deliver(record: dict, line: str) -> None:
        done = subprocess.run(argv, env={**os.environ, **environment(record)}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=EXEC_TIMEOUT,
                              check=False)
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise RuntimeError(f"exit {done.returncode} {tail[0][:120]}".strip())

    return Hook(f"exec {argv[0]}", deliver, report)
