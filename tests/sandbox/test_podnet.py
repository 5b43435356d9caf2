"""The sandbox's Pod network: Pod addresses per sandbox, a namespace of its own whose listeners the host cannot
reach (as root, and as another user in an unprivileged user namespace), and the plain fallback without either."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rlark_sandbox.podnet import PodNetwork
from rlark_sandbox.runner import PortBlocks


def test_pod_addresses_are_loopback_distinct_per_pod_and_per_sandbox():
    one, other = PodNetwork("/tmp/state-a"), PodNetwork("/tmp/state-b")
    blocks = PortBlocks("/tmp/state-a", one)
    ips = {blocks.claim(f"c/p-{i}").ip for i in range(5)}
    assert len(ips) == 5 and all(ip.startswith(f"127.{one.octet}.") and one.owns(ip) for ip in ips)
    assert one.octet != other.octet and 1 <= one.octet <= 254
    assert not one.owns("127.0.0.1")


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_a_listener_in_the_pod_network_is_not_reachable_from_the_host():
    network = PodNetwork("/tmp/podnet-test").open()
    try:
        assert network.isolated, network.problem
        address = network.address(3)
        with network.socket() as server:
            server.bind(("0.0.0.0", 0))       # what Ray's gRPC servers do
            server.listen()
            port = server.getsockname()[1]
            with socket.socket() as outside, pytest.raises(ConnectionRefusedError):
                outside.connect((address, port))
            with network.socket_factory((socket.AF_INET, socket.SOCK_STREAM, 0, "", (address, port))) as inside:
                inside.connect((address, port))
            listed = subprocess.run([*network.enter(), "ss", "-ltnH"], capture_output=True, text=True, timeout=10)
            assert f":{port} " in listed.stdout
            # the host lists no listener of this process on that port (another process's, in the host's own port
            # space, may have the same number)
            host = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=10).stdout.splitlines()
            assert not [line for line in host if f":{port} " in line and f"pid={os.getpid()}," in line], host
    finally:
        network.close()


UNPRIVILEGED = """
import socket, subprocess, sys
sys.path.insert(0, sys.argv[1])
from rlark_sandbox.podnet import PodNetwork
network = PodNetwork("/tmp/podnet-unprivileged").open()
assert network.isolated, network.problem
address = network.address(5)
server = network.socket()
server.bind(("0.0.0.0", 0)); server.listen(); port = server.getsockname()[1]
outside = socket.socket()
try:
    outside.connect((address, port)); print("host reached it")
except ConnectionRefusedError:
    pass
inside = network.socket(); inside.connect((address, port))
found = subprocess.run([*network.enter(), "sh", "-c", f"id -u; ss -ltnH | grep -c :{port}"], capture_output=True,
                       text=True, timeout=20).stdout.split()
network.close()
print("ok", *found)
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="runs a real second user")
def test_another_user_gets_a_pod_network_in_an_unprivileged_user_namespace():
    """A bastion user's sandbox (uid 65534 here): the same isolation without root, the user root only inside its
    user namespace (as in a container)."""
    root = str(Path(__file__).resolve().parents[2])
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable   # one that user can run in there
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-I", "-c",
                           UNPRIVILEGED, root], capture_output=True, text=True, timeout=60, cwd="/tmp")
    if "no unprivileged user namespace" in done.stderr:
        pytest.skip(done.stderr.strip().splitlines()[-1])
    assert done.stdout.split() == ["ok", "0", "1"], done.stdout + done.stderr     # root inside, as in a container


def test_without_namespaces_pods_stay_on_the_hosts_loopback_and_it_says_so(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    network = PodNetwork("/tmp/podnet-test").open()
    assert not network.isolated and network.enter() == ()
    assert network.problem.startswith("no nsenter/unshare on this host") and "guarded only by Ray's token" in network.problem
    with network.socket() as sock:
        sock.bind((network.address(0), 0))
