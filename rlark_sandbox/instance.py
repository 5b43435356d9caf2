"""The embedded RLark sandbox itself: `Sandbox` (its HTTPS servers, kubeconfig, agent, on one loop) and
`main_foreground`. Imported only where a sandbox is built (`rlark_sandbox` names it lazily), since it
brings aiohttp and every server route.
"""


from __future__ import annotations

import asyncio
import inspect
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from rlark_sandbox import certs, default_state_dir, gateway_console, objectstore, rlark_server, running_pid
from rlark_sandbox import kubeconfig as kubeconfig_file
from rlark_sandbox import seed as seeds
from rlark_sandbox.agent import Agent, AgentSettings
from rlark_sandbox.faults import Faults
from rlark_sandbox.logs import LogStore
from rlark_sandbox.objectstore import ObjectStore
from rlark_sandbox.podnet import PodNetwork
from rlark_sandbox.proxy import ProxyRegistry
from rlark_sandbox.routes import RouteLog
from rlark_sandbox.server import SandboxServer
from rlark_sandbox.store import Store
from rlark_sandbox.streams import Streams
from rlark_sandbox.tensorboard import TensorBoards
from rlark_sandbox.tls import ensure_certificates, server_context
from rlark_tui.errors import RlarkError
from rlark_tui.local.fsutil import read_own, write_private
from rlark_tui.text.parse import ascii_int


def _read_token(path: Path) -> str:
    try:
        return read_own(path, 4096).decode(errors="replace").strip()
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    write_private(path, token)
    return token


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def _stop_agent(agent: Agent, patience: float = 3.0, limit: float = 30.0) -> None:
    """`await agent.stop()`; if it has not returned after `patience` seconds, ask once more (a cancellation
    that raced with a wake-up can be lost by asyncio.wait_for on Python 3.11), then wait up to `limit`."""
    first = asyncio.ensure_future(agent.stop())
    done, _ = await asyncio.wait({first}, timeout=patience)
    if done:
        first.result()
        return
    second = asyncio.ensure_future(agent.stop())
    done, pending = await asyncio.wait({first, second}, timeout=limit)
    for task in pending:
        task.cancel()
    for task in done:
        task.result()


