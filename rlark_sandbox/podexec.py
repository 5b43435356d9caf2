"""Exec into sandbox pods: the data plane's `pods/<pod>/exec` WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`)
and the console's terminal WebSocket (gateway and rlark-server routes), both running a local process in the pod.

Exec channels (rlark-platform.md §0b): every binary frame starts with its channel, 0 stdin, 1 stdout, 2 stderr,
3 status (a metav1.Status when the command ends), 4 resize (`{"Width","Height"}`); v5 adds `[255, channel]` (CLOSE),
which closes that stream only (stdin: the process reads EOF). The process runs in the pod's working directory with
the pod's environment, in its own session (with a pseudo-terminal when `tty=true`); when the client hangs up, the
pod goes away or the command ends, its whole process group is ended.

Terminal (platform `agent/terminal.go`): binary frames are terminal bytes, text frames JSON (`{"type":"resize",
"rows","cols"}` in, `{"type":"error","message"}` out, and the file messages: `file-upload` {path, size, mode}
then the file's frames then `file-upload-end`; `file-download` {path} answered by `file-download-start` {size,
name}, the file's frames, `file-download-end`; `file-transfer-done` {success, error}); the close message reads
`terminal exited with code N` or `terminal session ended`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import pty
import shutil
import signal
import struct
import termios
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import WSMsgType, web

from rlark_sandbox.procs import end_group

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, STATUS, RESIZE = 0, 1, 2, 3, 4
CLOSE = 255
CHUNK = 32 * 1024
POD_CHECK_SECONDS = 0.5
DRAIN_SECONDS = 1.0
END_GRACE = 0.5


@dataclass(frozen=True)
class ExecTarget:
    """Where a pod's processes run: its working directory, environment and network (`enter`, the argv prefix that
    puts them in the Pod network); `records` (the pod's state dir) holds an `exec-<pgid>.pgid` file per running
    exec, so the sandbox's watchdog ends them should it die."""

    cwd: Path
    env: dict[str, str]
    records: Path | None = None
    enter: tuple[str, ...] = ()

    def argv(self, command: list[str]) -> list[str]:
        """`command` as started in the Pod: a program that is not there fails here (OSError), as the runtime's
        exec does, not inside the network helper."""
        program = command[0] if command else ""
        found = (os.path.join(self.cwd, program) if "/" in program
                 else shutil.which(program, path=self.env.get("PATH", os.defpath)))
        if not program or not found or not os.access(found, os.X_OK):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        return [*self.enter, *command]


class Refused(Exception):
    """The API server refuses the request on this pod: the Kubernetes status code, reason and message."""

    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _flag(query, name: str) -> bool:
    return query.get(name, "").lower() in ("true", "1")


@dataclass(frozen=True)
class ExecOptions:
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def exec_options(query) -> ExecOptions:
    """The exec query (`command` repeated, `stdin`/`stdout`/`stderr`/`tty`) checked as the kubelet does."""
    command = query.getall("command", [])
    tty = _flag(query, "tty")
    stdin, stdout = _flag(query, "stdin"), _flag(query, "stdout")
    stderr = _flag(query, "stderr") and not tty
    if not command:
        raise Refused(400, "BadRequest", "you must specify at least one command for the container")
    if not (stdin or stdout or stderr):
        raise Refused(400, "BadRequest", "you must specify at least 1 of stdin, stdout, stderr")
    return ExecOptions(command, stdin, stdout, stderr, tty)


def pod_container(pod: dict, container: str | None) -> str:
    """The container a request names (or the only one), else the API server's 400 (logs and exec alike)."""
    name = pod["metadata"]["name"]
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    if not container:
        if len(containers) != 1:
            raise Refused(400, "BadRequest", f"a container name must be specified for pod {name}, choose one "
                                             f"of: [{' '.join(containers)}]")
        return containers[0]
    if container not in containers:
        raise Refused(400, "BadRequest", f"container {container} is not valid for pod {name}")
    return container


def check_pod(pod: dict, container: str | None) -> str:
    """The container to exec in, or the error the API server gives for this pod (not running, wrong container)."""
    name = pod["metadata"]["name"]
    container = pod_container(pod, container)
    phase = (pod.get("status") or {}).get("phase", "Pending")
    if phase in ("Succeeded", "Failed"):
        raise Refused(400, "BadRequest", f"cannot exec into a container in a completed pod; current phase is "
                                             f"{phase}")
    if not (pod.get("spec") or {}).get("nodeName"):
        raise Refused(400, "BadRequest", f"pod {name} does not have a host assigned")
    return container


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", max(rows, 1), max(cols, 1), 0, 0))


def _controlling_tty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Process:
    """One command of an exec session: started in its own session, I/O as callbacks on the event loop."""

    def __init__(self, argv: list[str], target: ExecTarget, tty: bool, stdin: bool):
        self.argv, self.target, self.tty, self.wants_stdin = argv, target, tty, stdin
        self.proc: asyncio.subprocess.Process | None = None
        self.master: int | None = None
        self.resized: Callable[[int, int], None] = lambda _rows, _cols: None
        """Told each size given to the terminal (the sandbox's streams record it for tests)."""

    async def start(self, rows: int = 24, cols: int = 80) -> None:
        env = dict(self.target.env)
        cwd = str(self.target.cwd)
        argv = self.target.argv(self.argv)
        if self.tty:
            env["TERM"] = "xterm-256color"
            master, slave = pty.openpty()
            _set_size(master, rows, cols)
            try:
                self.proc = await asyncio.create_subprocess_exec(
                    *argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                    start_new_session=True, preexec_fn=_controlling_tty)
            finally:
                os.close(slave)
            os.set_blocking(master, False)
            self.master = master
        else:
            self.proc = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, start_new_session=True,
                stdin=asyncio.subprocess.PIPE if self.wants_stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        if self.record is not None:
            with contextlib.suppress(OSError):
                self.record.write_text(str(self.proc.pid))

    @property
    def record(self) -> Path | None:
        """The watchdog's record of this process group (procs.reap_all)."""
        if self.target.records is None or self.proc is None:
            return None
        return self.target.records / f"exec-{self.proc.pid}.pgid"

    async def write(self, data: bytes) -> None:
        if self.master is not None:
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self.master, view):]
                except BlockingIOError:
                    await asyncio.sleep(0.01)
                except OSError:
                    return
        elif self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.write(data)
            with contextlib.suppress(ConnectionError):
                await self.proc.stdin.drain()

    async def close_stdin(self) -> None:
        if self.master is not None:
            await self.write(b"\x04")
        elif self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()

    def resize(self, rows: int, cols: int) -> None:
        if self.master is not None:
            with contextlib.suppress(OSError):
                _set_size(self.master, rows, cols)
                self.resized(rows, cols)

    async def pump(self, send: Callable[[int, bytes], object]) -> None:
        """Send output until the process's outputs close (or, after it exited, DRAIN_SECONDS)."""
        if self.master is not None:
            await self._pump_pty(self.master, send)
            return
        proc = self._started()
        readers = [self._pump_pipe(stream, channel, send)
                   for stream, channel in ((proc.stdout, STDOUT), (proc.stderr, STDERR)) if stream is not None]
        await asyncio.gather(*readers)

    def _started(self) -> asyncio.subprocess.Process:
        if self.proc is None:
            raise RuntimeError("the exec's process has not started")
        return self.proc

    async def _pump_pipe(self, stream: asyncio.StreamReader, channel: int, send) -> None:
        while True:
            data = await stream.read(CHUNK)
            if not data:
                return
            await send(channel, data)

    async def _pump_pty(self, master: int, send) -> None:
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        loop.add_reader(master, ready.set)
        try:
            while True:
                try:
                    data = os.read(master, CHUNK)
                except BlockingIOError:
                    ready.clear()
                    await ready.wait()
                    continue
                except OSError:
                    return
                if not data:
                    return
                await send(STDOUT, data)
        finally:
            loop.remove_reader(master)

    async def end(self) -> None:
        """End the whole process group (hang-up, then TERM and KILL) and free the terminal."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGHUP)
            await end_group(self.proc.pid, END_GRACE)
            with contextlib.suppress(ProcessLookupError):
                await self.proc.wait()
            if self.record is not None:
                self.record.unlink(missing_ok=True)
        if self.master is not None:
            os.close(self.master)
            self.master = None

    async def run(self, send, pod_alive: Callable[[], bool]) -> int:
        """Pump output until the command ends (or the pod goes away: 137); its exit code."""
        pump = asyncio.ensure_future(self.pump(send))
        waiter = asyncio.ensure_future(self._started().wait())
        try:
            while not waiter.done():
                await asyncio.wait({waiter}, timeout=POD_CHECK_SECONDS)
                if not waiter.done() and not pod_alive():
                    await self.end()
                    return 137
            await asyncio.wait({pump}, timeout=DRAIN_SECONDS)
        finally:
            pump.cancel()
            waiter.cancel()
        code = waiter.result()
        return 128 - code if code < 0 else code


def exit_status(code: int, argv: list[str]) -> dict:
    """The status channel's metav1.Status for an exit code, as the kubelet writes it."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command [{' '.join(argv)}], "
                       f"exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


