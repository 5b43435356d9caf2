"""`rlark stacks JOB [--role R] [--all-threads] [-o text|json]`: where every live Ray worker of a Job is, grouped
by main-thread frames, the odd ranks named with the frame where they differ (raydash/stacks.py takes them: Ray's
`/worker/traceback` with profiling on, else the fixed read-only `py-spy-dump` in the Pods, so `--readonly` allows
it). What it prints is cluster text made safe there: cleaned of escape sequences, the Job's secret values masked."""

from __future__ import annotations

import argparse
import json

from rlark_tui.cluster import ClusterAccess
from rlark_tui.raydash.stacks import take
from rlark_tui.telemetry.stacks import render, to_json


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "stacks", parents=parents, help="every live Ray worker's Python stack, grouped; the odd ranks named",
        description="The stack of every ALIVE actor of the Job's Ray cluster (Ray's State API), from Ray's "
                    "/worker/traceback when the head runs with RAY_DASHBOARD_ENABLE_PROFILING=1, else py-spy dump "
                    "in each worker's Pod (needs py-spy in the image and ptrace rights: SYS_PTRACE). Ranks whose "
                    "main-thread frames match (function and file) form a group, largest first; each rank outside "
                    "the largest group of its class is named with the frame where it differs. JSON: {job, source, "
                    "groups: [{count, class, frames, workers: [{name, pid, pod, node}]}], outliers: [{name, "
                    "frame}], errors: [{pod, reason}]}. Stack text is cleaned of escape sequences and the Job's secret "
                    "values are masked.")
    parser.add_argument("job", metavar="JOB", help="Job name")
    parser.add_argument("--role", metavar="R", help="only the workers in this role's Pods")
    parser.add_argument("--all-threads", action="store_true", help="group and show every thread, not only the main one")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    try:
        found = take(access, access.job(args.job), role=args.role, all_threads=args.all_threads)
    finally:
        access.close()
    print(json.dumps(to_json(found)) if args.output == "json" else render(found))
    return 0
