"""A tunnel's listener on 127.0.0.1 is any local user's to connect to (issue 33, a sixth round, as a second local
user): a connection that sends no request head was held for ever, so thousands of them took every file descriptor
of the operator's rlark (the TUI's cluster connections with them). It is closed after the tunnel's head timeout,
and past MAX_WAITING such connections a new one is closed at once."""

from __future__ import annotations

import select
import socket

from rlark_tui.cluster.tunnel import MAX_WAITING, Tunnel, Upstream

NOWHERE = Upstream(host="127.0.0.1", port=9, prefix="", tls=None)


def _closed(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


def test_a_connection_that_sends_no_request_is_closed_after_the_head_timeout():
    tunnel = Tunnel(NOWHERE, head_seconds=0.05).start()
    try:
        with socket.create_connection(("127.0.0.1", tunnel.local_port)) as silent:
            assert _closed(silent, 10)
    finally:
        tunnel.stop()


def test_past_the_bound_of_waiting_connections_a_new_one_is_closed_at_once():
    tunnel = Tunnel(NOWHERE, head_seconds=60).start()
    waiting = [socket.create_connection(("127.0.0.1", tunnel.local_port)) for _ in range(MAX_WAITING)]
    try:
        with socket.create_connection(("127.0.0.1", tunnel.local_port)) as extra:
            assert _closed(extra, 10)
        readable, _, _ = select.select(waiting, [], [], 0)
        assert readable == []  # the first MAX_WAITING still wait for their request
    finally:
        tunnel.stop()
        for sock in waiting:
            sock.close()
