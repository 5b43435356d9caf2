"""`rlark check JOB`: run the six checks (waiting for pending rows to settle), print the record, save it.

Owns the flags, the wait loop, the record files and (`--save`) the summary on the Job through rlark_tui.flow.actions; evidence gathering is checks/gather.py, judging checks/.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rlark_tui.checks import HandOver, evaluate
from rlark_tui.checks.evaluate import carry_settled
from rlark_tui.checks.gather import gather
from rlark_tui.checks.records import save_record, write_record
from rlark_tui.checks.render import RENDERERS
from rlark_tui.cluster import ClusterAccess
from rlark_tui.cluster.errors import ApiError, NotFound, Unreachable
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.local.config import state_dir
from rlark_tui.model.check_summary import summary_of

POLL_SECONDS = 3.0


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "check", parents=parents, help="run check of a Job: six checks, pass / fail / pending, saved record",
        description="Check that a Job really runs (C1–C6). Exit 0 all pass, 1 any fail, 3 nothing failed but "
                    "something pending. Every run saves its record (markdown and JSON) under the state dir.")
    parser.add_argument("job", metavar="JOB", help="Job name")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="wait up to SECONDS for pending checks to settle (default 0: evaluate once)")
    parser.add_argument("--format", choices=("text", "md", "json"), default="text", help="output format")
    parser.add_argument("--output", metavar="FILE", help="also write the record (in --format) to FILE")
    parser.add_argument("--recorder", metavar="NAME", help="who made this record")
    parser.add_argument("--contact", action="append", default=[], metavar="TEXT",
                        help="contact for outputs, checkpoints or follow-up (repeatable)")
    parser.add_argument("--decision", choices=("continue", "stop", "keep"),
                        help="what happens next: continue running, stop, or keep for debugging")
    parser.add_argument("--notes", metavar="TEXT", help="free notes for the record")
    parser.add_argument("--retention", metavar="TEXT", help="where logs/outputs are kept and for how long")
    parser.add_argument("--link", action="append", default=[], metavar="URL", help="follow-up link (repeatable)")
    parser.add_argument("--cleaned-up", action="store_true",
                        help="record that temporary access and secrets used for the run were cleaned up")
    parser.add_argument("--save", action="store_true",
                        help="also write a short summary (time, recorder, results, decision) to the Job as annotation "
                             "rlark.io/check-summary, for the next shift (`rlark get jobs` CHECK); refused with "
                             "--readonly")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="record language (zh: the seed's words)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.wait < float("inf"):
        raise UsageError("--wait must be 0 or more seconds")
    if args.output and not Path(args.output).expanduser().parent.is_dir():
        raise UsageError(f"--output {args.output}: directory {Path(args.output).expanduser().parent} does not exist")
    hand_over = HandOver(recorder=args.recorder, contacts=tuple(args.contact), decision=args.decision,
                         notes=args.notes, retention=args.retention, links=tuple(args.link),
                         cleaned_up=args.cleaned_up)
    root = state_dir()
    access = ClusterAccess.from_args(args)
    try:
        actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
        if args.save:
            actions.guard(f"write the check summary to job {args.job}")
        report = _settle(access, args.job, args.wait, root, hand_over)
        text = RENDERERS[args.format](report, args.lang)
        try:
            print(f"record saved: {save_record(root, report, args.lang)}", file=sys.stderr)
            not_saved = None
        except RlarkError as exc:  # the check's answer is still given; the error line says the record is not kept
            not_saved = exc
        if args.save:
            print(actions.annotate_check(args.job, summary_of(report)), file=sys.stderr)
    finally:
        access.close()
    if args.output:
        write_record(Path(args.output), text, named=True)
        print(f"record written: {args.output}", file=sys.stderr)
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if not_saved is not None:
        raise not_saved
    return report.exit_code


def _settle(access: ClusterAccess, job: str, wait: float, root: Path, hand_over: HandOver):
    """Evaluate until no check is pending, one fails, or `wait` seconds have passed. Once a first evaluation
    worked, an API or connection error while waiting is reported and retried until the deadline."""
    deadline = time.monotonic() + wait
    report = None
    while True:
        try:
            report = carry_settled(report, evaluate(gather(access, job, root), hand_over))
        except (ApiError, Unreachable) as exc:
            left = deadline - time.monotonic()
            if report is None or isinstance(exc, NotFound) or left <= 0:
                raise
            print(f"rlark check: {exc}; retrying ({left:.0f} s left)", file=sys.stderr, flush=True)
            time.sleep(min(POLL_SECONDS, max(left, 0.1)))
            continue
        pending = [row.id for row in report.rows[:5] if row.result == "pending"]
        if not pending and report.rows[5].result == "pending":
            print("rlark check: checks 1–5 pass; check 6 needs --decision and --recorder", file=sys.stderr)
        failed = any(row.result == "fail" for row in report.rows)
        left = deadline - time.monotonic()
        if not pending or failed or left <= 0:
            return report
        print(f"rlark check: check(s) {', '.join(map(str, pending))} pending; waiting ({left:.0f} s left)",
              file=sys.stderr, flush=True)
        time.sleep(min(POLL_SECONDS, max(left, 0.1)))
