"""`rlark clone JOB [--name N] [-o draft] [--file FILE]`: the draft of a copy of a Job, for job-as-code.

Owns reading the Job and the other Job names, and writing the draft; rebuilding it is jobspec/clone.py.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.errors import UsageError
from rlark_tui.jobspec.clone import clone_of
from rlark_tui.jobspec.draft import draft_to_mapping, dump_draft, dump_yaml
from rlark_tui.local.fsutil import on_terminal, write_private
from rlark_tui.text.redact import PLACEHOLDER, redact_text, with_placeholders

EXIT_CODES = """exit codes:
  0  the draft was written
  1  the Job does not exist, or an API / connection error
  2  usage error"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "clone", parents=parents, help="write the draft of a copy of a job",
        description="Rebuild a Job as a job draft named <JOB>-copy (or the next free name), with a new run id and "
                    "an output prefix of its own, so the copy never overwrites the original's checkpoints. Edit "
                    "it, then `rlark submit -f` it. What the Job does not say (a Job made outside rlark) is "
                    "listed on stderr.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", metavar="JOB")
    parser.add_argument("--name", metavar="NAME", help="the copy's name (default: <JOB>-copy, or the next free one)")
    parser.add_argument("-o", "--output", choices=("draft",), default="draft", help="what to write (a job draft)")
    parser.add_argument("--file", metavar="FILE",
                        help="write the draft to FILE (mode 0600, secret values kept so it can be submitted); "
                             f"on stdout secret-looking values are {PLACEHOLDER!r}, which submit refuses")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.file and on_terminal(args.file):  # `--file -`: the secret values kept would stay in the scrollback
        raise UsageError(f"--file {args.file} keeps secret values and is a terminal: leave --file out to print the "
                         "draft with them masked, or name a file")
    access = ClusterAccess.from_args(args)
    job = access.get(JOBS, args.job)
    taken = [str((j.get("metadata") or {}).get("name", "")) for j in access.list(JOBS).items]
    recovered = clone_of(job, taken, datetime.now(UTC), name=args.name)
    for note in recovered.notes:
        print(f"note: {redact_text(note)}", file=sys.stderr)
    if args.file:
        write_private(args.file, dump_draft(recovered.draft))
        print(f"draft of {recovered.draft.name} written to {args.file}", file=sys.stderr)
    else:
        shown = dump_yaml(with_placeholders(draft_to_mapping(recovered.draft), related=access.job_tasks(args.job)))
        sys.stdout.write(shown)
        if PLACEHOLDER in shown:
            print(f"note: secret values are shown as {PLACEHOLDER!r}; put the real ones in before submitting, "
                  "or use --file FILE to keep them", file=sys.stderr)
    return 0
