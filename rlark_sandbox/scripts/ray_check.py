"""Sandbox copy of the platform's Ray cluster check: wait until N Ray nodes are alive, with a timeout.

Reads node states from the head's dashboard (State API, with the Pod's Ray token when Ray wants one) and prints
the platform's log lines; with `--head-registered HOST:PORT` it only tells a sandbox worker whether the head's Ray
node is up yet.
"""

import argparse
import json
import os
import sys
import time
import urllib.request

POLL_SECONDS = float(os.environ.get("RLARK_SANDBOX_CHECK_INTERVAL", "10"))


def list_nodes(address: str) -> list[dict]:
    """Ray nodes as the head's dashboard (`host:port`) reports them; [] while it does not answer."""
    request = urllib.request.Request(f"http://{address}/api/v0/nodes?limit=10000")
    token = os.environ.get("RAY_AUTH_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            nodes = json.load(response)["data"]["result"]["result"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [node for node in nodes if isinstance(node, dict)]


def node_counts(address: str) -> tuple[int, int]:
    """(total, alive) Ray nodes."""
    nodes = list_nodes(address)
    return len(nodes), sum(1 for node in nodes if node.get("state") == "ALIVE")


def head_registered(address: str) -> bool:
    """Whether the head's own Ray node is registered and alive (the sandbox worker's readiness probe)."""
    return any(node.get("is_head_node") and node.get("state") == "ALIVE" for node in list_nodes(address))


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
    args = parser.parse_args()
    if args.head_registered:
        return 0 if head_registered(args.head_registered) else 1
    address = f"{os.environ.get('RLARK_NODE_IP', '127.0.0.1')}:{os.environ.get('RLARK_SANDBOX_DASHBOARD_PORT', '8265')}"
    print("Starting Ray cluster status check...", flush=True)
    deadline = time.monotonic() + args.timeout
    while True:
        total, alive = node_counts(address)
        print(f"Found {total} total nodes, {alive} of which are alive.", flush=True)
        if alive >= args.nodes:
            print(f"Cluster is ready: {alive} nodes available (required: {args.nodes}).", flush=True)
            return 0
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            print(f"Error: Cluster did not become ready within {describe(args.timeout)} "
                  f"(required {args.nodes} nodes).", flush=True)
            return 1
        print(f"Current node count: {alive}", flush=True)
        print(f"Time remaining: {int(remaining)}s", flush=True)
        time.sleep(min(POLL_SECONDS, remaining))


if __name__ == "__main__":
    sys.exit(main())