async def serve_exec(request: web.Request, options: ExecOptions, target: ExecTarget,
                     pod_alive: Callable[[], bool],
                     resized: Callable[[int, int], None] | None = None) -> web.StreamResponse:
    """The `pods/<pod>/exec` WebSocket: run the command, relay the channels, report its exit on channel 3;
    `resized(rows, cols)` is told each size the terminal takes."""
    ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0, autoping=True)
    await ws.prepare(request)
    v5 = ws.ws_protocol == PROTOCOLS[0]
    proc = Process(options.command, target, options.tty, options.stdin)
    if resized is not None:
        proc.resized = resized
    lock = asyncio.Lock()

    async def send(channel: int, data: bytes) -> None:
        async with lock:
            if not ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_bytes(bytes([channel]) + data)

    try:
        await proc.start()
    except OSError as exc:
        await send(STATUS, json.dumps({"metadata": {}, "status": "Failure", "reason": "InternalError",
                                       "message": f"failed to exec in container: {exc}"}).encode())
        await ws.close()
        return ws
    await send(STDOUT if options.stdout else STDERR if options.stderr else STATUS, b"")
    reader = asyncio.ensure_future(_read_exec(ws, proc, v5))
    runner = asyncio.ensure_future(proc.run(send, pod_alive))
    try:
        done, _ = await asyncio.wait({reader, runner}, return_when=asyncio.FIRST_COMPLETED)
        if runner in done:
            await send(STATUS, json.dumps(exit_status(runner.result(), options.command)).encode())
            await ws.close()
    finally:
        reader.cancel()
        runner.cancel()
        await proc.end()
    return ws


