"""`rlark exec` and `rlark cp`: a command or a shell in a Job's Pod (`main`), and files in and out of it by tar.

Owns the flags, choosing the Pod (the Header Pod unless --role / --pod / JOB:pod) and the local terminal side;
the exec itself is cluster.podexec, the read-only refusal actions.Actions.
"""

from __future__ import annotations

import argparse
import os
import sys

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.cluster.logs import resolve_targets
from rlark_tui.cluster.podexec import SHELL, ExecSession, data_plane_client, relay
from rlark_tui.errors import UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.local.fsutil import STANDARD_STREAMS, refuse_terminal, said_beside
from rlark_tui.model.logtarget import LogTarget
from rlark_tui.model.objects import Job
from rlark_tui.text.sinks import one_line

EXEC_EXIT = """exit codes:
  N    the command's own exit code (0 when it succeeded)
  1    refused (--readonly), the Job or Pod does not exist or is not running, the connection dropped, or the
       command's exit code is past 255, which no exit status holds (said in one line)
  2    usage error
  130  interrupted (Ctrl-C)"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "exec", parents=parents, help="run a command or a shell in a Job's Pod",
        description="Run COMMAND in the `main` container of a Job's Pod (the Header Pod unless --role or --pod "
                    "says otherwise), through the data plane's exec. With no command on a terminal: an "
                    "interactive shell (bash, else sh). Piped input is passed on; the exit code is the command's.",
        epilog=EXEC_EXIT, formatter_class=argparse.RawDescriptionHelpFormatter)
    _exec_flags(parser)
    parser.add_argument("job", metavar="JOB")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")
    parser.set_defaults(handler=run_exec)
    _register_cp(subparsers, parents)


CP_EXIT = """exit codes:
  0    copied
  1    refused (--readonly, an archive path escaping the destination), no such Job, Pod or path, connection
  2    usage error (neither or both sides in a Pod)"""


def _register_cp(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "cp", parents=parents, help="copy files and directories to or from a Job's Pod",
        description="Copy a file or directory between this machine and the `main` container of a Job's Pod "
                    "(tar over exec, like kubectl cp). One side is JOB:/path (the Header Pod) or JOB:POD:/path. "
                    "A DST of - writes the archive to stdout (as docker cp does; never to a terminal).",
        epilog=CP_EXIT, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", metavar="SRC")
    parser.add_argument("dst", metavar="DST")
    parser.add_argument("--max-size", type=int, default=None, metavar="BYTES",
                        help="stop a copy from a Pod whose archive, or the files it would write, pass this many bytes "
                             "(default 64 GiB)")
    parser.set_defaults(handler=run_cp)


def _exec_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--role", metavar="ROLE", help="a Pod of this role (task name or platform role)")
    who.add_argument("--pod", metavar="POD", help="this Pod (e.g. demo-ppo-rollout-0)")
    parser.add_argument("-i", "--stdin", action="store_true", help="pass stdin to the command")
    parser.add_argument("-t", "--tty", action="store_true", help="allocate a terminal (stdin must be one)")
    return parser


def _split_command(args: argparse.Namespace) -> list[str]:
    """The command. argparse drops a `--` right after JOB; flags after JOB stay in front of the command with
    their `--`, and are read here."""
    words = list(args.command)
    if not words or not words[0].startswith("-"):
        return words
    cut = words.index("--") if "--" in words else len(words)
    flags = _exec_flags(argparse.ArgumentParser(prog="rlark exec", add_help=False, exit_on_error=False))
    try:
        _, rest = flags.parse_known_args(words[:cut], namespace=args)
    except argparse.ArgumentError as exc:
        raise UsageError(str(exc)) from None
    if rest:
        raise UsageError(f"unexpected {' '.join(rest)!r}: put the command after --, e.g. rlark exec JOB -- ls")
    return words[cut + 1:]


def pick_pod(access: ClusterAccess, job_name: str, role: str | None = None, pod: str | None = None) -> LogTarget:
    """The Pod to exec in: the given Pod, else the first Pod of the given role, else of the Header role."""
    if role is None and pod is None:
        head = Job(access.get(JOBS, job_name)).head_task
        role = head.name if head else None
    targets = resolve_targets(access, job_name, role, pod)
    if not targets:
        raise UsageError(f"job {job_name} has no Pods" + (f" of role {role}" if role else "") + " yet")
    return targets[0]


def run_exec(args: argparse.Namespace) -> int:
    command = _split_command(args)
    access = ClusterAccess.from_args(args)
    Actions(access, readonly=bool(getattr(args, "readonly", False))).guard("run a command in a Pod (exec)")
    target = pick_pod(access, args.job, args.role, args.pod)
    stdin_fd = _fileno(sys.stdin)
    terminal = stdin_fd is not None and os.isatty(stdin_fd)
    tty = (args.tty or not command) and terminal
    if args.tty and not terminal:
        print("warning: stdin is not a terminal, so no terminal is allocated", file=sys.stderr)
    if not command and not terminal:
        command = ["sh"]
    stdin = stdin_fd is not None and (args.stdin or tty or not terminal)
    session = ExecSession.open(data_plane_client(access, target.cluster), target.pod, command or list(SHELL),
                               namespace=target.namespace, stdin=stdin, tty=tty,
                               source=f"data plane {target.cluster}")
    return relay(session, stdin_fd=stdin_fd if stdin else None, stdout_fd=sys.stdout.fileno(),
                 stderr_fd=sys.stderr.fileno(), tty=tty)


def _fileno(stream) -> int | None:
    """The stream's descriptor, or None when it has none (a closed or replaced stdin)."""
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def remote_spec(spec: str) -> tuple[str, str | None, str] | None:
    """(job, pod or None, path) of `JOB:/path` or `JOB:POD:/path`; None for a local path."""
    if ":" not in spec or spec.startswith(("/", ".", "~")):
        return None
    parts = spec.split(":", 2)
    if len(parts) == 3:
        return parts[0], parts[1] or None, parts[2]
    return parts[0], None, parts[1]


