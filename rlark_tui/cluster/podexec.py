"""Exec in a Pod's `main` container over the data plane's `pods/<pod>/exec` WebSocket (v5, else v4), with
websocket-client, following no redirect: `run_fixed` for rlark's own read-only commands, `run_command` under it,
`ExecSession` for interactive use.

`run_fixed` runs only the allow-list of `model/fixed_commands.py` (allowed under `--readonly`); `run_command`
collects bounded output and the exit code of any argv (user-typed ones pass `actions.py` first); `ExecSession`
is one open exec (stdin, resize, stdin close, output by channel, the exit code from the status channel), and
`relay` connects it to local file descriptors (raw terminal, SIGWINCH) for `rlark exec` and the TUI's shell.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import ssl
import termios
import threading
import time
import tty as ttymode
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import certifi
from kubernetes import client as k8s
from kubernetes.stream.ws_client import (
    V4_CHANNEL_PROTOCOL,
    V5_CHANNEL_PROTOCOL,
    get_websocket_url,
    websocket_proxycare,
)
from websocket import (
    ABNF,
    WebSocket,
    WebSocketBadStatusException,
    WebSocketException,
    WebSocketProtocolException,
    WebSocketTimeoutException,
)
from websocket._handshake import SUPPORTED_REDIRECT_STATUSES

from rlark_tui.cluster import tls
from rlark_tui.cluster.errors import Request, Unreachable, quoted, scrub, status_error, transport_error
from rlark_tui.cluster.transport import decode_json, seg, sent_path
from rlark_tui.errors import RlarkError
from rlark_tui.model import fixed_commands, keys
from rlark_tui.model.objects import dig
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.podterminal import PodOutput
from rlark_tui.text.sinks import one_line, utf8

if TYPE_CHECKING:
    from rlark_tui.cluster.access import ClusterAccess

CONTAINER = "main"
SHELL = ("sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash || exec sh")
"""An interactive shell: bash where the image has it, else sh."""
STDIN, STDOUT, STDERR, STATUS, RESIZE = 0, 1, 2, 3, 4
CHUNK = 32 * 1024
CONNECT_TIMEOUT = 10.0
"""Seconds for the WebSocket's connection and upgrade (not for the session)."""
BROKEN_PIPE = 128 + 13
MAX_EXIT_STATUS = 255
"""The largest code a process returns: the kernel keeps an exit status's low 8 bits."""
MAX_FRAME_BYTES = 4 << 20
"""The longest WebSocket frame read: the data plane's frame claims its own length (up to 2**63), and
websocket-client reads a frame whole before any of it is taken; a longer one drops the exec, one line."""
READ_BYTES = 1 << 20
"""Output one `read` takes before it returns, so a data plane that sends without pause is taken in pieces."""
FRAME_SECONDS = 0.05
"""How long one `read` waits, past its own timeout, for the rest of a frame that has begun to arrive; what
arrived is kept and the frame is finished by a later read, so a frame held half-sent holds no read."""
SEND_SECONDS = 60.0
"""How long a write may wait for the data plane to take the bytes."""
MAX_STATUS_BYTES = 64 << 10
UPGRADE_BYTES = 64 << 10
"""The most read of the data plane's answer to the exec's upgrade (its status line and headers: a few hundred
bytes); past it the exec is not opened, one line."""
"""What is kept of the status channel (a metav1.Status of a few hundred bytes); the rest is not kept."""


