"""Sandbox copy of the platform's Ray cluster check: wait until N Ray nodes are alive, with a timeout.

Reads node states from the head's dashboard (State API, with the Pod's Ray token when Ray wants one) and prints
the platform's log lines; with `--head-registered HOST:PORT` it only tells a sandbox worker whether the head's Ray
node is up yet, and with `--node-registered HOST:PORT --node-ip IP` it waits until that worker's own node is
(the sandbox's nodes take turns to start, see pod_common.sh). A timeout says what it waited for and the last answer.
"""

import argparse
import json
import os
import sys
import time
import urllib.request

POLL_SECONDS = float(os.environ.get("RLARK_SANDBOX_CHECK_INTERVAL", "10"))


def nodes_url(address: str) -> str:
    return f"http://{address}/api/v0/nodes?limit=10000"


def read_nodes(address: str) -> tuple[list[dict], str]:
    """Ray nodes as the head's dashboard (`host:port`) reports them, and why none when it does not answer."""
    request = urllib.request.Request(nodes_url(address))
    token = os.environ.get("RAY_AUTH_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            nodes = json.load(response)["data"]["result"]["result"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [], f"{type(exc).__name__}: {exc}"
    return [node for node in nodes if isinstance(node, dict)], ""


def list_nodes(address: str) -> list[dict]:
    """Ray nodes as the head's dashboard (`host:port`) reports them; [] while it does not answer."""
    return read_nodes(address)[0]


def head_registered(address: str) -> bool:
    """Whether the head's own Ray node is registered and alive (the sandbox worker's readiness probe)."""
    return any(node.get("is_head_node") and node.get("state") == "ALIVE" for node in list_nodes(address))


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_node_registered(address: str, node_ip: str, pid: int | None, timeout: float) -> int:
    """Sandbox: until the head's dashboard lists this node (`node_ip`) ALIVE, its `ray start` (`pid`) ended, or
    `timeout` passed (then one line says what was waited for); 0 when registered."""
    deadline = time.monotonic() + timeout
    why = "no answer yet"
    while time.monotonic() < deadline:
        nodes, error = read_nodes(address)
        if any(node.get("node_ip") == node_ip and node.get("state") == "ALIVE" for node in nodes):
            return 0
        why = error or f"{len(nodes)} node(s) listed, none ALIVE at {node_ip}"
        if pid is not None and not running(pid):
            return 1
        time.sleep(1)
    print(f"Sandbox: this Ray node ({node_ip}) was not listed ALIVE by the head's State API "
          f"({nodes_url(address)}) within {describe(timeout)} ({why}); the next node starts meanwhile", flush=True)
    return 1


def describe(seconds: float) -> str:
    if seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} seconds"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--head-registered", metavar="HOST:DASHBOARD_PORT",
                        help="only answer (exit 0/1) whether the head node is registered")
    parser.add_argument("--node-registered", metavar="HOST:DASHBOARD_PORT",
                        help="wait (at most --timeout) until the head's dashboard lists --node-ip ALIVE")
    parser.add_argument("--node-ip")
    parser.add_argument("--pid", type=int, help="with --node-registered: stop waiting once this process ends")
    args = parser.parse_args()
    if args.head_registered:
        return 0 if head_registered(args.head_registered) else 1
    if args.node_registered:
        return wait_node_registered(args.node_registered, args.node_ip, args.pid, args.timeout)
    address = f"{os.environ.get('RLARK_NODE_IP', '127.0.0.1')}:{os.environ.get('RLARK_SANDBOX_DASHBOARD_PORT', '8265')}"
    print("Starting Ray cluster status check...", flush=True)
    deadline = time.monotonic() + args.timeout
    while True:
        nodes, error = read_nodes(address)
        total, alive = len(nodes), sum(1 for node in nodes if node.get("state") == "ALIVE")
        print(f"Found {total} total nodes, {alive} of which are alive.", flush=True)
        if alive >= args.nodes:
            print(f"Cluster is ready: {alive} nodes available (required: {args.nodes}).", flush=True)
            return 0
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            print(f"Error: Cluster did not become ready within {describe(args.timeout)} "
                  f"(required {args.nodes} nodes).", flush=True)
            print(f"Sandbox: waited for {args.nodes} ALIVE nodes in the head's State API ({nodes_url(address)}); "
                  f"last answer: {error or f'{alive} of {total} nodes alive'}", flush=True)
            return 1
        print(f"Current node count: {alive}", flush=True)
        print(f"Time remaining: {int(remaining)}s", flush=True)
        time.sleep(min(POLL_SECONDS, remaining))


if __name__ == "__main__":
    sys.exit(main())
