"""`rlark config`: show where rlark looks (config file, state dir, kubeconfig, rlark-server) and test every source.

Owns the report; the sources themselves are reached through ClusterAccess. Secrets are never shown.
"""

from __future__ import annotations

import argparse
import sys

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import ApiError, Request, Unreachable
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.server import ServerOptions
from rlark_tui.errors import UsageError
from rlark_tui.local.config import CONFIG_ENV, EXAMPLE, config_path, load_config, state_dir
from rlark_tui.model.objects import Job
from rlark_tui.text.redact import redact_text

EXIT_CODES = """exit codes:
  0  the control plane answered (other sources may still be missing; each is reported)
  1  the control plane cannot be reached or refused the request
  2  the config file or kubeconfig cannot be used"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "config", parents=parents, help="show the configuration and test each source",
        description="Print where each source comes from (config file, state dir, kubeconfig, rlark-server with "
                    "its address, certificate and CA, gateway), then test the control plane, each member "
                    "cluster's data plane (through rlark-server) and the gateway.",
        epilog=EXIT_CODES + "\n\nconfig file format:\n" + EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-check", action="store_true", help="only print, do not contact any source")
    parser.add_argument("--example", action="store_true",
                        help="print a commented example config file (e.g. rlark config --example > FILE)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.example:
        print(f"# Save as {config_path()} (or point ${CONFIG_ENV} at it); every key is optional.\n{EXAMPLE}", end="")
        return 0
    path = config_path()
    config = load_config(path)
    print(f"config file:  {path}" + ("" if config.exists else " (absent; optional)"))
    print(f"state dir:    {state_dir()}")
    try:
        options = ServerOptions.from_sources(args, config)
        access = ClusterAccess.open(getattr(args, "kubeconfig", None), getattr(args, "context", None), config,
                                    server_options=options)
    except UsageError as exc:  # why it exits 2 goes to stderr, as every usage error's line does
        print(f"kubeconfig:   {exc}", file=sys.stderr)
        return 2
    except Unreachable as exc:
        print(f"rlark-server: {exc}", file=sys.stderr)
        return 2
    if access.kubeconfig is None:
        print("kubeconfig:   none (server-only mode: the control plane through rlark-server)")
    else:
        paths = ", ".join(str(p) for p in access.kubeconfig.paths) or "in-cluster service account"
        print(f"kubeconfig:   {paths}")
        print(f"context:      {access.context}")
    print(f"control plane: {redact_text(access.server)}")
    endpoint = None if args.no_check and access.kubeconfig is not None and not options.complete \
        else access.server_endpoint()
    if endpoint is not None:
        print(f"rlark-server: {redact_text(endpoint.describe())}")
    else:
        print(f"rlark-server: {access.server_problem or 'not looked for (--no-check)'}")
    gateway = access.gateway_http()
    if gateway is not None:
        where = "config file" if config.gateway else "kubeconfig extension"
        trust = (f"CA {config.gateway_ca}" if config.gateway_ca else
                 "the control plane's TLS" if gateway.api_client is not None or (
                     gateway.ssl_context is not None and gateway.ssl_context is access.http.ssl_context)
                 else "system CAs")
        print(f"gateway:      {redact_text(access.gateway or '')}  [{where}; verified against {trust}]")
        for name in sorted(config.gateway_headers):
            print(f"  header {name}: ***" if config.gateway else
                  f"  header {name}: not sent (the config file's headers go only to the gateway it names)")
    else:
        print("gateway:      (not configured)")
    print(f"ray token:    {'set (hidden)' if config.ray_token else 'not set'}")
    for cluster, context in sorted(config.clusters.items()):
        print(f"  {cluster:<20} context {context}  [config file {config.path}]")
    for job_name, url in sorted(config.ray_urls.items()):
        print(f"ray dashboard {job_name}: {redact_text(url)}")
    if args.no_check:
        return 0
    print("checks:")
    ok = _check("control plane", access.server, lambda: _control(access))
    for cluster in access.member_clusters():
        plane = _plane_or_none(access, cluster)
        _check(f"data plane {cluster}", plane.base if plane else "no route", lambda c=cluster: _plane(access, c))
    if gateway is not None:
        _check("gateway", access.gateway or "", lambda: _gateway(access))
    if ok:
        for job in _ray_jobs(access):
            dashboard = access.ray_dashboard(job)
            if dashboard is not None:
                _check(f"ray {job.name}", dashboard.http.base, lambda d=dashboard: _ray_auth(d, config))
    return 0 if ok else 1


def _check(name: str, url: str, probe) -> bool:
    """One line per check: what a probe says quotes the server (its version, Ray's answer), sinks.one_line."""
    from rlark_tui.text.sinks import one_line

    try:
        detail = probe()
    except (ApiError, Unreachable, UsageError) as exc:
        print(f"  FAIL  {one_line(name)} ({one_line(redact_text(url))}): {one_line(exc)}")
        return False
    print(f"  ok    {one_line(name)} ({one_line(redact_text(url))}): {one_line(detail)}")
    return True


def _control(access: ClusterAccess) -> str:
    version = access.version().get("gitVersion", "?")
    jobs = len(access.list(JOBS, timeout=10).items)
    return f"version {version}, {jobs} job(s) visible"


def _plane_or_none(access: ClusterAccess, cluster: str):
    try:
        return access.data_plane(cluster)
    except Unreachable:
        return None


def _plane(access: ClusterAccess, cluster: str) -> str:
    plane = access.data_plane(cluster)
    if plane is None:
        raise Unreachable(access.server_problem or f"no way to the data plane of {cluster}", "config")
    body = plane.json("GET", "/api/v1/namespaces/rlark-system/pods", Request("list", "pods", source=plane.source),
                      timeout=10)
    items = body.get("items") if isinstance(body, dict) else None
    count = len(items) if isinstance(items, list) else 0
    return f"{count} pod(s) in rlark-system"


RAY_CHECKS = 5
"""Running Jobs with a Header whose Ray is asked whether it wants a token (the first few by name)."""


def _ray_jobs(access: ClusterAccess) -> list[Job]:
    try:
        jobs = [Job(raw) for raw in access.list(JOBS, timeout=10).items]
    except (ApiError, Unreachable):
        return []
    return sorted((j for j in jobs if j.phase == "Running" and j.head_task is not None),
                  key=lambda j: j.name)[:RAY_CHECKS]


def _ray_auth(dashboard, config) -> str:
    """Whether Ray wants a token (its public `/api/authentication_mode`), and where rlark gets it; never the token."""
    mode = dashboard.authentication_mode()
    if mode != "token":
        return f"Ray's token authentication is {mode or 'not offered by this Ray'}"
    where = "ray.token of the config file" if config.ray_token else "read from the Header Pod when needed"
    return f"Ray wants a token ({where}; never shown or stored)"


def _gateway(access: ClusterAccess) -> str:
    body = access.gateway_clusters()
    data = body.get("data") if isinstance(body, dict) else None
    return f"{len(data) if isinstance(data, list) else 0} cluster(s) listed"