@dataclass(frozen=True)
class ExecResult:
    """A finished fixed command: exit code (None: no status came, e.g. timed out), bounded output."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    truncated: bool


class ExecFailed(RlarkError):
    """The exec ended without an exit code: the connection dropped, the Pod went away, or the runtime refused."""


def exit_code_of(status: dict[str, Any] | None) -> int | None:
    """The exit code a status-channel metav1.Status carries (Success 0, NonZeroExitCode its cause), else None."""
    if not isinstance(status, dict):
        return None
    if status.get("status") == "Success":
        return 0
    if status.get("reason") == "NonZeroExitCode":  # the data plane's: a code of 1e400 (inf), details a list
        causes = dig(status, "details", "causes")
        for cause in causes if isinstance(causes, list) else []:
            if isinstance(cause, dict) and cause.get("reason") == "ExitCode":
                code = cause.get("message")
                return ascii_int(code) if isinstance(code, str) else None
    return None


class _ExecSocket(Protocol):
    """What ExecSession uses of an exec WebSocket (_Channels; a test's stand-in)."""

    sock: WebSocket
    subprotocol: str | None

    def write_channel(self, channel: int, data: bytes) -> None: ...

    def close_channel(self, channel: int) -> None: ...

    def close(self) -> None: ...


class ExecSession:
    """One open exec WebSocket. Not thread-safe: one thread reads and writes it."""

    def __init__(self, ws: _ExecSocket, pod: str) -> None:
        self._ws = ws
        self.pod = pod
        self._open = True
        self._status_raw = b""
        self._status: dict[str, Any] | None = None
        self._decoded = 0
        self._channel: int | None = None
        """The channel of a message whose continuation frames are still arriving."""
        ws.sock.settimeout(SEND_SECONDS)  # reads set their own (read)

    @classmethod
    def open(cls, api_client: k8s.ApiClient, pod: str, argv: list[str], *, namespace: str = keys.WORKLOAD_NAMESPACE,
             stdin: bool = False, tty: bool = False, source: str = "data plane") -> ExecSession:
        """Connect; a refusal (Pod not Running, unknown container, 403 ...) or no connection raises one line.

        `api_client` is only read: its host, bearer token and TLS (the shared context of cluster/tls.py, else
        its certificate files and proxy, as the `kubernetes` client's WebSocket takes them). A redirect is not
        followed (_Channels.connect)."""
        req = Request("exec in", "pod", pod, namespace, source, api_client.configuration.host)
        sent_path(f"/api/v1/namespaces/{seg(namespace)}/pods/{seg(pod)}/exec", req)
        configuration = api_client.configuration
        sslopt = tls.websocket_sslopt(api_client)
        proxied = sslopt is None  # a client of certificate files connects as the `kubernetes` client's would
        ws = _Upgrading(sslopt=sslopt or _file_sslopt(configuration), skip_utf8_validation=False)
        opened: list[_ExecSocket] = []
        failed: list[RlarkError] = []
        abandoned = threading.Event()

        def connect() -> None:
            # websocket-client's connect has no time bound in all: it runs here, and a silent server is given up
            # on after CONNECT_TIMEOUT (a late connection is then closed).
            try:
                opened.append(_Channels.connect(ws, configuration, pod, namespace, argv, stdin=stdin, tty=tty,
                                                proxied=proxied, req=req))
            except RlarkError as exc:
                failed.append(exc)
            except WebSocketBadStatusException as exc:
                failed.append(status_error(exc.status_code, exc.resp_body or b"", req))
            except Exception as exc:  # websocket-client's own classes, OSError and SSL errors
                failed.append(transport_error(exc, req))
            if abandoned.is_set() and opened:
                opened[0].close()

        worker = threading.Thread(target=connect, name=f"exec connect {pod}", daemon=True)
        worker.start()
        worker.join(CONNECT_TIMEOUT)
        if worker.is_alive():
            abandoned.set()
            ws.hang_up()  # else the connect reads on, for ever if the data plane sends without end
            raise Unreachable(f"timed out after {CONNECT_TIMEOUT:g}s connecting to the {source} at {req.url} "
                              f"(exec in pod {pod})", "timeout")
        if failed:
            raise failed[0]
        return cls(opened[0], pod)

    @property
    def v5(self) -> bool:
        return self._ws.subprotocol == V5_CHANNEL_PROTOCOL

    def _socket(self) -> socket.socket:
        sock = self._ws.sock.sock
        if sock is None:  # websocket-client drops it when the connection closes
            raise ExecFailed(f"the connection to pod {self.pod} is closed")
        return sock

    def fileno(self) -> int:
        return self._socket().fileno()

    def pending(self) -> bool:
        """Bytes already read off the socket (TLS record buffer) that select() would not report."""
        sock = self._ws.sock.sock
        return isinstance(sock, ssl.SSLSocket) and sock.pending() > 0

    @property
    def is_open(self) -> bool:
        return self._open and self._ws.sock.connected

    def write(self, data: bytes) -> None:
        self._send(self._ws.write_channel, STDIN, data)

    def close_stdin(self) -> None:
        """End of input: v5's CLOSE frame (v4 has none; an empty stdin frame says the same to the sandbox)."""
        if self.v5:
            self._send(self._ws.close_channel, STDIN)
        else:
            self._send(self._ws.write_channel, STDIN, b"")

    def resize(self, cols: int, rows: int) -> None:
        self._send(self._ws.write_channel, RESIZE, json.dumps({"Width": cols, "Height": rows}).encode())

    def _send(self, call: Callable[..., None], *args: int | bytes) -> None:
        try:
            call(*args)
        except Exception as exc:  # websocket-client's own classes, OSError and SSL errors on a drop
            self._dropped(exc)

    def _dropped(self, exc: Exception) -> None:
        self.close()
        raise ExecFailed(f"the connection to pod {self.pod} was dropped: {scrub(str(exc)) or type(exc).__name__}") \
            from None

    def read(self, timeout: float = 0) -> list[tuple[int, bytes]]:
        """Wait up to `timeout` for frames, then take the frames already there: (channel, bytes) of stdout and
        stderr in order, about READ_BYTES at most. The data plane's frames are read here one at a time, within
        MAX_FRAME_BYTES each and a message's continuation frames as they come (WSClient.update and
        recv_data_frame join a whole message first, by repeated concatenation, however long it is); a frame
        not complete within FRAME_SECONDS is finished by a later read."""
        if not self.is_open:
            return []
        sock = self._ws.sock
        out: list[tuple[int, bytes]] = []
        taken = 0
        end = time.monotonic() + max(timeout, 0) + FRAME_SECONDS
        try:
            readable = self.pending() or bool(select.select([self._socket()], [], [], timeout)[0])
            while readable and self._open and taken < READ_BYTES:
                left = end - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                try:
                    taken += self._take_frame(out)
                except WebSocketTimeoutException:
                    break
                readable = self.pending() or bool(select.select([self._socket()], [], [], 0)[0])
        except Exception as exc:  # websocket-client raises its own classes, OSError and SSL errors on a drop
            self._dropped(exc)
        finally:
            with contextlib.suppress(Exception):
                sock.settimeout(SEND_SECONDS)
        return out

    def _take_frame(self, out: list[tuple[int, bytes]]) -> int:
        """Read one frame: its stdout or stderr bytes into `out` (how many), the status channel's kept, a close
        or ping answered."""
        sock = self._ws.sock
        frames = sock.frame_buffer
        if frames.needs_header():
            frames.recv_header()
        if frames.needs_length():
            frames.recv_length()
        if (frames.length or 0) > MAX_FRAME_BYTES:
            raise WebSocketProtocolException(f"it sent a frame of {frames.length:,} bytes, past the bound of "
                                             f"{MAX_FRAME_BYTES >> 20} MiB")
        frame = frames.recv_frame()
        if frame.opcode == ABNF.OPCODE_CLOSE:
            self._open = False
            with contextlib.suppress(Exception):
                sock.send_close()
            return 0
        if frame.opcode == ABNF.OPCODE_PING:
            if len(frame.data) < 126:
                sock.pong(frame.data)
            return 0
        data = frame.data if isinstance(frame.data, bytes) else frame.data.encode()
        channel = self._channel
        if frame.opcode in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT):
            channel, data = (data[0], data[1:]) if data else (None, b"")
        elif frame.opcode != ABNF.OPCODE_CONT:
            return 0
        self._channel = None if frame.fin else channel
        if channel in (STDOUT, STDERR) and data:
            out.append((channel, data))
            return len(data)
        if channel == STATUS:
            self._status_raw += data[:MAX_STATUS_BYTES - len(self._status_raw)]
        return 0

    @property
    def status(self) -> dict[str, Any] | None:
        """The status channel's metav1.Status (its text as the message when it is not an object), once sent."""
        if self._status is None and len(self._status_raw) > self._decoded:
            self._decoded = len(self._status_raw)
            with contextlib.suppress(ValueError):
                status = decode_json(self._status_raw, text=False)
                self._status = status if isinstance(status, dict) else \
                    {"message": self._status_raw.decode("utf-8", "replace")}
        return self._status

    def exit_code(self) -> int:
        """The command's exit code once the session closed; a missing or error status raises ExecFailed."""
        code = exit_code_of(self.status)
        if code is not None:
            return code
        if self.status:
            raise ExecFailed(f"exec in pod {self.pod} failed: {quoted(scrub(str(self.status.get('message') or self.status)))}")
        raise ExecFailed(f"the connection to pod {self.pod} closed before the command reported its exit code")

    def close(self) -> None:
        """Say close and hang up, without reading on: websocket-client's close reads the data plane's frames
        for up to 3 s, the rest of a frame begun included, past MAX_FRAME_BYTES."""
        self._open = False
        sock = self._ws.sock
        with contextlib.suppress(Exception):
            sock.settimeout(FRAME_SECONDS)
            sock.send_close()
        with contextlib.suppress(Exception):
            sock.shutdown()
        with contextlib.suppress(Exception):
            self._ws.close()


