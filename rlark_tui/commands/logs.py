"""`rlark logs JOB`: the `main` container logs of a Job's Pods, merged with `[role/pod]` prefixes, or followed.

Owns the flags and printing; reading, merging and resuming live in cluster.logs and cluster.logmerge.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import threading

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.logmerge import LogLine, parse_since
from rlark_tui.cluster.logs import JobLogs, Notice, resolve_targets
from rlark_tui.cluster.secrets import LogSecrets
from rlark_tui.errors import UsageError
from rlark_tui.local.terminal import no_color
from rlark_tui.text.podterminal import PodOutput
from rlark_tui.text.redact import LineRedactor, redact_text, secret_values
from rlark_tui.text.sanitize import clean_log
from rlark_tui.text.sinks import one_line

EXIT_CODES = """exit codes:
  0    printed (or, with -f, every followed Pod is gone)
  1    the Job does not exist, an API / connection error, or no source could give any logs
  2    usage error (bad flag, unknown role or Pod)
  130  interrupted (Ctrl-C)

With -f a dropped stream prints "-- stream interrupted: <why>; reconnecting" on stderr and resumes
where it stopped: no line is repeated or lost (lines are matched by timestamp and count, not content)."""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "logs", parents=parents, help="print or follow a job's logs",
        description="Logs of the `main` container of a Job's Pods, from the data-plane context of each "
                    "cluster, or from the gateway (last 1000 lines, no follow) when none is configured.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", metavar="JOB")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--role", metavar="ROLE", help="only this role (task name or platform role)")
    who.add_argument("--pod", metavar="POD", help="only this Pod (e.g. demo-ppo-actor-0)")
    parser.add_argument("--tail", metavar="N", type=int, default=None,
                        help="last N lines per Pod (default: all; -f defaults to 1000)")
    parser.add_argument("-f", "--follow", action="store_true", help="keep streaming new lines")
    parser.add_argument("-p", "--previous", action="store_true", help="the previous container instance")
    parser.add_argument("--timestamps", action="store_true", help="show each line's timestamp")
    parser.add_argument("--since", metavar="DURATION", help="only lines newer than 30s, 5m, 1h ...")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="say on stderr which Secrets the Job references could not be read (their values are "
                             "then masked only where they look like secrets)")
    parser.add_argument("--raw", action="store_true",
                        help="print lines as the Pod wrote them, escape sequences included (default: only SGR "
                             "colours, and only on a terminal; secrets are masked either way; on a terminal, no "
                             "clipboard, title or notification write)")
    parser.set_defaults(handler=run, cleans_own_output=True)


def run(args: argparse.Namespace) -> int:
    if args.previous and args.follow:
        raise UsageError("--previous cannot be combined with -f (a previous instance has ended)")
    if args.tail is not None and args.tail < 0:
        raise UsageError("--tail must be 0 or more")
    since = parse_since(args.since) if args.since else None
    tail = args.tail if args.tail is not None else (1000 if args.follow else None)
    access = ClusterAccess.from_args(args)
    job = access.get(JOBS, args.job)
    targets = resolve_targets(access, args.job, args.role, args.pod)
    prefix = args.pod is None
    out_lock = threading.Lock()
    redact = LineRedactor(secret_values(job))
    terminal = sys.stdout.isatty()
    keep_sgr = terminal and not no_color(args)
    # --raw on a terminal: what is printed passes one PodOutput, as an exec's output does (no clipboard, title or
    # notification write of the Pod's; one filter for every line, which the terminal reads as one stream)
    raw_output = PodOutput() if args.raw and terminal else None

    def show(item: LogLine, visible: str, masked: str) -> None:
        """Print a line whose text without any escape sequence is `visible`, `masked` once redacted: the secrets are
        looked for in the text as a terminal shows it (a Pod's `hunter2-ESC[0msecret` is `hunter2-secret` there),
        so a line where one is found prints as `masked`, its sequences gone; any other with what it may keep (SGR
        colours on a terminal, everything with --raw, whose sequences may hold text the terminal never shows)."""
        if masked != visible:
            text = masked
        elif args.raw:
            text = redact_text(redact.known.mask(item.text))
        else:
            text = clean_log(item.text, keep_sgr) if keep_sgr and visible != item.text else visible
        shown = dataclasses.replace(item, text=text).render(prefix, args.timestamps) + "\n"
        print(raw_output.feed_text(shown) if raw_output is not None else shown, end="", flush=True)

    def emit(item: LogLine | Notice) -> None:
        with out_lock:
            if isinstance(item, Notice):
                print(one_line(item.text), file=sys.stderr, flush=True)
            else:
                visible = clean_log(item.text, keep_sgr=False)
                show(item, visible, redact(visible, item.source))

    # the values of the Secrets the Job's Pods reference, read where each runs before any of its lines is shown
    masking = LogSecrets(access, job, redact.add_known,
                         (lambda text: emit(Notice(f"-- {text}"))) if args.verbose else None)
    masking.prepare(targets)
    if not targets:
        emit(Notice(f"-- job {args.job}: No Pod details yet — waiting for task sync"))
        if not args.follow:
            return 0
    logs = JobLogs(access, args.job, targets, tail=tail, previous=args.previous, since_seconds=since,
                   role=args.role, pod=args.pod, before_read=masking.before_read)
    try:
        lines, notices = logs.backlog()
        for notice in notices:
            emit(notice)
        # the backlog as a whole: a --tail that starts inside a private key masks the key lines before its END
        visible = [clean_log(line.text, keep_sgr=False) for line in lines]
        for line, text, masked in zip(lines, visible, redact.backlog(list(zip((line.source for line in lines),
                                                                                 visible)))):
            show(line, text, masked)
        if not args.follow:
            return 1 if targets and len(notices) == len(targets) and not lines else 0
        try:
            logs.follow(emit, emit)
        except KeyboardInterrupt:
            logs.close()
            return 130
        return 0
    finally:
        if raw_output is not None:  # the modes the Pod's lines set, put back as an exec's end does
            with contextlib.suppress(OSError):
                print(raw_output.end().decode(), end="", flush=True)
