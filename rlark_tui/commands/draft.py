"""`rlark draft`: render a job draft to the Job manifest (`render`) and print starter drafts (`new`).

Owns file reading and output for drafts and Node lists; every rule lives in rlark_tui.model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TextIO

from rlark_tui.errors import UsageError
from rlark_tui.jobspec.build import build_job, parse_nodes
from rlark_tui.jobspec.draft import DRAFT_TYPES, MAX_COUNT, MAX_DRAFT_BYTES, JobDraft, dump_yaml, place_role
from rlark_tui.jobspec.findings import Finding
from rlark_tui.jobspec.starters import starter_draft
from rlark_tui.local.fsutil import read_input
from rlark_tui.text.parse import ascii_int
from rlark_tui.text.redact import redact_text

DRAFT_FIELDS = """\
draft fields (rlark draft new prints a commented starter):
  name, displayName        Job name ([a-z0-9-], starts with a letter); optional display name
  type                     rl | data-collection | evaluation | custom (role presets)
  header                   the Header role's name: its task gets head: true; its selector must match 1 Node
  roles[]                  one role = one task; replicas = number of Nodes its selector matches (or its workers)
    name, role             role name (task name derived from it); Actor | Rollout | Env
    cluster, selector      cluster namespace rlark-<id>; single-value node labels, e.g. {kubernetes.io/hostname: n1}
    hardware               or placement by hardware, as the console's picker: a GPU or device model of the
                           cluster's Nodes (rlark.io/gpu-model, rlark.io/device-model; CPU for general compute);
    workers, nodes         workers placed automatically on its Nodes with the per-worker GPUs free, or the
                           picked nodes, one worker each; the Job selects kubernetes.io/hostname "<n1>,<n2>,..."
    gpu, devices           nvidia.com/gpu per worker; {rlinf.io/<device>: count}
    cpu, memory            optional requests
    image, prepareScript   the main container's image (prefer @sha256: digests); runs before Ray on every worker
    env, mounts            {NAME: value}; [{type: host, source, target} | {type: storage, storageClass, target}]
  domain, sshPublicKey     network domain (required across clusters); one OpenSSH public key
  runScript, tensorboardDir  run on the Header role after the Ray cluster check; TensorBoard log dir
  debuggable               true: SYS_PTRACE on every container and RAY_DASHBOARD_ENABLE_PROFILING=1 on the
                           Header role, so `rlark stacks` can read every rank's stack (default false)
  record                   launch record kept with the Job: runId, codeRef, configRef, dataVersion,
                           expectedNumNodes, progressPattern, startupMarker, stopCondition (the agreements),
                           maxWaitSeconds, outputPath, buildRecord, recorder, notes, placementMode, componentPlacement, nodeGroups, runtimeVersions (RLinf cluster config)
"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "draft", parents=parents, help="job drafts: render to a Job manifest, print starters",
        description="Job drafts are the create-job wizard's state as a YAML file you can also write by hand.",
        epilog=DRAFT_FIELDS, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="draft_command", metavar="ACTION")
    parser.set_defaults(handler=_print_help(parser))

    render = actions.add_parser(
        "render", parents=parents, help="check a draft and print the Job YAML",
        description="Print the Job manifest on stdout and findings on stderr. Exit 0: no errors "
                    "(warnings allowed); 1: errors (nothing on stdout); 2: the input cannot be read.")
    render.add_argument("draft", metavar="DRAFT.yaml", help="the job draft ('-' reads stdin)")
    render.add_argument("--nodes", metavar="NODES.yaml",
                        help="rlinf.io Node objects: a YAML list or a List (kubectl get nodes.rlinf.io -A -o yaml); "
                             "without it the live Nodes, Jobs, Domains and storage classes of --context are used")
    placement = render.add_argument_group(
        "placement by hardware", "place one role (--role, needed when the draft has several) as the console's "
        "picker does; the draft's selector for that role gives way")
    placement.add_argument("--role", default="", metavar="NAME", help="the role to place")
    placement.add_argument("--gpu-model", "--hardware", dest="hardware", default="", metavar="MODEL",
                           help="GPU or device model of the role's cluster, e.g. 'NVIDIA H100 80GB HBM3'")
    placement.add_argument("--workers", type=_workers, default=0, metavar="N",
                           help="workers placed automatically (default 1, or the draft's)")
    placement.add_argument("--pick-nodes", type=_names, default=(), metavar="A,B",
                           help="the Nodes to place on, one worker each (the worker count follows)")
    render.set_defaults(handler=_render)

    new = actions.add_parser("new", parents=parents, help="print a commented starter draft",
                             description="Print a starter draft with the role presets of a job type.")
    new.add_argument("--type", dest="draft_type", choices=DRAFT_TYPES, default="rl",
                     help="job type: role presets (default rl)")
    new.add_argument("--name", default="", help="Job name to put in the starter")
    new.add_argument("--image", default="", help="image for every role (a digest: registry/name@sha256:...)")
    new.set_defaults(handler=_new)


