"""Runs the `main` container of sandbox pods for real: one local process group per container instance that
executes the platform's start script (prepare, Ray head or worker, cluster check, run script).

Restart-always with kubelet-like back-off, per-pod ports and a short Ray temp dir, logs per container instance
through `LogStore` (stdout and stderr on their own pipes, written as a CRI runtime writes them), and clean-up of the whole process group (Ray daemons included) by process group only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from rlark_sandbox import procs
from rlark_sandbox.logs import EntryWriter, LogStore
from rlark_sandbox.podnet import PodNetwork
from rlark_sandbox.procs import end_group
from rlark_sandbox.registry import image_id

SCRIPTS = Path(__file__).resolve().parent / "scripts"
DATA_NAMESPACE = "rlark-system"
CONTAINER = "main"
MEMORY_POLL_SECONDS = 0.2


@dataclass
class RunnerSettings:
    """Knobs of the simulated kubelet and of the sandbox's Ray (tests shorten the timeouts)."""

    cluster_check_timeout: float = 900.0
    cluster_check_interval: float = 2.0
    head_wait_attempts: int = 600
    """A worker's tries, 1 s apart, for its head to be registered (the platform's script has 120 tries of a TCP
    probe; on a loaded 2-core host the sandbox's head takes minutes to register, and a worker that gives up earlier
    restarts)."""
    ray_start_turn: float = 300.0
    """The Ray nodes of one Job start one at a time (Ray gives a starting raylet 30 s to register with the GCS,
    which several starting at once on a loaded 2-core host can miss): the longest one waits for the node before
    it to be registered before starting anyway."""
    backoff_base: float = 10.0
    backoff_max: float = 300.0
    backoff_reset_after: float = 600.0
    stop_grace: float = 1.0
    num_cpus: int = 1
    object_store_bytes: int = 80_000_000
    ray: bool = True
    """False: every container runs as an image without the Ray CLI would (it exits after its prepare script),
    so a sandbox for tests that never look at Ray starts no Ray processes."""


def image_fails_pull(image: str) -> bool:
    """Images are not pulled; a reference containing `invalid` fails as a pull would."""
    return "invalid" in image


def image_has_ray(image: str) -> bool:
    return "no-ray" not in image


def image_cuts_head(image: str) -> bool:
    """A worker with such an image cannot reach its Ray head."""
    return "unreachable-head" in image


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ----- ports -----

@dataclass(frozen=True)
class PodPorts:
    """The Pod IP and ports of one pod's Ray node; each pod gets its own block, since Ray's gRPC servers listen on
    every interface of the Pod network the pods share."""

    ip: str
    gcs: int
    client: int
    dashboard: int
    agent: int
    tensorboard: int
    """The Pod's port 6006 (its TensorBoard sidecar, rlark_sandbox/tensorboard.py)."""
    min_worker: int
    max_worker: int


class PortBlocks:
    """Hands out per-pod blocks (a Pod IP of the Pod network, ports between 20000 and 31999: below the kernel's
    ephemeral range, above Ray's default worker ports); a block is skipped while any of its fixed ports is bound
    there."""

    BASE = 20000
    WIDTH = 120
    SLOTS = 100

    def __init__(self, seed: str = "", network: PodNetwork | None = None) -> None:
        self.network = network if network is not None else PodNetwork(seed)
        self._start = int(hashlib.sha1(seed.encode()).hexdigest(), 16) % self.SLOTS
        self._by_key: dict[str, int] = {}
        self._last: dict[str, int] = {}
        """Each pod's block the last time it had one."""

    def claim(self, key: str) -> PodPorts:
        """The block of the pod `key` (`cluster/pod`): the one it had before when that is free again, as a real
        Pod of a StatefulSet comes back with the same ports (Ray's GCS on 6379): a head Pod replaced by an Edit &
        Restart keeps the GCS port its workers' env names. Other keys' last blocks are taken only when no other
        is free."""
        if key not in self._by_key:
            used = set(self._by_key.values())
            kept = {slot for other, slot in self._last.items() if other != key}
            last = self._last.get(key)
            order = [last] if last is not None else []
            order += sorted(range(self.SLOTS), key=lambda slot: (slot in kept, (slot - self._start) % self.SLOTS))
            for slot in order:
                if slot not in used and self._free(self._ports(slot)):
                    self._by_key[key] = self._last[key] = slot
                    break
            else:
                raise RuntimeError("no free port block for another sandbox pod")
        return self._ports(self._by_key[key])

    def release(self, key: str) -> None:
        self._by_key.pop(key, None)

    def _ports(self, slot: int) -> PodPorts:
        base = self.BASE + slot * self.WIDTH
        return PodPorts(ip=self.network.address(slot), gcs=base, client=base + 1, dashboard=base + 2, agent=base + 3,
                        tensorboard=base + 4, min_worker=base + 10, max_worker=base + self.WIDTH - 1)

    def _free(self, ports: PodPorts) -> bool:
        return all(self.network.port_free("0.0.0.0", port)
                   for port in (ports.gcs, ports.client, ports.dashboard, ports.agent, ports.tensorboard))


