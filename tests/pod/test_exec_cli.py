"""`rlark exec` as a user runs it (a child process; what a session writes to a terminal, in this process on a
pseudo-terminal): exit codes, pipes, the Header Pod by default, --role, --readonly, and an interactive shell in a
pseudo-terminal (prompt, `stty size`, resize, `exit 3`); faults: the connection dropped mid-session and the Pod
deleted mid-session.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shlex
import shutil
import struct
import subprocess
import sys
import termios
import time

import pytest

from rlark_tui.cli import main
from rlark_tui.text.podterminal import MODES_RESET
from tests.pod.conftest import HEAD, JOB
from tests.pod.test_tui_pod import _tmux, _wait_pane
from tests.streams import resize_applied


def rlark(sandbox, *argv: str, stdin: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    """`rlark` as a child process (for stdin and terminals)."""
    return subprocess.run([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig), *argv],
                          input=stdin if stdin is not None else b"", capture_output=True, timeout=timeout,
                          env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml"})


def test_command_exit_code_and_header_pod(run):
    assert run("exec", JOB, "--", "sh", "-c", 'echo $RLARK_TASK_ROLE; exit 7') == (7, b"actor\n", "")


def test_pipe(shell_job):
    done = rlark(shell_job, "exec", JOB, "--", "cat", stdin=b"hi\n")
    assert (done.returncode, done.stdout) == (0, b"hi\n")


def test_reader_going_away_ends_quietly(shell_job):
    """`rlark exec ... | head -c 5`: rlark stops at the closed pipe (141, like a shell's writer), no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "rlark_tui", "--kubeconfig", str(shell_job.kubeconfig), "exec",
                             JOB, "--", "sh", "-c", "yes | head -c 20000000"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml"})
    assert proc.stdout.read(5) == b"y\ny\ny"
    proc.stdout.close()
    assert proc.wait(30) == 141
    assert proc.stderr.read() == b""


def test_role(run):
    assert run("exec", JOB, "--role", "env", "--", "sh", "-c", "echo $RLARK_TASK_ROLE") == (0, b"env\n", "")


def test_readonly_refuses_exec(run):
    assert run("--readonly", "exec", JOB, "--", "touch", "/tmp/rlark-readonly-probe") == (
        1, b"", "error: read-only mode: refusing to run a command in a Pod (exec) (started with --readonly)\n")


def test_unknown_job_and_role(run):
    code, _, err = run("exec", "no-such-job", "--", "true")
    assert code == 1 and err.count("\n") == 1 and "no-such-job" in err
    code, _, err = run("exec", JOB, "--role", "nope", "--", "true")
    assert code == 2 and "has no role 'nope'" in err


class Pty:
    """`rlark` on a pseudo-terminal of its own (its controlling terminal, like a shell would start it)."""

    def __init__(self, sandbox, *argv: str, rows: int = 24, cols: int = 80):
        self.master, slave = pty.openpty()
        self.resize(rows, cols)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rlark_tui", "--kubeconfig", str(sandbox.kubeconfig), *argv],
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            env={**os.environ, "RLARK_CONFIG": "/nonexistent/config.yaml", "TERM": "xterm"})
        os.close(slave)
        self.seen = b""
        self.before = self.mode()
        self.after: list | None = None

    def resize(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def expect(self, needle: bytes, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            assert time.monotonic() < deadline, f"{needle!r} not seen; got {self.seen[-500:]!r}"
            if select.select([self.master], [], [], 0.2)[0]:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
        assert needle in self.seen, self.seen[-500:]

    def mode(self) -> list:
        return termios.tcgetattr(self.master)

    def wait(self, timeout: float = 15) -> int:
        """rlark's exit code; the terminal must be back in the mode it had before rlark made it raw."""
        code = self.proc.wait(timeout)
        self.after = self.mode()
        os.close(self.master)
        return code


def exec_on_a_terminal(sandbox, monkeypatch, *argv: str, last: bytes) -> tuple[int, bytes]:
    """`rlark exec` in this process (`main`, as `run` calls it) with stdin, stdout and stderr on one pseudo-terminal,
    as a shell starts it: its exit code and the bytes the terminal got, read until `last` ends them. For what a
    session writes to a terminal (the filter of text.podterminal, which the terminal's device picks); the process's
    own terminal (its mode, its size, being killed) is Pty's."""
    master, slave = pty.openpty()
    streams = [open(os.dup(slave), mode) for mode in ("r", "w", "w")]  # three descriptors, as a shell gives
    os.close(slave)
    try:
        monkeypatch.setenv("RLARK_CONFIG", "/nonexistent/config.yaml")
        for name, stream in zip(("stdin", "stdout", "stderr"), streams, strict=True):
            monkeypatch.setattr(sys, name, stream)
        code = main(["--kubeconfig", str(sandbox.kubeconfig), *argv])
        sys.stdout.flush()
        sys.stderr.flush()
        seen = b""
        deadline = time.monotonic() + 15
        while not seen.endswith(last):
            assert time.monotonic() < deadline, f"{last!r} not seen last; got {seen[-500:]!r}"
            if select.select([master], [], [], 0.2)[0]:
                seen += os.read(master, 65536)
        return code, seen
    finally:
        for stream in streams:
            stream.close()
        os.close(master)


def test_interactive_shell_size_resize_and_exit_code(shell_job):
    term = Pty(shell_job, "exec", JOB, rows=33, cols=101)
    term.send(b"echo ready-$((6*7))\n")
    term.expect(b"ready-42")
    term.send(b"stty size\n")
    term.expect(b"33 101")
    with resize_applied(shell_job, HEAD[1], 40, 120):
        term.resize(40, 120)
    term.send(b"stty size\n")
    term.expect(b"40 120")
    term.send(b"exit 3\n")
    assert term.wait() == 3
    assert term.after == term.before


def test_dropped_connection_restores_terminal(shell_job, faults):
    term = Pty(shell_job, "exec", JOB)
    term.send(b"echo up-$((1+1))\n")
    term.expect(b"up-2")
    faults.outage(3)
    term.expect(b"error: ")
    assert term.wait() == 1
    assert b"dropped" in term.seen or b"closed before" in term.seen
    assert term.after == term.before


def test_pod_deleted_mid_session(shell_job):
    """The Job is deleted under an open shell: its Pod goes, the shell ends as a killed process (137)."""
    from tests.pod.conftest import create_job, wait_running
    create_job(shell_job, "shell-gone", [("actor", True, "gpu-a3")])
    wait_running(shell_job, "rlark-gpu-a", "shell-gone-actor-0")
    term = Pty(shell_job, "exec", "shell-gone")
    term.send(b"echo in-$((2+2))\n")
    term.expect(b"in-4")
    shell_job.store.delete("jobs", "shell-gone", "")
    assert term.wait(timeout=30) == 137


def test_no_route_to_the_pods(run):
    """Without usable rlark-server access: one line naming why, exit 1; a certificate flag naming no file is a
    usage error (exit 2) before anything connects."""
    assert run("--client-cert", "/nonexistent.crt", "--client-key", "/nonexistent.key", "exec", JOB, "--", "true") == (
        2, b"", "error: client certificate (--client-cert) /nonexistent.crt: no such file\n")
    assert run("--server-address", "https://127.0.0.1:1", "exec", JOB, "--", "true") == (
        1, b"", "error: cannot reach the data plane rlark-gpu-a at https://127.0.0.1:1/api/proxy/gpu-a/api/kubernetes: "
                "connection refused\n")


def test_silent_server_is_given_up_on(run, monkeypatch):
    """A server that takes the connection but never answers: one line after the connect timeout, exit 1."""
    import socket

    from rlark_tui.cluster import podexec
    monkeypatch.setattr(podexec, "CONNECT_TIMEOUT", 0.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        started = time.monotonic()
        code, out, err = run("--server-address", f"https://127.0.0.1:{silent.getsockname()[1]}", "exec", JOB, "--",
                             "true")
    assert (code, out) == (1, b"") and "timed out" in err and err.count("\n") == 1, err
    assert time.monotonic() - started < 5


def test_a_pods_clipboard_title_and_passthrough_writes_never_reach_the_terminal(shell_job, monkeypatch):
    """Issue 33, left open by the fifteenth round: `rlark exec -t` passed the Pod's output raw, as kubectl does, so a
    hostile Pod's OSC 52 set the operator's clipboard (and `?` read it back into the Pod), OSC 2 retitled the
    window, and a tmux passthrough carried them past the operator's tmux; the modes it set outlived the session
    (`CSI 8 m`: what the operator typed next was hidden). Drawing and the terminal's queries pass. Round H33: a C2
    dropped inside an OSC made `ESC ] 5 C2 2 ;` an OSC 52."""
    script = (r"printf '\033]5\3022;c;eA==\007\033]52;c;Y3VybCBldmlsfHNo\007\033]2;forged\033\\\033Ptmux;\033\033]52;c;eA==\007\033\\"
              r"\033[1mdrawn\033[0m \033]8;;http://x/\007link\033]8;;\007 \033P$qm\033\\ end\n\033[8m\033[?1000h'")
    code, seen = exec_on_a_terminal(shell_job, monkeypatch, "exec", "-t", JOB, "--", "sh", "-c", script,
                                    last=MODES_RESET)  # the session's last bytes, once it ended
    assert code == 0
    assert b"]52;" not in seen and b"]2;" not in seen and b"tmux;" not in seen
    assert b"\x1b[1mdrawn\x1b[0m \x1b]8;;http://x/\x07link\x1b]8;;\x07 \x1bP$qm\x1b\\ end" in seen
    assert seen.endswith(b"\x1b[8m\x1b[?1000h" + MODES_RESET)



@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_pods_title_window_name_and_alternate_screen_stay_the_operators_in_tmux(shell_job, tmp_path):
    """In a real tmux, one `rlark exec -t` session of a hostile Pod (or of a full-screen program in it killed
    mid-session); the two holes are asserted each in its own line.

    The status line, issue 33 (O33a item 2, the tmux status sink): tmux takes any APC (`ESC _ ... ESC \\`) as the
    pane's title, which its default status-right shows, and screen's `ESC k ... ESC \\` as the window's name
    (allow-rename on), which its window list shows; `rlark exec -t` passed both from the Pod, so a hostile Pod wrote
    the operator's tmux status line (`#[...]` and all). The title and the name stay the operator's.

    The operator's own screen, issue 33, round H33: the modes put back when a session ends did not leave the
    alternate screen, nor turn off focus reports, bracketed paste, xterm's modifyOtherKeys or kitty's keyboard
    protocol, so after `rlark exec -t` the operator's shell went on in the Pod's alternate screen, without
    scrollback (and typed `CSI 99;5u` for each Ctrl-C under kitty). The pane is back on its own screen once the
    session ends."""
    socket = str(tmp_path / "tmux.sock")
    script = (r"printf '\033_#[fg=red]forged-title\033\\\033k#[fg=red]forged-name\033\\"
              r"\033[?1049h\033[?1004h\033[>4;2m\033[>1u in the pods screen'")
    argv = " ".join(shlex.quote(word) for word in [sys.executable, "-m", "rlark_tui", "--kubeconfig",
                                                    str(shell_job.kubeconfig), "exec", "-t", JOB, "--", "sh", "-c",
                                                    script])
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g allow-rename on\nset -g automatic-rename off\n")
    env = {**{k: v for k, v in os.environ.items() if k not in ("TMUX", "COLUMNS", "LINES")},
           "RLARK_CONFIG": "/nonexistent/config.yaml", "TERM": "tmux-256color"}
    subprocess.run(["tmux", "-S", socket, "-f", str(conf), "new-session", "-d", "-s", "t", "-n", "operators",
                    "-x", "100", "-y", "10", f"{argv}; echo back-$((6*7)); sleep 30"], env=env, check=True,
                   timeout=20)
    try:
        _wait_pane(socket, "back-42")
        names, alternate = _tmux(socket, "display-message", "-p", "-t", "t",
                                 "#{window_name}|#{pane_title}\n#{alternate_on}").splitlines()
    finally:
        _tmux(socket, "kill-server")
    assert "forged" not in names and names.startswith("operators|"), f"the Pod wrote tmux's status line: {names}"
    assert alternate == "0", "the pane was left on the Pod's alternate screen"


def test_stdout_and_stderr_on_one_terminal_make_no_sequence_between_them(shell_job, monkeypatch):
    """Without -t the Pod's stdout and stderr are two streams to one terminal: filtered apart, an ESC last on stdout
    and ']52;c;...' on stderr made an OSC 52 on the terminal, which sees them as one stream."""
    code, seen = exec_on_a_terminal(
        shell_job, monkeypatch, "exec", JOB, "--", "sh", "-c",
        r"printf 'x\033\033'; sleep 0.1; printf ']52;c;eA==\007' >&2; printf ' end\n'",  # in that order
        last=MODES_RESET)
    assert code == 0 and b" end" in seen
    assert b"\x1b]52;" not in seen, seen
