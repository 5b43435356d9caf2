"""Hooks of `rlark watch` (no shell, bounded queue, a failing hook reported once) and `rlark status --tmux` (an
answer from the cache at once, refreshed in the background, also when the cluster does not answer)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from rlark_tui.commands.status import cache_files, segment
from rlark_tui.local import acks, hooks

RECORD = {"time": "2026-12-01T03:07:19Z", "severity": "critical", "rule": "run-crashed", "job": "ppo",
          "namespace": "rlark-gpu-a", "object": "ppo", "message": "boom $(touch PWNED); `touch PWNED2` 'q\"",
          "state": "firing"}


def test_exec_hook_gets_variables_and_no_shell(tmp_path):
    out = tmp_path / "env.json"
    script = tmp_path / "hook.py"
    script.write_text("import json, os, sys\njson.dump({k: v for k, v in os.environ.items() "
                      "if k.startswith('RLARK_ALERT_')}, open(sys.argv[1], 'w'))\n")
    hook = hooks.command(f"{sys.executable} {script} {out}", report=lambda text: None)
    hook.post(RECORD, "line")
    hook.close()
    got = json.loads(out.read_text())
    assert got["RLARK_ALERT_RULE"] == "run-crashed" and got["RLARK_ALERT_MESSAGE"] == RECORD["message"]
    assert set(got) == {f"RLARK_ALERT_{k.upper()}" for k in RECORD}
    assert not list(tmp_path.glob("PWNED*")) and not os.path.exists("PWNED")


def test_exec_hook_variables_hold_no_control_or_line_break():
    """Issue 33 item 4, a sixth round: the event's Job, object and namespace are names as the control plane gave
    them, and a phase event's state and message hold the Job's status.phase as it is: a hook script that echoes
    `$RLARK_ALERT_STATE` put `ESC c` (a terminal reset) or a forged line on its terminal or log. Each variable is a
    one-line field."""
    hostile = {**RECORD, "job": "evil\x1bc\nx", "object": "o\x07", "rule": "phase", "state": "Running\x1b[2J\n",
               "message": "phase Pending -> Running\x1b[2J\n", "context": "ctx\u202e"}
    env = hooks.environment(hostile)
    assert env["RLARK_ALERT_JOB"] == "evil\\nx" and env["RLARK_ALERT_OBJECT"] == "o"
    assert env["RLARK_ALERT_STATE"] == "Running\\n" and env["RLARK_ALERT_CONTEXT"] == "ctx\\u202e"
    assert all(value.isprintable() for value in env.values())


def _env_recording_hook(tmp_path):
    """An --exec hook (a real process) that writes the RLARK_ALERT_* variables it was given to the returned file;
    what rlark reported about it goes to the returned list."""
    out = tmp_path / "env.json"
    script = tmp_path / "hook.py"
    script.write_text("import json, os, sys\njson.dump({k: v for k, v in os.environ.items() "
                      "if k.startswith('RLARK_ALERT_')}, open(sys.argv[1], 'w'))\n")
    said: list[str] = []
    return hooks.command(f"{sys.executable} {script} {out}", report=said.append), out, said


def test_an_exec_hook_runs_whatever_the_length_of_the_names_it_is_given(tmp_path):
    """Issue 33, a fourteenth round: RLARK_ALERT_OBJECT names the alert's object as the cluster gave it (a Pod CR's
    podName is the data plane's free text, up to an object's 1.5 MB), and the kernel refuses to start a program
    with one environment string past 128 KiB (E2BIG): the hook never ran for that Job's alerts, each retried and
    reported as 'Argument list too long'. Each variable is cut at hooks.ENV_CHARS."""
    hook, out, said = _env_recording_hook(tmp_path)
    hook.post({**RECORD, "object": "p" * 300_000}, "line")
    hook.close()
    got = json.loads(out.read_text())
    assert got["RLARK_ALERT_OBJECT"].startswith("ppp") and len(got["RLARK_ALERT_OBJECT"]) <= hooks.ENV_CHARS
    assert said == []


def test_an_exec_hook_runs_for_a_job_whose_name_holds_a_lone_surrogate(tmp_path):
    """Issue 33, a fifteenth round (a hostile control plane's Job name): JSON may escape a lone surrogate
    ('\\ud800'), which no environment holds (os.fsencode), so the hook never ran for that Job's alerts, each
    retried and reported as "'utf-8' codec can't encode character". It is passed as its escape."""
    hook, out, said = _env_recording_hook(tmp_path)
    hook.post({**RECORD, "job": "x\ud800y"}, "line")
    hook.close()
    assert json.loads(out.read_text())["RLARK_ALERT_JOB"] == "x\\ud800y" and said == []


def test_closing_a_hook_whose_queue_is_full_ends():
    """A receiver that holds every delivery open: the hook's IN_FLIGHT deliveries wait, its dispatcher holds the
    next event waiting for one of them, its queue fills, and `rlark watch` ends (Ctrl-C) with close(). Close put its
    stop mark into the full queue, waiting for room that its stopped dispatcher would never make: rlark watch never
    ended (a clean-clone run's worker hung there, in test_a_failing_hook_is_reported_once_and_never_blocks)."""
    held, inside = threading.Event(), threading.Semaphore(0)

    def deliver(record, line):
        inside.release()
        held.wait(30)

    hook = hooks.Hook("webhook http://127.0.0.1:9", deliver, [].append, stall=0.01)
    try:
        for _ in range(hooks.IN_FLIGHT + 1):
            hook.post(RECORD, "line")
        assert all(inside.acquire(timeout=10) for _ in range(hooks.IN_FLIGHT))
        deadline = time.monotonic() + 10
        while not hook._queue.empty() and time.monotonic() < deadline:  # the dispatcher takes the next one
            time.sleep(0.01)
        for _ in range(hooks.QUEUE_SIZE):
            hook.post(RECORD, "line")
        closing = threading.Thread(target=hook.close, kwargs={"wait": 0.1}, daemon=True)
        closing.start()
        closing.join(10)
        assert not closing.is_alive()
    finally:
        held.set()


def test_a_failing_hook_is_reported_once_and_never_blocks():
    reports, started = [], threading.Event()

    def deliver(record, line):
        started.set()
        time.sleep(0.01)  # the behaviour under test: a receiver that takes a while to fail
        raise RuntimeError("HTTP 500")

    hook = hooks.Hook("webhook http://127.0.0.1:9", deliver, reports.append, backoff=(0.0,))
    begin = time.monotonic()
    for _ in range(hooks.QUEUE_SIZE * 2):
        hook.post(RECORD, "line")
    posting = time.monotonic() - begin
    assert started.wait(5)
    hook.close(wait=0.5)
    assert posting < 2.0
    assert len(reports) <= 3  # at once, the first summary, what was left at close; not one per event
    assert reports[0] == "webhook http://127.0.0.1:9: not delivered (HTTP 500); tried again behind newer alerts"
    assert any("dropped (queue full)" in report for report in reports)
    assert "event(s) not delivered (HTTP 500)" in reports[-1]


class Receiver:
    """A real webhook receiver on 127.0.0.1: it holds open the request of an alert whose text has `held` in it until
    `release` is set (or `hold` seconds pass), and answers the others at once; `answered` lists the texts it
    answered, `got(n)` is set once it answered n of them."""

    def __init__(self, held: str, hold: float):
        import http.server

        self.answered: list[str] = []
        self.release = threading.Event()
        self._counts: dict[int, threading.Event] = {}
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["text"]
                if held in text:
                    outer.release.wait(hold)
                outer.answered.append(text)
                outer.got(len(outer.answered)).set()
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        # shutdown (close) waits for serve_forever to look at its flag, every poll_interval: 0.5 s by default
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def got(self, count: int) -> threading.Event:
        return self._counts.setdefault(count, threading.Event())

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


def test_a_receiver_that_never_answers_is_said_at_once_and_the_next_alert_still_goes_out():
    """A real 127.0.0.1 receiver that holds the first alert's request open and answers the next one."""
    receiver = Receiver("first", hold=10)
    reports: list[str] = []
    said = threading.Event()
    port = receiver.port
    hook = hooks.webhook(f"http://127.0.0.1:{port}/h", "slack",
                         lambda text: (reports.append(text), "not delivered" in text and said.set()), timeout=0.2)
    try:
        hook.post(RECORD, "first alert")
        hook.post(RECORD, "next alert")
        assert said.wait(10), reports
        failed = [report for report in reports if "not delivered" in report]
        assert f"not delivered (timed out after 0.2s waiting for the receiver at http://127.0.0.1:{port} " \
            in failed[0] and "tried again" in failed[0]
        assert receiver.got(1).wait(10), receiver.answered
        assert receiver.answered[0] == "next alert"  # not held back behind the first one's retries
    finally:
        receiver.release.set()
        hook.close(wait=3)
        receiver.close()


def test_a_receiver_stuck_on_one_alert_holds_back_no_later_alert():
    """Issue 33 item 1, a sixth round: a real 127.0.0.1 receiver that never answers one alert (a hostile Job's, say)
    and answers the others at once. With the delivery timeout far off, the later alerts go out while the stuck
    one is still open (each waited up to the whole timeout behind it), and the stall is said on stderr then, once."""
    receiver = Receiver("stuck", hold=60)
    reports: list[str] = []
    port = receiver.port
    hook = hooks.webhook(f"http://127.0.0.1:{port}/h", "slack", reports.append, timeout=60, stall=0.2)
    try:
        hook.post(RECORD, "stuck alert")
        hook.post(RECORD, "next alert")
        hook.post(RECORD, "another alert")
        assert receiver.got(2).wait(30), (receiver.answered, reports)
        # each goes out once the one before it answered or stalled 0.2 s: on a loaded machine "next alert" may
        # stall too (said again only after an answer came in between), and "another alert" be answered first
        assert sorted(receiver.answered) == ["another alert", "next alert"]
        assert reports and set(reports) == {
            f"webhook http://127.0.0.1:{port}: no answer within 0.2s; later alerts go out meanwhile"}, reports
    finally:
        receiver.release.set()
        hook.close(wait=3)
        receiver.close()


def test_webhook_formats_and_a_refused_url_says_only_the_host():
    line = "2026-12-01T03:07:19Z critical run-crashed ppo firing: boom"
    assert hooks.payload(RECORD, line, "slack") == {"text": line}
    assert hooks.payload(RECORD, line, "feishu") == {"msg_type": "text", "content": {"text": line}}
    assert hooks.payload(RECORD, line, "dingtalk") == {"msgtype": "text", "text": {"content": line}}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reports = []
    # the first delivery of a test worker imports the HTTP client (about 1 s of CPU): on a loaded machine past the
    # 2 s after which a hook says it has no answer yet, a line before the one this test reads, so the stall is 30 s;
    # and past 3 s, so close waits for every attempt to end, or the event is counted as not delivered untried
    hook = hooks.webhook(f"http://127.0.0.1:{port}/hook?access_token=SECRETTOKEN", "dingtalk", reports.append,
                         stall=30)
    hook._backoff = (0.0,)
    hook.post(RECORD, line)
    hook.close(wait=30)
    assert reports and all("SECRETTOKEN" not in r for r in reports)
    assert reports[0].startswith(f"webhook http://127.0.0.1:{port}: not delivered (cannot reach the receiver at "
                                 f"http://127.0.0.1:{port}: connection refused)")
    assert reports[-1].startswith(f"webhook http://127.0.0.1:{port}: 1 event(s) not delivered")


def test_segment():
    now = 1000.0
    assert segment({"time": now, "running": 3, "failed": 1}, {"time": now, "alerts": 2}, now) == "rlark ▶3 ✗1 ⚠2"
    assert segment({"time": now, "running": 3, "failed": 1}, {"time": now - 500, "alerts": 2}, now) == "rlark ▶3 ✗1"
    assert segment({"time": now - 500, "running": 3, "failed": 0}, {}, now) == "rlark ▶3 ✗0 ?"
    assert segment({}, {}, now) == "rlark ?"


def _status(env, *argv):
    return subprocess.run([sys.executable, "-m", "rlark_tui", *argv, "status", "--tmux"], env=env,
                          capture_output=True, text=True, timeout=10)


def test_status_tmux_answers_from_the_cache_and_refreshes_in_the_background(plain_sandbox, tmp_path):
    state = tmp_path / "state"
    env = {**os.environ, "KUBECONFIG": str(plain_sandbox.kubeconfig), "RLARK_STATE_DIR": str(state),
           "RLARK_CONFIG": str(tmp_path / "none.yaml")}
    cache = cache_files(None, environ=env)[0]
    first = _status(env)
    assert first.returncode == 0 and first.stdout == "rlark ?\n"
    deadline = time.monotonic() + 30
    while not (state / cache).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    acks.write_summary(state, {"critical": 1, "warning": 1, "info": 3})
    second = _status(env)
    assert second.returncode == 0
    assert second.stdout.startswith("rlark ▶") and second.stdout.strip().endswith("⚠2")
    assert oct((state / cache).stat().st_mode & 0o777) == "0o600"


def test_status_tmux_does_not_hang_on_a_silent_cluster(tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{silent.getsockname()[1]}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    state = tmp_path / "state"
    state.mkdir()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "RLARK_STATE_DIR": str(state),
           "RLARK_CONFIG": str(tmp_path / "none.yaml")}
    cache, lock_name = cache_files(None, environ=env)
    (state / cache).write_text(json.dumps({"time": time.time() - 30, "running": 2, "failed": 0}))
    try:
        answer = _status(env)
        assert answer.returncode == 0 and answer.stdout == "rlark ▶2 ✗0\n"
    finally:
        silent.close()
        lock = state / lock_name
        if lock.exists():  # the refresher it started would give up by itself; end it now
            try:
                os.kill(int(lock.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass


FUTURE = 1e308
"""A time no clock reaches: a cache, summary or acknowledgement another version, a hand edit or a clock set back
since wrote."""


def test_a_cache_or_summary_dated_in_the_future_reads_old_and_a_status_of_it_is_one_line(tmp_path):
    now = time.time()
    assert segment({"time": FUTURE, "running": 3, "failed": 1}, {"time": FUTURE, "alerts": 2}, now) == "rlark ▶3 ✗1 ?"
    assert segment({"time": float("nan"), "running": 3, "failed": 1}, {}, now) == "rlark ▶3 ✗1 ?"
    assert acks.firing_of({"time": FUTURE, "firing": []}, now, 120) is None
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "missing"), "RLARK_STATE_DIR": str(state),
           "RLARK_CONFIG": str(tmp_path / "none.yaml")}
    cache, lock = cache_files(None, environ=env)
    (state / cache).write_text(json.dumps({"time": FUTURE, "running": 2, "failed": 0}))
    (state / cache).chmod(0o600)
    (state / lock).write_text("1")  # a refresher's, 'started' in 2099
    os.utime(state / lock, (4070908800, 4070908800))
    answer = subprocess.run([sys.executable, "-m", "rlark_tui", "status"], env=env, capture_output=True,
                            text=True, timeout=30)
    assert (answer.returncode, answer.stderr) == (0, "")
    assert answer.stdout.startswith("rlark ▶2 ✗0 ?    (Jobs as of never")
    deadline = time.monotonic() + 30  # the refresher it started (the cache reads old) finds no kubeconfig, and
    # takes the lock away
    while (state / lock).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (state / lock).exists()


def test_acknowledgements_dated_in_the_future_keep_no_new_one_out(tmp_path):
    (tmp_path / acks.FILE_NAME).write_text(json.dumps({"acks": {f"uid/rule/{i}": FUTURE
                                                                 for i in range(acks.MAX_ENTRIES)}}))
    (tmp_path / acks.FILE_NAME).chmod(0o600)
    acks.AckFile().acknowledge(tmp_path, "uid-2/progress-stalled/job")
    assert "uid-2/progress-stalled/job" in acks.AckFile().load(tmp_path)


def test_a_status_whose_state_dir_is_refused_says_why_on_stderr(tmp_path, monkeypatch, capsys):
    """Issue 33, left open by the sixteenth round: with its state dir refused (others may write in it) rlark status
    printed 'rlark ?    (Jobs as of never)' for ever without a word of why: no refresher can write its lock or
    cache there. One line on stderr says so; tmux's line (stdout) stays the segment alone."""
    from rlark_tui.cli import main

    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    monkeypatch.setenv("RLARK_STATE_DIR", str(state))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    cache, lock = cache_files(None)
    for argv, line in ((["status"], "rlark ?    (Jobs as of never)\n"), (["status", "--tmux"], "rlark ?\n")):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert out == line
        assert err == (f"rlark status: the Jobs are not refreshed: refusing to write {state / lock}: others may "
                       "write in the directory; choose a directory of your own\n")
    monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))  # where the fixtures look for crash reports


def test_a_user_without_a_home_gets_one_line(tmp_path, monkeypatch, capsys):
    """Issue 33, a seventeenth round (the environments bastion users have: a container's uid with no passwd entry,
    `env -i`): with HOME unset and no home in the passwd database platformdirs raises RuntimeError, so every command
    that reads the config or state (rlark get, status, check, diagnose, config) ended in a raw traceback: the crash
    report's own path raised the same. rlark get reads no config file then; the rest say why in one line."""
    import pwd

    from rlark_tui.cli import main

    def no_entry(uid):
        raise KeyError(uid)

    for name in ("HOME", "RLARK_STATE_DIR", "RLARK_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    try:
        status, said = main(["status", "--tmux"]), capsys.readouterr()
        listed, told = main(["get", "jobs"]), capsys.readouterr()
    finally:
        monkeypatch.setenv("RLARK_STATE_DIR", str(tmp_path))  # where the fixtures look for crash reports
    assert (status, said) == (2, ("", "error: rlark cannot tell where to keep its state (HOME is not set and this user "
                                      "has no home in the passwd database): set HOME, XDG_STATE_HOME or RLARK_STATE_DIR\n"))
    assert (listed, told.err.startswith("error: no kubeconfig found")) == (2, True)  # no config file needed to say so
