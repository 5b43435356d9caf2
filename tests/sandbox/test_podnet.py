"""The sandbox's Pod network: Pod addresses per sandbox, a namespace of its own whose listeners the host cannot
reach (root), and the plain fallback without the privilege."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from rlark_tui.sandbox.podnet import PodNetwork
from rlark_tui.sandbox.runner import PortBlocks


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
            assert f":{port} " not in subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout
    finally:
        network.close()


def test_without_the_privilege_pods_stay_on_the_hosts_loopback_and_it_says_so(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    network = PodNetwork("/tmp/podnet-test").open()
    assert not network.isolated and network.enter() == ()
    assert "guarded only by Ray's token" in network.problem
    with network.socket() as sock:
        sock.bind((network.address(0), 0))
