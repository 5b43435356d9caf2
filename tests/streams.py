"""Waits on what the sandbox's server is streaming (rlark_sandbox.streams), instead of sleeping for a client to
get there: a watch is open once the sandbox has its subscription, a log follow once it has opened the file.

    with watch_opens(sandbox, "jobs"):
        start_the_client()            # returns once the client's watch of Jobs is open
    with follow_opens(sandbox, pod):
        start_the_follower()          # returns once a follow of that Pod's log is open
    sent_all(sandbox, pod)            # returns once an open follow has sent all the Pod's log holds
The first argument is a Sandbox or a LogStore (anything with `.streams`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rlark_sandbox.resources import ROOT

TIMEOUT = 30.0


@contextlib.contextmanager
def watch_opens(sandbox, resource: str, plane: str = ROOT, count: int = 1, timeout: float = TIMEOUT) -> Iterator[None]:
    """The body starts something that opens `count` watches of `resource`; the exit waits until they are open."""
    before = sandbox.streams.watches_opened(resource, plane)
    yield
    sandbox.streams.wait_watch(resource, plane, opened=before + count, timeout=timeout)


@contextlib.contextmanager
def watch_asked(sandbox, resource: str, plane: str = ROOT, count: int = 1, timeout: float = TIMEOUT) -> Iterator[None]:
    """As `watch_opens`, for watch requests that reach the server whether they open or not (a fault refuses them)."""
    before = sandbox.streams.watches_asked(resource, plane)
    yield
    sandbox.streams.wait_watch(resource, plane, opened=0, asked=before + count, timeout=timeout)


@contextlib.contextmanager
def follow_opens(sandbox, pod: str, container: str | None = None, count: int = 1,
                 timeout: float = TIMEOUT) -> Iterator[None]:
    """The body starts something that opens `count` follows of the Pod's log; the exit waits until they are."""
    before = sandbox.streams.follows_opened(pod, container)
    yield
    sandbox.streams.wait_follow(pod, container, opened=before + count, timeout=timeout)


@contextlib.contextmanager
def resize_applied(sandbox, pod: str, rows: int, cols: int, timeout: float = TIMEOUT) -> Iterator[None]:
    """The body resizes a terminal on the Pod; the exit waits until the Pod's terminal has that size."""
    before = len(sandbox.streams.resizes(pod))
    yield
    sandbox.streams.wait_resize(pod, rows, cols, after=before, timeout=timeout)


def sent_all(sandbox, pod: str, container: str | None = None, timeout: float = TIMEOUT) -> None:
    """Returns once a follow of the Pod's log that is still open has sent everything the log file holds."""
    sandbox.streams.wait_follow(pod, container, opened=0, caught_up=True, timeout=timeout)
