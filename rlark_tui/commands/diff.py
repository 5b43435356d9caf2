"""`rlark diff JOB_A JOB_B [--side-by-side]`: what changed between two runs, per role, secrets masked.

Owns reading both Jobs and the exit codes (as `diff`: 0 same, 1 different, 2 trouble); the comparison is
jobspec/jobdiff.py.
"""

from __future__ import annotations

import argparse
import shutil

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.errors import RlarkError
from rlark_tui.jobspec.jobdiff import diff_jobs, render_side_by_side, render_unified

EXIT_CODES = """exit codes (as diff):
  0  the two Jobs are the same in everything compared
  1  they differ (the differences are printed)
  2  trouble: a Job does not exist, the control plane is unreachable, or a bad flag"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "diff", parents=parents, help="show what changed between two jobs",
        description="Compare two Jobs per role: roles, images, selectors, replicas, env (secrets as ***), "
                    "scripts, resources, mounts, and the launch-record fields. Leaves out status, metadata, "
                    "rlark's hashes and names derived from the Job name (claim names, pvcStorageMap keys).",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job_a", metavar="JOB_A")
    parser.add_argument("job_b", metavar="JOB_B")
    parser.add_argument("-y", "--side-by-side", action="store_true", help="two columns instead of a unified diff")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        access = ClusterAccess.from_args(args)
        a, b = access.get(JOBS, args.job_a), access.get(JOBS, args.job_b)
    except RlarkError as exc:
        exc.exit_code = 2
        raise
    changes = diff_jobs(a, b)
    if args.side_by_side:
        print(render_side_by_side(changes, args.job_a, args.job_b, shutil.get_terminal_size().columns), end="")
    else:
        print(render_unified(changes, args.job_a, args.job_b), end="")
    return 1 if changes else 0