class _Channels:
    """An exec WebSocket: the channel calls ExecSession makes (`sock`, `subprotocol`, `write_channel`,
    `close_channel`, `close`), as the `kubernetes` client's WSClient has them."""

    CLOSE_CHANNEL = 255

    def __init__(self, sock: WebSocket) -> None:
        self.sock = sock
        self.subprotocol = sock.getsubprotocol() or (sock.getheaders() or {}).get("sec-websocket-protocol")

    @classmethod
    def connect(cls, sock: _Upgrading, configuration: k8s.Configuration, pod: str, namespace: str,
                argv: list[str], *, stdin: bool, tty: bool, proxied: bool, req: Request) -> _Channels:
        """The exec's WebSocket, upgraded where it was asked for: a redirect is not followed (one line).
        websocket-client follows three, each with the same headers and client certificate, so a data plane (or
        what answers for it) that said 302 to another host or port was sent the bearer token there."""
        flags = {"stdin": stdin, "stdout": True, "stderr": not tty, "tty": tty}
        query = [("command", list(argv)), ("container", CONTAINER)] + \
            [(name, "true" if value else "false") for name, value in flags.items()]
        url = get_websocket_url(f"{configuration.host}/api/v1/namespaces/{seg(namespace)}/pods/"
                                f"{seg(pod)}/exec", query)
        header = [f"sec-websocket-protocol: {V5_CHANNEL_PROTOCOL},{V4_CHANNEL_PROTOCOL}"]
        bearer = configuration.get_api_key_with_prefix("BearerToken")
        if bearer:
            header.append(f"authorization: {bearer}")
        options = websocket_proxycare({}, configuration, url, None) if proxied else {}
        try:
            WebSocket.connect(sock, url, header=header, timeout=CONNECT_TIMEOUT, redirect_limit=0, **options)
        except WebSocketException:
            answer = sock.handshake_response
            if answer is not None and answer.status in SUPPORTED_REDIRECT_STATUSES:
                raise Unreachable(f"the {req.source} at {req.url} answered exec in pod {one_line(pod)} with a "
                                  f"redirect ({answer.status}): not followed", "other") from None
            raise
        sock.upgraded()
        return cls(sock)

    def write_channel(self, channel: int, data: bytes) -> None:
        self.sock.send(bytes([channel]) + data, opcode=ABNF.OPCODE_BINARY)

    def close_channel(self, channel: int) -> None:
        if self.subprotocol == V5_CHANNEL_PROTOCOL:
            self.sock.send(bytes([self.CLOSE_CHANNEL, channel]), opcode=ABNF.OPCODE_BINARY)

    def close(self) -> None:
        self.sock.close()


