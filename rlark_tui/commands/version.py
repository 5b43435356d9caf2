"""`rlark version`: the client's version, the API versions the control plane serves, and whether the gateway
answers. Like `kubectl version`, the client line comes first and is printed even when the server is unreachable.
"""

from __future__ import annotations

import argparse
import platform

from rlark_tui.errors import RlarkError

RLARK_GROUP = "rlinf.io"
EXIT_CODES = """exit codes:
  0  the control plane answered (the gateway's state is reported, not judged)
  1  the control plane cannot be reached
  2  the kubeconfig cannot be used"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "version", parents=parents, help="client version, the control plane's API versions, gateway reachability",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(handler=run)


def client_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    import rlark_tui

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    return (f"rlark {rlark_tui.__version__} (python {platform.python_version()}, kubernetes client "
            f"{of('kubernetes')}, textual {of('textual')})")


def run(args: argparse.Namespace) -> int:
    print(f"Client:   {client_version()}", flush=True)
    from rlark_tui.cluster.access import ClusterAccess
    from rlark_tui.cluster.discovery import served_versions
    from rlark_tui.text.redact import redact_text
    from rlark_tui.text.sinks import one_line

    access = ClusterAccess.from_args(args)
    try:  # each line is one: the server's version and group names are its text (sinks.one_line)
        print(f"Server:   {one_line(redact_text(access.server))} (context {one_line(access.context)})")
        kubernetes = access.version().get("gitVersion") or "unknown"
        served = served_versions(access.http)
        print(f"Kubernetes API: {one_line(kubernetes)}")
        rlark = served.get(RLARK_GROUP)
        print(f"RLark API: {RLARK_GROUP}/" + (one_line(", ".join(rlark)) if rlark else "(not served: is this an "
                                                                                       "RLark control plane?)"))
        others = sorted(f"{group}/{v}" if group else v for group, versions in served.items()
                        if group != RLARK_GROUP for v in versions)
        print(f"Other APIs: {one_line(', '.join(others)) or '(none)'}")
        print(f"Gateway:  {one_line(_gateway(access, redact_text))}")
    finally:
        access.close()
    return 0


def _gateway(access, redact_text) -> str:
    if not access.gateway:
        return "not configured (see `rlark config`)"
    where = redact_text(access.gateway)
    try:
        body = access.gateway_clusters()
    except RlarkError as exc:
        return f"{where} unreachable: {exc}"
    data = body.get("data") if isinstance(body, dict) else None
    count = len(data) if isinstance(data, list) else 0
    return f"{where} reachable ({count} cluster(s) listed)"
