"""The sandbox's Pod network: each Pod's own loopback address (`127.<sandbox>.<a>.<b>`) as its Pod IP and Ray node
IP, inside a network namespace of the sandbox's own when it can make one (root, as in CI).

Ray 2.60's gRPC servers (GCS, raylets, workers, dashboard agents) and its metrics exporters listen on every
interface whenever the node IP is not 127.0.0.1. In the Pod network namespace "every interface" is only its `lo`:
nothing of a Pod listens in the host's namespace at all, so no other local user reaches a Pod port (and Ray's
token guards what Pods see of each other). Pods reach each other there as Pods of one cluster network do; the
sandbox reaches them through sockets it makes in that namespace (`socket_factory`, for aiohttp) and starts
processes in it with `nsenter` (`enter`).

Without the privilege (a non-root `rlark demo`) the Pods keep their own 127.x addresses on the host's `lo`,
Ray's gRPC ports listen on all of the host's interfaces, and only Ray's token stands in the way: `problem` says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import shutil
import socket
import struct
import threading

import aiohttp

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
SLOTS_PER_OCTET = 250


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _lo_up() -> None:
    """`ip link set lo up` in the calling thread's network namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


class PodNetwork:
    """One per sandbox (`open()` once, `close()` at the end). Thread-safe."""

    def __init__(self, seed: str) -> None:
        self.octet = 1 + int(hashlib.sha1(seed.encode()).hexdigest(), 16) % 254
        """The second octet of this sandbox's Pod addresses: two sandboxes on one machine differ (by their state
        dir), and none uses 127.0.x.x, where the sandbox's own servers listen."""
        self.isolated = False
        self.problem = ""
        self._ns_fd: int | None = None
        self._host_fd: int | None = None
        self._lock = threading.Lock()

    # ----- set-up -----
    def open(self) -> "PodNetwork":
        if os.geteuid() != 0 or shutil.which("nsenter") is None:
            self.problem = ("not root (or no nsenter): sandbox Pods share this host's network namespace, so Ray's "
                            "gRPC ports listen on all interfaces, guarded only by Ray's token")
            return self
        made: dict[str, object] = {}

        def make() -> None:  # a thread of its own: unshare() moves only the calling thread
            try:
                _check(_libc().unshare(CLONE_NEWNET))
                made["fd"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
                _lo_up()
            except OSError as exc:
                made["error"] = exc

        worker = threading.Thread(target=make, name="sandbox pod network")
        worker.start()
        worker.join()
        if "error" in made:
            if "fd" in made:
                os.close(made["fd"])
            self.problem = (f"cannot make a network namespace for the Pods ({made['error']}): Ray's gRPC ports "
                            "listen on all interfaces, guarded only by Ray's token")
            return self
        self._ns_fd = made["fd"]
        self._host_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self.isolated = True
        return self

    def close(self) -> None:
        for fd in (self._ns_fd, self._host_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ns_fd = self._host_fd = None
        self.isolated = False

    # ----- addresses -----
    def address(self, slot: int) -> str:
        """The Pod IP of port block `slot` (runner.PortBlocks)."""
        return f"127.{self.octet}.{slot // SLOTS_PER_OCTET}.{slot % SLOTS_PER_OCTET + 2}"

    def owns(self, host: str) -> bool:
        """Whether `host` is one of this sandbox's Pod addresses."""
        return host.startswith(f"127.{self.octet}.")

    # ----- reaching into it -----
    @property
    def path(self) -> str:
        return f"/proc/{os.getpid()}/fd/{self._ns_fd}"

    def enter(self) -> tuple[str, ...]:
        """The argv prefix that runs a command in the Pod network (empty when there is none of its own)."""
        return ("nsenter", f"--net={self.path}", "--") if self.isolated else ()

    def socket(self, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM, proto: int = 0) -> socket.socket:
        """A socket of the Pod network (a socket stays in the namespace it was made in)."""
        if not self.isolated:
            return socket.socket(family, kind, proto)
        libc = _libc()
        with self._lock:
            _check(libc.setns(self._ns_fd, CLONE_NEWNET))
            try:
                return socket.socket(family, kind, proto)
            finally:
                _check(libc.setns(self._host_fd, CLONE_NEWNET))

    def socket_factory(self, addr_info) -> socket.socket:
        """aiohttp's `TCPConnector(socket_factory=...)`: Pod addresses inside the Pod network, others as usual."""
        family, kind, proto, _, address = addr_info
        if self.owns(str(address[0])):
            return self.socket(family, kind, proto)
        return socket.socket(family, kind, proto)

    def client_session(self, **options) -> aiohttp.ClientSession:
        """An aiohttp session that reaches Pod addresses in the Pod network (call on the event loop)."""
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(socket_factory=self.socket_factory), **options)

    def port_free(self, host: str, port: int) -> bool:
        with self.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
        return True