class Sandbox:
    context = kubeconfig_file.CONTEXT

    def __init__(self, state_dir: Path | str | None = None, port: int = 0, seed: str = "demo",
                 agent: bool = True, agent_settings: AgentSettings | None = None, history: int = 5000,
                 server_port: int = 0):
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.requested_port = port
        self.requested_server_port = server_port
        self.server_url = ""
        self.ca_path = self.state_dir / "tls" / "ca.crt"
        self.routes = RouteLog()
        self.revocations = certs.Revocations()
        self.seed = seed
        seeds.parse(seed)
        self.use_agent = agent
        self.agent_settings = agent_settings if agent_settings is not None else AgentSettings()
        self.history = history
        self.port = 0
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.gateway = ""
        self.faults = Faults()
        self.streams = Streams()
        """The server's open watches and log follows, for tests to wait on (an in-process hook, no route)."""
        self.network = PodNetwork(str(self.state_dir))
        self.proxies = ProxyRegistry(self.network)
        self.tensorboards = TensorBoards(self.faults, self.network)
        self.store: Store | None = None
        self.logs: LogStore | None = None
        self.agent: Agent | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._server_runner: web.AppRunner | None = None
        self._objects_runner: web.AppRunner | None = None
        self.objects: ObjectStore | None = None
        self._lease: asyncio.Task | None = None
        self._thread: threading.Thread | None = None
        self._stop_event: asyncio.Event | None = None
        self.stopped_by: signal.Signals | None = None
        """The signal `serve` stopped on (None: none yet, or `request_stop()`)."""
        self._token = ""
        self._owns_pid = False

    def __repr__(self) -> str:
        return f"Sandbox(state_dir={str(self.state_dir)!r}, gateway={self.gateway!r})"

    # ----- lifecycle on the loop -----
    async def _open(self) -> None:
        self.loop = asyncio.get_running_loop()
        owner = running_pid(self.state_dir)
        if owner is not None:
            raise RlarkError(f"a sandbox (pid {owner}) already serves {self.state_dir}")
        write_private(self.state_dir / "pid", str(os.getpid()))  # the state dir checked (made) before any other use
        self._owns_pid = True
        self._token = _read_token(self.state_dir / "token")
        if self.use_agent:
            self.network.open()
        ensure_certificates(self.state_dir / "tls")
        store = self.store = Store(self.state_dir, history=self.history)
        logs = self.logs = LogStore(self.state_dir / "logs", self.streams)
        if self.store.resource_version == 0:
            with self.store.batch():
                seeds.apply(self.store, self.seed, str(self.state_dir / "outputs"))
        gateway_console.ensure_ui_auth(self.store)
        tls = self.state_dir / "tls"
        server = SandboxServer(self.store, self.logs, self.faults, self.proxies, self._token,
                               tensorboards=self.tensorboards, routes=self.routes)
        server.exec_target = lambda cluster, pod: self.agent.exec_target(cluster, pod) if self.agent else None
        server.metrics.pod_groups = lambda cluster: self.agent.pod_groups(cluster) if self.agent else {}
        self.objects = ObjectStore(self.state_dir / objectstore.STORAGE_DIR, self._token)
        self._objects_runner = web.AppRunner(self.objects.app(), access_log=None, handle_signals=False,
                                             shutdown_timeout=1.0)
        await self._objects_runner.setup()
        self.objects.endpoint = f"http://127.0.0.1:{await self._bind(self._objects_runner, None, 0, 'objects-port')}"
        server.gateway.objects = self.objects
        self._runner = web.AppRunner(server.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        self.port = await self._bind(self._runner, server_context(tls), self.requested_port, "port")
        self.gateway = f"https://127.0.0.1:{self.port}"
        rlark = rlark_server.RlarkServer(server, self.revocations, tls, on_down=self._server_listening)
        self._server_runner = web.AppRunner(rlark.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._server_runner.setup()
        server_port = await self._bind(self._server_runner, server_context(tls, client_certificates=True),
                                       self.requested_server_port, "server-port")
        self.server_url = f"https://127.0.0.1:{server_port}"
        rlark_server.publish(self.store, tls)
        self._lease = asyncio.get_running_loop().create_task(rlark_server.renew_lease(self.store, "127.0.0.1"))
        self._write_kubeconfig()
        await self._start_agent(store, logs)

    async def _bind(self, runner: web.AppRunner, ssl_context, requested: int, remember: str) -> int:
        """Listen on 127.0.0.1:`requested` (0: the port in file `remember` when free, else any); the port."""
        candidates = [requested]
        remembered = self.state_dir / remember
        if requested == 0 and remembered.exists():
            previous = ascii_int(read_own(remembered, 64).decode(errors="replace").strip()) or 0
            if previous and _port_free(previous):
                candidates.insert(0, previous)
        error: OSError | None = None
        for port in candidates:
            site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=ssl_context, reuse_address=True)
            try:
                await site.start()
            except OSError as exc:
                error = exc
                continue
            port = runner.addresses[0][1]  # the runner's one listening site (a failed one has no socket)
            write_private(remembered, str(port))
            return port
        raise RlarkError(f"sandbox cannot listen on 127.0.0.1:{requested}: {error}")

    async def _server_listening(self, down: bool) -> None:
        """Fault `server_down`: rlark-server's port stops listening (connections are refused), and listens again
        on the same port once the fault is cleared."""
        runner = self._server_runner
        if runner is None:  # not serving yet, or stopped: nothing listens either way
            return
        if down:
            for site in list(runner.sites):
                await site.stop()
            return
        port = int(self.server_url.rsplit(":", 1)[1])
        tls = self.state_dir / "tls"
        await web.TCPSite(runner, "127.0.0.1", port, reuse_address=True,
                          ssl_context=server_context(tls, client_certificates=True)).start()

    def _write_kubeconfig(self) -> None:
        ca = (self.state_dir / "tls" / "ca.crt").read_bytes()
        kubeconfig_file.write(self.kubeconfig, kubeconfig_file.build(self.gateway, self._token, ca, self.server_url))

    async def _start_agent(self, store: Store, logs: LogStore) -> None:
        if not self.use_agent:
            return
        agent = self.agent = Agent(store, logs, self.state_dir, self.agent_settings, proxies=self.proxies,
                                   tensorboards=self.tensorboards, network=self.network)
        agent.start()

    async def _close(self) -> None:
        try:
            if self.agent is not None:
                agent, self.agent = self.agent, None
                await _stop_agent(agent)
        finally:
            if self._lease:
                self._lease.cancel()
            if self._server_runner:
                await self._server_runner.cleanup()
                self._server_runner = None
            if self._objects_runner:
                await self._objects_runner.cleanup()
                self._objects_runner = None
            if self._runner:
                await self._runner.cleanup()
                self._runner = None
            self.network.close()
            if self._owns_pid:
                (self.state_dir / "pid").unlink(missing_ok=True)
                self._owns_pid = False

    # ----- foreground -----
    async def serve(self, ready: Callable[[Sandbox], None] | None = None) -> None:
        """Serve until SIGTERM/SIGINT (or `request_stop()`); `ready` is called once it listens."""
        self._stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        stop = self._stop_event

        def stopped(sig: signal.Signals) -> None:
            self.stopped_by = sig
            stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, stopped, sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        try:
            await self._open()
            if self.network.problem:
                print(f"sandbox: {self.network.problem}", file=sys.stderr, flush=True)
            if ready:
                ready(self)
            await self._stop_event.wait()
        finally:
            await self._close()

    def request_stop(self) -> None:
        if self.loop and self._stop_event:
            self.loop.call_soon_threadsafe(self._stop_event.set)

    # ----- background thread -----
    def start(self, timeout: float = 60.0) -> Sandbox:
        started = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self._stop_event = asyncio.Event()
            try:
                await self._open()
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                await self._close()
                started.set()
                return
            started.set()
            try:
                await self._stop_event.wait()
            finally:
                await self._close()

        self._thread = threading.Thread(target=lambda: asyncio.run(main()), name="rlark-sandbox", daemon=True)
        self._thread.start()
        if not started.wait(timeout):
            raise RlarkError(f"sandbox did not start within {timeout:.0f} s")
        if failure:
            raise failure[0]
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.request_stop()
        if self._thread:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def call(self, fn: Callable, *args, timeout: float = 30.0):
        """Run `fn(*args)` on the sandbox loop; await the result if it is awaitable; return it."""
        async def run():
            result = fn(*args)
            return await result if inspect.isawaitable(result) else result
        if self.loop is None:
            raise RlarkError("the sandbox is not running")
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def api_client(self, context: str | None = None):
        from kubernetes import config
        return config.new_client_from_config(config_file=str(self.kubeconfig), context=context or self.context,
                                             persist_config=False)

    def issue_client_cert(self, metadata: dict[str, str], *, days: float = 365,
                          not_before=None) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) signed by the sandbox CA with `metadata` as its permissions (tests)."""
        return certs.issue(self.state_dir / "tls", metadata, days=days, not_before=not_before)

    def revoke(self, cert_pem: bytes) -> None:
        """rlark-server answers requests with this certificate 401 `client certificate revoked` from now on."""
        self.revocations.revoke(cert_pem)

    @property
    def unknown_routes(self) -> list[str]:
        """Requests on either port that matched no platform route, as "METHOD /path"."""
        return self.routes.unknown

    @property
    def token(self) -> str:
        """The bearer token (tests only; never print it)."""
        return self._token


def main_foreground(state_dir: Path | None, port: int, seed: str, agent: bool = True, server_port: int = 0) -> int:
    sandbox = Sandbox(state_dir, port=port, seed=seed, agent=agent, server_port=server_port)

    def ready(sb: Sandbox) -> None:
        print(f"ready kubeconfig={sb.kubeconfig} gateway={sb.gateway} server={sb.server_url}", flush=True)

    try:
        asyncio.run(sandbox.serve(ready))
    except OSError as exc:
        raise RlarkError(f"sandbox failed: {exc}") from None
    # Ctrl-C ends it as a shell says an interrupted command ended; SIGTERM and SIGHUP are how it is stopped
    return 130 if sandbox.stopped_by == signal.SIGINT else 0
