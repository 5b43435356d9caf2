"""`rlark describe job NAME`: everything about one Job on one page, secrets masked.

Owns gathering (Job, Tasks, Pod CRs, data-plane restarts, Ray status) and the text layout.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from rlark_tui.cluster.access import ClusterAccess
from rlark_tui.cluster.kinds import JOBS, NODES, kind_named
from rlark_tui.cluster.output import kubectl_age, table
from rlark_tui.cluster.podhealth import pod_states
from rlark_tui.cluster.secrets import pods_secrets
from rlark_tui.errors import UsageError
from rlark_tui.model import keys
from rlark_tui.model.objects import Job, Pod, Task
from rlark_tui.model.submission import submitted_record
from rlark_tui.raydash.client import masked
from rlark_tui.text.redact import KnownSecrets, redact_related, redact_text
from rlark_tui.text.sinks import cut, one_line

EXIT_CODES = """exit codes:
  0  described (missing optional sources are named in the output)
  1  the Job does not exist, or an API / connection error
  2  usage error"""


def register(subparsers, parents) -> None:
    parser = subparsers.add_parser(
        "describe", parents=parents, help="show one job or node in detail",
        description="Roles, selectors, replicas, images, env (secrets as ***), scripts, Pods with Node / IP / "
                    "phase / restarts / failure reason (lastState, BackOff/FailedMount/Unhealthy events), task events and pull progress while Pending, Ray alive nodes vs expected.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("resource", metavar="job|node", help="the resource type: job, or node (a Node CR: labels, resources reserved by its "
                             "Workers, conditions, image pulls, the Workers on it)")
    parser.add_argument("name", metavar="NAME")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if kind_named(args.resource) is NODES:
        from rlark_tui.commands.nodeinfo import describe_node
        return describe_node(args)
    if kind_named(args.resource) is not JOBS:
        raise UsageError("describe supports jobs and nodes only: rlark describe job|node NAME")
    access = ClusterAccess.from_args(args)
    raw = access.get(JOBS, args.name)
    tasks = access.job_tasks(args.name)
    pods = access.job_pods(args.name, tasks)
    restarts = pod_states(access, pods)
    job = Job(raw)
    head = next((Task(t).namespace for t in tasks if Task(t).name == job.head_task_name), None) or None
    ray = access.ray_status(job, head) if job.head_task else None
    found = pods_secrets(access, raw, [Pod(pod) for pod in pods], tasks)  # the Ray rows and Pods' texts are cluster text too
    known = KnownSecrets(found.values)
    ray = masked(ray, known) if ray is not None else None  # before describe_text cuts its rows
    print(known.mask_lines(describe_text(raw, tasks, pods, restarts, ray)))
    if found.unreadable:
        print(found.notice(), file=sys.stderr)
    return 0


def describe_text(raw: dict, tasks: list[dict], pods: list[dict], restarts: dict[str, tuple[str, str]],
                  ray: dict | None, now: datetime | None = None) -> str:
    """The page, from already-fetched objects (pure)."""
    now = now or datetime.now(UTC)
    record = submitted_record(raw)
    related = [tasks, pods]  # each answer masked knowing the others' secret env values, whatever one renamed
    job = Job(redact_related(raw, related))
    out: list[str] = []

    def field(label: str, value: object) -> None:
        out.append(f"{label + ':':<16}{one_line(value)}")

    field("Name", job.name)
    if job.display_name:
        field("Display name", job.display_name)
    field("Type", job.job_type)
    field("Status", f"{job.shown_status} (phase {job.phase or 'none yet'})")
    field("Created", f"{job.creation_timestamp or '-'} ({kubectl_age(job.creation_timestamp, now)} ago)")
    if job.start_time:
        field("Started", job.start_time)
    if job.end_time:
        field("Ended", job.end_time)
    field("Stopped", "yes" if job.stopped else "no")
    field("Domain", job.domain or "-")
    field("SSH key", _ssh_key(job.ssh_public_key))
    field("Workers", f"{job.workers_running}/{len(job.tasks)} roles running, {job.total_nodes} Pods expected")
    if record.sha256:
        state = "matches the live spec" if record.matches_live else (
            "DIFFERS from the live spec" if record.intact else "record damaged (hash mismatch)")
        field("Submitted spec", f"sha256 {record.sha256[:16]}… {state}")
    else:
        field("Submitted spec", "not recorded (not submitted through rlark)")
    field("Launch record", "present" if job.launch_record else "-")

    by_task = {Task(t).name: Task(t) for t in (redact_related(task, [raw, related]) for task in tasks)}
    out.append("Roles:")
    for spec in job.tasks:
        task = by_task.get(job.task_name(spec))
        header = " (Header)" if spec.head else ""
        out.append(f"  {one_line(spec.name)}{header}: role {one_line(spec.role or '-')}, Task "
                   f"{one_line(job.task_name(spec))}"
                   + (f" in {one_line(task.namespace)}, phase {one_line(task.phase or '-')}" if task else " (no Task yet)"))
        selector = ", ".join(one_line(f"{k}={v}") for k, v in spec.node_selector.items()) or "(empty: never scheduled)"
        out.append(f"    Selector:       {selector}")
        out.append(f"    Replicas:       {spec.replicas}")
        out.append(f"    Image:          {one_line(spec.image or '-')}")
        resources = [f"{keys.GPU_RESOURCE}={spec.gpu:g}"] if spec.gpu else []
        resources += [f"{name}={amount:g}" for name, amount in spec.devices.items()]
        out.append(f"    GPU/devices:    {', '.join(resources) or '-'}")
        for mount in spec.mounts:
            out.append("    Mount:          " + one_line(f"{mount['target']} <- {mount['type']} {mount['source']}"))
        for entry in spec.env:
            value = entry.get("value") if "value" in entry else ("(from " + next(iter(entry.get("valueFrom") or {}),
                                                                                   "?") + ")")
            out.append("    Env:            " + one_line(f"{entry.get('name')}={value}"))
        _script(out, "Prepare script", spec.prepare_script)
        _script(out, "Run script", spec.run_script)
        if spec.tensorboard_dir:
            out.append(f"    TensorBoard:    {one_line(spec.tensorboard_dir)}"
                       + (f" (proxy {one_line(task.tensorboard_proxy)})" if task and task.tensorboard_proxy else ""))
        if task and task.phase == "Pending":
            for item in task.pull_progress:
                out.append("    Pulling:        " + one_line(f"{item.get('image', '?')} {item.get('downloaded', '?')}/"
                                                         f"{item.get('total', '?')} {item.get('status', '')}".rstrip()))
            for event in task.events[:10]:
                out.append("    Event:          " + one_line(f"{event.get('type', '')} {event.get('reason', '')}: "
                                                         f"{event.get('message', '')} (x{event.get('count', 1)})"))

    out.append("Pods:")
    if not pods:
        out.append("  No Pod details yet — waiting for task sync")
    else:
        rows = []
        roles = {job.task_name(s): s.name for s in job.tasks}
        for pod in sorted((Pod(p) for p in pods), key=lambda p: (p.task_name, p.pod_name)):
            count, reason = restarts.get(pod.name, ("-", ""))
            rows.append([one_line(cell) for cell in (
                roles.get(pod.task_name, pod.task_name), pod.pod_name or pod.name, pod.node or "-", pod.ip or "-",
                pod.phase or "-", count, reason or "-", kubectl_age(pod.creation_timestamp, now))])
        out.extend("  " + line for line in table(["ROLE", "POD", "NODE", "IP", "PHASE", "RESTARTS", "REASON",
                                                 "AGE"], rows).splitlines())
    out.append("Ray:")
    if ray is None:
        out.append("  no Header role: no Ray cluster")
    elif ray.get("error"):
        out.append(f"  unavailable: {one_line(redact_text(str(ray['error'])))}")  # a role's name, a Ray head's text
    else:
        out.append(f"  alive nodes {ray.get('alive_nodes')} / expected {ray.get('expected')}"
                   f"  ({ray.get('source')})")
        for row in ray.get("jobs") or []:
            out.append("  ray job " + one_line(cut(f"{row.get('submission_id') or row.get('job_id')}: {row.get('status')}")))
        if ray.get("jobs_error"):
            out.append(f"  ray jobs unavailable: {one_line(redact_text(str(ray['jobs_error'])))}")
    return "\n".join(out)


def _script(out: list[str], label: str, text: str) -> None:
    if not text:
        return
    lines = text.rstrip("\n").splitlines() or [""]
    out.append(f"    {label + ':':<16}{lines[0]}")
    out.extend(f"    {'':<16}{line}" for line in lines[1:])


def _ssh_key(key: str) -> str:
    parts = key.split()
    if not parts:
        return "-"
    comment = f" ({' '.join(parts[2:])})" if len(parts) > 2 else ""
    return f"{parts[0]} …{parts[1][-8:] if len(parts) > 1 else ''}{comment}"