class _Upgrading(WebSocket):
    """websocket-client's WebSocket whose upgrade reads at most UPGRADE_BYTES of the answer and which another
    thread can hang up on at any stage (`hang_up`). websocket-client reads the answer's head a byte at a time into a
    list, with no bound on its lines or their length, and went on reading after ExecSession.open gave up: a data
    plane that answered '101' and then header bytes without end grew rlark by hundreds of MB a minute, for ever
    (rlark watch, the TUI). Its connect assigns the socket to `sock` before the upgrade; that assignment gives the
    upgrade a counted socket (_Counted), shut at once when the caller has given up already."""

    def __init__(self, **options: Any) -> None:
        self._guard = threading.Lock()
        self._raw: socket.socket | None = None
        self._given_up = False
        self._current: Any = None
        super().__init__(**options)

    @property
    def sock(self) -> Any:
        return self._current

    @sock.setter
    def sock(self, value: socket.socket | None) -> None:
        with self._guard:
            self._raw = value
            self._current = _Counted(value) if value is not None else None
            if value is not None and self._given_up:
                _shut(value)

    def upgraded(self) -> None:
        """The upgrade is read: the session reads the socket itself (ExecSession, within its own bounds)."""
        with self._guard:
            self._current = self._raw

    def hang_up(self) -> None:
        with self._guard:
            self._given_up = True
            if self._raw is not None:
                _shut(self._raw)


