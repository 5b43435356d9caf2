"""`rlark checkpoints JOB [-o json]`: every `global_step_<N>` where the Job's resolved config saves them
(rlinf-runtime.md §3.1), with size, time and whether it is complete (§3.4 step 1), the latest complete one marked.
Read with the fixed read-only `list-files` in the Header Pod (so `--readonly` allows it)."""

from __future__ import annotations

import argparse
import json

from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.checkpoints import read_checkpoints
from rlark_tui.cluster.output import table
from rlark_tui.telemetry.checkpoints import TABLE_HEADERS, table_rows, to_json


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "checkpoints", parents=parents, help="a Job's RLinf checkpoints: size, time, complete or what is missing",
        description="Every global_step_<N> at the location the Job's resolved config gives (embodied: "
                    "<runner.logger.log_path>/<experiment_name>/checkpoints; reasoning: <runner.output_dir>/"
                    "<runner.experiment_name>/checkpoints), listed in the Header Pod with the fixed read-only "
                    "list-files. Complete means the files a load needs exist and are not empty (.distcp shards and "
                    ".metadata, full_weights.pt, Megatron's latest_checkpointed_iteration.txt, reasoning's "
                    "data/data.pt). JSON: {job, location, checkpoints: [{name, step, bytes, at, complete, missing}], "
                    "latest_complete}.")
    parser.add_argument("job", metavar="JOB", help="Job name")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    try:
        read = read_checkpoints(access, args.job)
    finally:
        access.close()
    if args.output == "json":
        print(json.dumps(to_json(args.job, read.where, list(read.found))))
        return 0
    print(f"location: {read.where.path} ({read.where.family}, {read.listed_in})")
    if not read.found:
        print("no checkpoints yet")
        return 0
    print(table(list(TABLE_HEADERS), table_rows(read.found)))
    return 0
