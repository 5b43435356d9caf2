"""`rlark submit -f FILE [--dry-run]`: create a Job from a manifest or a JobDraft rendered against live Nodes,
or a Workflow from its manifest.

Owns reading the file, local findings and printing; the create itself goes through actions.Actions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import API_VERSION, JOBS
from rlark_tui.errors import UsageError
from rlark_tui.flow.actions import Actions
from rlark_tui.jobspec.build import build_job
from rlark_tui.jobspec.draft import MAX_DRAFT_BYTES, read_yaml
from rlark_tui.jobspec.findings import Finding, has_errors
from rlark_tui.jobspec.manifest import manifest_findings
from rlark_tui.jobspec.workflow import workflow_findings
from rlark_tui.local.fsutil import read_input
from rlark_tui.text.redact import PLACEHOLDER, placeholder_fields, redact_text
from rlark_tui.text.sinks import shell_line

EXIT_CODES = """exit codes:
  0  submitted (or, with --dry-run, accepted by local validation and by the server's dry run)
  1  findings with errors (a secret `rlark clone` masked as '***masked***' among them), or the server refused
     (403 / 409 already exists / 422 invalid), or unreachable
  2  the file cannot be used (unreadable, not YAML, not a mapping), or a bad flag"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "submit", parents=parents, help="submit a Job manifest, a job draft or a Workflow manifest",
        description="Submit a rlinf.io/v1alpha1 Job manifest, or a JobDraft (rendered against the live Nodes "
                    "first, with the same findings as `rlark draft render`). The submitted spec and its "
                    "sha256 are stored on the Job as annotations and the YAML is saved in the local state dir. A "
                    "Workflow manifest has each template checked like a Job, and dependencies that are unknown "
                    "or listed after their dependent refused, before it is sent.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--filename", metavar="FILE", required=True, help="manifest or draft (- = stdin)")
    parser.add_argument("--dry-run", action="store_true",
                        help="validate locally and ask the server (dryRun=All); create nothing")
    parser.set_defaults(handler=run)


def live_inputs(access: ClusterAccess) -> dict:
    """What a draft is validated against when it is submitted or rendered live."""
    return {"nodes": access.nodes(), "jobs": access.list(JOBS).items,
            "domains": [d.get("metadata", {}).get("name") for d in access.domains()
                        if d.get("metadata", {}).get("name")],
            "storage_classes": access.storage_classes()}


def run(args: argparse.Namespace) -> int:
    data, twice = read_yaml(_read(args.filename), what=args.filename)
    if not isinstance(data, Mapping):
        raise UsageError(f"{args.filename}: the top level must be a mapping (a Job manifest or a job draft)")
    masked = placeholder_fields(data)
    if masked:
        for path in masked:
            print(f"error {path}: holds {PLACEHOLDER!r}, a secret `rlark clone` masked: put the real value "
                  "there (or clone again with --file FILE, which keeps it)", file=sys.stderr)
        print("error: not submitted: fix the errors above", file=sys.stderr)
        return 1
    access = ClusterAccess.from_args(args)
    if data.get("kind") == "Workflow" and str(data.get("apiVersion", "")) == API_VERSION:
        return _submit_workflow(dict(data), twice, access, args)
    if data.get("kind") == "Job" and str(data.get("apiVersion", "")) == API_VERSION:
        manifest = dict(data)
        findings = manifest_findings(manifest, access.nodes(), access.list(JOBS).items)
    else:
        inputs = live_inputs(access)
        result = build_job(data, inputs["nodes"], inputs["jobs"], domains=inputs["domains"],
                           storage_classes=inputs["storage_classes"])
        manifest, findings = result.manifest, result.findings
    if not _sendable(twice + findings):
        return 1
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    submitted = actions.submit(manifest, dry_run=args.dry_run)
    name = manifest["metadata"]["name"]
    if args.dry_run:
        print(f"job.rlinf.io/{name} valid (dry run: local checks and the server accepted it; nothing created)")
        return 0
    print(f"job.rlinf.io/{name} created (spec sha256 {submitted.sha256[:16]}…)")
    if submitted.saved:
        print(f"submitted YAML saved to {submitted.saved}")
    print(f"Running only means scheduled: check it with `{shell_line(['rlark', 'check'], [name])}` once Pods run.")
    return 0


def _submit_workflow(manifest: dict, twice: list[Finding], access: ClusterAccess, args: argparse.Namespace) -> int:
    """A Workflow: every template checked like a Job (and its dependencies as the controller reads them)
    before anything is sent; `twice`, the keys its YAML gives twice."""
    if not _sendable(twice + workflow_findings(manifest, access.nodes(), access.list(JOBS).items)):
        return 1
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    actions.submit_workflow(manifest, dry_run=args.dry_run)
    name = manifest["metadata"]["name"]
    if args.dry_run:
        print(f"workflow.rlinf.io/{name} valid (dry run: local checks and the server accepted it; nothing created)")
        return 0
    print(f"workflow.rlinf.io/{name} created: its controller creates each template's Job once its dependencies "
          f"succeeded (see `{shell_line(['rlark', 'get', 'workflows'], [name])}` and "
          f"`{shell_line(['rlark', 'get', 'jobs', '-l', f'rlinf.io/workflow={name}'])}`)")
    return 0


def _sendable(findings) -> bool:
    """Print each finding on stderr (redacted); False, with the refusal, when any is an error."""
    for finding in findings:
        print(redact_text(str(finding)), file=sys.stderr)
    if has_errors(findings):
        print("error: not submitted: fix the errors above", file=sys.stderr)
        return False
    return True


def _read(filename: str) -> bytes:
    return read_input(filename, "manifest", MAX_DRAFT_BYTES)
