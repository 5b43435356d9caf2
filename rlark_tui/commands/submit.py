"""`rlark submit -f FILE [--dry-run]`: create a Job from a manifest or a JobDraft rendered against live Nodes.

Owns reading the file, local findings and printing; the create itself goes through actions.Actions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from rlark_tui.actions import Actions
from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import API_VERSION, JOBS
from rlark_tui.errors import UsageError
from rlark_tui.model.build import build_job
from rlark_tui.model.draft import parse_yaml
from rlark_tui.model.findings import Finding, error, has_errors, ordered, warning
from rlark_tui.model.placement import matching_nodes
from rlark_tui.model.redact import redact_text
from rlark_tui.model.views import Job

EXIT_CODES = """exit codes:
  0  submitted (or, with --dry-run, accepted by local validation and by the server's dry run)
  1  findings with errors, or the server refused (403 / 409 already exists / 422 invalid), or unreachable
  2  the file cannot be used (unreadable, not YAML, not a mapping), or a bad flag"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "submit", parents=parents, help="submit a Job manifest or a job draft",
        description="Submit a rlinf.io/v1alpha1 Job manifest, or a JobDraft (rendered against the live Nodes "
                    "first, with the same findings as `rlark draft render`). The submitted spec and its "
                    "sha256 are stored on the Job as annotations and the YAML is saved in the local state dir.",
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
    data = parse_yaml(_read(args.filename), what=args.filename)
    if not isinstance(data, Mapping):
        raise UsageError(f"{args.filename}: the top level must be a mapping (a Job manifest or a job draft)")
    access = ClusterAccess.from_args(args)
    if data.get("kind") == "Job" and str(data.get("apiVersion", "")) == API_VERSION:
        manifest = dict(data)
        findings = manifest_findings(manifest, access.nodes(), access.list(JOBS).items)
    else:
        inputs = live_inputs(access)
        result = build_job(data, inputs["nodes"], inputs["jobs"], domains=inputs["domains"],
                           storage_classes=inputs["storage_classes"])
        manifest, findings = result.manifest, result.findings
    for finding in findings:
        print(redact_text(str(finding)), file=sys.stderr)
    if has_errors(findings):
        print("error: not submitted: fix the errors above", file=sys.stderr)
        return 1
    actions = Actions(access, readonly=bool(getattr(args, "readonly", False)))
    result = actions.submit(manifest, dry_run=args.dry_run)
    name = manifest["metadata"]["name"]
    if args.dry_run:
        print(f"job.rlinf.io/{name} valid (dry run: local checks and the server accepted it; nothing created)")
        return 0
    print(f"job.rlinf.io/{name} created (spec sha256 {result.sha256[:16]}…)")
    if result.saved:
        print(f"submitted YAML saved to {result.saved}")
    print(f"Running only means scheduled: check it with `rlark check {name}` once Pods run.")
    return 0


def _read(filename: str) -> bytes:
    try:
        if filename == "-":
            return sys.stdin.buffer.read()
        with open(filename, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"{filename}: cannot read it ({exc.strerror or exc})") from None


def manifest_findings(manifest: Mapping, nodes: list[dict], jobs: list[dict]) -> list[Finding]:
    """Local checks of a ready Job manifest against live Nodes and Jobs (pure)."""
    job = Job(manifest)
    findings: list[Finding] = []
    if not job.name:
        findings.append(error("metadata.name", "a Job needs a name"))
    elif any(Job(j).name == job.name for j in jobs):
        findings.append(error("metadata.name", f"a Job named {job.name} already exists"))
    metadata = manifest.get("metadata")
    for field in ("labels", "annotations"):
        value = metadata.get(field) if isinstance(metadata, Mapping) else None
        if value is not None and not isinstance(value, Mapping):
            findings.append(error(f"metadata.{field}", "must be a mapping of name: value"))
    if not job.tasks:
        findings.append(error("spec.tasks", "a Job needs at least one task (role)"))
    heads = [t for t in job.tasks if t.head]
    if not heads and job.tasks:
        findings.append(warning("spec.tasks", "no task has head: true, so no Ray head starts and no run script "
                                              "runs"))
    if len(heads) > 1:
        findings.append(warning("spec.tasks", "several tasks have head: true; the platform uses the first"))
    for index, task in enumerate(job.tasks):
        path = f"spec.tasks[{index}]"
        if not task.node_selector:
            findings.append(error(f"{path}.nodeSelector", "empty selector: the Task lands in namespace `default` "
                                                          "and never runs"))
        elif not matching_nodes(task.node_selector, nodes):
            findings.append(error(f"{path}.nodeSelector", "matches no Node"))
        if not task.has_main_container:
            findings.append(warning(f"{path}.kubernetes.workload.template.spec.containers",
                                    "no container named `main`: no Ray wrapper, env or logs"))
        elif not task.image:
            findings.append(error(f"{path}.image", "the `main` container has no image"))
    return ordered(findings)
