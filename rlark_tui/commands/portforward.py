"""`rlark port-forward JOB ray|tensorboard|PORT`: a local HTTP tunnel to a Job's web port, until Ctrl-C.

Owns the flags and printing the URL; the upstream and the forwarder are cluster.tunnel, the read-only method
rule actions.Actions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.errors import Unreachable
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.tunnel import Tunnel, job_tunnel
from rlark_tui.errors import UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.model.objects import Job
from rlark_tui.text.sinks import one_line

EXIT_CODES = """exit codes:
  1    no such Job, no route to that port (see `rlark config`), the local port is taken
  2    usage error
  130  stopped with Ctrl-C"""


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


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.local_port <= 65535:
        raise UsageError("--local-port must be 0..65535")
    access = ClusterAccess.from_args(args)
    methods = Actions(access, readonly=bool(getattr(args, "readonly", False))).tunnel_methods()
    job = Job(access.get(JOBS, args.job))
    tunnel = job_tunnel(access, job, args.target, local_port=args.local_port, methods=methods,
                        name=one_line(f"{job.name} {args.target}"))  # the name as answered: a line break forged a URL line
    try:
        from rlark_tui.local.crash import run_async
        interrupted = run_async(_serve(tunnel))
    except KeyboardInterrupt:
        interrupted = True
    return 130 if interrupted else 0  # as a shell says a command Ctrl-C ended


async def _serve(tunnel: Tunnel) -> bool:
    """Serve until Ctrl-C (True) or the tunnel ends (False)."""
    try:
        await tunnel.listen()
    except OSError as exc:
        raise Unreachable(f"cannot listen on 127.0.0.1:{tunnel.local_port}: {exc.strerror or exc}", "other") \
            from None
    # Ctrl-C through the loop's own signal handling (a byte on its wakeup pipe), which then closes every open
    # connection; not where SIGINT came ignored (a script's background job), as Python itself leaves it
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    ctrl_c = signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    if ctrl_c:
        loop.add_signal_handler(signal.SIGINT, stop.set)
    try:
        read_only = " (read-only: GET and HEAD only)" if tunnel.methods is not None else ""
        print(f"Forwarding {tunnel.name}{read_only} at {tunnel.url}", flush=True)
        print("Only this URL (with its token) is served. Ctrl-C to stop.", flush=True)
        serving = asyncio.ensure_future(tunnel.serve_forever())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait([serving, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        await tunnel.aclose()
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        return stop.is_set()
    finally:
        if ctrl_c:
            loop.remove_signal_handler(signal.SIGINT)