def run_cp(args: argparse.Namespace) -> int:
    from rlark_tui.cluster import podcopy
    src, dst = remote_spec(args.src), remote_spec(args.dst)
    remote = src if dst is None else dst if src is None else None
    if remote is None:
        raise UsageError("one side of rlark cp must be in a Pod (JOB:/path or JOB:POD:/path), the other here")
    if args.max_size is not None and args.max_size <= 0:
        raise UsageError("--max-size must be more than 0")
    if not remote[0] or not remote[2]:
        raise UsageError(f"{args.src if src else args.dst!r}: name a Job and a path, e.g. demo-ppo:/tmp/file")
    if src is not None:
        refuse_terminal(args.dst)  # `-` on a terminal: said before anything is read, as tar says it
    access = ClusterAccess.from_args(args)
    Actions(access, readonly=bool(getattr(args, "readonly", False))).guard("copy files to or from a Pod (cp)")
    target = pick_pod(access, remote[0], pod=remote[1])
    if src is not None:
        written = podcopy.download(access, target.cluster, target.pod, remote[2], args.dst, target.namespace,
                                   args.max_size or podcopy.MAX_ARCHIVE)
        shown = args.dst if args.dst in STANDARD_STREAMS or not written else written[0]
        print(copied_line(f"{target.pod}:{remote[2]}", shown, f"{len(written)} entries"),
              file=said_beside(args.dst))
    else:
        size = podcopy.upload(access, target.cluster, target.pod, args.src, remote[2], target.namespace)
        print(copied_line(args.src, f"{target.pod}:{remote[2]}", f"{size} bytes of tar"))
    return 0


def copied_line(source: str, destination: str, amount: str) -> str:
    """What `rlark cp` says it copied, on one line: a side names the Pod as its Pod CR gave it (the data plane's
    text), and an entry's path as the Pod's tar named it."""
    return f"copied {one_line(source)} to {one_line(destination)} ({amount})"
