"""The sandbox's Pod network: each Pod's own loopback address (`127.<sandbox>.<a>.<b>`) as its Pod IP and Ray node
IP, inside a network namespace of the sandbox's own: made directly as root (as in CI), else inside an
unprivileged user namespace where the kernel allows one (a bastion user's `rlark demo`).

Ray 2.60's gRPC servers (GCS, raylets, workers, dashboard agents) and its metrics exporters listen on every
interface whenever the node IP is not 127.0.0.1. In the Pod network namespace "every interface" is only its `lo`:
nothing of a Pod listens in the host's namespace at all, so no other local user reaches a Pod port (and Ray's
token guards what Pods see of each other). Pods reach each other there as Pods of one cluster network do; the
sandbox reaches them through sockets made in that namespace (`socket_factory`, for aiohttp: by a short `setns`
as root, else by a holder process inside the namespaces that hands socket descriptors over a socketpair) and
starts processes in it with `nsenter` (`enter`).

Where neither works (no user namespaces, no nsenter/unshare) the Pods keep their own 127.x addresses on the
host's `lo`, Ray's gRPC ports listen on all of the host's interfaces, and only Ray's token stands in the way:
`problem` says so.
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
import subprocess
import sys
import threading

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
SLOTS_PER_OCTET = 250


def _libc():
    return ctypes.CDLL(None, use_errno=True)


_Socket = socket.socket
"""The socket class (PodNetwork's own `socket` method hides the module's name inside the class)."""


def _check(result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_HOLDER = """
import fcntl, socket, struct, sys
channel = socket.socket(fileno=int(sys.argv[1]))
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    request = struct.pack("16sH14s", b"lo", 0, b"")
    flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, request))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))
channel.sendall(b"ok")
while (asked := channel.recv(12)) and len(asked) == 12:
    made = socket.socket(*struct.unpack("!iii", asked))
    socket.send_fds(channel, [b"s"], [made.fileno()])
    made.close()
"""
"""The holder of an unprivileged Pod network: brings `lo` up, then makes a socket per request and passes it back."""


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
        self._holder: subprocess.Popen | None = None
        self._channel: socket.socket | None = None
        self._lock = threading.Lock()

    # ----- set-up -----
    def open(self) -> PodNetwork:
        if shutil.which("nsenter") is None or shutil.which("unshare") is None:
            return self._shared("no nsenter/unshare on this host")
        if os.geteuid() != 0:
            return self._open_unprivileged()
        made: list[int] = []
        errors: list[OSError] = []

        def make() -> None:  # a thread of its own: unshare() moves only the calling thread
            try:
                _check(_libc().unshare(CLONE_NEWNET))
                made.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC))
                _lo_up()
            except OSError as exc:
                errors.append(exc)

        worker = threading.Thread(target=make, name="sandbox pod network")
        worker.start()
        worker.join()
        if errors:
            if made:
                os.close(made[0])
            return self._shared(f"cannot make a network namespace ({errors[0]})")
        self._ns_fd = made[0]
        self._host_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        self.isolated = True
        return self

    def _open_unprivileged(self) -> PodNetwork:
        """A holder process in a new user + network namespace (the user is root there, as in a container): Pods join
        both with nsenter; it makes the sandbox's sockets there and passes their descriptors back."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            holder = subprocess.Popen(
                ["unshare", "--user", "--map-root-user", "--net", "--", sys.executable, "-I", "-c", _HOLDER,
                 str(theirs.fileno())], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            ours.close()
            return self._shared(f"cannot start the namespace holder ({exc})")
        finally:
            theirs.close()
        ours.settimeout(10)
        try:
            ready = ours.recv(2)
        except OSError:
            ready = b""
        if ready != b"ok":
            holder.kill()
            why = holder.communicate(timeout=5)[1].decode("utf-8", "replace").strip().splitlines()
            ours.close()
            return self._shared(f"no unprivileged user namespace ({why[-1] if why else 'the holder exited'})")
        self._holder, self._channel = holder, ours
        self.isolated = True
        return self

    def _shared(self, why: str) -> PodNetwork:
        self.problem = (f"{why}: sandbox Pods share this host's network namespace, so Ray's gRPC ports listen on "
                        "all interfaces, guarded only by Ray's token")
        return self

    def close(self) -> None:
        for fd in (self._ns_fd, self._host_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ns_fd = self._host_fd = None
        if self._channel is not None:
            self._channel.close()       # the holder ends at EOF
            self._channel = None
        if self._holder is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._holder.wait(5)
            if self._holder.poll() is None:
                self._holder.kill()
                self._holder.wait(5)
            self._holder = None
        self.isolated = False

    # ----- addresses -----
    def address(self, slot: int) -> str:
        """The Pod IP of port block `slot` (runner.PortBlocks)."""
        return f"127.{self.octet}.{slot // SLOTS_PER_OCTET}.{slot % SLOTS_PER_OCTET + 2}"

    def owns(self, host: str) -> bool:
        """Whether `host` is one of this sandbox's Pod addresses."""
        return host.startswith(f"127.{self.octet}.")

    # ----- reaching into it -----
    def enter(self) -> tuple[str, ...]:
        """The argv prefix that runs a command in the Pod network (empty when there is none of its own)."""
        if not self.isolated:
            return ()
        if self._holder is not None:
            return ("nsenter", f"--target={self._holder.pid}", "--user", "--net", "--preserve-credentials", "--")
        return ("nsenter", f"--net=/proc/{os.getpid()}/fd/{self._ns_fd}", "--")

    def socket(self, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM, proto: int = 0) -> socket.socket:
        """A socket of the Pod network (a socket stays in the namespace it was made in)."""
        if not self.isolated:
            return socket.socket(family, kind, proto)
        if self._channel is not None:
            with self._lock:
                self._channel.sendall(struct.pack("!iii", family, kind, proto))
                _, fds, _, _ = socket.recv_fds(self._channel, 1, 1)
            if not fds:
                raise OSError("the Pod network's holder process is gone")
            return socket.socket(fileno=fds[0])
        libc = _libc()
        with self._lock:
            _check(libc.setns(self._ns_fd, CLONE_NEWNET))
            try:
                return socket.socket(family, kind, proto)
            finally:
                _check(libc.setns(self._host_fd, CLONE_NEWNET))

    def socket_factory(self, addr_info) -> _Socket:
        """aiohttp's `TCPConnector(socket_factory=...)`: Pod addresses inside the Pod network, others as usual."""
        family, kind, proto, _, address = addr_info
        if self.owns(str(address[0])):
            return self.socket(family, kind, proto)
        return socket.socket(family, kind, proto)

    def client_session(self, **options):
        """An aiohttp session that reaches Pod addresses in the Pod network (call on the event loop)."""
        import aiohttp  # here, so the module loads with the standard library alone (the unprivileged test)
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(socket_factory=self.socket_factory), **options)

    def port_free(self, host: str, port: int) -> bool:
        """Nothing listens there: bound as a server binds it (SO_REUSEADDR), so the connections of a stopped Pod's
        servers that linger in TIME_WAIT do not keep its ports taken."""
        with self.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return False
        return True