def temp_dir_for(uid: str, state_dir: str) -> Path:
    """Ray's temp dir of one pod: short (`/tmp/rlk-<hash>`) so Ray's socket paths stay under 107 bytes."""
    digest = hashlib.sha1(f"{state_dir}:{uid}".encode()).hexdigest()[:10]
    return Path("/tmp") / f"rlk-{digest}"


# ----- one container -----

@dataclass
class Launch:
    """Everything needed to run one pod's `main` container."""

    cluster: str
    pod: str
    uid: str
    head: bool
    image: str
    env: dict[str, str]
    workdir: Path
    temp_dir: Path
    ports: PodPorts
    head_ports: PodPorts
    hosts_file: Path
    restart_count: int = 0
    memory_limit: int | None = None
    """`resources.limits.memory` of `main` in bytes: the process group is OOM-killed above it."""
    enter: tuple[str, ...] = ()
    """The argv prefix that puts the container's processes in the Pod network (podnet.PodNetwork.enter)."""
    gpu_bin: str = ""
    """The bin dir holding the Pod's simulated `nvidia-smi` (rlark_sandbox/gpus.py), first on PATH; "" without GPUs."""


@dataclass
class ContainerView:
    """The container's state in Kubernetes terms (one `containerStatuses[]` entry)."""

    status: dict
    ready: bool
    started: bool = field(default=False)


def _bin_dirs() -> list[str]:
    dirs = [os.path.dirname(sys.executable)]
    ray = shutil.which("ray")
    if ray and os.path.dirname(ray) not in dirs:
        dirs.append(os.path.dirname(ray))
    return dirs


def _no_ray_bin(root: Path) -> str:
    """A bin dir with `python`/`python3` but no `ray`: what an image without the Ray CLI offers. Each wrapper is
    written only when missing or different, as a new file renamed over its name: rewritten in place at every
    container start, a wrapper that another Pod's container was exec'ing at that moment failed it with ETXTBSY
    ('Text file busy', exit 126), and that Pod started again only after the kubelet's 10 s back-off."""
    directory = root / "bin-noray"
    directory.mkdir(parents=True, exist_ok=True)
    text = f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'
    for name in ("python", "python3"):
        path = directory / name
        if path.is_file() and path.read_text() == text:
            continue
        fd, staged = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(staged, 0o755)
        os.replace(staged, path)
    return str(directory)


