"""Fault switches for tests: forced error codes, slow responses, dropped watches, 410s, outages, cut logs.
Set from Python (`sandbox.faults.<method>(...)`) or over HTTPS with the bearer token.

Python API (`Faults`, thread-safe; `verb` is get|list|watch|create|update|patch|delete or "*";
`resource` is a plural such as "jobs", a subresource such as "jobs/status" or "pods/log", or "*";
`plane` is "root", a cluster namespace such as "rlark-gpu-a", "gateway", or "*"; on the gateway the verb comes
from the HTTP method (GET = get) and the resource is "clusters", "storage", "ssh-user-keys", "jobs/logs" or a
CRD plural):
- `fail(code, verb="*", resource="*", plane="*", times=None, message=None, causes=None)`: answer matching
  requests with a Kubernetes Status of that code (403 Forbidden, 409 Conflict, 422 Invalid, 500, 503 ...);
  `times` = how many requests (None = until cleared); `causes` = the 422's `details.causes`, a list of
  {"field", "message", "reason"} (default: one cause on `spec`).
- `delay(seconds, verb="*", resource="*", plane="*")`: sleep before answering matching requests.
- `close_watches_every(seconds)`: every open watch stream is ended after that many seconds (None = off).
- `expire_watches(resource="*", times=1)`: the next matching watch gets an ERROR event with a 410 Expired
  Status (the store also forgets its history, so resuming from an old resourceVersion keeps failing).
- `outage(seconds, mode="drop")`: for that long every API request has its connection dropped without an
  answer ("drop") or gets 503 ("503"); open watches and log follows are ended.
- `server_down(on=True)`: rlark-server's port refuses connections and drops open ones (log follows, watches)
  within 0.2 s, while the control plane and gateway port stay up; it listens again on the same port when off.
- `agent_offline(agent, on=True)`: that agent (e.g. "gpu-a") has no tunnel to rlark-server, whose proxy
  routes for it answer 502 as the platform's reverse proxy does.
- `cleared()`: a context manager; every switch is off when it starts and when it ends.
- `cut_logs(after_lines=1, times=1, follow_only=False)`: a matching `pods/log` stream sends `after_lines`
  lines, then half of the next line without its newline, then drops the connection; with `follow_only`, only
  follow streams match (not the one-off reads others make meanwhile, e.g. the TUI's alert rounds).
- `stop_tensorboard(pod)`: that Pod's TensorBoard sidecar is stopped and stays down (the gateway's
  TensorBoard route then answers 502, as for a dead upstream) until cleared; `pod` is the local Pod name.
- `extra_items(items, resource="*", plane="*")`: matching list answers carry `items` after the stored objects,
  as given: shapes the store refuses (`metadata: 5`, a list, a number), as a server of the wrong shape answers.
- `clock`: the outage's clock (time.monotonic; a test may set its own).
- `clear()` removes every fault; `describe()` returns the active ones as JSON-able data.

HTTP (same token as the API): `POST /_sandbox/faults` with `{"op": "<method>", "args": {...}}`, e.g.
`{"op": "fail", "args": {"code": 403, "verb": "create", "resource": "jobs"}}`; `GET /_sandbox/faults`
lists them; `DELETE /_sandbox/faults` clears them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class _Rule:
    verb: str
    resource: str
    plane: str
    code: Any = 0
    seconds: float = 0.0
    times: int | None = None
    message: str | None = None
    causes: list[dict] | None = None

    def matches(self, verb: str, resource: str, plane: str) -> bool:
        return (self.verb in ("*", verb) and self.resource in ("*", resource)
                and self.plane in ("*", plane))


class Faults:
    OPS = ("fail", "delay", "close_watches_every", "expire_watches", "outage", "cut_logs", "stop_tensorboard",
           "server_down", "agent_offline", "extra_items", "clear")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self.clock = clock
        """What an outage's end is measured on (a test sets its own clock to end one without waiting it out)."""
        self.clear()

    def clear(self) -> None:
        with self._lock:
            self._fail: list[_Rule] = []
            self._delay: list[_Rule] = []
            self._gone: list[_Rule] = []
            self.watch_close_seconds: float | None = None
            self._outage_until = 0.0
            self._outage_mode = "drop"
            self._cut: _Rule | None = None
            self._cut_follow_only = False
            self._tensorboards_down: set[str] = set()
            self._server_down = False
            self._offline: set[str] = set()
            self._extra: list[tuple[_Rule, list]] = []

    @contextmanager
    def cleared(self) -> Iterator[Faults]:
        """No switch set while the block runs (one test's faults never reach the next), none left after it."""
        self.clear()
        try:
            yield self
        finally:
            self.clear()

    def fail(self, code: int, verb: str = "*", resource: str = "*", plane: str = "*",
             times: int | None = None, message: str | None = None, causes: list[dict] | None = None) -> None:
        if causes is not None and not (isinstance(causes, list) and all(isinstance(c, dict) for c in causes)):
            raise ValueError("causes is a list of {field, message, reason} objects")
        with self._lock:
            self._fail.append(_Rule(verb, resource, plane, code=int(code), times=times, message=message,
                                    causes=causes))

    def delay(self, seconds: float, verb: str = "*", resource: str = "*", plane: str = "*") -> None:
        with self._lock:
            self._delay.append(_Rule(verb, resource, plane, seconds=float(seconds)))

    def close_watches_every(self, seconds: float | None) -> None:
        with self._lock:
            self.watch_close_seconds = float(seconds) if seconds else None

    def expire_watches(self, resource: str = "*", times: int = 1, code: Any = 410) -> None:
        """The next `times` watches of `resource` end at once in an ERROR event whose Status has `code` (410: the
        history is gone; any JSON value: a hostile server's)."""
        with self._lock:
            self._gone.append(_Rule("watch", resource, "*", code=code, times=times))

    def outage(self, seconds: float, mode: str = "drop") -> None:
        if mode not in ("drop", "503"):
            raise ValueError("outage mode is 'drop' or '503'")
        with self._lock:
            self._outage_until = self.clock() + float(seconds)
            self._outage_mode = mode

    def cut_logs(self, after_lines: int = 1, times: int | None = 1, follow_only: bool = False) -> None:
        with self._lock:
            self._cut = _Rule("get", "pods/log", "*", code=int(after_lines), times=times)
            self._cut_follow_only = bool(follow_only)

    def stop_tensorboard(self, pod: str) -> None:
        with self._lock:
            self._tensorboards_down.add(str(pod))

    def tensorboard_stopped(self, pod: str) -> bool:
        with self._lock:
            return pod in self._tensorboards_down

    def server_down(self, on: bool = True) -> None:
        with self._lock:
            self._server_down = bool(on)

    def agent_offline(self, agent: str, on: bool = True) -> None:
        with self._lock:
            if on:
                self._offline.add(agent)
            else:
                self._offline.discard(agent)

    def extra_items(self, items: list, resource: str = "*", plane: str = "*") -> None:
        if not isinstance(items, list):
            raise ValueError("items is a list")
        with self._lock:
            self._extra.append((_Rule("list", resource, plane), list(items)))

    # ----- queried by the server -----
    def extra_for(self, resource: str, plane: str) -> list:
        """The extra items of a list answer of `resource` on `plane` (none unless extra_items set some)."""
        with self._lock:
            return [item for rule, items in self._extra if rule.matches("list", resource, plane) for item in items]

    def is_server_down(self) -> bool:
        with self._lock:
            return self._server_down

    def is_offline(self, agent: str) -> bool:
        with self._lock:
            return agent in self._offline

    @staticmethod
    def _take(rules: list[_Rule], verb: str, resource: str, plane: str) -> _Rule | None:
        for rule in rules:
            if rule.matches(verb, resource, plane):
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        rules.remove(rule)
                return rule
        return None

    def forced(self, verb: str, resource: str, plane: str) -> _Rule | None:
        with self._lock:
            return self._take(self._fail, verb, resource, plane)

    def delay_for(self, verb: str, resource: str, plane: str) -> float:
        with self._lock:
            return sum(r.seconds for r in self._delay if r.matches(verb, resource, plane))

    def take_gone(self, resource: str) -> Any:
        """The code of the ERROR event the next watch of `resource` ends in, or None."""
        with self._lock:
            rule = self._take(self._gone, "watch", resource, "*")
            return None if rule is None else rule.code

    def outage_mode(self) -> str | None:
        with self._lock:
            return self._outage_mode if self.clock() < self._outage_until else None

    def take_cut(self, follow: bool) -> int | None:
        """Lines to send before cutting this log stream (`follow`: a follow stream), or None."""
        with self._lock:
            rule = self._cut
            if rule is None or (self._cut_follow_only and not follow):
                return None
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    self._cut = None
            return rule.code

    def describe(self) -> dict:
        with self._lock:
            remaining = max(0.0, self._outage_until - self.clock())
            return {
                "fail": [asdict(r) for r in self._fail],
                "delay": [asdict(r) for r in self._delay],
                "expireWatches": [asdict(r) for r in self._gone],
                "closeWatchesEvery": self.watch_close_seconds,
                "outage": {"seconds": round(remaining, 3), "mode": self._outage_mode} if remaining else None,
                "cutLogs": {**asdict(self._cut), "followOnly": self._cut_follow_only} if self._cut else None,
                "tensorboardsStopped": sorted(self._tensorboards_down),
                "serverDown": self._server_down,
                "agentsOffline": sorted(self._offline),
                "extraItems": [{**asdict(rule), "count": len(items)} for rule, items in self._extra],
            }

    def apply(self, op: str, args: dict | None) -> None:
        """Run one operation by name (the HTTP route's entry point); ValueError on a bad request."""
        if op not in self.OPS:
            raise ValueError(f"unknown fault op {op!r}; one of {', '.join(self.OPS)}")
        try:
            getattr(self, op)(**(args or {}))
        except TypeError as exc:
            raise ValueError(f"bad arguments for {op}: {exc}") from None