class _Counted:
    """A socket (to websocket-client's upgrade) whose reads stop once they pass UPGRADE_BYTES."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._left = UPGRADE_BYTES

    def recv(self, size: int) -> bytes:
        data = self._sock.recv(size)
        self._left -= len(data)
        if self._left < 0:
            raise WebSocketException(f"its answer to the upgrade is longer than {UPGRADE_BYTES >> 10} KiB")
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _file_sslopt(configuration: k8s.Configuration) -> dict[str, Any]:
    """websocket-client's `sslopt` for a client of certificate files (no shared TLS context), as the `kubernetes`
    client's own WebSocket makes it."""
    if configuration.host.startswith("https") and configuration.verify_ssl:
        options: dict[str, Any] = {"cert_reqs": ssl.CERT_REQUIRED,
                                   "ca_certs": configuration.ssl_ca_cert or certifi.where()}
        if configuration.assert_hostname is not None:
            options["check_hostname"] = configuration.assert_hostname
    else:
        options = {"cert_reqs": ssl.CERT_NONE}
    if configuration.cert_file:
        options["certfile"] = configuration.cert_file
    if configuration.key_file:
        options["keyfile"] = configuration.key_file
    if configuration.tls_server_name:
        options["server_hostname"] = configuration.tls_server_name
    return options


def data_plane_client(access: ClusterAccess, cluster: str) -> k8s.ApiClient:
    """The `kubernetes` ApiClient of a cluster's data plane, or one line saying none is configured."""
    client = access.data_plane_api_client(cluster)
    if client is None:
        why = access.server_problem or "no rlark-server"
        raise Unreachable(f"no route to cluster {cluster}'s Pods: {why} — see `rlark config`", "config")
    return client


def run_command(access: ClusterAccess, cluster_ns: str, pod: str, argv: list[str], *, stdin: bytes | None = None,
                timeout: float = 30, max_output: int = 1 << 20,
                namespace: str = keys.WORKLOAD_NAMESPACE) -> ExecResult:
    """Run a fixed command (no terminal) in a Pod's `main` and collect its output, at most `max_output` bytes
    per stream (then `truncated`, and the command is hung up on). `exit_code` is None when it did not finish
    within `timeout` seconds or the connection dropped."""
    session = ExecSession.open(data_plane_client(access, cluster_ns), pod, argv, namespace=namespace,
                               stdin=stdin is not None, source=f"data plane {cluster_ns}")
    buffers = {STDOUT: bytearray(), STDERR: bytearray()}
    truncated = False
    deadline = time.monotonic() + timeout

    def take(frames: list[tuple[int, bytes]]) -> bool:
        """Keep output up to the cap; True once a stream went past it."""
        over = False
        for channel, data in frames:
            buf = buffers[channel]
            room = max_output - len(buf)
            buf += data[:room]
            over = over or len(data) > room
        return over

    try:
        if stdin is not None:
            for start in range(0, len(stdin), CHUNK):
                session.write(stdin[start:start + CHUNK])
                truncated = take(session.read(timeout=0)) or truncated
            session.close_stdin()
        while session.is_open and not truncated:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            truncated = take(session.read(timeout=min(left, 1.0)))
    except ExecFailed:
        pass
    finally:
        session.close()
    code = exit_code_of(session.status) if not session.is_open and not truncated else None
    return ExecResult(code, bytes(buffers[STDOUT]), bytes(buffers[STDERR]), truncated)


def run_fixed(access: ClusterAccess, cluster_ns: str, pod: str, name: str, *params: str, timeout: float | None = None,
              max_output: int | None = None, namespace: str = keys.WORKLOAD_NAMESPACE) -> ExecResult:
    """Run fixed read-only command `name` (model/fixed_commands.py) in a Pod's `main`, under its own time and output
    bounds unless tighter ones are given. Anything not on the list raises FixedCommandError before any I/O."""
    spec = fixed_commands.command(name)
    argv = fixed_commands.argv(name, *params)
    return run_command(access, cluster_ns, pod, argv,
                       timeout=min(timeout, spec.timeout) if timeout is not None else spec.timeout,
                       max_output=min(max_output, spec.max_output) if max_output is not None else spec.max_output,
                       namespace=namespace)


def _terminal_size(fd: int) -> tuple[int, int]:
    size = os.get_terminal_size(fd)
    return size.columns, size.lines