def container_env(launch: Launch, settings: RunnerSettings, state_root: Path) -> dict[str, str]:
    """Environment of the container process: a small base, the pod's env (user + platform), and the
    sandbox's own RLARK_SANDBOX_* wiring (ports, temp dir, name resolution, timeouts)."""
    system = "/usr/local/bin:/usr/bin:/bin"
    with_ray = settings.ray and image_has_ray(launch.image)
    path = ":".join(_bin_dirs()) if with_ray else _no_ray_bin(state_root)
    env = {
        "PATH": f"{launch.gpu_bin}:{path}:{system}" if launch.gpu_bin else f"{path}:{system}", "HOME": str(launch.workdir / "home"), "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "TERM": "dumb",
        "RAY_USAGE_STATS_ENABLED": "0", "USER": os.environ.get("USER", ""),
    }
    env.update(launch.env)
    hosts = "/dev/null" if not launch.head and image_cuts_head(launch.image) else str(launch.hosts_file)
    env.update({
        "RAY_TEMP_DIR": str(launch.temp_dir),
        "RLARK_RAY_PORT": str(launch.head_ports.gcs),
        "RLARK_SANDBOX_POD_IP": launch.ports.ip,
        "RLARK_SANDBOX_HOSTS": hosts,
        "RLARK_SANDBOX_CLIENT_PORT": str(launch.ports.client),
        "RLARK_SANDBOX_DASHBOARD_PORT": str(launch.ports.dashboard),
        "RLARK_SANDBOX_HEAD_DASHBOARD_PORT": str(launch.head_ports.dashboard),
        "RLARK_SANDBOX_AGENT_PORT": str(launch.ports.agent),
        "RLARK_SANDBOX_MIN_WORKER_PORT": str(launch.ports.min_worker),
        "RLARK_SANDBOX_MAX_WORKER_PORT": str(launch.ports.max_worker),
        "RLARK_SANDBOX_NUM_CPUS": str(settings.num_cpus),
        "RLARK_SANDBOX_OBJECT_STORE_BYTES": str(settings.object_store_bytes),
        "RLARK_SANDBOX_CHECK_TIMEOUT": f"{settings.cluster_check_timeout:g}",
        "RLARK_SANDBOX_CHECK_INTERVAL": f"{settings.cluster_check_interval:g}",
        "RLARK_SANDBOX_HEAD_WAIT_ATTEMPTS": str(settings.head_wait_attempts),
        "RLARK_SANDBOX_RAY_START_LOCK": str(state_root / "ray-start.lock"),
        "RLARK_SANDBOX_RAY_START_TURN": f"{settings.ray_start_turn:g}",
        procs.POD_UID_ENV: launch.uid,
    })
    return env


def backoff_delay(settings: RunnerSettings, failures: int) -> float:
    """Kubelet's restart back-off: base, doubling per consecutive restart, capped."""
    return min(settings.backoff_base * (2 ** max(failures - 1, 0)), settings.backoff_max)


