"""`rlark diagnose JOB [-o text|json]`: the run's first failure, not the last (raydash/diagnose.py reads and keeps
the facts, telemetry/diagnosis.py judges them). Reads only, so `--readonly` allows it."""

from __future__ import annotations

import argparse
import json
import sys

from rlark_tui.cluster import ClusterAccess
from rlark_tui.raydash.diagnose import diagnose
from rlark_tui.telemetry.diagnosis import render, to_json
from rlark_tui.text.sinks import one_line


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "diagnose", parents=parents, help="the run's first failure: which worker, of what, with its own stderr",
        description="One timeline, ordered by time, from every Pod's current and previous container (exit code, "
                    "signal, OOMKilled), Ray's actors and workers (death cause, exit type and detail, the dead "
                    "worker's stderr from Ray's log API, or as Ray forwarded it into the Header log) and the Header "
                    "log's crash chain; the first failure named "
                    "with its worker (ActorGroup:1), Pod, node, time and cause (signal, host-oom, cuda-oom, nccl, "
                    "checkpoint, python, image, schedule), with up to 20 masked lines of its stderr. The evidence "
                    "is kept (0600, masked, in the state dir) when first seen, so the answer stands after the Pods "
                    "restart or the Job is stopped. JSON: {job, first_failure: {worker, pod, node, at, cause, "
                    "summary, evidence} | null, timeline: [{at, source, worker, what}]}.")
    parser.add_argument("job", metavar="JOB", help="Job name")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rlark_tui.local.config import state_dir

    access = ClusterAccess.from_args(args)
    try:
        found = diagnose(access, args.job, state_dir())
    finally:
        access.close()
    for note in found.notes:  # each quotes what failed: Ray's message, a Pod's name
        print(f"note: {one_line(note)}", file=sys.stderr)
    if found.kept:
        print("note: the first failure is from evidence kept when it was first seen", file=sys.stderr)
    print(json.dumps(to_json(found.diagnosis)) if args.output == "json" else render(found.diagnosis))
    return 0
