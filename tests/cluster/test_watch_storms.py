"""Issue 33, a seventeenth round (storms from a hostile control plane over time): a server that ends every watch as
it opens (with an event or none), or answers each with 410 Gone, had list+watch ask again at once, every time:
16,506 watches of Jobs in 8 s under `rlark get jobs -w`, thousands a second under the TUI's reconciler, and not a
word said. A second such watch in a row is an error of the stream, said in one line and asked again at the
backoff's pace, as client-go's "very short watch" is. A real 127.0.0.1 control plane."""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pytest

from rlark_tui.cluster.access import Backoff, ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.local.config import load_config
from tests import loopback

GONE = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
BOOKMARK = {"type": "BOOKMARK", "object": {"kind": "Job", "metadata": {"resourceVersion": "0"}}}
JOB = {"type": "ADDED", "object": {"kind": "Job", "metadata": {"name": "a", "uid": "u", "resourceVersion": "6"}}}
ANSWERS = {"closed at once": b"", "a bookmark, then closed": json.dumps(BOOKMARK).encode() + b"\n",
           "an event, then closed": json.dumps(JOB).encode() + b"\n", "410 Gone": json.dumps(GONE).encode() + b"\n"}


@contextlib.contextmanager
def _control_plane(watch_answer: bytes, third_watch: threading.Event):
    """127.0.0.1: an empty list of Jobs, and `watch_answer` to every watch, then the watch's end; requests counted,
    `third_watch` set as the third watch is asked."""
    asked = {"list": 0, "watch": 0}

    class Handler(loopback.QuietHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            watch = "watch=true" in self.path
            asked["watch" if watch else "list"] += 1
            if asked["watch"] >= 3:
                third_watch.set()
            self.answer(200, watch_answer if watch else json.dumps(
                {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}, "items": []}).encode())

    with loopback.serving(Handler) as url:
        yield url, asked


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_server_that_ends_every_watch_at_once_is_asked_at_the_backoffs_pace(tmp_path, env, answer):
    stop = threading.Event()  # the watch ends as it is asked the third time (or after 10 s)
    with _control_plane(ANSWERS[answer], stop) as (server, asked):
        path = loopback.kubeconfig(tmp_path / "kubeconfig", server)
        access = ClusterAccess.open(str(path), config=load_config())
        errors: list[str] = []
        timer = threading.Timer(10, stop.set)
        timer.start()
        started = time.monotonic()
        try:
            for event in access.list_watch(JOBS, stop, backoff=Backoff(0.1, 0.5)):
                if event.type == "ERROR":
                    errors.append(str(event.error))
        finally:
            timer.cancel()
            access.close()
        took = time.monotonic() - started
    # before: thousands of watches (or list+watch pairs) a second, three in a few ms; now two, then one after the
    # backoff's first 0.1 s
    assert asked["watch"] <= 5 and asked["list"] <= 5 and 0.1 <= took < 10, (asked, took)
    gone = answer == "410 Gone"
    said = f"the control plane {'answers each watch of jobs with 410 Gone' if gone else 'ends each watch of jobs as it opens'}"
    assert errors and set(errors) == {said}, errors
