"""`rlark stop|start|restart|delete JOB [--yes] [--wait]`: change a Job's lifecycle after a confirmation;
`rlark delete workflow NAME [--yes]` deletes a Workflow, saying first which of its Jobs go with it.

Owns the prompts and messages; the mutation and the platform's rules live in actions.Actions.
"""

from __future__ import annotations

import argparse
import sys
from types import MappingProxyType

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS, WORKFLOWS
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.workflow import WORKFLOW_LABEL, delete_consequences
from rlark_tui.model.lifecycle import consequences
from rlark_tui.model.objects import Job

EXIT_CODES = """exit codes:
  0    done (with --wait: the Pods are gone / back, or the Job is gone)
  1    refused (--readonly, a Succeeded/Failed Job, no confirmation), API / connection error, --wait timed out
  2    usage error
  130  interrupted"""

WORKFLOW_WORDS = ("workflow", "workflows", "wf", "rlwf")
PAST = MappingProxyType({"stop": "stopped", "start": "started", "restart": "restarted", "delete": "deleted"})


def register(subparsers, parents) -> None:
    for verb, summary in (("stop", "stop a job (its Pods are deleted)"),
                          ("start", "start a stopped job (processes restart; no checkpoint resume)"),
                          ("restart", "the console's Restart: un-stop a job, recording the restart time"),
                          ("delete", "delete a job")):
        parser = subparsers.add_parser(
            verb, parents=parents, help=summary, description=consequences(verb, "JOB")[1],
            epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
        if verb == "delete":
            parser.usage = "rlark delete [options] JOB | rlark delete workflow NAME"
            parser.add_argument("job", metavar="JOB", help="a Job, or `workflow` followed by a Workflow's name")
            parser.add_argument("workflow", metavar="NAME", nargs="?", help=argparse.SUPPRESS)
        else:
            parser.add_argument("job", metavar="JOB")
        parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
        parser.add_argument("--wait", action="store_true",
                            help="return when the Pods are gone (stop), back (start, restart) or the Job is gone "
                                 "(delete)")
        parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                            help="how long --wait waits (default 300)")
        parser.set_defaults(handler=_handler(verb))


def _handler(verb: str):
    def handler(args: argparse.Namespace) -> int:
        return run(verb, args)
    return handler


def run(verb: str, args: argparse.Namespace) -> int:
    if not 0 < args.timeout < float("inf"):
        raise UsageError("--timeout must be a number of seconds more than 0")
    workflow = getattr(args, "workflow", None)
    if workflow is not None and args.job not in WORKFLOW_WORDS:
        raise UsageError(f"rlark delete takes one Job name, or `workflow NAME` (got {args.job!r} and {workflow!r})")
    access = ClusterAccess.from_args(args)
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    if workflow is not None:
        return _delete_workflow(access, actions, workflow, args)
    actions.preflight(verb, args.job)
    if not args.yes:
        confirm(consequences(verb, args.job)[1], f"{verb} job {args.job}", f"job {args.job} was not {PAST[verb]}")
    message = getattr(actions, verb)(args.job)
    print(message)
    if not args.wait:
        return 0
    if verb == "delete":
        result = actions.wait_deleted(args.job, args.timeout)
        done = f"job {args.job} is gone ({result.seconds:.0f}s)"
    elif verb == "stop":
        result = actions.wait_stopped(args.job, args.timeout)
        done = f"all Pods of job {args.job} are gone ({result.seconds:.0f}s)"
    else:
        result = actions.wait_started(args.job, args.timeout)
        done = f"job {args.job} has its {result.pods}/{result.expected} Pods back ({result.seconds:.0f}s)"
    if not result.done:
        raise RlarkError(f"--wait timed out after {args.timeout:g}s: job {args.job} has "
                         f"{result.pods} Pod(s)" + (f" of {result.expected}" if verb in ("start", "restart") else ""))
    print(done)
    return 0


def _delete_workflow(access: ClusterAccess, actions: Actions, name: str, args: argparse.Namespace) -> int:
    """`rlark delete workflow NAME`: say what goes with it (the Jobs it created), ask, delete."""
    actions.guard(f"delete workflow {name}")
    access.get(WORKFLOWS, name)
    jobs = sorted(Job(job).name for job in access.list(JOBS, label_selector=f"{WORKFLOW_LABEL}={name}").items)
    if not args.yes:
        confirm(delete_consequences(name, jobs)[1], f"delete workflow {name}", f"workflow {name} was not deleted")
    print(actions.delete_workflow(name))
    return 0


def confirm(consequence: str, question: str, refused: str) -> None:
    """Say what will happen, then ask `question? [y/N]` on the terminal; anything but yes raises `refused`."""
    print(consequence, file=sys.stderr)
    if not sys.stdin or not sys.stdin.isatty():
        raise RlarkError(f"not confirmed: stdin is not a terminal; pass --yes to {question}")
    try:
        answer = input(f"{question}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise RlarkError(f"not confirmed: {refused}")