def relay(session: ExecSession, *, stdin_fd: int | None, stdout_fd: int, stderr_fd: int, tty: bool) -> int:
    """Connect an open session to local descriptors until the command ends (`_relay`); its exit code as a process
    may return it: a code past 255 (the data plane's number: 256 was exit status 0, success, to the caller's
    shell) is 1, and one line on `stderr_fd`, once the terminal is back, says the code the data plane gave."""
    code = _relay(session, stdin_fd=stdin_fd, stdout_fd=stdout_fd, stderr_fd=stderr_fd, tty=tty)
    if 0 <= code <= MAX_EXIT_STATUS:
        return code
    with contextlib.suppress(OSError):
        _write_all(stderr_fd, utf8(f"rlark: the command in {one_line(session.pod)} ended with exit code {code}, "
                                   f"which no exit status holds (0..{MAX_EXIT_STATUS}): exit code 1\n"))
    return 1


def _relay(session: ExecSession, *, stdin_fd: int | None, stdout_fd: int, stderr_fd: int, tty: bool) -> int:
    """Connect an open session to local descriptors until the command ends; the code its status gave.

    With `tty` the local terminal (`stdin_fd`) is raw for the session and restored afterwards, and its size is
    sent at the start and on every SIGWINCH (main thread only).
    Local stdin EOF closes the remote stdin. A dropped connection raises ExecFailed (terminal restored). When
    the local reader goes away (`| head`), the session ends with 141, as a shell pipeline's writer does."""
    saved = termios.tcgetattr(stdin_fd) if tty and stdin_fd is not None and os.isatty(stdin_fd) else None
    resized = threading.Event()
    previous_handler = None
    if tty and stdin_fd is not None and threading.current_thread() is threading.main_thread():
        previous_handler = signal.signal(signal.SIGWINCH, lambda *_: resized.set())
    terminals = _terminal_outputs(stdout_fd, stderr_fd)
    try:
        if saved is not None and stdin_fd is not None:
            ttymode.setraw(stdin_fd, termios.TCSANOW)
        if tty and stdin_fd is not None:
            with contextlib.suppress(OSError):
                session.resize(*_terminal_size(stdin_fd))
        reading = stdin_fd is not None
        while session.is_open:
            if resized.is_set() and stdin_fd is not None:
                resized.clear()
                with contextlib.suppress(OSError):
                    session.resize(*_terminal_size(stdin_fd))
            watched = [session.fileno()] + ([stdin_fd] if reading and stdin_fd is not None else [])
            try:
                readable = [session.fileno()] if session.pending() else select.select(watched, [], [], 0.2)[0]
            except InterruptedError:
                continue
            if reading and stdin_fd is not None and stdin_fd in readable:
                data = os.read(stdin_fd, CHUNK)
                if data:
                    session.write(data)
                else:
                    reading = False
                    session.close_stdin()
            if session.fileno() in readable:
                try:
                    for channel, data in session.read(timeout=0):
                        fd = stdout_fd if channel == STDOUT else stderr_fd
                        _write_all(fd, terminals[fd].feed(data) if fd in terminals else data)
                except BrokenPipeError:
                    return BROKEN_PIPE
        return session.exit_code()
    finally:
        for fd, output in {id(output): (fd, output) for fd, output in terminals.items()}.values():
            with contextlib.suppress(OSError):
                _write_all(fd, output.end())
        if saved is not None and stdin_fd is not None:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)
        if previous_handler is not None:
            signal.signal(signal.SIGWINCH, previous_handler)
        session.close()


def _terminal_outputs(stdout_fd: int, stderr_fd: int) -> dict[int, PodOutput]:
    """What of the session's output reaches a terminal passes text.podterminal: no clipboard, title, notification
    or file write of the Pod's reaches the operator's desktop, and the modes it set are put back at the end (a pipe
    or file gets the bytes as they came). stdout and stderr on one terminal share one filter, which sees the bytes
    as the terminal does: with one each, an ESC last on stdout and ']52;...' on stderr made an OSC 52 there."""
    outputs: dict[int, PodOutput] = {}
    by_terminal: dict[tuple[int, int], PodOutput] = {}
    for fd in (stdout_fd, stderr_fd):
        if os.isatty(fd):
            info = os.fstat(fd)
            outputs[fd] = by_terminal.setdefault((info.st_dev, info.st_rdev), PodOutput())
    return outputs


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
