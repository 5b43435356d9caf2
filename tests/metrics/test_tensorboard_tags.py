"""TensorBoard's tags are the Job's code's to name (issue 33, a seventh round, event files from a Pod): a log dir
of 5,000 tags made 5,000 requests through the gateway, one per series, and held every series whole, on each
poll of an opened Job and each `rlark metrics`. At most MAX_TAGS series are read, in name order, each thinned as
it comes, and the note says what was left out. A real 127.0.0.1 server stands for the gateway's TensorBoard
route."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlark_tui.cluster import metrics
from rlark_tui.cluster.http import Http

TAGS = 5000
BOUND = 8
"""MAX_TAGS in the test (256 requests take seconds on a loaded machine)."""
POINTS = [[1.0 + step, step, 0.5] for step in range(metrics.MAX_POINTS + 50)]


class _TensorBoard(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """The headers and the body are two writes on a connection kept open: with Nagle's algorithm the body waited for
    the client's delayed ACK of the headers, some 40 ms an answer."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.endswith("/tags"):
            body = json.dumps({".": {f"t{index:05d}": {} for index in range(TAGS)}}).encode()
        else:
            self.server.scalars += 1
            body = self.server.points
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class _Access:
    """What tensorboard_series asks of a ClusterAccess: the gateway."""

    def __init__(self, url: str) -> None:
        self.url = url

    def gateway_http(self) -> Http:
        return Http(self.url, source="gateway")


@pytest.fixture
def tensorboard():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TensorBoard)
    server.daemon_threads, server.scalars, server.points = True, 0, json.dumps(POINTS).encode()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server, _Access(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


def test_a_log_dir_of_thousands_of_tags_is_read_to_the_bound(tensorboard, monkeypatch):
    server, access = tensorboard
    monkeypatch.setattr(metrics, "MAX_TAGS", BOUND)
    series, note = metrics.tensorboard_series(access, "demo-header")
    assert server.scalars == BOUND
    assert sorted(series) == [f"t{index:05d}" for index in range(BOUND)]
    assert all(len(points) == metrics.MAX_POINTS for points in series.values())
    assert note == f"TensorBoard has 5,000 tags: the first {BOUND} read (name one with --tag)"
    server.scalars = 0
    asked, note = metrics.tensorboard_series(access, "demo-header", ["t04999"])
    assert list(asked) == ["t04999"] and server.scalars == 1 and note == ""