def _workers(text: str) -> int:
    count = ascii_int(text)
    if count is None or not 1 <= count <= MAX_COUNT:
        raise argparse.ArgumentTypeError("must be a whole number ≥ 1")
    return count


def _names(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise argparse.ArgumentTypeError("give Node names separated by commas")
    return names


def _placement(args: argparse.Namespace) -> Callable[[JobDraft], JobDraft] | None:
    """The draft edit the placement options ask for; None without them (--role alone changes nothing)."""
    if not (args.hardware or args.workers or args.pick_nodes):
        return None
    if args.workers and args.pick_nodes:
        raise UsageError("--workers and --pick-nodes do not go together: the worker count follows the picked Nodes")
    return lambda draft: place_role(draft, args.role, args.hardware, args.workers, args.pick_nodes)


def _print_help(parser: argparse.ArgumentParser):
    def handler(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2
    return handler


def finding_line(finding: Finding) -> str:
    """One stderr line per finding: `error <field>: <message>` / `warning <field>: <message>`, redacted."""
    return redact_text(str(finding))


def render_draft_file(path: str, nodes: Iterable[Mapping], *, existing_jobs: Iterable[Any] | None = None,
                      storage_classes: Mapping[str, Collection[str]] | None = None,
                      domains: Collection[str] | None = None,
                      stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Render the draft at `path` ('-' = stdin) against `nodes` (Node dicts from a file or a live list).

    Job YAML on stdout only when there is no error, findings on stderr; returns 0 or 1 and raises
    UsageError (exit 2) when the draft cannot be used. Pass `existing_jobs`, `storage_classes` and
    `domains` when they are known live (then unknown ones are errors instead of warnings)."""
    return write_rendered(read_input(path, "draft", MAX_DRAFT_BYTES), nodes, existing_jobs=existing_jobs,
                          storage_classes=storage_classes, domains=domains, stdout=stdout, stderr=stderr)


def write_rendered(source: bytes | str, nodes: Iterable[Mapping], *, existing_jobs: Iterable[Any] | None = None,
                   storage_classes: Mapping[str, Collection[str]] | None = None,
                   domains: Collection[str] | None = None,
                   stdout: TextIO | None = None, stderr: TextIO | None = None,
                   edit: Callable[[JobDraft], JobDraft] | None = None) -> int:
    """`render_draft_file` for draft text already read (changed by `edit` before it is checked)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    result = build_job(source, nodes, existing_jobs, storage_classes=storage_classes, domains=domains, edit=edit)
    for finding in result.findings:
        print(finding_line(finding), file=stderr)
    if not result.ok:
        return 1
    stdout.write(dump_yaml(result.manifest))
    return 0


def _render(args: argparse.Namespace) -> int:
    if args.nodes == "-" and args.draft == "-":
        raise UsageError("the draft and --nodes cannot both be read from stdin")
    source = read_input(args.draft, "draft", MAX_DRAFT_BYTES)
    edit = _placement(args)
    if args.nodes:
        return write_rendered(source, parse_nodes(read_input(args.nodes, "Node list", MAX_DRAFT_BYTES)), edit=edit)
    from rlark_tui.cluster import ClusterAccess  # the kubernetes client only when Nodes are read live
    from rlark_tui.commands.submit import live_inputs

    inputs = live_inputs(ClusterAccess.from_args(args))
    return write_rendered(source, inputs["nodes"], existing_jobs=inputs["jobs"], domains=inputs["domains"],
                          storage_classes=inputs["storage_classes"], edit=edit)


def _new(args: argparse.Namespace) -> int:
    sys.stdout.write(starter_draft(args.draft_type, name=args.name, image=args.image))
    return 0
