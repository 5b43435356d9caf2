"""`rlark sandbox`: serve the embedded RLark sandbox in the foreground until SIGTERM/SIGINT.
Prints exactly one line `ready kubeconfig=<path> gateway=<url> server=<url>` once it serves (server: the
mutual-TLS rlark-server port). Exit 0 when SIGTERM or SIGHUP stopped it, 130 on Ctrl-C (SIGINT), as a shell says
an interrupted command ended.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from rlark_tui.errors import UsageError

SANDBOX_EXTRA = ("aiohttp", "ray")
"""The modules the `[sandbox]` extra brings (the console core never imports them)."""


def require_sandbox_extra(command: str) -> None:
    """A usage error naming the install command when the `[sandbox]` extra is not installed."""
    missing = [name for name in SANDBOX_EXTRA if not _installed(name)]
    if missing:
        raise UsageError(f"rlark {command} needs the sandbox extra ({', '.join(missing)} not installed): "
                         "pip install 'rlark-tui[sandbox]'")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "sandbox", parents=parents,
        help="serve a local RLark sandbox (for trying and testing; real use points at an RLark control plane)")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (0 = the last one or any free)")
    parser.add_argument("--server-port", type=int, default=0,
                        help="rlark-server's mutual-TLS port on 127.0.0.1 (0 = the last one or any free; the platform "
                             "uses 8443)")
    parser.add_argument("--state-dir", type=Path, default=None,
                        help="where objects, logs, certificates and the kubeconfig live (default: user state dir)")
    parser.add_argument("--seed", default="demo", metavar="demo|none|scale:J:P",
                        help="objects for an empty state dir (default: demo)")
    parser.add_argument("--no-agent", dest="agent", action="store_false",
                        help="serve the objects only: no agent moves Jobs or starts Ray (for scale seeds, benchmarks)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for flag, port in (("--port", args.port), ("--server-port", args.server_port)):
        if not 0 <= port <= 65535:
            raise UsageError(f"{flag} must be 0..65535")
    require_sandbox_extra("sandbox")
    from rlark_sandbox import main_foreground
    from rlark_sandbox.seed import parse
    parse(args.seed)
    return main_foreground(args.state_dir, args.port, args.seed, agent=args.agent, server_port=args.server_port)