async def _read_exec(ws: web.WebSocketResponse, proc: Process, v5: bool) -> None:
    """Client frames until it hangs up: stdin bytes, resize, CLOSE (v5) or an empty stdin frame (v4: EOF)."""
    async for msg in ws:
        if msg.type != WSMsgType.BINARY or not msg.data:
            continue
        channel, data = msg.data[0], msg.data[1:]
        if channel == STDIN:
            if data:
                await proc.write(data)
            elif not v5:
                await proc.close_stdin()
        elif channel == RESIZE:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                size = json.loads(data)
                proc.resize(int(size["Height"]), int(size["Width"]))
        elif channel == CLOSE and v5 and data[:1] == bytes([STDIN]):
            await proc.close_stdin()


async def serve_terminal(request: web.Request, command: str, target: ExecTarget,
                         pod_alive: Callable[[], bool],
                         resized: Callable[[int, int], None] | None = None) -> web.StreamResponse:
    """The console's terminal WebSocket: a tty exec of one command word; raw bytes and JSON control frames;
    `resized(rows, cols)` as in serve_exec."""
    ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
    await ws.prepare(request)
    proc = Process([command], target, tty=True, stdin=True)
    if resized is not None:
        proc.resized = resized
    lock = asyncio.Lock()

    async def send(_channel: int, data: bytes) -> None:
        async with lock:
            if not ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_bytes(data)

    async def send_json(message: dict) -> None:
        async with lock:
            if not ws.closed:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_str(json.dumps(message))

    try:
        await proc.start()
    except OSError as exc:
        await send_json({"type": "error", "message": f"exec error: {exc}"})
        await ws.close()
        return ws
    reader = asyncio.ensure_future(_read_terminal(ws, proc, send_json))
    runner = asyncio.ensure_future(proc.run(send, pod_alive))
    try:
        done, _ = await asyncio.wait({reader, runner}, return_when=asyncio.FIRST_COMPLETED)
        if runner in done:
            code = runner.result()
            await ws.close(message=(f"terminal exited with code {code}" if code else "terminal session ended").encode())
    finally:
        reader.cancel()
        runner.cancel()
        await proc.end()
    return ws


