"""TensorBoard answers that are not data, read through the real HTTP client from a local server: 502, an HTML
page, a 10 MB answer and broken JSON each give one clear line (MetricsUnavailable), never a traceback."""

from __future__ import annotations

import http.server
import math
import threading

import pytest

from rlark_tui.cluster.http import Http
from rlark_tui.cluster.metrics import MetricsUnavailable, _get, thin
from rlark_tui.telemetry.progress import scalar_points

ANSWERS = {
    "/bad-gateway": (502, "text/plain", b""),
    "/html": (200, "text/html", b"<!doctype html><html><body>sign in</body></html>"),
    "/big": (200, "application/json", b"[" + b",".join([b"[1.5, 1, 0.25]"] * 800_000) + b"]"),
    "/broken": (200, "application/json", b'[[1.5, 1, 0.2'),
    "/nan": (200, "application/json", b'[[1.5, 1, NaN], [2.5, 2, Infinity], [3.5, 3, 0.5]]'),
}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, kind, body = ANSWERS[self.path]
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield Http(f"http://127.0.0.1:{httpd.server_address[1]}", source="gateway")
    httpd.shutdown()


@pytest.mark.parametrize("path, message", [
    ("/bad-gateway", "TensorBoard via the gateway answered 502 for rewards"),
    ("/html", "TensorBoard via the gateway answered HTML, not data, for rewards"),
    ("/big", "TensorBoard's answer for rewards is larger than 8 MB; not read"),
    ("/broken", "TensorBoard via the gateway answered something that is not JSON for rewards"),
])
def test_bad_answers_are_one_line(server, path, message):
    with pytest.raises(MetricsUnavailable) as caught:
        _get(server, path, "rewards")
    assert str(caught.value) == message


def test_nan_and_inf_are_read_as_numbers(server):
    """A bare NaN (decoded as its text, never nan: issue 33) and TensorBoard's own spelling of a NaN loss
    ("NaN", json_util.Cleanse) are the points a plot counts as left out; a number past a double as text is none."""
    points = scalar_points(_get(server, "/nan", "rewards"))
    assert [p[1] for p in points] == [1, 2, 3] and math.isnan(points[0][2]) and points[1][2] == math.inf
    assert points[2][2] == 0.5
    spelled = scalar_points([[1.0, 1, "NaN"], [2.0, 2, "-Infinity"], [3.0, 3, "1e400"], [4.0, 4, "nan"]])
    assert [p[1] for p in spelled] == [1, 2] and math.isnan(spelled[0][2]) and spelled[1][2] == -math.inf


def test_thinning_keeps_the_ends():
    points = [(float(i), i, float(i)) for i in range(10_000)]
    kept = thin(points, 100)
    assert len(kept) == 100 and kept[0] == points[0] and kept[-1] == points[-1]
