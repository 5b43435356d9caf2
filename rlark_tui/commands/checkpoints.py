"""`rlark checkpoints JOB [-o json]`: every `global_step_<N>` where the Job's resolved config saves them
(rlinf-runtime.md §3.1), with size, time and whether it is complete (§3.4 step 1), the latest complete one marked.
Read with the fixed read-only `list-files` in the Header Pod (so `--readonly` allows it)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from rlark_tui.checks import logscan
from rlark_tui.checks.probe import parse_listing
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import ApiError, Unreachable
from rlark_tui.cluster.logmerge import split_raw
from rlark_tui.cluster.metrics import Header, find_header
from rlark_tui.cluster.output import table
from rlark_tui.cluster.podexec import run_fixed
from rlark_tui.errors import RlarkError
from rlark_tui.model.storage import human_size
from rlark_tui.telemetry.checkpoints import Location, checkpoints, latest_complete, location, to_json

CONFIG_LINES = 20_000
"""How far into the Header log the resolved config is looked for (RLinf prints it at start-up)."""


class CheckpointsUnavailable(RlarkError):
    """The Job's checkpoints cannot be listed: no Header Pod, no config in its log, no location in the config."""


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


def resolved_config(access, header: Header) -> dict:
    """The resolved config RLinf printed at the start of the Header Pod's log (read from the start, at most
    CONFIG_LINES lines, and no further than the config's end)."""
    lines: list[str] = []
    try:
        stream = access.pod_log(header.cluster, header.pod, timestamps=True, read_timeout=30)
        try:
            for raw in stream:
                lines.append(split_raw(raw)[2])
                if lines[-1].rstrip() == "}" and logscan.resolved_config(lines) is not None:
                    break
                if len(lines) >= CONFIG_LINES:
                    break
        finally:
            stream.close()
    except (ApiError, Unreachable) as exc:
        raise CheckpointsUnavailable(f"checkpoints: the Header log of {header.job}: {exc}") from exc
    block = logscan.resolved_config(lines)
    if block is None:
        raise CheckpointsUnavailable(f"checkpoints: the Header log of {header.job} ({header.pod}) has no resolved "
                                     f"RLinf config in its first {len(lines)} lines, so no checkpoint location")
    return block.config


def listing(access, header: Header, where: Location) -> list[tuple[str, int, float]]:
    result = run_fixed(access, header.cluster, header.pod, "list-files", where.path)
    if result.exit_code is None and not result.truncated:
        raise CheckpointsUnavailable(f"checkpoints: listing {where.path} in Pod {header.pod} did not finish in time")
    return [(f.path, f.size, f.mtime.timestamp()) for f in parse_listing(result.stdout)]


def run(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    try:
        header = find_header(access, args.job)
        where = location(resolved_config(access, header))
        if where is None:
            raise CheckpointsUnavailable(f"checkpoints: the resolved config of {args.job} names no checkpoint "
                                         "location (runner.logger.log_path and experiment_name, or "
                                         "runner.output_dir and runner.experiment_name)")
        found = checkpoints(where, listing(access, header, where))
    finally:
        access.close()
    if args.output == "json":
        print(json.dumps(to_json(args.job, where, found)))
        return 0
    print(f"location: {where.path} ({where.family}, in Pod {header.pod})")
    if not found:
        print("no checkpoints yet")
        return 0
    latest = latest_complete(found)
    rows = [[c.name, str(c.step), human_size(c.bytes),
             datetime.fromtimestamp(c.at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
             ("complete" + (" (latest)" if c is latest else "")) if c.complete
             else "incomplete: missing " + ", ".join(c.missing)] for c in found]
    print(table(["NAME", "STEP", "SIZE", "TIME", "STATE"], rows))
    return 0
