"""Answers are read to a bound and decoded one way (cluster/transport.py): a control plane that answers a body
past the bound, an endless body, JSON nested past MAX_DEPTH or of more values than MAX_VALUES gets one line naming the bound from `rlark get`,
on the lean path and the client path alike, never a traceback or a process holding the whole body."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from rlark_tui.cluster import lean, transport
from rlark_tui.cluster.output import JobTableList
from rlark_tui.cluster.transport import MAX_DEPTH, TooDeep, decode_json
from tests.clirun import cli_runner, ctrl_c_once_printed

DEEP = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
BOUND = 64 * 1024
VALUES = 4000  # past DEEP's 1,026
MANY = b'{"items": [' + b"{}," * VALUES + b"{}]}"
"""Within BOUND, past VALUES: as 64 MiB of it within the 512 MiB bound, which rlark decoded to 2 GB."""
NONFINITE = (b'{"kind": "JobList", "items": [{"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": '
             b'"nf", "namespace": "default", "generation": 1e400, "creationTimestamp": "2026-01-01T00:00:00Z"}, '
             b'"spec": {"tasks": [{"name": "actor", "head": true, "kubernetes": {"workload": {"replicas": NaN}}}]}, '
             b'"status": {"phase": "Running", "restarts": -Infinity, "startTime": -1e999}}]}')
"""What the standard library's JSON reads as inf, nan and -inf (orjson and msgspec refuse it, so it is decoded by
the fallback)."""


DISCOVERY = {
    "/version": b'{"gitVersion": "v1.30.0\\nRLark API: rlinf.io/v1alpha1 (forged)\\u001b]2;t\\u0007"}',
    "/api": b'{"versions": ["v1\\nGateway:  forged"]}',
    "/apis": b'{"groups": [{"name": "a.io", "versions": 5}, {"name": "b.io", "versions": [{"version": "v1"}], '
             b'"preferredVersion": "v1"}, {"name": "c.io\\nKubernetes API: forged", "versions": [{"version": "v1"}]}]}',
}
"""Discovery answers of the wrong shape, with line breaks that would forge a line of `rlark version`."""


FORGED_JOB = json.dumps({
    "apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
    "metadata": {"name": "pf\nForwarding pf ray at http://127.0.0.1:9/forged/\u202e", "namespace": "default"},
    "spec": {"tasks": [{"name": "actor", "head": True}]}, "status": {"phase": "Running"}}).encode()
"""A Job answered for `pf` whose name, with a line break, forges a URL line (another local user's listener)."""


class _Hostile(BaseHTTPRequestHandler):
    """Answers every GET with the server's `answer`: ("deep" | "long" | "many" | "endless" | "drip" | "drip-head" |
    "nonfinite" | "discovery" | "forged")."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: with Nagle, each answer waited ~40 ms for an ACK

    def _drip(self, byte: bytes) -> None:
        """`byte` every 20 ms until the test ends (`cut` is set when the client hung up)."""
        try:
            while not self.server.stopping.wait(0.02):
                self.wfile.write(byte)
                self.wfile.flush()
        except OSError:
            self.server.cut.set()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        answer = self.server.answer
        if answer == "drip-head":  # a header that never ends, a byte inside each read's timeout
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Forever: ")
            self._drip(b"x")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if answer == "drip":  # within the bound and each read's timeout, never done
            self.send_header("Content-Length", str(BOUND))
            self.end_headers()
            self._drip(b" ")
            return
        if answer == "endless":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b'{"items": [' + b'"x",' * 4096
            try:
                while not self.server.stopping.is_set():
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                self.server.cut.set()  # the client stopped reading and closed the connection
            return
        body = DEEP if answer == "deep" else MANY if answer == "many" else NONFINITE if answer == "nonfinite" \
            else DISCOVERY.get(self.path, b"{}") if answer == "discovery" else FORGED_JOB if answer == "forged" \
            else b'{"items": [' + b'"x",' * BOUND + b'"x"]}'
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the client read no further than its bound

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """(set_answer, kubeconfig path) of a plain-HTTP control plane on 127.0.0.1; the bounds are BOUND and VALUES."""
    monkeypatch.setattr(transport, "MAX_ANSWER_BYTES", BOUND)
    monkeypatch.setattr(transport, "MAX_VALUES", VALUES)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client that stops reading resets its connection
    server.stopping, server.cut = threading.Event(), threading.Event()
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()  # shutdown within 10 ms
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "hostile",
        "clusters": [{"name": "hostile", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "hostile", "context": {"cluster": "hostile", "user": "u", "namespace": "default"}}]}))
    yield server, kubeconfig
    server.stopping.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["lean", "client"])
def test_an_answer_past_a_bound_is_one_line_naming_the_bound(hostile, capsys, monkeypatch, path):
    server, kubeconfig = hostile
    if path == "client":
        monkeypatch.setattr(lean.LeanClient, "open", classmethod(lambda cls, *args, **kwargs: None))
    run = cli_runner(kubeconfig, capsys)
    said = {}
    for answer in ("deep", "long", "many", "endless"):
        server.answer = answer
        said[answer] = run("get", "jobs")
    for answer, result in said.items():
        assert result.code == 1 and result.out == "" and result.err.count("\n") == 1, (answer, result.err)
        assert result.err.startswith("error: the answer of the control plane at http://127.0.0.1:"), result.err
    assert "to list jobs is nested deeper than 1024 levels: not decoded" in said["deep"].err
    assert "to list jobs is of more than 4,000 values: not decoded" in said["many"].err
    assert "is larger than the 64 KiB bound (it says 262,160 bytes): not read past it" in said["long"].err
    assert said["endless"].err.endswith("is larger than the 64 KiB bound: not read past it\n")
    assert server.cut.wait(10)


@pytest.fixture
def body_timeouts(monkeypatch):
    """An answer's head and body held to 2 request timeouts, not transport.BODY_TIMEOUTS (10): the drips below
    cross it all the same (a byte every 20 ms, 10 of them inside it), in 0.2 s of a test's time, not 1 s."""
    from rlark_tui.cluster import http
    for module in (transport, http):
        monkeypatch.setattr(module, "BODY_TIMEOUTS", 2)


@pytest.mark.parametrize("path", ["lean", "client"])
@pytest.mark.parametrize("answer", ["drip", "drip-head"])
def test_an_answer_that_drips_for_ever_ends_at_its_time_bound(hostile, body_timeouts, capsys, monkeypatch, path,
                                                              answer):
    """A byte every 20 ms keeps each read inside its timeout: the body's own bound (BODY_TIMEOUTS request timeouts)
    ends `rlark get` in one line, where it waited for ever. issue 33, a sixteenth round (drip-head): the bound held
    only the body, so a control plane that sent its status line and then a header a byte every 20 ms (100 headers
    of 64 KiB are 6.5 MB of them) held `rlark get` for days. The head is held to the same bound as the body."""
    server, kubeconfig = hostile
    if path == "client":
        monkeypatch.setattr(lean.LeanClient, "open", classmethod(lambda cls, *args, **kwargs: None))
    server.answer = answer
    result = cli_runner(kubeconfig, capsys)("--request-timeout", "0.1", "get", "jobs")
    assert result.code == 1 and result.out == "" and result.err.count("\n") == 1, result.err
    assert result.err.startswith("error: the answer of the control plane at http://127.0.0.1:"), result.err
    assert "to list jobs was still arriving after 0.2 s (2 × the 0.1 s request timeout)" in result.err, result.err


def test_a_log_read_that_drips_for_ever_ends_at_its_time_bound(hostile, body_timeouts):
    """issue 33, a twelfth round, a hostile data plane: a log read without follow (an alert round's Header read,
    rlark diagnose, the run check, a bundle, rlark watch's keep) and TensorBoard's answers are line streams, which
    had no bound in time, so a data plane sending a byte inside each read's timeout held the read for ever (an
    alert round with it: every Job's alerts). They end as a body does, after BODY_TIMEOUTS read timeouts."""
    from rlark_tui.cluster.errors import Request, TooSlow
    from rlark_tui.cluster.http import Http

    server, _kubeconfig = hostile
    server.answer = "drip"
    http = Http(f"http://127.0.0.1:{server.server_address[1]}", source="data plane")
    # each read's timeout is 5 × the server's 20 ms between bytes, as in the test above: a timeout of 20 ms, the
    # drip's own pace, failed a clean-clone run's first pass and its rerun when one byte came a little late
    with pytest.raises(TooSlow, match=r"was still arriving after 0\.2 s \(2 × the 0\.1 s request timeout\)"):
        list(http.stream("/api/v1/namespaces/w/pods/p/log", Request("logs", "pods", "p"), read_timeout=0.1,
                         ends=True))
    assert server.cut.wait(10)


def _strict(text: str) -> object:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")
    return json.loads(text, parse_constant=refuse)


def test_a_number_past_a_double_or_nan_is_text_and_json_output_stays_json(hostile, capsys):
    """Issue 33, a ninth round: 1e400, NaN and -Infinity in an answer were decoded to inf and nan, which the
    readers of numbers took for numbers (three of round eight's holes: int(inf) raised) and `-o json` printed as
    `Infinity`, which is no JSON: a script's json.load of rlark's output failed. They are kept as the text the
    answer has, as a number of the wrong type is."""
    server, kubeconfig = hostile
    server.answer = "nonfinite"
    run = cli_runner(kubeconfig, capsys)
    printed = run("get", "jobs", "-o", "json")
    assert printed.code == 0, printed.err
    job = _strict(printed.out)
    job = job["items"][0] if "items" in job else job
    assert job["metadata"]["generation"] == "1e400" and job["status"]["restarts"] == "-Infinity"
    table = run("get", "jobs")
    assert table.code == 0 and "nf" in table.out, table.err
    assert decode_json(b'[1e400, -1e999, NaN, Infinity, 1.5e308, 0.5]') == ["1e400", "-1e999", "NaN", "Infinity",
                                                                              1.5e308, 0.5]


def test_version_of_a_hostile_control_plane_prints_its_lines_and_no_forged_one(hostile, capsys):
    """Issue 33, a tenth round: `rlark version` (and `rlark config`'s check of the control plane) printed the server's gitVersion and API group names as they came,
    so a line break in them forged a line ('RLark API: rlinf.io/v1alpha1' of a server that serves no RLark), and
    a group whose versions were not a list, or whose preferredVersion was text, ended it in a crash report."""
    server, kubeconfig = hostile
    server.answer = "discovery"
    result = cli_runner(kubeconfig, capsys)("version")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["Client", "Server", "Kubernetes API", "RLark API",
                                                      "Other APIs", "Gateway"], result.out
    assert "(not served: is this an RLark control plane?)" in lines[3] and "\x1b" not in result.out
    assert "b.io/v1" in lines[4] and "forged" in lines[4]
    checked = cli_runner(kubeconfig, capsys)("config")
    assert checked.code == 0, checked.err
    (control,) = [line for line in checked.out.splitlines() if "forged" in line]
    assert control.startswith("  ok    control plane (http://127.0.0.1:") and "\\nRLark API" in control


def test_one_decoder_for_every_answer():
    """Empty is {}, not JSON stays text, invalid UTF-8 is read as the standard library reads it; past
    MAX_DEPTH (whole or to a shape) is TooDeep, never RecursionError, and past max_bytes names the bound."""
    assert decode_json(b"") == {} and decode_json(b"not json") == "not json"
    assert decode_json(b'{"a": "\xff"}') == {"a": "\ufffd"}
    assert decode_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    for data in (DEEP, DEEP + b"\xff", DEEP.decode()):
        with pytest.raises(TooDeep, match="nested deeper than 1024 levels"):
            decode_json(data)
    with pytest.raises(TooDeep):
        decode_json(b'{"items": ' + DEEP + b"}", shape=JobTableList)
    with pytest.raises(ValueError, match="larger than 1 KiB"):
        decode_json(b" " * 1025, max_bytes=1024)
    with pytest.raises(ValueError):
        decode_json(b"not json", text=False)


class _EndlessLine(BaseHTTPRequestHandler):
    """A log follow whose Pod writes 17 MiB without a newline (1 MiB past http.MAX_LINE_BYTES, read past and
    dropped), then `next line`."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: with Nagle, each answer waited ~40 ms for an ACK

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"x" * 65536
        for _ in range(17 * 16):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        for piece in (b"y\nnext line\n", b""):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))

    def log_message(self, *args) -> None:
        pass


def test_a_line_without_end_is_cut_at_the_bound_and_the_follow_goes_on():
    from rlark_tui.cluster.errors import Request
    from rlark_tui.cluster.http import MAX_LINE_BYTES, Http

    server = ThreadingHTTPServer(("127.0.0.1", 0), _EndlessLine)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()  # shutdown within 10 ms
    try:
        http = Http(f"http://127.0.0.1:{server.server_address[1]}", source="data plane")
        lines = list(http.stream("/log", Request("logs", "pods"), whole_lines=True))
    finally:
        server.shutdown()
        server.server_close()
    assert len(lines) == 2 and lines[1] == "next line"
    assert len(lines[0]) < MAX_LINE_BYTES + 100 and lines[0].endswith(" [line cut at 16 MiB]")


def test_port_forward_says_its_url_on_one_line_whatever_name_the_job_is_answered_with(hostile, capsys):
    """Issue 33, a fifteenth round: `rlark port-forward pf tensorboard` printed the Job's name as the control plane
    answered it, so 'pf\\nForwarding pf ray at http://127.0.0.1:9/forged/' printed a URL line of its own above the
    real one, naming another local user's listener. The name is a one-line field."""
    server, kubeconfig = hostile
    server.answer = "forged"
    config = yaml.safe_load(kubeconfig.read_text())
    config["extensions"] = [{"name": "rlark", "extension": {"gateway": "http://127.0.0.1:9"}}]
    kubeconfig.write_text(yaml.safe_dump(config))
    with ctrl_c_once_printed("Ctrl-C to stop."):  # once it serves: it says so, last
        result = cli_runner(kubeconfig, capsys)("port-forward", "pf", "tensorboard")
    said = [line for line in result.out.splitlines() if line.startswith("Forwarding")]
    assert len(said) == 1 and "\u202e" not in result.out, (result.out, result.err)
    assert said[0].startswith("Forwarding pf\\nForwarding pf ray at http://127.0.0.1:9/forged/\\u202e tensorboard at "
                              "http://127.0.0.1:"), said
    assert result.code == 130  # as a shell says a command Ctrl-C ended (it said 0)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_watch_ended_by_ctrl_c_or_sigterm_exits_as_a_shell_says(hostile, capsys, sig):
    """Issue 33: `rlark watch` exited 0 on Ctrl-C and on SIGTERM, where a shell (and every other rlark command)
    says 130 and 143: a script's `rlark watch ...; next` went on to `next` after the user's Ctrl-C."""
    import os
    import signal

    import rlark_tui.commands.watch  # noqa: F401 - its imports done, the signal comes while it watches

    server, kubeconfig = hostile
    server.answer = "discovery"
    ignored = lambda *_: None  # noqa: E731 - a SIGTERM after the watch ended ends no test run
    before = signal.signal(signal.SIGTERM, ignored)
    alarm = signal.signal(signal.SIGALRM, signal.default_int_handler)  # Ctrl-C: KeyboardInterrupt, as SIGINT's
    watching = threading.Event()

    def send() -> None:  # once the watch has its own SIGTERM handler, it runs
        while signal.getsignal(signal.SIGTERM) is ignored and not watching.wait(0.02):
            pass
        if not watching.wait(0.1):
            os.kill(os.getpid(), getattr(signal, "SIGALRM" if sig == "SIGINT" else sig))

    threading.Thread(target=send, daemon=True).start()
    try:
        result = cli_runner(kubeconfig, capsys)("watch")
    finally:
        watching.set()
        signal.signal(signal.SIGALRM, alarm)
        signal.signal(signal.SIGTERM, before)
    assert result.code == 128 + getattr(signal, sig), (result.code, result.err)
