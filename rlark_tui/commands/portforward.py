"""`rlark port-forward JOB ray|tensorboard|PORT`: a local HTTP tunnel to a Job's web port, until Ctrl-C.

Owns choosing the upstream (the Ray dashboard, the gateway's TensorBoard route) and printing the URL; the
forwarder is cluster.tunnel, the read-only method rule actions.Actions.
"""

from __future__ import annotations

import argparse
import asyncio

from rlark_tui.actions import Actions
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import Unreachable
from rlark_tui.cluster.http import Http, seg
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.tunnel import Tunnel, Upstream
from rlark_tui.errors import UsageError
from rlark_tui.model.views import Job

EXIT_CODES = """exit codes:
  0    stopped with Ctrl-C
  1    no such Job, no route to that port (see `rlark config`), the local port is taken
  2    usage error"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "port-forward", parents=parents, help="open a local HTTP tunnel to a job's Ray dashboard or TensorBoard",
        description="Serve a Job's web port on 127.0.0.1 with rlark's credentials: `ray` (the Header Pod's Ray "
                    "dashboard, 8265), `tensorboard` (the gateway's TensorBoard route of the Header Task) or "
                    "a port number. HTTP only (requests, streaming answers, WebSocket upgrades). The printed URL "
                    "carries a random token; requests without it are refused. --readonly passes GET and HEAD only.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", metavar="JOB")
    parser.add_argument("target", metavar="ray|tensorboard|PORT")
    parser.add_argument("--local-port", metavar="N", type=int, default=0, help="local port (default: a free one)")
    parser.set_defaults(handler=run)


def upstream_http(access: ClusterAccess, job: Job, target: str) -> Http:
    """The Http a tunnel to `target` of `job` relays to; one line when there is no route."""
    head = job.head_task
    if head is None:
        raise UsageError(f"job {job.name} has no Header role, so no Header Pod to forward to")
    if target == "ray" or target == "8265":
        dashboard = access.ray_dashboard(job)
        if dashboard is None:
            raise Unreachable(f"no route to the Ray dashboard of {job.name} — see `rlark config`", "config")
        return dashboard.http
    if target == "tensorboard":
        gateway = access.gateway_http()
        if gateway is None:
            raise Unreachable("TensorBoard goes through the gateway, and none is configured — see `rlark config`",
                              "config")
        return gateway.sibling(f"{gateway.base}/api/v1/rlinf.io/v1alpha1/tasks/{seg(job.head_task_name)}/tensorboard",
                               f"TensorBoard of {job.name} (gateway)")
    if target.isdigit():
        raise Unreachable(f"port {target} of a Pod is reached through rlark-server's task proxy, which this "
                          "connection has not got — see `rlark config`", "config")
    raise UsageError(f"unknown target {target!r}: use ray, tensorboard or a port number")


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.local_port <= 65535:
        raise UsageError("--local-port must be 0..65535")
    access = ClusterAccess.from_args(args)
    methods = Actions(access, readonly=bool(getattr(args, "readonly", False))).tunnel_methods()
    job = Job(access.get(JOBS, args.job))
    tunnel = Tunnel(Upstream.of(upstream_http(access, job, args.target)), local_port=args.local_port,
                    methods=methods, name=f"{job.name} {args.target}")
    try:
        asyncio.run(_serve(tunnel))
    except KeyboardInterrupt:
        pass
    return 0


async def _serve(tunnel: Tunnel) -> None:
    try:
        await tunnel.listen()
    except OSError as exc:
        raise Unreachable(f"cannot listen on 127.0.0.1:{tunnel.local_port}: {exc.strerror or exc}", "other") \
            from None
    read_only = " (read-only: GET and HEAD only)" if tunnel.methods is not None else ""
    print(f"Forwarding {tunnel.name}{read_only} at {tunnel.url}", flush=True)
    print("Only this URL (with its token) is served. Ctrl-C to stop.", flush=True)
    await tunnel.serve_forever()
