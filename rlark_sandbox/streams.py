"""What the sandbox's API server streams right now (open watches, log follows), for tests to wait on.

An in-process object on the Sandbox (`sandbox.streams`), never a route: a real platform has none. The server
counts a watch once its subscription is in place (every later change reaches it) and a log follow once it has
opened the log file (every later line reaches it); a follow is "caught up" when it has read the file to its end
and sent what it read.

API (thread-safe; the waits block the calling thread, so an async test calls them through asyncio.to_thread):
- `watches_opened(resource, plane=ROOT) -> int`: watches on that resource opened since the sandbox was made;
  `watches_asked(...)` the watch requests that reached the server, opened or not (a fault refused it, a 410).
- `wait_watch(resource, plane=ROOT, opened=1, asked=0, timeout=30.0)`: returns once `opened` watches have opened
  and `asked` were asked for.
- `follows_opened(pod, container=None) -> int`: log follows of that pod (any plane) opened so far.
- `wait_follow(pod, container=None, opened=1, caught_up=False, timeout=30.0)`: returns once `opened` follows of
  the pod have opened and, with `caught_up`, one still open has sent all its log file holds.
  A wait that times out raises AssertionError naming what it waited for and what it saw.
- `resizes(pod) -> list[(rows, cols)]`: the sizes given to that Pod's exec terminals, in order;
  `wait_resize(pod, rows, cols, after=0, timeout=30.0)` returns once one past the first `after` is that size.
- Server side: `watch_asked(plane, resource)` as a watch request arrives, `watch_opened(plane, resource)` once
  its subscription is in place, and
  `following(cluster, namespace, pod, container, path)`, a context manager around a follow's life yielding a
  `Follow` whose `read_to(position, idle)` says how far it has read and whether it is waiting for more;
  `resized(pod, rows, cols)` once an exec's terminal has taken a new size.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from rlark_sandbox.resources import ROOT

__all__ = ["Follow", "Streams"]


class Follow:
    """One open log follow: its pod's key, its file and how far it has read."""

    def __init__(self, streams: Streams, key: tuple[str, str, str, str], path: Path):
        self._streams = streams
        self.key = key
        self.path = path
        self.position = 0
        self.idle = False

    def read_to(self, position: int, idle: bool) -> None:
        """The follow has read the file up to `position`; `idle`: it found nothing more and waits for lines."""
        if (position, idle) != (self.position, self.idle):
            with self._streams._changed:
                self.position, self.idle = position, idle
                self._streams._changed.notify_all()

    def caught_up(self) -> bool:
        try:
            return self.idle and self.position >= self.path.stat().st_size
        except OSError:
            return False


class Streams:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._watches: Counter[tuple[str, str]] = Counter()
        self._asked: Counter[tuple[str, str]] = Counter()
        self._follows: Counter[tuple[str, str, str, str]] = Counter()
        self._open_follows: list[Follow] = []
        self._resizes: dict[str, list[tuple[int, int]]] = {}

    # ----- server side -----
    def watch_asked(self, plane: str, resource: str) -> None:
        with self._changed:
            self._asked[(plane, resource)] += 1
            self._changed.notify_all()

    def watch_opened(self, plane: str, resource: str) -> None:
        with self._changed:
            self._watches[(plane, resource)] += 1
            self._changed.notify_all()

    @contextlib.contextmanager
    def following(self, cluster: str, namespace: str, pod: str, container: str, path: Path) -> Iterator[Follow]:
        follow = Follow(self, (cluster, namespace, pod, container), path)
        with self._changed:
            self._follows[follow.key] += 1
            self._open_follows.append(follow)
            self._changed.notify_all()
        try:
            yield follow
        finally:
            with self._changed:
                self._open_follows.remove(follow)
                self._changed.notify_all()

    def resized(self, pod: str, rows: int, cols: int) -> None:
        with self._changed:
            self._resizes.setdefault(pod, []).append((rows, cols))
            self._changed.notify_all()

    # ----- test side -----
    def resizes(self, pod: str) -> list[tuple[int, int]]:
        with self._changed:
            return list(self._resizes.get(pod, ()))

    def wait_resize(self, pod: str, rows: int, cols: int, after: int = 0, timeout: float = 30.0) -> None:
        self._wait(lambda: (rows, cols) in self._resizes.get(pod, [])[after:], timeout,
                   lambda: f"an exec terminal of pod {pod} take the size {rows}x{cols} "
                           f"(sizes taken: {self._resizes.get(pod, [])[after:]})")

    def watches_opened(self, resource: str, plane: str = ROOT) -> int:
        with self._changed:
            return self._watches[(plane, resource)]

    def watches_asked(self, resource: str, plane: str = ROOT) -> int:
        with self._changed:
            return self._asked[(plane, resource)]

    def wait_watch(self, resource: str, plane: str = ROOT, opened: int = 1, asked: int = 0,
                   timeout: float = 30.0) -> None:
        key = (plane, resource)
        self._wait(lambda: self._watches[key] >= opened and self._asked[key] >= asked, timeout,
                   lambda: f"{opened} watch(es) of {resource} on plane {plane} open"
                           f"{f' and {asked} asked for' if asked else ''} "
                           f"({self._watches[key]} opened, {self._asked[key]} asked for)")

    def follows_opened(self, pod: str, container: str | None = None) -> int:
        with self._changed:
            return self._count_follows(pod, container)

    def wait_follow(self, pod: str, container: str | None = None, opened: int = 1, caught_up: bool = False,
                    timeout: float = 30.0) -> None:
        def ready() -> bool:
            if self._count_follows(pod, container) < opened:
                return False
            return not caught_up or any(f.caught_up() for f in self._open_follows if _names(f.key, pod, container))

        def waited_for() -> str:
            of = f"pod {pod}{f' container {container}' if container else ''}"
            sent = "send all its log file holds"
            what = (f"{opened} log follow(s) of {of} open{f' and one of them {sent}' if caught_up else ''}" if opened
                    else f"an open log follow of {of} {sent}")
            now_open = sum(1 for f in self._open_follows if _names(f.key, pod, container))
            return f"{what} ({self._count_follows(pod, container)} opened, {now_open} open)"

        self._wait(ready, timeout, waited_for)

    def _count_follows(self, pod: str, container: str | None) -> int:
        return sum(count for key, count in self._follows.items() if _names(key, pod, container))

    def _wait(self, ready: Callable[[], bool], timeout: float, waited_for: Callable[[], str]) -> None:
        with self._changed:
            if not self._changed.wait_for(ready, timeout):
                raise AssertionError(f"the sandbox did not see {waited_for()} within {timeout:g} s")


def _names(key: tuple[str, str, str, str], pod: str, container: str | None) -> bool:
    return key[2] == pod and (container is None or key[3] == container)
