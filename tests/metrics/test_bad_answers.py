"""TensorBoard answers that are not data, read through the real HTTP client from a local server: 502, an HTML
page, a 10 MB answer and broken JSON each give one clear line (MetricsUnavailable), never a traceback."""

from __future__ import annotations

import http.server
import math
import threading

import pytest

from rlark_sandbox.demo_workload import metric_table
from rlark_tui.cluster import metrics
from rlark_tui.cluster.errors import Request
from rlark_tui.cluster.http import Http
from rlark_tui.cluster.metrics import MetricsUnavailable, _get, thin
from rlark_tui.telemetry.progress import scalar_points

LONG_LINES = [f"2026-12-01T03:00:{n:02d}.000000000Z {'x' * (256 << 10)}" for n in range(32)]  # 8 MiB
TABLE = [f"2026-12-01T03:01:00.000000000Z {line}"
         for line in metric_table(5, 20, 3.0, {"rollout/rewards": 0.5}).splitlines()]

ANSWERS = {
    "/bad-gateway": (502, "text/plain", b""),
    "/html": (200, "text/html", b"<!doctype html><html><body>sign in</body></html>"),
    "/big": (200, "application/json", b"[" + b",".join([b"[1.5, 1, 0.25]"] * 800_000) + b"]"),
    "/broken": (200, "application/json", b'[[1.5, 1, 0.2'),
    "/nan": (200, "application/json", b'[[1.5, 1, NaN], [2.5, 2, Infinity], [3.5, 3, 0.5]]'),
    "/long-log": (200, "text/plain", "".join(f"{line}\n" for line in LONG_LINES + TABLE).encode()),
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
    # shutdown waits for serve_forever to look at its flag, every poll_interval: 0.5 s by default
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
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


def test_a_header_log_of_long_lines_is_read_to_its_byte_bound_and_the_metrics_say_so(server, monkeypatch):
    """Issue 33, one way to read an input: the Metrics read of a Header log (rlark metrics, the Metrics tab's polls)
    held its newest 20,000 lines whatever their size, and a data plane may answer lines of 16 MiB
    (http.MAX_LINE_BYTES): 320 GiB. It holds the newest within SERIES_TAIL_BYTES (here 1 MiB, of 8 MiB of long lines
    and a metric table: a kubelet's 20,000 lines never reach its 1,254 MiB), still finds the table after them, and
    the metrics' note says in one line how many lines it left out, with the bound."""
    import tracemalloc

    from rlark_tui.cluster.http import TAIL_LINE_HOLD

    class DataPlane:  # pods/log answered by the local server, whatever the tail asked
        def pod_log(self, cluster, pod, **asked):
            return server.stream("/long-log", Request("logs", "pods", pod, "ns", "data plane"), read_timeout=5,
                                 ends=True, last=asked["tail"], last_bytes=asked["tail_bytes"])

    assert metrics.SERIES_TAIL_BYTES >= metrics.SERIES_TAIL_LINES * TAIL_LINE_HOLD
    monkeypatch.setattr(metrics, "SERIES_TAIL_BYTES", 1 << 20)
    _get(server, "/nan", "rewards")  # the client's first request imports urllib3: not what the read holds
    tracemalloc.start()
    try:
        result = metrics.fetch_metrics(DataPlane(), "j", "log", header=metrics.Header("j", "j-main", "c", "p"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 << 20  # the bound and a line being read; the 32 long lines were 8 MiB of strings
    assert [point[1:] for point in result.series["rollout/rewards"]] == [(5, 0.5)]
    kept = len(TABLE) + 3
    assert result.note == (f"the Header log: its last {kept} lines read and {len(LONG_LINES) - 3} before them left "
                           "out, to hold at most 1 MiB (the read's bound)")
