"""`rlark bundle JOB [-o FILE.tar.gz | -]`: everything a post-mortem needs of one Job, masked, in one archive
(raydash/bundle.py reads and writes it, telemetry/bundle.py lays it out). Reads only and writes a local file, so
`--readonly` allows it; `rlark --bundle FILE` opens the TUI on it offline."""

from __future__ import annotations

import argparse
import os
import time

from rlark_tui.cluster import ClusterAccess
from rlark_tui.errors import UsageError
from rlark_tui.local.fsutil import STANDARD_STREAMS, refuse_terminal, said_beside
from rlark_tui.raydash.bundle import default_path, write_bundle
from rlark_tui.telemetry.bundle import LOG_BUDGET, TOTAL_BUDGET, summary


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "bundle", parents=parents, help="a post-mortem archive of a Job, masked: objects, logs, Ray, diagnosis",
        description="Writes one .tar.gz (0600) with the Job as `get -o yaml` shows it, its Tasks and Pod CRs, each "
                    "member Pod with its events, every container's log, current and previous (each whole up to "
                    "--log-budget, or its equal part of --total-budget when that is smaller; past it its first "
                    "and last halves, the manifest says how much was left out), "
                    "Ray's actors, workers and nodes and each dead worker's stderr, the diagnosis, the metric "
                    "series and the newest run-check record, and manifest.json with the size and sha256 of every "
                    "member. No member holds a secret value: the Job's env, the Secrets it references and the "
                    "Ray token are masked everywhere. Open it offline with `rlark --bundle FILE`.")
    parser.add_argument("job", metavar="JOB", help="Job name")
    parser.add_argument("-o", "--output", metavar="FILE.tar.gz",
                        help="where to write it; - is stdout, not a terminal (default: "
                             "<job>-bundle-<time>.tar.gz here)")
    parser.add_argument("--log-budget", metavar="MIB", type=int, default=LOG_BUDGET // 2**20,
                        help=f"MiB of each container log kept whole (default {LOG_BUDGET // 2**20})")
    parser.add_argument("--total-budget", metavar="MIB", type=int, default=TOTAL_BUDGET // 2**20,
                        help=f"MiB of all the container logs, shared equally (default {TOTAL_BUDGET // 2**20})")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rlark_tui.local.config import state_dir

    if args.log_budget < 1 or args.total_budget < 1:
        raise UsageError("--log-budget and --total-budget must be at least 1 (MiB)")
    now = time.time()
    path = args.output or default_path(args.job, now)
    refuse_terminal(path)  # `-o -` on a terminal: said before anything is read, as tar says it
    access = ClusterAccess.from_args(args)
    try:
        manifest = write_bundle(access, args.job, path, state_dir(), args.log_budget * 2**20, now,
                                args.total_budget * 2**20)
    finally:
        access.close()
    # the archive itself on stdout (-o -, -o /dev/stdout): its summary on stderr, or it is trailing garbage in the
    # archive; a stream's size is not known
    size = None if str(path) in STANDARD_STREAMS else os.path.getsize(path)
    print(summary(manifest, path, size), file=said_beside(path))
    return 0