class ContainerRunner:
    """Runs one pod's `main` container until stopped, restarting it like restartPolicy Always.

    `on_status(view)` gets every container state change; `on_event(type, reason, message)` the events
    kubelet would record. Both are called on the event loop that runs `start()`.
    """

    def __init__(self, launch: Launch, logs: LogStore, settings: RunnerSettings, state_root: Path,
                 on_status: Callable[[ContainerView], None],
                 on_event: Callable[[str, str, str], None]) -> None:
        self.launch = launch
        self.logs = logs
        self.settings = settings
        self.state_root = state_root
        self.on_status = on_status
        self.on_event = on_event
        self.restart_count = launch.restart_count
        self.pgid: int | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._last_terminated: dict | None = None
        self._oom_killed = False

    @property
    def pgid_file(self) -> Path:
        return self.launch.workdir / "pgid"

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"pod {self.launch.pod}")

    async def stop(self) -> None:
        """End the container (its whole process group) and the restart loop; done within ~5 s."""
        self._stopping = True
        if self.pgid is not None:
            await end_group(self.pgid, self.settings.stop_grace)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self.pgid_file.unlink(missing_ok=True)

    def _status(self, state: dict, ready: bool, started: bool) -> None:
        status = {"name": CONTAINER, "image": self.launch.image, "imageID": image_id(self.launch.image),
                  "ready": ready, "started": started, "restartCount": self.restart_count, "state": state}
        if self.pgid is not None:
            status["containerID"] = f"sandbox://{self.launch.uid}/{self.restart_count}"
        if self._last_terminated:
            status["lastState"] = {"terminated": dict(self._last_terminated)}
        self.on_status(ContainerView(status, ready, started))

    async def _loop(self) -> None:
        failures = 0
        while not self._stopping:
            started = time.monotonic()
            await self._run_once()
            if self._stopping:
                return
            ran = time.monotonic() - started
            failures = 1 if ran >= self.settings.backoff_reset_after else failures + 1
            self.restart_count += 1
            delay = backoff_delay(self.settings, failures)
            pod = f"{self.launch.pod}_{DATA_NAMESPACE}({self.launch.uid})"
            message = f"back-off {delay:g}s restarting failed container={CONTAINER} pod={pod}"
            self._status({"waiting": {"reason": "CrashLoopBackOff", "message": message}}, False, False)
            self.on_event("Warning", "BackOff", f"Back-off restarting failed container {CONTAINER} in pod {pod}")
            await asyncio.sleep(delay)

    async def _run_once(self) -> None:
        launch = self.launch
        launch.workdir.mkdir(parents=True, exist_ok=True)
        (launch.workdir / "home").mkdir(exist_ok=True)
        launch.temp_dir.mkdir(parents=True, exist_ok=True)
        script = SCRIPTS / ("ray_head.sh" if launch.head else "ray_worker.sh")
        self.logs.start_instance(launch.cluster, DATA_NAMESPACE, launch.pod, CONTAINER)
        started_at = now_iso()
        loop = asyncio.get_running_loop()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            proc = subprocess.Popen(
                [*launch.enter, "bash", str(script)], cwd=str(launch.workdir / "home"), start_new_session=True,
                close_fds=True,
                env=container_env(launch, self.settings, self.state_root),
                stdin=subprocess.DEVNULL, stdout=out_write, stderr=err_write)
        finally:
            os.close(out_write)
            os.close(err_write)
        self.pgid = proc.pid
        self.pgid_file.write_text(str(proc.pid))
        self.on_event("Normal", "Created", f"Created container {CONTAINER}")
        self.on_event("Normal", "Started", f"Started container {CONTAINER}")
        self._status({"running": {"startedAt": started_at}}, True, True)
        # The exit of `bash` is watched through a pidfd: daemons it started may keep the output pipe open.
        exited = loop.create_future()
        pidfd = os.pidfd_open(proc.pid)

        def on_exit() -> None:
            if not exited.done():
                exited.set_result(None)

        loop.add_reader(pidfd, on_exit)
        writer = self.logs.writer(launch.cluster, DATA_NAMESPACE, launch.pod, CONTAINER)
        pumps = set()
        transports = []
        for stream, read_fd in (("stdout", out_read), ("stderr", err_read)):
            reader = asyncio.StreamReader(limit=1 << 20)
            transport, _ = await loop.connect_read_pipe(partial(asyncio.StreamReaderProtocol, reader),
                                                        os.fdopen(read_fd, "rb", 0))
            transports.append(transport)
            pumps.add(loop.create_task(_pump(reader, stream, writer)))
        self._oom_killed = False
        watch = loop.create_task(self._watch_memory(proc.pid)) if launch.memory_limit else None
        try:
            await exited
            returncode = proc.wait()
            await asyncio.wait(pumps, timeout=1.0)
            await end_group(proc.pid, self.settings.stop_grace)
            await asyncio.wait(pumps, timeout=1.0)
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            for pump in pumps:
                pump.cancel()
            if watch is not None:
                watch.cancel()
            for transport in transports:
                transport.close()
            writer.close()
        exit_code = 128 - returncode if returncode < 0 else returncode
        if self._oom_killed:
            exit_code = 137
        reason = "OOMKilled" if self._oom_killed else "Completed" if exit_code == 0 else "Error"
        self.logs.end_instance(launch.cluster, DATA_NAMESPACE, launch.pod, CONTAINER, exit_code)
        self._last_terminated = {"exitCode": exit_code, "reason": reason,
                                 "startedAt": started_at, "finishedAt": now_iso(),
                                 "containerID": f"sandbox://{launch.uid}/{self.restart_count}"}
        self._status({"terminated": dict(self._last_terminated)}, False, False)

    async def _watch_memory(self, sid: int) -> None:
        """The cgroup limit of a kubelet, on the container's session (its process groups too, e.g. Ray's workers):
        SIGKILL all of it once its RSS passes the limit."""
        limit = self.launch.memory_limit or 0
        while True:
            await asyncio.sleep(MEMORY_POLL_SECONDS)
            if procs.session_rss(sid) > limit:
                self._oom_killed = True
                procs.kill_session(sid)
                return


async def _pump(reader: asyncio.StreamReader, stream: str, writer: EntryWriter) -> None:
    """One of the container's streams into its CRI log as bytes arrive (containerd reads each on its own)."""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            return
        writer.feed(stream, data)
