"""`rlark resume JOB [--from global_step_N|latest] [--force] [--yes]`: Edit & Restart the Job with
`runner.resume_dir` set to one of its checkpoints (rlinf-runtime.md §3.3), passed on the Header role's run command
as RLinf's Hydra overrides are. The diff is shown first; an incomplete checkpoint is refused unless --force; the
update itself (refused under --readonly; for a finished Job the platform's delete and re-create) is
actions.Actions.resume."""

from __future__ import annotations

import argparse

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.checkpoints import CheckpointsUnavailable, read_checkpoints
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.commands.lifecycle import confirm
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.jobdiff import diff_jobs, render_unified
from rlark_tui.jobspec.resume import OVERRIDE, consequence, resumed, unchanged
from rlark_tui.model.lifecycle import TERMINAL_PHASES
from rlark_tui.model.objects import Job
from rlark_tui.telemetry.checkpoints import Checkpoint, latest_complete
from rlark_tui.text.redact import redact_text


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "resume", parents=parents, help="restart a Job from one of its checkpoints (runner.resume_dir)",
        description="Edit & Restart the Job with runner.resume_dir set to a checkpoint that `rlark checkpoints` "
                    "lists (the latest complete one by default), appended to the Header role's run command as a "
                    "Hydra override (or replacing the one there). Shows the diff, then asks; refuses an "
                    "incomplete checkpoint unless --force. A finished (Succeeded or Failed) Job, which the platform "
                    "no longer reconciles, is deleted and created again under its name with that spec. `rlark "
                    "check` then confirms the resume from the log.")
    parser.add_argument("job", metavar="JOB")
    parser.add_argument("--from", dest="source", default="latest", metavar="global_step_N|latest",
                        help="the checkpoint to resume from (default: the latest complete one)")
    parser.add_argument("--force", action="store_true", help="resume from a checkpoint that looks incomplete")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(handler=run)


def choose(found: list[Checkpoint], source: str, force: bool) -> Checkpoint:
    if source == "latest":
        chosen = latest_complete(found)
        if chosen is None:
            raise CheckpointsUnavailable("resume: no complete checkpoint"
                                         + (f" (incomplete: {', '.join(c.name for c in found)})" if found else ""))
        return chosen
    chosen = next((c for c in found if c.name == source), None)
    if chosen is None:
        raise UsageError(f"resume: no checkpoint {source} (there are: "
                         f"{', '.join(c.name for c in found) or 'none'})")
    if not chosen.complete and not force:
        raise RlarkError(f"resume: {chosen.name} is incomplete (missing {', '.join(chosen.missing)}); "
                         "pass --force to resume from it anyway")
    return chosen


def run(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    try:
        actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
        actions.preflight("resume", args.job)
        raw = access.get(JOBS, args.job)
        phase = Job(raw).phase
        read = read_checkpoints(access, args.job, "resume")
        where = read.where
        chosen = choose(list(read.found), args.source, args.force)
        manifest = resumed(raw, f"{where.path}/{chosen.name}")
        print(f"resume {args.job} from {chosen.name} (step {chosen.step}): {OVERRIDE}={where.path}/{chosen.name}")
        print(redact_text(render_unified(diff_jobs(raw, manifest), args.job, f"{args.job} (resumed)")), end="")
        same = unchanged(raw, manifest)
        if not args.yes:
            confirm(consequence(phase, same), f"resume job {args.job} from {chosen.name}",
                    f"job {args.job} was not changed")
        if phase in TERMINAL_PHASES:
            print(f"job {args.job} is {phase}: deleting it and creating it again (the platform's restart of a "
                  "finished Job)")
        elif same:
            print(f"job {args.job} already resumes from {chosen.name}: stopping it and starting it again (the "
                  "platform restarts a running Job's Pods only when their template changes)")
        sent = actions.resume(manifest)
        done = ("deleted and created again" if phase in TERMINAL_PHASES else "stopped and started again" if same
                else "replaced and restarted")
        print(f"job.rlinf.io/{args.job} {done} from {chosen.name} (spec sha256 {sent.sha256[:16]}…)")
    finally:
        access.close()
    return 0