async def _read_terminal(ws: web.WebSocketResponse, proc: Process, send_json) -> None:
    """Client frames: terminal bytes, and the JSON controls `resize`, `file-upload` (binary frames up to
    `file-upload-end` become the file) and `file-download` (agent/terminal.go)."""
    async for msg in ws:
        if msg.type == WSMsgType.BINARY:
            await proc.write(msg.data)
            continue
        if msg.type != WSMsgType.TEXT or not msg.data.startswith("{"):
            continue
        try:
            control = json.loads(msg.data)
            kind = control.get("type")
            if kind == "resize":
                proc.resize(int(control["rows"]), int(control["cols"]))
            elif kind == "file-upload":
                await _upload(ws, proc.target, str(control.get("path") or ""), send_json)
            elif kind == "file-download":
                await _download(proc.target, str(control.get("path") or ""), send_json, ws)
        except (ValueError, TypeError, KeyError, AttributeError):
            continue


async def _run_once(target: ExecTarget, argv: list[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    """A non-interactive command in the pod: (exit code, stdout, stderr)."""
    child = await asyncio.create_subprocess_exec(
        *target.argv(argv), cwd=str(target.cwd), env=dict(target.env), start_new_session=True,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await child.communicate(stdin)
    return await child.wait(), out, err


async def _upload(ws: web.WebSocketResponse, target: ExecTarget, path: str, send_json) -> None:
    data = bytearray()
    async for msg in ws:
        if msg.type == WSMsgType.TEXT and msg.data.startswith("{"):
            with contextlib.suppress(ValueError, AttributeError):
                if json.loads(msg.data).get("type") == "file-upload-end":
                    break
        if msg.type in (WSMsgType.TEXT, WSMsgType.BINARY):
            data += msg.data.encode() if isinstance(msg.data, str) else msg.data
    else:
        return
    code, _, err = await _run_once(target, ["sh", "-c", f"cat > '{path}'"], bytes(data))
    await send_json({"type": "file-transfer-done", "success": code == 0} if code == 0 else
                    {"type": "file-transfer-done", "success": False,
                     "error": f"copy to pod: exec stream: command terminated with exit code {code} "
                              f"(stderr: {err.decode('utf-8', 'replace')})"})


async def _download(target: ExecTarget, path: str, send_json, ws: web.WebSocketResponse) -> None:
    code, out, err = await _run_once(target, ["cat", path])
    if code != 0:
        await send_json({"type": "file-transfer-done", "success": False,
                         "error": f"copy from pod: exec stream: command terminated with exit code {code} "
                                  f"(stderr: {err.decode('utf-8', 'replace')})"})
        return
    await send_json({"type": "file-download-start", "size": len(out), "name": os.path.basename(path)})
    for start in range(0, len(out), CHUNK):
        await ws.send_bytes(out[start:start + CHUNK])
    await send_json({"type": "file-download-end"})


async def refuse_terminal(request: web.Request, message: str) -> web.StreamResponse:
    """A terminal that cannot start: upgraded, one error frame, closed (as the agent's `sendError`)."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    await ws.send_str(json.dumps({"type": "error", "message": f"exec error: {message}"}))
    await ws.close()
    return ws
