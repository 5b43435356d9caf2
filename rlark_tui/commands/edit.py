"""`rlark edit JOB [-f DRAFT] [--yes]`: Edit-and-restart, as the console does it: the Job as a draft in
$EDITOR (or from a file), re-rendered and validated, then sent back with its name locked.

Owns the editing round and the messages; the update itself (and read-only, terminal Jobs) is actions.Actions.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS
from rlark_tui.commands.lifecycle import confirm
from rlark_tui.commands.submit import live_inputs
from rlark_tui.errors import RlarkError, UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.build import build_job
from rlark_tui.jobspec.clone import draft_of
from rlark_tui.jobspec.draft import MAX_DRAFT_BYTES, dump_draft
from rlark_tui.jobspec.findings import error, has_errors
from rlark_tui.local.config import state_dir
from rlark_tui.local.editor import edit_text, editor_command
from rlark_tui.local.fsutil import read_input, write_private
from rlark_tui.model.lifecycle import START_NOTE
from rlark_tui.text.redact import redact_text
from rlark_tui.text.sinks import object_file_name, shell_line

EXIT_CODES = """exit codes:
  0  sent (or nothing changed, so nothing was sent)
  1  refused (--readonly, a Succeeded/Failed Job, findings with errors, a renamed Job, no confirmation), or an
     API / connection error; an edited draft that was not sent is kept and its path printed
  2  usage error"""
CONSEQUENCE = ("Edit-and-restart replaces the Job's spec and clears spec.stopped, as the console does: the Job "
               f"is restarted with the new spec. {START_NOTE}")


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "edit", parents=parents, help="edit a job's draft and restart it with the new spec",
        description="Open the Job as a job draft in $VISUAL / $EDITOR (or read it with -f), render and validate "
                    "it like a submit, then send it back with its name locked: the console's Edit-and-restart. "
                    "An unchanged draft sends nothing. rlark keeps the Job's annotations and renews its "
                    "submission record, so `rlark check` compares against the new spec. Finished Jobs cannot "
                    "be edited: clone them instead.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", metavar="JOB")
    parser.add_argument("-f", "--filename", metavar="DRAFT", help="take the edited draft from this file")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    access = ClusterAccess.from_args(args)
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    actions.preflight("edit and restart", args.job)
    original = dump_draft(draft_of(access.get(JOBS, args.job)).draft)
    if args.filename:
        try:
            edited = read_input(args.filename, "draft", MAX_DRAFT_BYTES).decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"draft {args.filename}: not UTF-8 text") from None
    else:
        edited = edit_text(original, editor_command())
    if edited == original:
        print(f"job {args.job}: the draft is unchanged; nothing was sent")
        return 0
    inputs = live_inputs(access)
    others = [j for j in inputs["jobs"] if (j.get("metadata") or {}).get("name") != args.job]
    try:
        result = build_job(edited, inputs["nodes"], others, domains=inputs["domains"],
                           storage_classes=inputs["storage_classes"])
    except RlarkError as exc:
        raise RlarkError(f"not sent: {exc}; your draft is kept in {_keep(args.job, edited)}") from None
    findings = list(result.findings)
    if result.draft.name != args.job:
        findings.insert(0, error("name", f"the name is locked to {args.job} when editing; use "
                                         f"`{shell_line(['rlark', 'clone', f'--name={result.draft.name}'], [args.job])}` "
                                         "for a new Job"))
    for finding in findings:
        print(redact_text(str(finding)), file=sys.stderr)
    if has_errors(findings):
        raise RlarkError(f"not sent: fix the errors above; your draft is kept in {_keep(args.job, edited)}")
    if not args.yes:
        confirm(CONSEQUENCE, f"edit and restart job {args.job}", f"job {args.job} was not changed")
    sent = actions.edit_restart(result.manifest)
    print(f"job.rlinf.io/{args.job} replaced and restarted (spec sha256 {sent.sha256[:16]}…)")
    if sent.saved:
        print(f"submitted YAML saved to {sent.saved}")
    return 0


def _keep(job: str, text: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = state_dir() / "edits" / f"{object_file_name(job)}-{stamp}.yaml"
    write_private(path, text)
    return str(path)
